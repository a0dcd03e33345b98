package testutil

import (
	"net/http"
	"strings"
	"testing"
)

// ProtocolCommand sends one command of the thread streaming protocol over
// HTTP (POST /threads/{tid}/commands) and returns its envelope.
func ProtocolCommand(t testing.TB, s *Server, tid string, id int, method string, params any) map[string]any {
	t.Helper()
	return s.Must(200, "POST", "/threads/"+tid+"/commands", map[string]any{"id": id, "method": method, "params": params}).Object(t)
}

// MustSucceed returns the result of a successful protocol command
// envelope; any other envelope fails the test.
func MustSucceed(t testing.TB, env map[string]any) map[string]any {
	t.Helper()
	if env["type"] != "success" {
		t.Fatalf("command failed: %v", env)
	}
	return env["result"].(map[string]any)
}

// ProtocolEvents opens the thread's protocol event stream (POST
// /threads/{tid}/stream/events) with body and returns a reader; the stream
// is closed at the end of the test.
func ProtocolEvents(t testing.TB, s *Server, tid string, body map[string]any, header http.Header) *SSEReader {
	t.Helper()
	resp := s.Stream("POST", "/threads/"+tid+"/stream/events", body, header)
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream answered %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return NewSSEReader(resp.Body)
}
