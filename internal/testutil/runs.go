package testutil

import (
	"testing"
	"time"
)

// StartTestGraphs starts a server serving TestGraphs (echo and the gated,
// failing and other test graphs).
func StartTestGraphs(t testing.TB) *Server {
	return StartServer(t, Options{Graphs: TestGraphs})
}

// NewThread creates an empty thread and returns its id.
func NewThread(t testing.TB, s *Server) string {
	t.Helper()
	return s.Must(200, "POST", "/threads", nil).Object(t)["thread_id"].(string)
}

// UserInput is a run input of one user message with text.
func UserInput(text string) map[string]any {
	return map[string]any{"messages": []any{map[string]any{"role": "user", "content": text}}}
}

// MessagesIn returns the "messages" list of a thread's or run's values.
func MessagesIn(t testing.TB, values any) []any {
	t.Helper()
	return values.(map[string]any)["messages"].([]any)
}

// LastMessage returns the last of the "messages" of values.
func LastMessage(t testing.TB, values any) map[string]any {
	t.Helper()
	msgs := MessagesIn(t, values)
	return msgs[len(msgs)-1].(map[string]any)
}

// ContentOf returns the text content of a message (empty when it is not
// text).
func ContentOf(m any) string {
	c, _ := m.(map[string]any)["content"].(string)
	return c
}

// RunStatus returns the status of run rid of thread tid.
func RunStatus(t testing.TB, s *Server, tid, rid string) string {
	t.Helper()
	return s.Must(200, "GET", "/threads/"+tid+"/runs/"+rid, nil).Object(t)["status"].(string)
}

// WaitStatus waits (at most 5 s) until run rid of thread tid has status
// want.
func WaitStatus(t testing.TB, s *Server, tid, rid, want string) {
	t.Helper()
	Eventually(t, 5*time.Second, "run "+rid+" to become "+want, func() bool { return RunStatus(t, s, tid, rid) == want })
}

// WantError checks the status and the JSON error code of a response.
func WantError(t testing.TB, r Response, status int, code string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Raw)
	}
	if got := r.Object(t)["code"]; got != code {
		t.Fatalf("code %v, want %q: %s", got, code, r.Raw)
	}
}
