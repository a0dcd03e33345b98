package testutil

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// SSEEvent is one parsed server-sent event.
type SSEEvent struct {
	ID    string
	Event string
	Data  any
	Raw   string
}

// SSEReader parses a text/event-stream the way the SDKs do: data lines are
// concatenated without separators and comments are skipped.
type SSEReader struct {
	sc *bufio.Scanner
	// Comments counts comment lines seen (heartbeats).
	Comments int
}

// NewSSEReader reads events from r.
func NewSSEReader(r io.Reader) *SSEReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	return &SSEReader{sc: sc}
}

// Next returns the next event, or io.EOF at the end of the stream.
func (r *SSEReader) Next() (SSEEvent, error) {
	var ev SSEEvent
	var data strings.Builder
	seen := false
	for r.sc.Scan() {
		line := r.sc.Text()
		switch {
		case line == "":
			if !seen {
				continue
			}
			ev.Raw = data.String()
			if ev.Raw != "" {
				if err := json.Unmarshal([]byte(ev.Raw), &ev.Data); err != nil {
					return ev, err
				}
			}
			return ev, nil
		case strings.HasPrefix(line, ":"):
			r.Comments++
		case strings.HasPrefix(line, "id:"):
			ev.ID = strings.TrimSpace(line[3:])
			seen = true
		case strings.HasPrefix(line, "event:"):
			ev.Event = strings.TrimSpace(line[6:])
			seen = true
		case strings.HasPrefix(line, "data:"):
			data.WriteString(strings.TrimPrefix(line[5:], " "))
			seen = true
		}
	}
	if err := r.sc.Err(); err != nil {
		return ev, err
	}
	return ev, io.EOF
}

// All reads every remaining event.
func (r *SSEReader) All() ([]SSEEvent, error) {
	var out []SSEEvent
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
}

// Stream sends a request and returns the open response for SSE reading; the
// caller closes the body.
func (s *Server) Stream(method, path string, body any, header http.Header) *http.Response {
	s.T.Helper()
	req := s.newRequest(method, path, body)
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.T.Fatal(err)
	}
	return resp
}
