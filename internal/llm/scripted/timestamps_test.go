package scripted_test

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"agentserver/internal/llm/scripted"
)

func TestSendTimestampsMarkEveryContentDeltaAndTheFinish(t *testing.T) {
	s := newServer(t)
	s.Script(scripted.Text("abcd").Split(4).WithLatency(0, time.Millisecond).WithSendTimestamps())
	before := time.Now()
	resp := post(t, t.Context(), s.URL(), `{"model":"m","stream":true,"messages":[]}`)
	data := sseData(t, resp.Body)
	resp.Body.Close()
	after := time.Now()
	// role, 4 content deltas, finish, [DONE]
	if len(data) != 7 || data[6] != "[DONE]" {
		t.Fatalf("events: %q", data)
	}
	var sent []time.Time
	for i, d := range data[1:6] {
		var c openai.ChatCompletionStreamResponse
		if err := json.Unmarshal([]byte(d), &c); err != nil {
			t.Fatal(err)
		}
		content := c.Choices[0].Delta.Content
		times := scripted.SendTimes(content)
		if len(times) != 1 || content != scripted.SendMarker(times[0]) {
			t.Fatalf("delta %d content %q: want exactly one marker", i, content)
		}
		sent = append(sent, times[0])
	}
	if !strings.Contains(data[5], `"finish_reason":"stop"`) {
		t.Fatalf("finish event %s", data[5])
	}
	for i, ts := range sent {
		if ts.Before(before.Truncate(time.Microsecond)) || ts.After(after) {
			t.Fatalf("marker %d at %v, outside the request [%v, %v]", i, ts, before, after)
		}
		if i > 0 && i < 4 && ts.Sub(sent[i-1]) < time.Millisecond {
			t.Fatalf("content marker %d only %v after the previous one; the chunk delay is 1ms", i, ts.Sub(sent[i-1]))
		}
		if i > 0 && ts.Before(sent[i-1]) {
			t.Fatalf("marker %d earlier than marker %d", i, i-1)
		}
	}
}

func TestSendTimestampsOnToolCallsAndJSON(t *testing.T) {
	s := newServer(t)
	s.Script(
		scripted.ToolCalls(scripted.Call("ls", map[string]any{})).WithSendTimestamps(),
		scripted.Text("hello").WithSendTimestamps(),
	)
	// Streaming tool calls: only the finish delta carries a marker.
	resp := post(t, t.Context(), s.URL(), `{"model":"m","stream":true,"messages":[]}`)
	data := sseData(t, resp.Body)
	resp.Body.Close()
	all := strings.Join(data, "\n")
	if n := len(scripted.SendTimes(all)); n != 1 || !strings.Contains(data[len(data)-2], `"finish_reason":"tool_calls"`) || len(scripted.SendTimes(data[len(data)-2])) != 1 {
		t.Fatalf("want one marker, on the finish delta; got %d in %q", n, data)
	}
	// JSON: the content is one marker.
	resp = post(t, t.Context(), s.URL(), `{"model":"m","messages":[]}`)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var c openai.ChatCompletionResponse
	if err := json.Unmarshal(body, &c); err != nil {
		t.Fatal(err)
	}
	if times := scripted.SendTimes(c.Choices[0].Message.Content); len(times) != 1 {
		t.Fatalf("content %q", c.Choices[0].Message.Content)
	}
}

func TestSendTimesParsesMarkersInText(t *testing.T) {
	a, b := time.Unix(0, 1700000000000000001), time.Unix(0, 1700000000000000999)
	got := scripted.SendTimes("x" + scripted.SendMarker(a) + "[sent:bad]" + scripted.SendMarker(b) + "[sent:12")
	if len(got) != 2 || !got[0].Equal(a) || !got[1].Equal(b) {
		t.Fatalf("got %v", got)
	}
	if got := scripted.SendTimes("no markers"); got != nil {
		t.Fatalf("got %v", got)
	}
}
