package authz_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"agentserver/internal/testutil"
)

// tenants is a server with owner scoping and the clients of two users and
// of the operator.
type tenants struct {
	alice, bob, op *testutil.Server
}

func startTenants(t *testing.T) tenants {
	t.Helper()
	s, j := testutil.StartAuth(t, map[string]any{"owner_scoped": true})
	return tenants{
		alice: s.As(testutil.Bearer(j.Token(t, "alice", []string{"threads:write"}, map[string]any{"team": "red"}))),
		bob:   s.As(testutil.Bearer(j.Token(t, "bob", nil, nil))),
		op:    s.As(http.Header{"X-Api-Key": {"opkey"}}),
	}
}

// notFoundLikeMissing asserts that r is the 404 a missing object of the
// same kind gets, id aside.
func notFoundLikeMissing(t *testing.T, what string, r, missing testutil.Response, id, missingID string) {
	t.Helper()
	if r.Status != http.StatusNotFound {
		t.Errorf("%s: status %d, want 404: %s", what, r.Status, r.Raw)
		return
	}
	if got, want := strings.ReplaceAll(string(r.Raw), id, "ID"), strings.ReplaceAll(string(missing.Raw), missingID, "ID"); got != want {
		t.Errorf("%s: body %s differs from a missing object's %s", what, got, want)
	}
}

func TestOwnerScopedThreads(t *testing.T) {
	u := startTenants(t)
	// The owner comes from the token, whatever metadata says.
	th := u.alice.Must(200, "POST", "/threads", map[string]any{"metadata": map[string]any{"owner": "bob", "topic": "x"}}).Object(t)
	id := th["thread_id"].(string)
	if md := th["metadata"].(map[string]any); md["owner"] != "alice" || md["topic"] != "x" {
		t.Fatalf("metadata = %v, want owner alice", md)
	}
	u.bob.Must(200, "POST", "/threads", map[string]any{})
	missing := uuid.NewString()
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/threads/%s", nil},
		{"PATCH", "/threads/%s", map[string]any{"metadata": map[string]any{"owner": "bob"}}},
		{"DELETE", "/threads/%s", nil},
		{"GET", "/threads/%s/state", nil},
		{"POST", "/threads/%s/state", map[string]any{"values": map[string]any{"x": 1}}},
		{"PATCH", "/threads/%s/state", map[string]any{"metadata": map[string]any{"x": 1}}},
		{"GET", "/threads/%s/history", nil},
		{"POST", "/threads/%s/history", map[string]any{}},
		{"POST", "/threads/%s/copy", nil},
		{"GET", "/threads/%s/runs", nil},
		{"POST", "/threads/%s/runs", map[string]any{"assistant_id": "echo", "input": map[string]any{"messages": []any{}}}},
		{"POST", "/threads/%s/runs/wait", map[string]any{"assistant_id": "echo", "input": map[string]any{"messages": []any{}}}},
	} {
		r := u.bob.Do(c.method, fmt.Sprintf(c.path, id), c.body)
		m := u.bob.Do(c.method, fmt.Sprintf(c.path, missing), c.body)
		notFoundLikeMissing(t, c.method+" "+c.path, r, m, id, missing)
	}
	// Nothing of alice's changed.
	got := u.alice.Must(200, "GET", "/threads/"+id, nil).Object(t)
	if md := got["metadata"].(map[string]any); md["owner"] != "alice" {
		t.Fatalf("after bob's attempts: %v", md)
	}
	// Search and count see one's own threads, with the right total.
	for _, user := range []struct {
		c    *testutil.Server
		want int
	}{{u.alice, 1}, {u.bob, 1}, {u.op, 2}} {
		r := user.c.Must(200, "POST", "/threads/search", map[string]any{"limit": 10})
		if n := len(r.List(t)); n != user.want || r.Header.Get("X-Pagination-Total") != fmt.Sprint(user.want) {
			t.Errorf("search: %d threads, total %q, want %d", n, r.Header.Get("X-Pagination-Total"), user.want)
		}
		if n := user.c.Must(200, "POST", "/threads/count", map[string]any{}).JSON; n != float64(user.want) {
			t.Errorf("count = %v, want %d", n, user.want)
		}
	}
	// Searching for another owner's metadata finds nothing.
	if r := u.bob.Must(200, "POST", "/threads/search", map[string]any{"metadata": map[string]any{"owner": "alice"}}); len(r.List(t)) != 0 {
		t.Errorf("bob searching owner=alice: %s", r.Raw)
	}
	// if_exists do_nothing must not hand over another user's thread.
	if r := u.bob.Do("POST", "/threads", map[string]any{"thread_id": id, "if_exists": "do_nothing"}); r.Status != http.StatusConflict {
		t.Errorf("bob creating alice's thread id with do_nothing: %d %s", r.Status, r.Raw)
	}
	// A copy is owned by whoever copies.
	cp := u.alice.Must(200, "POST", "/threads/"+id+"/copy", nil).Object(t)
	if cp["metadata"].(map[string]any)["owner"] != "alice" {
		t.Errorf("copy metadata = %v", cp["metadata"])
	}
	u.bob.Must(404, "DELETE", "/threads/"+id, nil)
	u.alice.Must(204, "DELETE", "/threads/"+id, nil)
}

func TestOwnerScopedRuns(t *testing.T) {
	u := startTenants(t)
	id := u.alice.Must(200, "POST", "/threads", map[string]any{}).Object(t)["thread_id"].(string)
	input := map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}}
	u.alice.Must(200, "POST", "/threads/"+id+"/runs/wait", map[string]any{"assistant_id": "echo", "input": input})
	runs := u.alice.Must(200, "GET", "/threads/"+id+"/runs", nil).List(t)
	if len(runs) != 1 {
		t.Fatalf("alice's runs: %v", runs)
	}
	run := runs[0].(map[string]any)
	rid := run["run_id"].(string)
	if run["metadata"].(map[string]any)["owner"] != "alice" {
		t.Errorf("run metadata = %v, want owner alice", run["metadata"])
	}
	user := run["kwargs"].(map[string]any)["config"].(map[string]any)["configurable"].(map[string]any)["langgraph_auth_user"].(map[string]any)
	if user["identity"] != "alice" || user["team"] != "red" || fmt.Sprint(user["permissions"]) != "[threads:write]" {
		t.Errorf("langgraph_auth_user = %v", user)
	}
	missing := uuid.NewString()
	for _, c := range []struct{ method, path string }{
		{"GET", "/threads/%s/runs/" + rid},
		{"GET", "/threads/%s/runs/" + rid + "/join"},
		{"POST", "/threads/%s/runs/" + rid + "/cancel"},
		{"DELETE", "/threads/%s/runs/" + rid},
		{"GET", "/threads/%s/runs/" + rid + "/subagents"},
	} {
		r := u.bob.Do(c.method, fmt.Sprintf(c.path, id), nil)
		m := u.bob.Do(c.method, fmt.Sprintf(c.path, missing), nil)
		notFoundLikeMissing(t, c.method+" "+c.path, r, m, id, missing)
	}
	for _, c := range []struct{ method, path string }{
		{"GET", "/runs/%s"}, {"GET", "/runs/%s/wait"}, {"POST", "/runs/%s/cancel"}, {"DELETE", "/runs/%s"},
	} {
		r := u.bob.Do(c.method, fmt.Sprintf(c.path, rid), nil)
		m := u.bob.Do(c.method, fmt.Sprintf(c.path, missing), nil)
		notFoundLikeMissing(t, c.method+" "+c.path, r, m, rid, missing)
	}
	if r := u.bob.Do("GET", "/threads/"+id+"/runs/"+rid+"/stream", nil); r.Status != 404 {
		t.Errorf("bob joining alice's run stream: %d", r.Status)
	}
	if r := u.bob.Do("POST", "/runs/cancel", map[string]any{"run_ids": []string{rid}, "thread_id": id}); r.Status != 404 {
		t.Errorf("bob cancelling alice's runs: %d %s", r.Status, r.Raw)
	}
	// Runs search: each user sees their own runs only.
	bobs := u.bob.Must(200, "POST", "/threads", map[string]any{}).Object(t)["thread_id"].(string)
	u.bob.Must(200, "POST", "/threads/"+bobs+"/runs/wait", map[string]any{"assistant_id": "echo", "input": input})
	// A stateless run is authorised as threads:create_run.
	u.bob.Must(200, "POST", "/runs/wait", map[string]any{"assistant_id": "echo", "input": input})
	for _, user := range []struct {
		c    *testutil.Server
		want int
	}{{u.alice, 1}, {u.bob, 1}, {u.op, 2}} {
		if got := user.c.Must(200, "POST", "/runs/search", map[string]any{}).List(t); len(got) != user.want {
			t.Errorf("runs search: %d runs, want %d", len(got), user.want)
		}
	}
	// GHSA-747p: if_not_exists must not skip the thread's filter.
	r := u.bob.Do("POST", "/threads/"+id+"/runs/wait", map[string]any{"assistant_id": "echo", "input": input, "if_not_exists": "create"})
	if r.Status != 404 {
		t.Errorf("bob running on alice's thread with if_not_exists: %d %s", r.Status, r.Raw)
	}
	if n := len(u.alice.Must(200, "GET", "/threads/"+id+"/runs", nil).List(t)); n != 1 {
		t.Errorf("alice's thread has %d runs after bob's attempt, want 1", n)
	}
	// if_not_exists on a new id makes a thread owned by the caller.
	fresh := uuid.NewString()
	u.bob.Must(200, "POST", "/threads/"+fresh+"/runs/wait", map[string]any{"assistant_id": "echo", "input": input, "if_not_exists": "create"})
	if md := u.bob.Must(200, "GET", "/threads/"+fresh, nil).Object(t)["metadata"].(map[string]any); md["owner"] != "bob" {
		t.Errorf("thread made by if_not_exists: %v", md)
	}
	u.alice.Must(404, "GET", "/threads/"+fresh, nil)
}
