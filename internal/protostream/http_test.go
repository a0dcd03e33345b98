package protostream_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/llm/scripted"
	"agentserver/internal/testutil"
)

// readUntilRootEnd reads events until the root's terminal lifecycle.
func readUntilRootEnd(t *testing.T, r *testutil.SSEReader) []testutil.SSEEvent {
	t.Helper()
	var out []testutil.SSEEvent
	for {
		ev, err := r.Next()
		if err != nil {
			t.Fatalf("stream ended after %d events: %v", len(out), err)
		}
		out = append(out, ev)
		if isRootEnd(ev) {
			return out
		}
	}
}

func isRootEnd(ev testutil.SSEEvent) bool {
	m, _ := ev.Data.(map[string]any)
	params, _ := m["params"].(map[string]any)
	data, _ := params["data"].(map[string]any)
	ns, _ := params["namespace"].([]any)
	switch data["event"] {
	case "completed", "failed", "interrupted":
		return m["method"] == "lifecycle" && len(ns) == 0
	}
	return false
}

func eventData(ev testutil.SSEEvent) map[string]any {
	d, _ := ev.Data.(map[string]any)["params"].(map[string]any)["data"].(map[string]any)
	return d
}

func eventSeq(t *testing.T, ev testutil.SSEEvent) int64 {
	t.Helper()
	n, err := strconv.ParseInt(ev.ID, 10, 64)
	if err != nil {
		t.Fatalf("event id %q: %v", ev.ID, err)
	}
	return n
}

// Every frame carries the seq as its id, the method as its event name and
// the whole envelope as one-line JSON data; a streamed answer arrives as
// message-start, a text block and message-finish with usage.
func TestProtocolStreamEnvelopesAndMessages(t *testing.T) {
	s, model := testutil.StartAgent(t, "")
	model.Script(scripted.Step{Text: "hello there", Chunks: 3, Usage: &scripted.Usage{PromptTokens: 5, CompletionTokens: 2}})
	tid := uuid.NewString()
	res := testutil.MustSucceed(t, testutil.ProtocolCommand(t, s, tid, 1, "run.start", map[string]any{"assistant_id": "agent", "input": testutil.UserInput("hi")}))
	if _, err := uuid.Parse(fmt.Sprint(res["run_id"])); err != nil {
		t.Fatalf("run.start result = %v", res)
	}
	r := testutil.ProtocolEvents(t, s, tid, map[string]any{"channels": []string{"messages", "lifecycle", "values"}}, nil)
	evs := readUntilRootEnd(t, r)
	var last int64
	var kinds []string
	text := ""
	sawValues := false
	for _, ev := range evs {
		env := ev.Data.(map[string]any)
		seq := eventSeq(t, ev)
		if env["type"] != "event" || env["method"] != ev.Event || env["event_id"] != ev.ID || int64(env["seq"].(float64)) != seq || seq <= last {
			t.Fatalf("bad envelope after seq %d: id %s event %s %v", last, ev.ID, ev.Event, env)
		}
		if strings.Contains(ev.Raw, "\n") {
			t.Fatalf("data spans lines: %q", ev.Raw)
		}
		last = seq
		d := eventData(ev)
		switch ev.Event {
		case "values":
			sawValues = true
		case "messages":
			kinds = append(kinds, d["event"].(string))
			if delta, ok := d["delta"].(map[string]any); ok && delta["type"] == "text-delta" {
				text += delta["text"].(string)
			}
			if d["event"] == "message-finish" && d["usage"].(map[string]any)["output_tokens"] != float64(2) {
				t.Fatalf("message-finish without usage: %v", d)
			}
		}
	}
	want := "message-start content-block-start content-block-delta content-block-delta content-block-delta content-block-finish message-finish"
	if strings.Join(kinds, " ") != want || text != "hello there" || !sawValues {
		t.Fatalf("messages events %v, text %q, values %v", kinds, text, sawValues)
	}
	if d := eventData(evs[0]); evs[0].Event != "lifecycle" || d["event"] != "started" || d["graph_name"] != "agent" {
		t.Fatalf("first event = %v", evs[0].Data)
	}
	if d := eventData(evs[len(evs)-1]); d["event"] != "completed" {
		t.Fatalf("last event = %v", evs[len(evs)-1].Data)
	}
}

// A connection resumes after `since` (or Last-Event-ID) with exactly the
// matching events it missed; seq numbers are the thread's, assigned
// before filtering, so any filter resumes at the same place.
func TestProtocolStreamReplaySince(t *testing.T) {
	s, model := testutil.StartAgent(t, "")
	model.Script(scripted.Step{Text: "one two three", Chunks: 3})
	tid := uuid.NewString()
	testutil.MustSucceed(t, testutil.ProtocolCommand(t, s, tid, 1, "run.start", map[string]any{"assistant_id": "agent", "input": testutil.UserInput("hi")}))
	all := readUntilRootEnd(t, testutil.ProtocolEvents(t, s, tid, map[string]any{"channels": []string{"messages", "lifecycle", "values", "updates", "checkpoints", "tasks", "tools", "input", "custom"}}, nil))
	mid := all[len(all)/2]
	since := eventSeq(t, mid)
	wantRest := all[len(all)/2+1:]
	for name, open := range map[string]func() *testutil.SSEReader{
		"since": func() *testutil.SSEReader {
			return testutil.ProtocolEvents(t, s, tid, map[string]any{"channels": []string{"messages", "lifecycle", "values", "updates", "checkpoints", "tasks", "tools", "input", "custom"}, "since": since}, nil)
		},
		"Last-Event-ID": func() *testutil.SSEReader {
			return testutil.ProtocolEvents(t, s, tid, map[string]any{"channels": []string{"messages", "lifecycle", "values", "updates", "checkpoints", "tasks", "tools", "input", "custom"}}, http.Header{"Last-Event-Id": {mid.ID}})
		},
	} {
		got := readUntilRootEnd(t, open())
		if len(got) != len(wantRest) || got[0].ID != wantRest[0].ID || got[0].Raw != wantRest[0].Raw {
			t.Fatalf("%s: replay after %d gave %d events starting %s, want %d starting %s", name, since, len(got), got[0].ID, len(wantRest), wantRest[0].ID)
		}
	}
	// A narrower filter resumes at the same seq: only lifecycle events after it.
	got := readUntilRootEnd(t, testutil.ProtocolEvents(t, s, tid, map[string]any{"channels": []string{"lifecycle"}, "since": since}, nil))
	for _, ev := range got {
		if ev.Event != "lifecycle" || eventSeq(t, ev) <= since {
			t.Fatalf("filtered replay gave %s %s", ev.ID, ev.Event)
		}
	}
}

// Asking for events older than anything kept is answered with an error
// frame naming the missed range before what is kept.
func TestProtocolStreamReportsGap(t *testing.T) {
	s, model := testutil.StartAgent(t, "")
	model.Script(scripted.Text("hi"))
	tid := uuid.NewString()
	testutil.MustSucceed(t, testutil.ProtocolCommand(t, s, tid, 1, "run.start", map[string]any{"assistant_id": "agent", "input": testutil.UserInput("hi")}))
	r := testutil.ProtocolEvents(t, s, tid, map[string]any{"channels": []string{"lifecycle"}, "since": 1}, nil)
	first, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	d, _ := first.Data.(map[string]any)
	missed, _ := d["missed"].(map[string]any)
	if first.Event != "error" || d["type"] != "error" || missed["from"] != float64(2) {
		t.Fatalf("first frame = %s %v", first.Event, first.Data)
	}
	if evs := readUntilRootEnd(t, r); evs[0].Event != "lifecycle" {
		t.Fatalf("after the gap: %v", evs[0].Data)
	}
}

// Every connection of a thread gets every event, with the same seq, and
// a stream stays open across runs.
func TestProtocolStreamFansOutAcrossRuns(t *testing.T) {
	s, model := testutil.StartAgent(t, "")
	model.Script(scripted.Text("first"), scripted.Text("second"))
	tid := uuid.NewString()
	testutil.MustSucceed(t, testutil.ProtocolCommand(t, s, tid, 1, "run.start", map[string]any{"assistant_id": "agent", "input": testutil.UserInput("a")}))
	body := map[string]any{"channels": []string{"lifecycle", "messages"}}
	a, b := testutil.ProtocolEvents(t, s, tid, body, nil), testutil.ProtocolEvents(t, s, tid, body, nil)
	evA, evB := readUntilRootEnd(t, a), readUntilRootEnd(t, b)
	testutil.MustSucceed(t, testutil.ProtocolCommand(t, s, tid, 2, "run.start", map[string]any{"assistant_id": "agent", "input": testutil.UserInput("b")}))
	evA, evB = append(evA, readUntilRootEnd(t, a)...), append(evB, readUntilRootEnd(t, b)...)
	if len(evA) != len(evB) {
		t.Fatalf("connections got %d and %d events", len(evA), len(evB))
	}
	for i := range evA {
		if evA[i].Raw != evB[i].Raw {
			t.Fatalf("event %d differs: %s / %s", i, evA[i].Raw, evB[i].Raw)
		}
	}
	if !strings.Contains(evA[len(evA)-3].Raw, "") || len(evA) < 8 {
		t.Fatalf("two runs gave %d events", len(evA))
	}
}

// Bad filters and commands are refused with clear errors and change
// nothing.
func TestProtocolStreamRejectsBadInput(t *testing.T) {
	s, _ := testutil.StartAgent(t, "")
	tid := testutil.NewThread(t, s)
	for _, body := range []any{map[string]any{"channels": []string{"bogus"}}, map[string]any{"channels": []string{}}, map[string]any{"channels": []string{"values"}, "depth": -1}, "not an object"} {
		r := s.Do("POST", "/threads/"+tid+"/stream/events", body)
		if r.Status != 422 {
			t.Fatalf("filter %v answered %d", body, r.Status)
		}
	}
	if r := s.Do("POST", "/threads/"+uuid.NewString()+"/stream/events", map[string]any{"channels": []string{"values"}}); r.Status != 404 {
		t.Fatalf("stream of a missing thread answered %d", r.Status)
	}
	if r := s.Do("GET", "/threads/"+tid+"/stream/events", nil); r.Status != 426 {
		t.Fatalf("GET without an upgrade answered %d", r.Status)
	}
	if env := testutil.ProtocolCommand(t, s, tid, 1, "bogus.method", nil); env["type"] != "error" || env["error"] != "unknown_command" || env["id"] != float64(1) {
		t.Fatalf("unknown command = %v", env)
	}
	if env := testutil.ProtocolCommand(t, s, tid, 2, "run.start", map[string]any{"input": nil}); env["error"] != "invalid_argument" {
		t.Fatalf("run.start without assistant = %v", env)
	}
	if env := testutil.ProtocolCommand(t, s, tid, 3, "input.respond", map[string]any{"namespace": []string{}, "interrupt_id": "nope", "response": 1}); env["error"] != "no_such_interrupt" {
		t.Fatalf("respond without an interrupt = %v", env)
	}
	if env := testutil.ProtocolCommand(t, s, tid, 4, "state.fork", map[string]any{"checkpoint_id": uuid.NewString()}); env["error"] != "no_such_checkpoint" {
		t.Fatalf("fork of a missing checkpoint = %v", env)
	}
	if runs := s.Must(200, "GET", "/threads/"+tid+"/runs", nil).List(t); len(runs) != 0 {
		t.Fatalf("refused commands created runs: %v", runs)
	}
}

// An interrupt is announced as input.requested then lifecycle
// interrupted; input.respond resumes it in a new run on the same stream.
func TestProtocolInterruptAndRespond(t *testing.T) {
	s, model := testutil.StartAgent(t, "middleware:\n  interrupt_on:\n    write_file: true\n")
	model.Script(scripted.ToolCalls(scripted.Call("write_file", map[string]any{"file_path": "/x.txt", "content": "v1"})), scripted.Text("written"))
	tid := uuid.NewString()
	testutil.MustSucceed(t, testutil.ProtocolCommand(t, s, tid, 1, "run.start", map[string]any{"assistant_id": "agent", "input": testutil.UserInput("write")}))
	r := testutil.ProtocolEvents(t, s, tid, map[string]any{"channels": []string{"lifecycle", "input", "tools"}}, nil)
	evs := readUntilRootEnd(t, r)
	req := evs[len(evs)-2]
	if req.Event != "input.requested" || eventData(evs[len(evs)-1])["event"] != "interrupted" {
		t.Fatalf("paused run ended with %s %v", req.Event, evs[len(evs)-1].Data)
	}
	id := eventData(req)["interrupt_id"].(string)
	testutil.MustSucceed(t, testutil.ProtocolCommand(t, s, tid, 2, "input.respond", map[string]any{"namespace": []string{}, "interrupt_id": id, "response": map[string]any{"decisions": []any{map[string]any{"type": "approve"}}}}))
	evs = readUntilRootEnd(t, r)
	var tools []string
	for _, ev := range evs {
		if ev.Event == "tools" {
			tools = append(tools, eventData(ev)["event"].(string)+":"+eventData(ev)["tool_name"].(string))
		}
	}
	if evs[0].Event != "input.answered" || eventData(evs[len(evs)-1])["event"] != "completed" || strings.Join(tools, ",") != "tool-started:write_file,tool-finished:write_file" {
		t.Fatalf("resumed run: first %v, tools %v, last %v", evs[0].Data, tools, evs[len(evs)-1].Data)
	}
}

// state.get, state.listCheckpoints and state.fork read and branch the
// thread's checkpoints.
func TestProtocolStateCommands(t *testing.T) {
	s, model := testutil.StartAgent(t, "")
	model.Script(scripted.Text("one"), scripted.Text("forked"))
	tid := uuid.NewString()
	testutil.MustSucceed(t, testutil.ProtocolCommand(t, s, tid, 1, "run.start", map[string]any{"assistant_id": "agent", "input": testutil.UserInput("hi")}))
	readUntilRootEnd(t, testutil.ProtocolEvents(t, s, tid, map[string]any{"channels": []string{"lifecycle"}}, nil))
	st := testutil.MustSucceed(t, testutil.ProtocolCommand(t, s, tid, 2, "state.get", map[string]any{"namespace": []string{}, "keys": []string{"messages"}}))
	if msgs := st["values"].(map[string]any)["messages"].([]any); len(msgs) != 2 || st["checkpoint"].(map[string]any)["id"] == "" {
		t.Fatalf("state.get = %v", st)
	}
	list := testutil.MustSucceed(t, testutil.ProtocolCommand(t, s, tid, 3, "state.listCheckpoints", map[string]any{"limit": 10}))["checkpoints"].([]any)
	if len(list) < 2 {
		t.Fatalf("checkpoints = %v", list)
	}
	oldest := list[len(list)-1].(map[string]any)
	if oldest["id"] == "" || oldest["timestamp"] == "" {
		t.Fatalf("checkpoint summary = %v", oldest)
	}
	fork := testutil.MustSucceed(t, testutil.ProtocolCommand(t, s, tid, 4, "state.fork", map[string]any{"checkpoint_id": oldest["id"]}))
	if fork["thread_id"] != tid || fork["run_id"] == "" {
		t.Fatalf("state.fork = %v", fork)
	}
	testutil.WaitStatus(t, s, tid, fork["run_id"].(string), "success")
	if env := testutil.ProtocolCommand(t, s, tid, 5, "state.get", map[string]any{"namespace": []string{"task:x"}}); env["error"] != "no_such_namespace" {
		t.Fatalf("state of a subagent namespace = %v", env)
	}
	// The run's record ends a moment before its stream says so.
	testutil.Eventually(t, 5*time.Second, "the tree to show the fork completed", func() bool {
		tree := testutil.MustSucceed(t, testutil.ProtocolCommand(t, s, tid, 6, "agent.getTree", map[string]any{}))["tree"].(map[string]any)
		return tree["status"] == "completed" && tree["graph_name"] == "agent"
	})
}

// The protocol's routes need the API key like every other route.
func TestProtocolRoutesNeedTheAPIKey(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{APIKey: "s3cret"})
	tid := uuid.NewString()
	for _, path := range []string{"/threads/" + tid + "/commands", "/threads/" + tid + "/stream/events"} {
		if r := s.Do("POST", path, map[string]any{"id": 1, "method": "state.get", "channels": []string{"values"}}); r.Status != 401 {
			t.Fatalf("POST %s without a key answered %d", path, r.Status)
		}
	}
	h := http.Header{"x-api-key": {"s3cret"}}
	r := s.DoWith("POST", "/threads/"+tid+"/commands", map[string]any{"id": 1, "method": "agent.getTree"}, h)
	if r.Status != 200 || r.Object(t)["type"] != "success" {
		t.Fatalf("with the key: %d %s", r.Status, r.Raw)
	}
}

// A client that leaves releases its connection at once, and the stream
// keeps serving the others.
func TestProtocolStreamReleasesDisconnectedClients(t *testing.T) {
	s, _ := testutil.StartAgent(t, "")
	tid := testutil.NewThread(t, s)
	id := uuid.MustParse(tid)
	body := map[string]any{"channels": []string{"lifecycle"}}
	a := s.Stream("POST", "/threads/"+tid+"/stream/events", body, nil)
	b := s.Stream("POST", "/threads/"+tid+"/stream/events", body, nil)
	defer b.Body.Close()
	testutil.Eventually(t, 5*time.Second, "two connections", func() bool { return s.Server.Stream.Connections(id) == 2 })
	a.Body.Close()
	testutil.Eventually(t, 5*time.Second, "the closed connection to be released", func() bool { return s.Server.Stream.Connections(id) == 1 })
}

// TestProtocolAgentTreeFollowsTheThreadsRuns: agent.getTree's root shows
// the thread's current run even when the stream never announced it — a
// run that started before anyone followed the thread is running, a run
// accepted but not started is started, a cancelled one failed — and the
// stream's own status once it announced the run.
func TestProtocolAgentTreeFollowsTheThreadsRuns(t *testing.T) {
	s := testutil.StartTestGraphs(t)
	tid := testutil.NewThread(t, s)
	root := func(id int) map[string]any {
		return testutil.MustSucceed(t, testutil.ProtocolCommand(t, s, tid, id, "agent.getTree", map[string]any{}))["tree"].(map[string]any)
	}
	if r := root(1); r["status"] != "completed" {
		t.Fatalf("root of a thread without runs = %v", r)
	}

	gate := "tree-" + tid
	first := s.Must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "gated", "input": map[string]any{"gate": gate}}).Object(t)["run_id"].(string)
	testutil.WaitStatus(t, s, tid, first, "running")
	if r := root(2); r["status"] != "running" || r["graph_name"] != "gated" {
		t.Fatalf("root while a run that started unfollowed runs = %v", r)
	}
	second := s.Must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "echo", "input": testutil.UserInput("hi"), "multitask_strategy": "enqueue"}).Object(t)["run_id"].(string)
	if r := root(3); r["status"] != "running" || r["graph_name"] != "gated" {
		t.Fatalf("root with a run running and one queued = %v, want the running one", r)
	}
	testutil.Release(gate)
	testutil.WaitStatus(t, s, tid, second, "success")
	testutil.Eventually(t, 5*time.Second, "the root to show the queued run completed", func() bool {
		r := root(4)
		return r["status"] == "completed" && r["graph_name"] == "echo"
	})

	later := s.Must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "gated", "input": map[string]any{"gate": gate + "-later"}, "after_seconds": 600}).Object(t)["run_id"].(string)
	if r := root(5); r["status"] != "started" || r["graph_name"] != "gated" {
		t.Fatalf("root with a run accepted for later = %v, want started", r)
	}
	s.Must(204, "POST", "/threads/"+tid+"/runs/"+later+"/cancel?wait=1", nil)
	if r := root(6); r["status"] != "failed" {
		t.Fatalf("root after the pending run was cancelled = %v, want failed", r)
	}
}

// TestRunStartStrategyIsTheRESTEnum sends run.start with a
// multitask_strategy outside the contract's enum (under both spellings of
// the field): it is refused as the REST route refuses it, with the same
// reason, and nothing is created; a strategy of the enum is taken. Before,
// any strategy was stored.
func TestRunStartStrategyIsTheRESTEnum(t *testing.T) {
	s := testutil.StartTestGraphs(t)
	tid := testutil.NewThread(t, s)
	rest := s.Do("POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "echo", "multitask_strategy": "explode"})
	testutil.WantError(t, rest, http.StatusUnprocessableEntity, "invalid_request")
	reason := rest.Object(t)["detail"].(string)
	reason = reason[strings.Index(reason, "value is not one of"):]
	fresh := uuid.NewString()
	for i, field := range []string{"multitask_strategy", "multitaskStrategy"} {
		for _, thread := range []string{tid, fresh} {
			env := testutil.ProtocolCommand(t, s, thread, i, "run.start", map[string]any{"assistant_id": "echo", "input": map[string]any{}, field: "explode"})
			if env["type"] != "error" || env["error"] != "invalid_argument" || !strings.Contains(env["message"].(string), reason) {
				t.Fatalf("run.start with %s explode = %v, want the REST reason %q", field, env, reason)
			}
		}
	}
	if runs := s.Must(200, "GET", "/threads/"+tid+"/runs", nil).List(t); len(runs) != 0 {
		t.Fatalf("refused commands created runs: %v", runs)
	}
	s.Must(404, "GET", "/threads/"+fresh, nil)
	res := testutil.MustSucceed(t, testutil.ProtocolCommand(t, s, tid, 3, "run.start", map[string]any{"assistant_id": "echo", "input": map[string]any{}, "multitask_strategy": "reject"}))
	run := s.Must(200, "GET", "/threads/"+tid+"/runs/"+res["run_id"].(string), nil).Object(t)
	if run["multitask_strategy"] != "reject" {
		t.Fatalf("stored strategy = %v", run["multitask_strategy"])
	}
}
