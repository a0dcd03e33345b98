package threads_test

import (
	"testing"
	"time"

	"agentserver/internal/testutil"
)

// ttlGraphs is a langgraph.json whose thread sweeper runs every few
// milliseconds, so that expiry shows within a test.
const ttlGraphs = `{"graphs": {"echo": "builtin:echo", "gated": "builtin:test-gated"},
	"checkpointer": {"ttl": {"strategy": "delete", "sweep_interval_minutes": 0.0002}}}`

// threeSteps is a thread creation body that writes three checkpoints.
func threeSteps(extra map[string]any) map[string]any {
	var steps []any
	for _, v := range []string{"a", "b", "c"} {
		steps = append(steps, map[string]any{"updates": []any{map[string]any{"values": map[string]any{"v": v}, "as_node": "n"}}})
	}
	body := map[string]any{"supersteps": steps}
	for k, v := range extra {
		body[k] = v
	}
	return body
}

func historyLen(t *testing.T, s *testutil.Server, tid string) int {
	t.Helper()
	return len(s.Must(200, "POST", "/threads/"+tid+"/history", map[string]any{"limit": 100}).List(t))
}

// The sweeper deletes a thread once its ttl has passed since its last
// update, and leaves a thread with a running run alone.
func TestThreadTTLSweeper(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{Graphs: ttlGraphs})
	ttl := map[string]any{"ttl": 0.0005, "strategy": "delete"} // 30 ms
	// The busy thread gets its ttl once its run is running, so that its
	// deadline comes before the other thread's.
	busy := testutil.NewThread(t, s)
	gate := "ttl-" + busy
	rid := s.Must(200, "POST", "/threads/"+busy+"/runs", map[string]any{"assistant_id": "gated", "input": map[string]any{"gate": gate}}).Object(t)["run_id"].(string)
	defer testutil.Release(gate)
	testutil.WaitStatus(t, s, busy, rid, "running")
	s.Must(200, "PATCH", "/threads/"+busy, map[string]any{"ttl": ttl})
	doomed := s.Must(200, "POST", "/threads", threeSteps(map[string]any{"ttl": ttl})).Object(t)
	if got := doomed["ttl"].(map[string]any); got["strategy"] != "delete" || got["ttl"] != 0.0005 {
		t.Fatalf("ttl echoed as %v", got)
	}
	tid := doomed["thread_id"].(string)
	keep := testutil.NewThread(t, s)

	testutil.Eventually(t, 10*time.Second, "the expired thread to be deleted", func() bool {
		return s.Do("GET", "/threads/"+tid, nil).Status == 404
	})
	s.Must(404, "GET", "/threads/"+tid+"/history", nil)
	s.Must(200, "GET", "/threads/"+keep, nil)
	// The busy thread's deadline passed before the other's, but its run
	// protects it; once the run has ended (a new update) it expires in turn.
	s.Must(200, "GET", "/threads/"+busy, nil)
	testutil.Release(gate)
	testutil.Eventually(t, 10*time.Second, "the thread to be deleted after its run", func() bool {
		return s.Do("GET", "/threads/"+busy, nil).Status == 404
	})
}

// keep_latest prunes an expired thread to its newest checkpoint.
func TestThreadTTLKeepLatest(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{Graphs: ttlGraphs})
	tid := s.Must(200, "POST", "/threads", threeSteps(map[string]any{"ttl": map[string]any{"ttl": 0.0005, "strategy": "keep_latest"}})).Object(t)["thread_id"].(string)
	testutil.Eventually(t, 10*time.Second, "old checkpoints to be pruned", func() bool { return historyLen(t, s, tid) == 1 })
	st := s.Must(200, "GET", "/threads/"+tid+"/state", nil).Object(t)
	if st["values"].(map[string]any)["v"] != "c" {
		t.Fatalf("state after keep_latest: %v", st["values"])
	}
}

func TestThreadTTLValidation(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{})
	for _, ttl := range []any{-1, 0, "soon", map[string]any{"ttl": 5, "strategy": "archive"}, map[string]any{"strategy": "delete"}} {
		s.Must(422, "POST", "/threads", map[string]any{"ttl": ttl})
	}
	tid := testutil.NewThread(t, s)
	s.Must(422, "PATCH", "/threads/"+tid, map[string]any{"ttl": map[string]any{"ttl": 1, "strategy": "never"}})
	got := s.Must(200, "PATCH", "/threads/"+tid, map[string]any{"ttl": 90}).Object(t)["ttl"].(map[string]any)
	if got["ttl"] != 90.0 || got["strategy"] != "delete" {
		t.Fatalf("patched ttl = %v", got)
	}
}

// A langgraph.json TTL section with a bad value stops the server at start.
func TestTTLConfigValidation(t *testing.T) {
	for _, graphs := range []string{
		`{"graphs": {"echo": "builtin:echo"}, "checkpointer": {"ttl": {"strategy": "archive"}}}`,
		`{"graphs": {"echo": "builtin:echo"}, "checkpointer": {"ttl": {"default_ttl": -5}}}`,
		`{"graphs": {"echo": "builtin:echo"}, "store": {"ttl": {"sweep_interval_minutes": 0}}}`,
		`{"graphs": {"echo": "builtin:echo"}, "store": {"ttl": {"refresh_on_read": "yes"}}}`,
	} {
		if err := testutil.BuildErr(t, testutil.Options{Graphs: graphs}); err == nil {
			t.Errorf("server started with %s", graphs)
		}
	}
}

func TestPruneThreads(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{Graphs: testutil.TestGraphs})
	a := s.Must(200, "POST", "/threads", threeSteps(nil)).Object(t)["thread_id"].(string)
	b := s.Must(200, "POST", "/threads", threeSteps(nil)).Object(t)["thread_id"].(string)
	busy := testutil.NewThread(t, s)
	gate := "prune-" + busy
	rid := s.Must(200, "POST", "/threads/"+busy+"/runs", map[string]any{"assistant_id": "gated", "input": map[string]any{"gate": gate}}).Object(t)["run_id"].(string)
	defer testutil.Release(gate)
	testutil.WaitStatus(t, s, busy, rid, "running")
	missing := "00000000-0000-7000-8000-000000000000"

	got := s.Must(200, "POST", "/threads/prune", map[string]any{"thread_ids": []string{a, busy, missing}, "strategy": "keep_latest"}).Object(t)
	if got["pruned_count"] != 1.0 || historyLen(t, s, a) != 1 || historyLen(t, s, b) != 3 {
		t.Fatalf("keep_latest: %v; history a %d, b %d", got, historyLen(t, s, a), historyLen(t, s, b))
	}
	// strategy defaults to delete.
	got = s.Must(200, "POST", "/threads/prune", map[string]any{"thread_ids": []string{a, b, busy}}).Object(t)
	if got["pruned_count"] != 2.0 {
		t.Fatalf("delete: %v", got)
	}
	s.Must(404, "GET", "/threads/"+a, nil)
	s.Must(404, "GET", "/threads/"+b, nil)
	s.Must(200, "GET", "/threads/"+busy, nil)

	s.Must(422, "POST", "/threads/prune", map[string]any{"thread_ids": []string{busy}, "strategy": "archive"})
	s.Must(422, "POST", "/threads/prune", map[string]any{"thread_ids": []string{"nope"}})
	s.Must(422, "POST", "/threads/prune", map[string]any{})
	s.Must(200, "GET", "/threads/"+busy, nil)
}

func TestPatchThreadState(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{})
	tid := s.Must(200, "POST", "/threads", threeSteps(nil)).Object(t)["thread_id"].(string)
	r := s.Must(204, "PATCH", "/threads/"+tid+"/state", map[string]any{"metadata": map[string]any{"reviewed": true}})
	if len(r.Raw) != 0 {
		t.Fatalf("204 with a body: %s", r.Raw)
	}
	st := s.Must(200, "GET", "/threads/"+tid+"/state", nil).Object(t)
	md := st["metadata"].(map[string]any)
	if md["reviewed"] != true || md["source"] != "update" || st["values"].(map[string]any)["v"] != "c" {
		t.Fatalf("state after patch: %v", st)
	}
	if n := historyLen(t, s, tid); n != 3 {
		t.Fatalf("%d checkpoints after a metadata patch, want 3", n)
	}
	s.Must(422, "PATCH", "/threads/"+tid+"/state", map[string]any{})
	s.Must(422, "PATCH", "/threads/"+tid+"/state", map[string]any{"metadata": "x"})
	s.Must(404, "PATCH", "/threads/"+testutil.NewThread(t, s)+"/state", map[string]any{"metadata": map[string]any{}})
	s.Must(404, "PATCH", "/threads/00000000-0000-7000-8000-000000000000/state", map[string]any{"metadata": map[string]any{}})
}
