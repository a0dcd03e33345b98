package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"agentserver/internal/testutil"
)

// FuzzRunCreationReadsBack posts arbitrary bodies to run creation and
// checks the promise that matters after a bad-input campaign: a body is
// either refused with a 4xx JSON error, or the run it created reads back
// through get, the thread's list and search, and again after a restart
// (the server must start). The seed corpus runs as a normal test. Each
// input starts a server twice, and some seeds are large, so fuzz with
// -fuzzminimizetime=1x: minimizing them takes minutes.
func FuzzRunCreationReadsBack(f *testing.F) {
	for _, seed := range []string{
		`{"assistant_id":"echo","input":{"messages":[{"role":"user","content":"hi"}]}}`,
		`{"assistant_id":"echo","after_seconds":3600,"input":` + nestedText(98) + `}`,
		`{"assistant_id":"echo","after_seconds":3600,"input":` + nestedText(9_999) + `}`,
		`{"assistant_id":"echo","metadata":{"k":"v","n":1,"deep":` + nestedText(50) + `}}`,
		`{"assistant_id":"echo","config":{"configurable":{"x":[1,2,{"y":null}]},"recursion_limit":3}}`,
		`{"assistant_id":"echo","config":{"recursion_limit":0}}`,
		`{"assistant_id":"echo","command":{"goto":["echo",{"node":"echo","input":{}}]},"after_seconds":60}`,
		`{"assistant_id":"echo","command":{"goto":7}}`,
		`{"assistant_id":"echo","command":{"resume":{"a":1},"update":[["k","v"]]}}`,
		`{"assistant_id":"echo","after_seconds":1e308}`,
		`{"assistant_id":"echo","stream_mode":["values","updates"],"interrupt_before":["echo"],"stream_resumable":true}`,
		`{"assistant_id":"echo","multitask_strategy":"reject","on_completion":"keep","if_not_exists":"create"}`,
		`{"assistant_id":"echo","checkpoint_id":"00000000-0000-7000-8000-000000000000"}`,
		`{"assistant_id":"echo","webhook":"http://127.0.0.1:1/hook","after_seconds":3600}`,
		`{"assistant_id":"echo","input":"\u0000\ud800 text"}`,
		`{"assistant_id":"echo"} {"assistant_id":"echo"}`,
		`{"agent_id":"echo","messages":[{"role":"user","content":"ap"}]}`,
		`[1,2,3]`, `null`, `{"assistant_id":`, "\x00\xff",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		dir := t.TempDir()
		s := testutil.StartServer(t, testutil.Options{Graphs: testutil.TestGraphs, DataDir: dir, NoSync: true})
		tid := testutil.NewThread(t, s)
		r := s.Do("POST", "/threads/"+tid+"/runs", body) // fails the test if the answer is not JSON
		if r.Status >= 500 {
			t.Fatalf("status %d for %q: %s", r.Status, body, r.Raw)
		}
		if r.Status != http.StatusOK {
			if n := len(s.Must(200, "GET", "/threads/"+tid+"/runs", nil).List(t)); n != 0 {
				t.Fatalf("refused body (%d) stored %d runs", r.Status, n)
			}
			return
		}
		rid := r.Object(t)["run_id"].(string)
		readBack(t, s, tid, rid)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Fatalf("shutdown: %v", err)
		}
		again := testutil.StartServer(t, testutil.Options{Graphs: testutil.TestGraphs, DataDir: dir, NoSync: true})
		readBack(t, again, tid, rid)
	})
}

// readBack checks that run rid of thread tid can be read every way.
func readBack(t *testing.T, s *testutil.Server, tid, rid string) {
	t.Helper()
	s.Must(200, "GET", fmt.Sprintf("/threads/%s/runs/%s", tid, rid), nil)
	s.Must(200, "GET", "/runs/"+rid, nil)
	list := s.Must(200, "GET", "/threads/"+tid+"/runs", nil)
	if !strings.Contains(string(list.Raw), rid) {
		t.Fatalf("run %s missing from its thread's list", rid)
	}
	s.Must(200, "POST", "/runs/search", map[string]any{})
	s.Must(200, "POST", "/threads/search", map[string]any{})
	s.Must(200, "GET", "/threads/"+tid, nil)
	s.Must(200, "GET", "/threads/"+tid+"/state", nil)
}
