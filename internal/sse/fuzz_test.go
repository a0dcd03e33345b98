package sse_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"agentserver/internal/sse"
)

// parsedEvent is what a client decoded from the wire.
type parsedEvent struct {
	id, event string
	data      []byte
	hasData   bool
}

// parseSSE decodes a stream the way the LangGraph JS SDK does
// (libs/sdk/src/utils/sse.ts): lines end at CRLF, CR or LF; lines starting
// with ':' are comments; a field is split at the first ':' and loses one
// leading space; data lines are concatenated WITHOUT a separator; a blank
// line dispatches when an event name, data or id was seen.
func parseSSE(stream []byte) []parsedEvent {
	var (
		out  []parsedEvent
		cur  parsedEvent
		seen bool
	)
	for len(stream) > 0 {
		var line []byte
		i := bytes.IndexAny(stream, "\r\n")
		if i < 0 {
			line, stream = stream, nil // unterminated last line
		} else {
			line = stream[:i]
			if stream[i] == '\r' && i+1 < len(stream) && stream[i+1] == '\n' {
				i++
			}
			stream = stream[i+1:]
		}
		if len(line) == 0 {
			if seen {
				out = append(out, cur)
			}
			cur, seen = parsedEvent{id: cur.id}, false
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			cur.event, seen = string(value), true
		case "data":
			cur.data = append(cur.data, value...)
			cur.hasData, seen = true, true
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				cur.id, seen = string(value), true
			}
		}
	}
	return out
}

func FuzzEventEncoding(f *testing.F) {
	f.Add("", "values", []byte(`{"a":1}`))
	f.Add("7", "messages", []byte("[{\"content\":\"hi\"},\n {\"langgraph_node\":\"agent\"}]"))
	f.Add("1", "updates|agent:1234", []byte("{\r\n\"x\": \"a\\nb\"\r}"))
	f.Add("", "custom", []byte("not json\nsecond line\r\n"))
	f.Add("\n", "ev\rent", []byte(" {\"lead\":\"space\"}"))
	f.Add("", "", []byte(""))
	f.Add("x\x00", ":", []byte("\n\n\n"))
	f.Add("", " spaced", []byte(": not a comment"))
	f.Fuzz(func(t *testing.T, id, name string, data []byte) {
		rec := newRecorder()
		w := sse.NewWriter(rec)
		if err := w.Event(id, name, data); err != nil {
			t.Fatal(err)
		}
		wire := []byte(rec.String())
		evs := parseSSE(wire)
		if len(evs) != 1 {
			t.Fatalf("wire %q decoded to %d events", wire, len(evs))
		}
		got := evs[0]
		if want := strip(name, "\r\n"); got.event != want {
			t.Fatalf("event name %q, want %q (wire %q)", got.event, want, wire)
		}
		if want := strip(id, "\r\n\x00"); got.id != want {
			t.Fatalf("id %q, want %q (wire %q)", got.id, want, wire)
		}
		if !got.hasData {
			t.Fatalf("no data line (wire %q)", wire)
		}
		if json.Valid(data) {
			var want, have any
			if err := unmarshal(data, &want); err != nil {
				t.Fatal(err)
			}
			if err := unmarshal(got.data, &have); err != nil {
				t.Fatalf("recovered data %q is not JSON: %v (wire %q)", got.data, err, wire)
			}
			if !reflect.DeepEqual(want, have) {
				t.Fatalf("recovered %q, sent %q", got.data, data)
			}
			if bytes.IndexAny(data, "\r\n") < 0 && !bytes.Equal(got.data, data) {
				t.Fatalf("one-line JSON altered: %q -> %q", data, got.data)
			}
			if bytes.Count(wire, []byte("\ndata: "))+boolInt(bytes.HasPrefix(wire, []byte("data: "))) != 1 {
				t.Fatalf("JSON data not on one line: %q", wire)
			}
			return
		}
		// Other data arrives with its line breaks removed.
		if want := []byte(strip(string(data), "\r\n")); !bytes.Equal(got.data, want) {
			t.Fatalf("recovered %q, want %q", got.data, want)
		}
	})
}

func unmarshal(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode(v)
}

// strip removes the bytes of cut from s, byte by byte.
func strip(s, cut string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(cut, s[i]) < 0 {
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
