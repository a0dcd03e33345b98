package httpapi_test

import (
	"agentserver/internal/testutil"
	"net/http"
	"testing"

	"github.com/google/uuid"
)

func TestThreadRoutesLenientEncodings(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{})
	// text/plain carrying JSON, as some browsers' fetch sends it.
	r := s.DoWith("POST", "/threads", `{"metadata":{"via":"text"}}`, http.Header{"Content-Type": {"text/plain;charset=UTF-8"}})
	if r.Status != 200 || r.Object(t)["metadata"].(map[string]any)["via"] != "text" {
		t.Fatalf("text/plain create: %d %s", r.Status, r.Raw)
	}
	// Empty body on a POST that needs none.
	id := r.Object(t)["thread_id"].(string)
	s.Must(200, "POST", "/threads/"+id+"/copy", "")
	s.Must(200, "POST", "/threads/search", "")
	// Boolean encodings.
	for _, v := range []string{"true", "false", "1", "0", "yes", "no"} {
		s.Must(200, "GET", "/threads/"+id+"/state?subgraphs="+v, nil)
	}
	s.Must(422, "GET", "/threads/"+id+"/state?subgraphs=maybe", nil)
	// Malformed input.
	s.Must(422, "GET", "/threads/not-a-uuid", nil)
	if r := s.Do("POST", "/threads", `{"metadata": `); r.Status != 400 && r.Status != 422 {
		t.Fatalf("malformed JSON: %d %s", r.Status, r.Raw)
	}
	s.Must(422, "POST", "/threads", map[string]any{"metadata": "not an object"})
	// UUIDv7 ids are accepted.
	v7 := uuid.Must(uuid.NewV7()).String()
	s.Must(200, "POST", "/threads", map[string]any{"thread_id": v7})
	s.Must(200, "GET", "/threads/"+v7, nil)
}
