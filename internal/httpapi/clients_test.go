package httpapi_test

import (
	"net/http"
	"sort"
	"strings"
	"testing"

	"agentserver/internal/assistants"
	"agentserver/internal/testutil"
)

// finishedRun makes a thread and runs echo on it to the end; it returns the
// thread id and the run's path.
func finishedRun(t *testing.T, s *testutil.Server, body map[string]any) (tid, runPath string) {
	t.Helper()
	tid = testutil.NewThread(t, s)
	if body == nil {
		body = map[string]any{}
	}
	body["assistant_id"] = "echo"
	body["input"] = testutil.UserInput("hi")
	r := s.Must(200, "POST", "/threads/"+tid+"/runs/wait", body)
	return tid, r.Header.Get("Content-Location")
}

// eventNames joins a stream and returns the names of its events.
func eventNames(t *testing.T, s *testutil.Server, path string, header http.Header) []string {
	t.Helper()
	resp := s.Stream("GET", path, nil, header)
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: status %d", path, resp.StatusCode)
	}
	evs, err := testutil.NewSSEReader(resp.Body).All()
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	names := []string{}
	for _, ev := range evs {
		names = append(names, ev.Event)
	}
	return names
}

var replayAll = http.Header{"Last-Event-ID": {"-1"}}

// openStreamStatus opens a stream that does not end by itself (the thread
// stream), closes it and returns the status of its answer.
func openStreamStatus(s *testutil.Server, path string) int {
	resp := s.Stream("GET", path, nil, nil)
	resp.Body.Close()
	return resp.StatusCode
}

// An empty optional query value means the parameter's default, on every
// route: the Python SDK sends a parameter it has no value for as "name=".
func TestEmptyOptionalQueryValuesMeanDefaults(t *testing.T) {
	s := testutil.StartTestGraphs(t)
	tid, run := finishedRun(t, s, map[string]any{"stream_resumable": true})
	echo := assistants.SystemID("echo").String()
	s.Must(204, "PUT", "/store/items", map[string]any{"namespace": []any{"a"}, "key": "k", "value": map[string]any{"v": 1}})
	for _, path := range []string{
		"/threads/" + tid + "/runs?limit=&offset=&status=&select=",
		"/threads/" + tid + "/history?limit=&before=",
		"/threads/" + tid + "?include=",
		"/threads/" + tid + "/state?subgraphs=",
		"/assistants/" + echo + "/graph?xray=",
		"/assistants/" + echo + "/subgraphs?recurse=",
		"/store/items?namespace=a&key=k&refresh_ttl=",
		"/ok?check_db=",
	} {
		s.Must(200, "GET", path, nil)
	}
	if l := s.Must(200, "GET", "/threads/"+tid+"/runs?limit=&offset=", nil).List(t); len(l) != 1 {
		t.Fatalf("runs with empty limit: %d, want the one run", len(l))
	}
	if l := s.Must(200, "GET", "/threads/"+tid+"/history?limit=", nil).List(t); len(l) != 3 {
		t.Fatalf("history with empty limit: %d states, want all three (input, __start__, echo)", len(l))
	}
	for _, path := range []string{
		run + "/stream?stream_mode=&cancel_on_disconnect=false",
		run + "/stream?cancel_on_disconnect=&stream_mode=",
		"/runs/" + run[strings.LastIndex(run, "/")+1:] + "/stream?stream_mode=&cancel_on_disconnect=",
	} {
		if got := eventNames(t, s, path, replayAll); !containsAll(got, "metadata", "values", "end") {
			t.Fatalf("%s: events %v, want the whole run", path, got)
		}
	}
	// An empty value among real ones is dropped; the others still filter.
	if got := eventNames(t, s, run+"/stream?stream_mode=&stream_mode=values", replayAll); containsAll(got, "messages") || !containsAll(got, "values") {
		t.Fatalf("stream_mode=&stream_mode=values: %v", got)
	}
	// The thread stream stays open: only its answer is checked.
	if st := openStreamStatus(s, "/threads/"+tid+"/stream?stream_mode="); st != 200 {
		t.Fatalf("thread stream with an empty stream_mode: %d", st)
	}
	s.Must(202, "POST", run+"/cancel?wait=&action=", nil)
	// A required parameter stays required.
	s.Must(422, "GET", "/store/items?namespace=a&key=", nil)
}

func containsAll(list []string, want ...string) bool {
	for _, w := range want {
		found := false
		for _, v := range list {
			found = found || v == w
		}
		if !found {
			return false
		}
	}
	return true
}

// keysOf returns the sorted keys of a JSON object.
func keysOf(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// checkStateShape fails unless st has every ThreadState field and each task
// every ThreadTask field, as LangGraph Platform sends them.
func checkStateShape(t *testing.T, st map[string]any) {
	t.Helper()
	for _, k := range []string{"values", "next", "tasks", "metadata", "created_at", "checkpoint", "parent_checkpoint", "interrupts"} {
		if _, ok := st[k]; !ok {
			t.Fatalf("state without %q: %v", k, keysOf(st))
		}
	}
	if _, ok := st["next"].([]any); !ok {
		t.Fatalf("state next = %v, want a list", st["next"])
	}
	if _, ok := st["interrupts"].([]any); !ok {
		t.Fatalf("state interrupts = %v, want a list", st["interrupts"])
	}
	for _, raw := range st["tasks"].([]any) {
		task := raw.(map[string]any)
		for _, k := range []string{"id", "name", "path", "error", "interrupts", "checkpoint", "state", "result"} {
			if _, ok := task[k]; !ok {
				t.Fatalf("task without %q: %v", k, task)
			}
		}
		if _, ok := task["interrupts"].([]any); !ok {
			t.Fatalf("task interrupts = %v, want a list", task["interrupts"])
		}
		if path, _ := task["path"].([]any); len(path) != 2 || path[0] != "__pregel_pull" || path[1] != task["name"] {
			t.Fatalf("task path = %v", task["path"])
		}
		if task["error"] != nil || task["checkpoint"] != nil || task["state"] != nil {
			t.Fatalf("task = %v, want null error, checkpoint and state", task)
		}
	}
}

// State, history and a paused thread's state carry every field clients read
// without checks (RemoteGraph maps task.interrupts of every task).
func TestStateAndHistoryShapes(t *testing.T) {
	s := testutil.StartTestGraphs(t)
	tid := testutil.NewThread(t, s)
	th := s.Must(200, "GET", "/threads/"+tid, nil).Object(t)
	if _, ok := th["values"]; !ok {
		t.Fatalf("new thread without values: %v", keysOf(th))
	}
	if i, ok := th["interrupts"].(map[string]any); !ok || len(i) != 0 {
		t.Fatalf("new thread interrupts = %v, want {}", th["interrupts"])
	}
	checkStateShape(t, s.Must(200, "GET", "/threads/"+tid+"/state", nil).Object(t))

	// Paused before its first node: one pending task without interrupts.
	s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "steps", "input": map[string]any{}, "interrupt_before": "*"})
	st := s.Must(200, "GET", "/threads/"+tid+"/state", nil).Object(t)
	checkStateShape(t, st)
	tasks := st["tasks"].([]any)
	if len(tasks) != 1 || tasks[0].(map[string]any)["name"] != "a" || len(tasks[0].(map[string]any)["interrupts"].([]any)) != 0 {
		t.Fatalf("paused state tasks = %v", tasks)
	}
	for _, h := range s.Must(200, "POST", "/threads/"+tid+"/history", map[string]any{"limit": 10}).List(t) {
		checkStateShape(t, h.(map[string]any))
	}
	for _, h := range s.Must(200, "GET", "/threads/"+tid+"/history", nil).List(t) {
		checkStateShape(t, h.(map[string]any))
	}

	// Paused on an interrupt: the task lists it.
	asking := testutil.NewThread(t, s)
	s.Must(200, "POST", "/threads/"+asking+"/runs/wait", map[string]any{"assistant_id": "asking", "input": map[string]any{}})
	st = s.Must(200, "GET", "/threads/"+asking+"/state", nil).Object(t)
	checkStateShape(t, st)
	task := st["tasks"].([]any)[0].(map[string]any)
	if in := task["interrupts"].([]any); len(in) != 1 || in[0].(map[string]any)["value"].(map[string]any)["question"] != "approve?" {
		t.Fatalf("interrupted task = %v", task)
	}
	if len(st["interrupts"].([]any)) != 1 {
		t.Fatalf("state interrupts = %v", st["interrupts"])
	}
}

// Joining a finished run whose event log is gone (here: after a restart)
// gives an empty stream that closes cleanly, whatever Last-Event-ID says.
func TestJoinOfARunWhoseLogIsGone(t *testing.T) {
	dir := t.TempDir()
	s := testutil.StartServer(t, testutil.Options{Graphs: testutil.TestGraphs, DataDir: dir})
	_, plain := finishedRun(t, s, nil)
	_, resumable := finishedRun(t, s, map[string]any{"stream_resumable": true})
	if err := s.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	s2 := testutil.StartServer(t, testutil.Options{Graphs: testutil.TestGraphs, DataDir: dir})
	rid := plain[strings.LastIndex(plain, "/")+1:]
	for _, path := range []string{plain + "/stream", "/runs/" + rid + "/stream", plain + "/stream?stream_mode=values"} {
		for _, last := range []string{"", "-1", "0", "7"} {
			h := http.Header{}
			if last != "" {
				h.Set("Last-Event-ID", last)
			}
			if got := eventNames(t, s2, path, h); len(got) != 0 {
				t.Fatalf("GET %s (Last-Event-ID %q): events %v, want none", path, last, got)
			}
		}
	}
	// A resumable run's events outlive the restart (until their retention
	// ends); past their end the stream is empty.
	if got := eventNames(t, s2, resumable+"/stream", replayAll); !containsAll(got, "metadata", "values", "end") {
		t.Fatalf("resumable run after a restart: %v", got)
	}
	if got := eventNames(t, s2, resumable+"/stream", http.Header{"Last-Event-ID": {"99"}}); len(got) != 0 {
		t.Fatalf("resumable run after its last event: %v", got)
	}
	s2.Must(200, "GET", plain, nil)
}

// A status filter applies before paging, and the total counts only runs of
// that status (the older pending run is not among them).
func TestRunSearchFiltersBeforePaging(t *testing.T) {
	s := testutil.StartTestGraphs(t)
	tid := testutil.NewThread(t, s)
	pending := s.Must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "echo", "input": testutil.UserInput("later"), "after_seconds": 600}).Object(t)["run_id"].(string)
	other := testutil.NewThread(t, s)
	for i := 0; i < 3; i++ {
		s.Must(200, "POST", "/threads/"+other+"/runs/wait", map[string]any{"assistant_id": "echo", "input": testutil.UserInput("n")})
	}
	done := s.Must(200, "POST", "/runs/search", map[string]any{"status": "success", "limit": 2})
	if l := done.List(t); len(l) != 2 || done.Header.Get("X-Pagination-Total") != "3" || done.Header.Get("X-Pagination-Next") != "2" {
		t.Fatalf("success search = %d runs, total %q, next %q", len(l), done.Header.Get("X-Pagination-Total"), done.Header.Get("X-Pagination-Next"))
	}
	listed := s.Must(200, "GET", "/threads/"+other+"/runs?status=success&limit=2&offset=2", nil)
	if l := listed.List(t); len(l) != 1 || listed.Header.Get("X-Pagination-Total") != "3" {
		t.Fatalf("thread runs page = %d runs, total %q", len(l), listed.Header.Get("X-Pagination-Total"))
	}
	s.Must(202, "POST", "/threads/"+tid+"/runs/"+pending+"/cancel", nil)
}

// The Location of a /wait answer is a routed path that waits for the same
// run again (the Python SDK follows it when the body is cut off). A
// stateless run's thread and record go when it ends, so its Location
// answers 404 afterwards, as on LangGraph Platform.
func TestWaitLocationJoinsTheRun(t *testing.T) {
	s := testutil.StartTestGraphs(t)
	tid := testutil.NewThread(t, s)
	for _, tc := range []struct {
		path, wantPrefix string
		wantAfter        int
	}{
		{"/runs/wait", "/threads/", 404},
		{"/threads/" + tid + "/runs/wait", "/threads/" + tid + "/runs/", 200},
	} {
		r := s.Must(200, "POST", tc.path, map[string]any{"assistant_id": "echo", "input": testutil.UserInput("where")})
		loc := r.Header.Get("Location")
		if !strings.HasPrefix(loc, tc.wantPrefix) || !strings.HasSuffix(loc, "/join") {
			t.Fatalf("POST %s: Location %q", tc.path, loc)
		}
		again := s.Must(tc.wantAfter, "GET", loc, nil)
		if tc.wantAfter == 200 && testutil.LastMessage(t, again.JSON)["content"] != "echo: where" {
			t.Fatalf("GET %s = %s", loc, again.Raw)
		}
	}
}

// On joins, messages selects the legacy messages/* events and
// messages-tuple the tuple events, as the run stream sends them for those
// modes; an unknown mode is refused.
func TestJoinStreamModeSelectsEvents(t *testing.T) {
	s := testutil.StartTestGraphs(t)
	_, run := finishedRun(t, s, map[string]any{"stream_resumable": true, "stream_mode": []any{"messages", "messages-tuple", "values"}})
	cases := map[string][]string{
		"messages":                    {"metadata", "messages/metadata", "messages/complete", "end"},
		"messages-tuple":              {"metadata", "messages", "end"},
		`["messages-tuple"]`:          {"metadata", "messages", "end"},
		"values&stream_mode=messages": {"metadata", "values", "messages/metadata", "messages/complete", "values", "end"},
	}
	for mode, want := range cases {
		if got := eventNames(t, s, run+"/stream?stream_mode="+mode, replayAll); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("join with stream_mode=%s: %v, want %v", mode, got, want)
		}
	}
	// The run stream itself, for each mode alone.
	tid := testutil.NewThread(t, s)
	for mode, want := range map[string][]string{"messages": cases["messages"], "messages-tuple": cases["messages-tuple"]} {
		resp := s.Stream("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "echo", "input": testutil.UserInput("hi"), "stream_mode": mode}, nil)
		evs, err := testutil.NewSSEReader(resp.Body).All()
		resp.Body.Close()
		got := []string{}
		for _, ev := range evs {
			got = append(got, ev.Event)
		}
		if err != nil || strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("run stream with stream_mode=%s: %v (%v), want %v", mode, got, err, want)
		}
	}
	for _, q := range []string{"bogus", "values&stream_mode=bogus", `["values","nope"]`} {
		s.Must(422, "GET", run+"/stream?stream_mode="+q, nil)
	}
}

// limit=0 in a query string is a page of nothing (SQL's LIMIT 0 on
// LangGraph Platform), with the total still counted; in a JSON body the
// schemas' minimum of 1 refuses it.
func TestListLimitZero(t *testing.T) {
	s := testutil.StartTestGraphs(t)
	tid, _ := finishedRun(t, s, nil)
	runs := s.Must(200, "GET", "/threads/"+tid+"/runs?limit=0", nil)
	if l := runs.List(t); len(l) != 0 || runs.Header.Get("X-Pagination-Total") != "1" || runs.Header.Get("X-Pagination-Next") != "" {
		t.Fatalf("runs?limit=0 = %s (total %q)", runs.Raw, runs.Header.Get("X-Pagination-Total"))
	}
	if l := s.Must(200, "GET", "/threads/"+tid+"/history?limit=0", nil).List(t); len(l) != 0 {
		t.Fatalf("history?limit=0 = %d states", len(l))
	}
	missing := "/threads/" + "00000000-0000-4000-8000-000000000000"
	s.Must(404, "GET", missing+"/runs?limit=0", nil)
	s.Must(404, "GET", missing+"/history?limit=0", nil)
	for _, path := range []string{"/threads/search", "/assistants/search", "/runs/search", "/threads/" + tid + "/history", "/store/items/search"} {
		s.Must(422, "POST", path, map[string]any{"limit": 0})
	}
}

// An assistant always carries context and description, and its schemas
// every schema key, as LangGraph Platform sends them (the Python SDK's
// Assistant and GraphSchema have these keys).
func TestAssistantShape(t *testing.T) {
	s := testutil.StartTestGraphs(t)
	made := s.Must(200, "POST", "/assistants", map[string]any{"graph_id": "echo"}).Object(t)
	for _, a := range []map[string]any{
		made,
		s.Must(200, "GET", "/assistants/"+made["assistant_id"].(string), nil).Object(t),
		s.Must(200, "POST", "/assistants/search", map[string]any{"graph_id": "echo"}).List(t)[0].(map[string]any),
	} {
		if c, ok := a["context"].(map[string]any); !ok || len(c) != 0 {
			t.Fatalf("assistant context = %v, want {}", a["context"])
		}
		if d, ok := a["description"]; !ok || d != nil {
			t.Fatalf("assistant description = %v (present %v), want null", d, ok)
		}
	}
	schemas := s.Must(200, "GET", "/assistants/"+made["assistant_id"].(string)+"/schemas", nil).Object(t)
	for _, k := range []string{"graph_id", "input_schema", "output_schema", "state_schema", "config_schema", "context_schema"} {
		if _, ok := schemas[k]; !ok {
			t.Fatalf("schemas without %q: %v", k, keysOf(schemas))
		}
	}
}
