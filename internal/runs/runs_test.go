package runs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/assistants"
	"agentserver/internal/testutil"
)

func TestRunWaitEcho(t *testing.T) {
	s := testutil.StartTestGraphs(t)
	tid := testutil.NewThread(t, s)
	r := s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "echo", "input": testutil.UserInput("hi")})
	if got := testutil.LastMessage(t, r.JSON)["content"]; got != "echo: hi" {
		t.Fatalf("last message = %v", got)
	}
	loc := r.Header.Get("Content-Location")
	if !strings.HasPrefix(loc, "/threads/"+tid+"/runs/") {
		t.Fatalf("Content-Location = %q", loc)
	}
	rid := strings.TrimPrefix(loc, "/threads/"+tid+"/runs/")
	run := s.Must(200, "GET", loc, nil).Object(t)
	if run["status"] != "success" || run["assistant_id"] != assistants.SystemID("echo").String() {
		t.Fatalf("run = %v", run)
	}
	if run["multitask_strategy"] != "enqueue" || run["kwargs"].(map[string]any)["input"] == nil {
		t.Fatalf("run fields = %v", run)
	}
	th := s.Must(200, "GET", "/threads/"+tid, nil).Object(t)
	if th["status"] != "idle" || th["metadata"].(map[string]any)["graph_id"] != "echo" {
		t.Fatalf("thread after run = %v", th)
	}
	if got := testutil.LastMessage(t, th["values"])["content"]; got != "echo: hi" {
		t.Fatalf("thread values = %v", th["values"])
	}
	hist := s.Must(200, "POST", "/threads/"+tid+"/history", map[string]any{"limit": 10}).List(t)
	if len(hist) != 3 {
		t.Fatalf("history = %d checkpoints, want input + __start__ + echo", len(hist))
	}
	newest := hist[0].(map[string]any)["metadata"].(map[string]any)
	if newest["source"] != "loop" || newest["run_id"] != rid || newest["writes"].(map[string]any)["echo"] == nil {
		t.Fatalf("checkpoint metadata = %v", newest)
	}
	list := s.Must(200, "GET", "/threads/"+tid+"/runs", nil)
	if len(list.List(t)) != 1 || list.Header.Get("X-Pagination-Total") != "1" {
		t.Fatalf("list = %s", list.Raw)
	}
	// A second run continues the conversation.
	r2 := s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "echo", "input": testutil.UserInput("again")})
	if msgs := r2.JSON.(map[string]any)["messages"].([]any); len(msgs) != 4 {
		t.Fatalf("messages after 2 runs = %d", len(msgs))
	}
}

func TestRunCreateAndJoin(t *testing.T) {
	s := testutil.StartTestGraphs(t)
	tid := testutil.NewThread(t, s)
	run := s.Must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "gated", "input": map[string]any{"gate": "join-" + tid}}).Object(t)
	rid := run["run_id"].(string)
	if run["status"] != "pending" || run["attempt"] != 0.0 || run["started_at"] != nil || run["ended_at"] != nil {
		t.Fatalf("created run = %v; want pending, attempt 0, no start or end", run)
	}
	testutil.WaitStatus(t, s, tid, rid, "running")
	if r := s.Must(200, "GET", "/threads/"+tid+"/runs/"+rid, nil).Object(t); r["attempt"] != 1.0 || r["started_at"] == nil || r["ended_at"] != nil {
		t.Fatalf("running run = %v; want attempt 1, a start and no end", r)
	}
	if st := s.Must(200, "GET", "/threads/"+tid, nil).Object(t)["status"]; st != "busy" {
		t.Fatalf("thread status while running = %v", st)
	}
	s.Must(409, "POST", "/threads/"+tid+"/state", map[string]any{"values": map[string]any{"x": 1}})
	s.Must(409, "DELETE", "/threads/"+tid+"/runs/"+rid, nil)
	joined := make(chan testutil.Response, 1)
	go func() { joined <- s.Try("GET", "/threads/"+tid+"/runs/"+rid+"/join", nil) }()
	testutil.Release("join-" + tid)
	j := <-joined
	if j.Status != 200 || testutil.LastMessage(t, j.JSON)["content"] != "released join-"+tid {
		t.Fatalf("join = %d %s", j.Status, j.Raw)
	}
	if testutil.RunStatus(t, s, tid, rid) != "success" {
		t.Fatal("run not success after join")
	}
	ended := s.Must(200, "GET", "/threads/"+tid+"/runs/"+rid, nil).Object(t)
	started, _ := time.Parse(time.RFC3339Nano, ended["started_at"].(string))
	if end, err := time.Parse(time.RFC3339Nano, fmt.Sprint(ended["ended_at"])); err != nil || end.Before(started) {
		t.Fatalf("ended run: started_at %v, ended_at %v (%v)", ended["started_at"], ended["ended_at"], err)
	}
	s.Must(404, "GET", "/threads/"+tid+"/runs/"+uuid.NewString(), nil)
	other := testutil.NewThread(t, s)
	s.Must(404, "GET", "/threads/"+other+"/runs/"+rid, nil)
	s.Must(204, "DELETE", "/threads/"+tid+"/runs/"+rid, nil)
	s.Must(404, "GET", "/threads/"+tid+"/runs/"+rid, nil)
}

func TestRunStreamModes(t *testing.T) {
	s := testutil.StartTestGraphs(t)
	tid := testutil.NewThread(t, s)
	resp := s.Stream("POST", "/threads/"+tid+"/runs/stream", map[string]any{
		"assistant_id": "echo", "input": testutil.UserInput("stream me"),
		"stream_mode": []string{"values", "updates", "messages-tuple", "custom", "tasks", "checkpoints", "debug", "messages"},
	}, nil)
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Location"), "/threads/"+tid+"/runs/") {
		t.Fatalf("Content-Location = %q", resp.Header.Get("Content-Location"))
	}
	evs, err := testutil.NewSSEReader(resp.Body).All()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]int{}
	for _, e := range evs {
		names[e.Event]++
		if e.ID != "" {
			t.Fatalf("non-resumable stream carries ids: %+v", e)
		}
	}
	if evs[0].Event != "metadata" || evs[0].Data.(map[string]any)["attempt"] != 1.0 || evs[0].Data.(map[string]any)["run_id"] == nil {
		t.Fatalf("first event = %+v", evs[0])
	}
	if evs[len(evs)-1].Event != "end" {
		t.Fatalf("last event = %+v", evs[len(evs)-1])
	}
	for _, want := range []string{"values", "updates", "messages", "tasks", "checkpoints", "debug", "messages/metadata", "messages/complete"} {
		if names[want] == 0 {
			t.Errorf("no %q event in %v", want, names)
		}
	}
	if names["values"] != 2 {
		t.Errorf("values events = %d, want 2 (input and echo steps)", names["values"])
	}
	for _, e := range evs {
		switch e.Event {
		case "updates":
			if _, ok := e.Data.(map[string]any)["echo"]; !ok {
				t.Errorf("updates event not keyed by node: %s", e.Raw)
			}
		case "messages":
			pair := e.Data.([]any)
			if pair[0].(map[string]any)["content"] != "echo: stream me" || pair[1].(map[string]any)["langgraph_node"] != "echo" {
				t.Errorf("messages event = %s", e.Raw)
			}
		case "checkpoints":
			// Each task has every field LangGraph clients read, interrupts a list.
			for _, task := range e.Data.(map[string]any)["tasks"].([]any) {
				m := task.(map[string]any)
				if _, ok := m["interrupts"].([]any); !ok || m["id"] == nil || m["name"] == nil || !hasKeys(m, "error", "state") {
					t.Errorf("checkpoints task = %s", e.Raw)
				}
			}
		}
	}
}

func hasKeys(m map[string]any, keys ...string) bool {
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			return false
		}
	}
	return true
}

func TestResumableStreamAndLastEventID(t *testing.T) {
	s := testutil.StartTestGraphs(t)
	tid := testutil.NewThread(t, s)
	gate := "resume-" + tid
	resp := s.Stream("POST", "/threads/"+tid+"/runs/stream", map[string]any{
		"assistant_id": "gated", "input": map[string]any{"gate": gate}, "stream_resumable": true,
		"stream_mode": []string{"values", "custom"}, "on_disconnect": "continue",
	}, nil)
	loc := resp.Header.Get("Location")
	if !strings.HasSuffix(loc, "/stream") {
		t.Fatalf("Location = %q", loc)
	}
	rd := testutil.NewSSEReader(resp.Body)
	first, _ := rd.Next()
	second, _ := rd.Next()
	if first.ID != "1" || first.Event != "metadata" || second.ID != "2" {
		t.Fatalf("first events = %+v %+v", first, second)
	}
	resp.Body.Close() // the client drops; on_disconnect=continue keeps the run
	testutil.Release(gate)
	rid := strings.TrimSuffix(strings.TrimPrefix(loc, "/threads/"+tid+"/runs/"), "/stream")
	testutil.WaitStatus(t, s, tid, rid, "success")

	for _, c := range []struct {
		last  string
		first string
	}{{"-1", "1"}, {"1", "2"}, {"2", "3"}} {
		j := s.Stream("GET", loc, nil, http.Header{"Last-Event-ID": {c.last}})
		evs, err := testutil.NewSSEReader(j.Body).All()
		j.Body.Close()
		if err != nil || len(evs) == 0 || evs[0].ID != c.first || evs[len(evs)-1].Event != "end" {
			t.Fatalf("Last-Event-ID %s: %v %+v", c.last, err, evs)
		}
	}
	// Filtered join: only values (plus control events).
	j := s.Stream("GET", loc+`?stream_mode=["values"]`, nil, http.Header{"Last-Event-ID": {"-1"}})
	evs, _ := testutil.NewSSEReader(j.Body).All()
	j.Body.Close()
	for _, e := range evs {
		if e.Event == "custom" {
			t.Fatalf("filter let a custom event through: %+v", evs)
		}
	}
}

func TestJoinNonResumableSeesOnlyNewEvents(t *testing.T) {
	s := testutil.StartTestGraphs(t)
	tid := testutil.NewThread(t, s)
	gate := "live-" + tid
	first := s.Stream("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "gated", "input": map[string]any{"gate": gate}, "stream_mode": []string{"values", "custom"}, "on_disconnect": "continue"}, nil)
	defer first.Body.Close()
	rid := strings.TrimPrefix(first.Header.Get("Content-Location"), "/threads/"+tid+"/runs/")
	rd := testutil.NewSSEReader(first.Body)
	for {
		ev, err := rd.Next()
		if err != nil {
			t.Fatalf("first stream ended before the custom event: %v", err)
		}
		if ev.Event == "custom" {
			break // the node is now waiting on its gate
		}
	}
	j := s.Stream("GET", "/threads/"+tid+"/runs/"+rid+"/stream", nil, nil)
	defer j.Body.Close()
	// The metadata and custom events happened before the join.
	go testutil.Release(gate)
	evs, err := testutil.NewSSEReader(j.Body).All()
	if err != nil {
		t.Fatal(err)
	}
	// A join starts with the run's metadata, then only what happens next:
	// the custom event emitted before the join is not replayed.
	if len(evs) < 2 || evs[0].Event != "metadata" || evs[len(evs)-1].Event != "end" {
		t.Fatalf("join events = %+v", evs)
	}
	for _, e := range evs {
		if e.Event == "custom" {
			t.Fatalf("join replayed an old event: %+v", e)
		}
	}
	// Joining a finished non-resumable run: an empty stream that closes.
	j2 := s.Stream("GET", "/threads/"+tid+"/runs/"+rid+"/stream", nil, nil)
	evs2, _ := testutil.NewSSEReader(j2.Body).All()
	j2.Body.Close()
	if len(evs2) != 0 {
		t.Fatalf("join of a finished run = %+v", evs2)
	}
}

func TestMultitaskStrategies(t *testing.T) {
	s := testutil.StartTestGraphs(t)
	start := func(tid, gate, strategy string) testutil.Response {
		body := map[string]any{"assistant_id": "gated", "input": map[string]any{"gate": gate}}
		if strategy != "" {
			body["multitask_strategy"] = strategy
		}
		return s.Do("POST", "/threads/"+tid+"/runs", body)
	}
	t.Run("reject", func(t *testing.T) {
		tid := testutil.NewThread(t, s)
		first := start(tid, "rj1-"+tid, "").Object(t)["run_id"].(string)
		testutil.WaitStatus(t, s, tid, first, "running")
		r := start(tid, "rj2-"+tid, "reject")
		if r.Status != 409 {
			t.Fatalf("reject: %d %s", r.Status, r.Raw)
		}
		testutil.Release("rj1-" + tid)
		testutil.WaitStatus(t, s, tid, first, "success")
	})
	t.Run("interrupt", func(t *testing.T) {
		tid := testutil.NewThread(t, s)
		first := start(tid, "in1-"+tid, "").Object(t)["run_id"].(string)
		testutil.WaitStatus(t, s, tid, first, "running")
		testutil.Release("in2-" + tid)
		second := start(tid, "in2-"+tid, "interrupt").Object(t)["run_id"].(string)
		testutil.WaitStatus(t, s, tid, first, "interrupted")
		testutil.WaitStatus(t, s, tid, second, "success")
		vals := s.Must(200, "GET", "/threads/"+tid+"/state", nil).Object(t)["values"]
		if testutil.LastMessage(t, vals)["content"] != "released in2-"+tid {
			t.Fatalf("state after interrupt = %v", vals)
		}
	})
	t.Run("rollback", func(t *testing.T) {
		tid := testutil.NewThread(t, s)
		first := start(tid, "rb1-"+tid, "").Object(t)["run_id"].(string)
		testutil.WaitStatus(t, s, tid, first, "running")
		testutil.Release("rb2-" + tid)
		second := start(tid, "rb2-"+tid, "rollback").Object(t)["run_id"].(string)
		testutil.Eventually(t, 5*time.Second, "rolled back run to disappear", func() bool {
			return s.Do("GET", "/threads/"+tid+"/runs/"+first, nil).Status == 404
		})
		testutil.WaitStatus(t, s, tid, second, "success")
		hist := s.Must(200, "POST", "/threads/"+tid+"/history", map[string]any{"limit": 20}).List(t)
		for _, h := range hist {
			if h.(map[string]any)["metadata"].(map[string]any)["run_id"] == first {
				t.Fatal("a checkpoint of the rolled back run survived")
			}
		}
	})
	t.Run("enqueue", func(t *testing.T) {
		tid := testutil.NewThread(t, s)
		first := start(tid, "eq1-"+tid, "enqueue").Object(t)["run_id"].(string)
		second := start(tid, "eq2-"+tid, "enqueue").Object(t)["run_id"].(string)
		testutil.WaitStatus(t, s, tid, first, "running")
		testutil.Release("eq2-" + tid)
		if st := testutil.RunStatus(t, s, tid, second); st != "pending" {
			t.Fatalf("second run started before the first ended: %s", st)
		}
		testutil.Release("eq1-" + tid)
		testutil.WaitStatus(t, s, tid, second, "success")
		if testutil.RunStatus(t, s, tid, first) != "success" {
			t.Fatal("first run did not succeed")
		}
	})
}

func TestCancel(t *testing.T) {
	s := testutil.StartTestGraphs(t)
	tid := testutil.NewThread(t, s)
	rid := s.Must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "gated", "input": map[string]any{"gate": "never-" + tid}}).Object(t)["run_id"].(string)
	testutil.WaitStatus(t, s, tid, rid, "running")
	began := time.Now()
	s.Must(204, "POST", "/threads/"+tid+"/runs/"+rid+"/cancel?wait=1&action=interrupt", nil)
	if time.Since(began) > 2*time.Second {
		t.Fatal("cancel took too long")
	}
	if testutil.RunStatus(t, s, tid, rid) != "interrupted" {
		t.Fatal("run not interrupted after cancel with wait")
	}
	if st := s.Must(200, "GET", "/threads/"+tid, nil).Object(t)["status"]; st != "idle" {
		t.Fatalf("thread after cancel = %v", st)
	}
	// Cancelling a finished run is a no-op 2xx.
	s.Must(202, "POST", "/threads/"+tid+"/runs/"+rid+"/cancel?wait=false", nil)
	if testutil.RunStatus(t, s, tid, rid) != "interrupted" {
		t.Fatal("cancel of a finished run changed it")
	}
	s.Must(404, "POST", "/threads/"+tid+"/runs/"+uuid.NewString()+"/cancel", nil)
	s.Must(404, "POST", "/threads/"+testutil.NewThread(t, s)+"/runs/"+rid+"/cancel", nil)
	s.Must(422, "POST", "/threads/"+tid+"/runs/"+rid+"/cancel?wait=maybe", nil)

	// wait=0 answers 202 at once; rollback deletes the run.
	rid2 := s.Must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "gated", "input": map[string]any{"gate": "never2-" + tid}}).Object(t)["run_id"].(string)
	testutil.WaitStatus(t, s, tid, rid2, "running")
	s.Must(202, "POST", "/threads/"+tid+"/runs/"+rid2+"/cancel?wait=0&action=rollback", nil)
	testutil.Eventually(t, 5*time.Second, "rolled back run to be deleted", func() bool {
		return s.Do("GET", "/threads/"+tid+"/runs/"+rid2, nil).Status == 404
	})

	// A pending run (delayed) is cancelled without ever starting.
	rid3 := s.Must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "echo", "input": testutil.UserInput("later"), "after_seconds": 60}).Object(t)["run_id"].(string)
	s.Must(204, "POST", "/threads/"+tid+"/runs/"+rid3+"/cancel?wait=true", nil)
	if testutil.RunStatus(t, s, tid, rid3) != "interrupted" {
		t.Fatal("pending run not interrupted")
	}
}

func TestFailingRunAndThreadError(t *testing.T) {
	s := testutil.StartTestGraphs(t)
	tid := testutil.NewThread(t, s)
	r := s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "failing", "input": map[string]any{"x": 1}})
	e := r.Object(t)["__error__"].(map[string]any)
	if !strings.Contains(e["message"].(string), "boom") || e["error"] == "" {
		t.Fatalf("__error__ = %v", e)
	}
	th := s.Must(200, "GET", "/threads/"+tid, nil).Object(t)
	if th["status"] != "error" {
		t.Fatalf("thread after failure = %v", th)
	}
	runs := s.Must(200, "GET", "/threads/"+tid+"/runs?status=error", nil).List(t)
	if len(runs) != 1 || !strings.Contains(runs[0].(map[string]any)["error"].(string), "boom") {
		t.Fatalf("failed runs = %v", runs)
	}
	resp := s.Stream("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "failing", "input": map[string]any{}}, nil)
	evs, _ := testutil.NewSSEReader(resp.Body).All()
	resp.Body.Close()
	found := false
	for _, ev := range evs {
		found = found || (ev.Event == "error" && strings.Contains(ev.Raw, "boom"))
	}
	if !found {
		t.Fatalf("no error event: %+v", evs)
	}
}

func TestInterruptBeforeAndResume(t *testing.T) {
	s := testutil.StartTestGraphs(t)
	tid := testutil.NewThread(t, s)
	r := s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "steps", "input": map[string]any{"trail": []any{}}, "interrupt_before": []string{"b"}})
	if trail := r.Object(t)["trail"].([]any); len(trail) != 1 {
		t.Fatalf("trail at interrupt = %v", trail)
	}
	th := s.Must(200, "GET", "/threads/"+tid, nil).Object(t)
	st := s.Must(200, "GET", "/threads/"+tid+"/state", nil).Object(t)
	if th["status"] != "interrupted" || st["next"].([]any)[0] != "b" {
		t.Fatalf("thread %v, next %v", th["status"], st["next"])
	}
	r2 := s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "steps", "input": nil})
	if trail := r2.Object(t)["trail"].([]any); len(trail) != 3 {
		t.Fatalf("trail after resume = %v", trail)
	}
	if st := s.Must(200, "GET", "/threads/"+tid, nil).Object(t)["status"]; st != "idle" {
		t.Fatalf("thread after resume = %v", st)
	}
	// interrupt_after "*" pauses after the first node; command.goto jumps.
	tid2 := testutil.NewThread(t, s)
	s.Must(200, "POST", "/threads/"+tid2+"/runs/wait", map[string]any{"assistant_id": "steps", "input": map[string]any{}, "interrupt_after": "*"})
	if next := s.Must(200, "GET", "/threads/"+tid2+"/state", nil).Object(t)["next"].([]any); len(next) != 1 || next[0] != "b" {
		t.Fatalf("next after interrupt_after = %v", next)
	}
	g := s.Must(200, "POST", "/threads/"+tid2+"/runs/wait", map[string]any{"assistant_id": "steps", "command": map[string]any{"goto": "c"}})
	if trail := g.Object(t)["trail"].([]any); len(trail) != 2 || trail[1] != "c" {
		t.Fatalf("trail after goto = %v", trail)
	}
}

func TestRunOptions(t *testing.T) {
	s := testutil.StartTestGraphs(t)
	t.Run("if_not_exists", func(t *testing.T) {
		id := uuid.NewString()
		s.Must(404, "POST", "/threads/"+id+"/runs", map[string]any{"assistant_id": "echo", "input": testutil.UserInput("x")})
		s.Must(200, "POST", "/threads/"+id+"/runs/wait", map[string]any{"assistant_id": "echo", "input": testutil.UserInput("x"), "if_not_exists": "create"})
		if th := s.Must(200, "GET", "/threads/"+id, nil).Object(t); th["metadata"].(map[string]any)["graph_id"] != "echo" {
			t.Fatalf("created thread = %v", th)
		}
	})
	t.Run("unknown assistant", func(t *testing.T) {
		tid := testutil.NewThread(t, s)
		s.Must(404, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": uuid.NewString(), "input": testutil.UserInput("x")})
		s.Must(404, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "nope", "input": testutil.UserInput("x")})
		s.Must(422, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "echo", "stream_mode": "sideways"})
		if n := len(s.Must(200, "GET", "/threads/"+tid+"/runs", nil).List(t)); n != 0 {
			t.Fatalf("rejected creations left %d runs", n)
		}
	})
	t.Run("after_seconds", func(t *testing.T) {
		tid := testutil.NewThread(t, s)
		rid := s.Must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "echo", "input": testutil.UserInput("x"), "after_seconds": 0.3}).Object(t)["run_id"].(string)
		if st := testutil.RunStatus(t, s, tid, rid); st != "pending" {
			t.Fatalf("delayed run is %s at once", st)
		}
		testutil.WaitStatus(t, s, tid, rid, "success")
	})
	t.Run("fork from checkpoint", func(t *testing.T) {
		tid := testutil.NewThread(t, s)
		s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "echo", "input": testutil.UserInput("one")})
		hist := s.Must(200, "POST", "/threads/"+tid+"/history", map[string]any{"limit": 10}).List(t)
		// From the input checkpoint, before "one": the new input replaces
		// it (an edited first message); from the __start__ step, after it.
		for i, want := range []int{2, 3} {
			from := hist[len(hist)-1-i].(map[string]any)["checkpoint"].(map[string]any)["checkpoint_id"].(string)
			r := s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "echo", "input": testutil.UserInput("two"), "checkpoint_id": from})
			msgs := r.Object(t)["messages"].([]any)
			if len(msgs) != want || testutil.LastMessage(t, r.JSON)["content"] != "echo: two" {
				t.Fatalf("fork from checkpoint %d (oldest first): messages = %v, want %d", i, msgs, want)
			}
		}
	})
	t.Run("config, context and metadata", func(t *testing.T) {
		tid := testutil.NewThread(t, s)
		rid := s.Must(200, "POST", "/threads/"+tid+"/runs", map[string]any{
			"assistant_id": "echo", "input": testutil.UserInput("x"), "metadata": map[string]any{"tag": "m"},
			"config": map[string]any{"configurable": map[string]any{"k": "v"}}, "context": map[string]any{"c": 1},
		}).Object(t)["run_id"].(string)
		run := s.Must(200, "GET", "/threads/"+tid+"/runs/"+rid, nil).Object(t)
		kw := run["kwargs"].(map[string]any)
		conf := kw["config"].(map[string]any)["configurable"].(map[string]any)
		if run["metadata"].(map[string]any)["tag"] != "m" || conf["k"] != "v" || conf["run_id"] != rid || kw["context"].(map[string]any)["c"] != 1.0 {
			t.Fatalf("run = %v", run)
		}
	})
}

func TestStatelessRuns(t *testing.T) {
	s := testutil.StartTestGraphs(t)
	r := s.Must(200, "POST", "/runs/wait", map[string]any{"assistant_id": "echo", "input": testutil.UserInput("solo")})
	if testutil.LastMessage(t, r.JSON)["content"] != "echo: solo" {
		t.Fatalf("stateless wait = %s", r.Raw)
	}
	if loc := r.Header.Get("Content-Location"); !strings.HasPrefix(loc, "/runs/") {
		t.Fatalf("stateless Content-Location = %q", loc)
	}
	if n := s.Must(200, "POST", "/threads/count", nil).JSON; n != 0.0 {
		t.Fatalf("temporary thread kept: %v threads", n)
	}
	kept := s.Must(200, "POST", "/runs", map[string]any{"assistant_id": "echo", "input": testutil.UserInput("keep"), "on_completion": "keep"}).Object(t)
	tid := kept["thread_id"].(string)
	testutil.Eventually(t, 5*time.Second, "kept thread to be idle", func() bool {
		r := s.Do("GET", "/threads/"+tid, nil)
		return r.Status == 200 && r.Object(t)["status"] == "idle"
	})
	resp := s.Stream("POST", "/runs/stream", map[string]any{"assistant_id": "echo", "input": testutil.UserInput("s"), "stream_mode": "updates"}, nil)
	evs, _ := testutil.NewSSEReader(resp.Body).All()
	resp.Body.Close()
	if len(evs) < 3 || evs[1].Event != "updates" {
		t.Fatalf("stateless stream = %+v", evs)
	}
	batch := s.Must(200, "POST", "/runs/batch", []any{
		map[string]any{"assistant_id": "echo", "input": testutil.UserInput("b1")},
		map[string]any{"assistant_id": "echo", "input": testutil.UserInput("b2")},
	}).List(t)
	if len(batch) != 2 {
		t.Fatalf("batch = %v", batch)
	}
	s.Must(422, "POST", "/runs/batch", []any{})
}

func TestAgentProtocolRuns(t *testing.T) {
	s := testutil.StartTestGraphs(t)
	tid := testutil.NewThread(t, s)
	run := s.Must(200, "POST", "/runs", map[string]any{"agent_id": "gated", "thread_id": tid, "input": map[string]any{"gate": "ap-" + tid}}).Object(t)
	rid := run["run_id"].(string)
	if run["thread_id"] != tid || run["agent_id"] == nil {
		t.Fatalf("AP run = %v", run)
	}
	testutil.Eventually(t, 5*time.Second, "run to start", func() bool { return testutil.RunStatus(t, s, tid, rid) == "running" })
	if st := s.Must(200, "GET", "/runs/"+rid, nil).Object(t)["status"]; st != "pending" {
		t.Fatalf("AP status of a running run = %v, want pending", st)
	}
	found := s.Must(200, "POST", "/runs/search", map[string]any{"thread_id": tid, "status": "pending"}).List(t)
	if len(found) != 1 {
		t.Fatalf("AP search = %v", found)
	}
	testutil.Release("ap-" + tid)
	w := s.Must(200, "GET", "/runs/"+rid+"/wait", nil).Object(t)
	if w["run"].(map[string]any)["status"] != "success" || w["values"] == nil || len(w["messages"].([]any)) != 1 {
		t.Fatalf("AP wait = %v", w)
	}
	aw := s.Must(200, "POST", "/runs/wait", map[string]any{"agent_id": "echo", "thread_id": tid, "messages": []any{map[string]any{"role": "user", "content": "ap"}}}).Object(t)
	if aw["run"] == nil || testutil.LastMessage(t, aw["values"])["content"] != "echo: ap" {
		t.Fatalf("AP create+wait = %v", aw)
	}
	s.Must(204, "POST", "/runs/"+rid+"/cancel?wait=1", nil)
	s.Must(204, "DELETE", "/runs/"+rid, nil)
	s.Must(404, "GET", "/runs/"+rid, nil)
}

func TestWebhook(t *testing.T) {
	var mu sync.Mutex
	var got []map[string]any
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		got = append(got, body)
		mu.Unlock()
	}))
	defer hook.Close()
	s := testutil.StartTestGraphs(t)
	tid := testutil.NewThread(t, s)
	s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "echo", "input": testutil.UserInput("hook"), "webhook": hook.URL + "/done"})
	testutil.Eventually(t, 5*time.Second, "webhook delivery", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == 1
	})
	if got[0]["status"] != "success" || got[0]["thread_id"] != tid || testutil.LastMessage(t, got[0]["values"])["content"] != "echo: hook" {
		t.Fatalf("webhook body = %v", got[0])
	}
	s.Must(422, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "echo", "webhook": "ftp://x"})
}

func TestOnDisconnectCancel(t *testing.T) {
	s := testutil.StartTestGraphs(t)
	tid := testutil.NewThread(t, s)
	resp := s.Stream("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "gated", "input": map[string]any{"gate": "dc-" + tid}, "stream_mode": "custom"}, nil)
	rid := strings.TrimPrefix(resp.Header.Get("Content-Location"), "/threads/"+tid+"/runs/")
	rd := testutil.NewSSEReader(resp.Body)
	rd.Next() // metadata
	rd.Next() // custom: the node is waiting
	resp.Body.Close()
	testutil.WaitStatus(t, s, tid, rid, "interrupted")
}

func TestThreadJoinStream(t *testing.T) {
	s := testutil.StartTestGraphs(t)
	seen := threadRunEvents(t, s, testutil.NewThread(t, s), "")
	if !seen["metadata"] || !seen["values"] {
		t.Fatalf("thread stream events = %v", seen)
	}
}

func TestRunsAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	s := testutil.StartServer(t, testutil.Options{Graphs: testutil.TestGraphs, DataDir: dir})
	tid := testutil.NewThread(t, s)
	done := s.Must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "echo", "input": testutil.UserInput("before")}).Object(t)["run_id"].(string)
	testutil.WaitStatus(t, s, tid, done, "success")
	gate := "restart-" + tid
	rid := s.Must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "gated", "input": map[string]any{"gate": gate, "messages": []any{map[string]any{"role": "user", "content": "once"}}}}).Object(t)["run_id"].(string)
	testutil.WaitStatus(t, s, tid, rid, "running")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	s2 := testutil.StartServer(t, testutil.Options{Graphs: testutil.TestGraphs, DataDir: dir})
	// A finished non-resumable run has no retained events: an empty stream.
	j := s2.Stream("GET", "/threads/"+tid+"/runs/"+done+"/stream", nil, nil)
	evs, err := testutil.NewSSEReader(j.Body).All()
	j.Body.Close()
	if j.StatusCode != 200 || err != nil || len(evs) != 0 {
		t.Fatalf("join after restart: %d %v %+v", j.StatusCode, err, evs)
	}
	// The interrupted run resumes where it stopped: its input is not applied twice.
	testutil.Release(gate)
	testutil.WaitStatus(t, s2, tid, rid, "success")
	run := s2.Must(200, "GET", "/threads/"+tid+"/runs/"+rid, nil).Object(t)
	if run["status"] != "success" {
		t.Fatalf("run after restart = %v", run)
	}
	count := 0
	for _, m := range s2.Must(200, "GET", "/threads/"+tid+"/state", nil).Object(t)["values"].(map[string]any)["messages"].([]any) {
		if m.(map[string]any)["content"] == "once" {
			count++
		}
	}
	if count != 1 {
		t.Fatalf("input applied %d times after a graceful restart", count)
	}
}

func TestCancelRunWaitingForWorker(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{Graphs: testutil.TestGraphs, Jobs: 1})
	busy, idle := testutil.NewThread(t, s), testutil.NewThread(t, s)
	gate := "slot-" + busy
	blocker := s.Must(200, "POST", "/threads/"+busy+"/runs", map[string]any{"assistant_id": "gated", "input": map[string]any{"gate": gate}}).Object(t)["run_id"].(string)
	testutil.WaitStatus(t, s, busy, blocker, "running")
	queued := s.Must(200, "POST", "/threads/"+idle+"/runs", map[string]any{"assistant_id": "echo", "input": testutil.UserInput("x")}).Object(t)["run_id"].(string)
	s.Must(204, "POST", "/threads/"+idle+"/runs/"+queued+"/cancel?wait=1", nil)
	j := s.Do("GET", "/threads/"+idle+"/runs/"+queued+"/join", nil)
	if j.Status != 200 || testutil.RunStatus(t, s, idle, queued) != "interrupted" {
		t.Fatalf("join of a cancelled queued run: %d %s", j.Status, j.Raw)
	}
	testutil.Release(gate)
	testutil.WaitStatus(t, s, busy, blocker, "success")
	if testutil.RunStatus(t, s, idle, queued) != "interrupted" {
		t.Fatal("the cancelled run ran once a worker was free")
	}
}

func TestDeleteThreadStopsItsRuns(t *testing.T) {
	s := testutil.StartTestGraphs(t)
	tid := testutil.NewThread(t, s)
	rid := s.Must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "gated", "input": map[string]any{"gate": "del-" + tid}}).Object(t)["run_id"].(string)
	testutil.WaitStatus(t, s, tid, rid, "running")
	s.Must(204, "DELETE", "/threads/"+tid, nil)
	s.Must(404, "GET", "/runs/"+rid, nil)
	s.Must(404, "GET", "/threads/"+tid, nil)
}

func TestGotoEndAndRunSearchPaging(t *testing.T) {
	s := testutil.StartTestGraphs(t)
	tid := testutil.NewThread(t, s)
	r := s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "steps", "command": map[string]any{"update": map[string]any{"trail": []any{"x"}}, "goto": "__end__"}})
	if trail := r.Object(t)["trail"].([]any); len(trail) != 1 {
		t.Fatalf("goto __end__ = %s", r.Raw)
	}
	pending := s.Must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "echo", "input": testutil.UserInput("later"), "after_seconds": 60}).Object(t)["run_id"].(string)
	other := testutil.NewThread(t, s)
	for i := 0; i < 12; i++ {
		s.Must(200, "POST", "/threads/"+other+"/runs/wait", map[string]any{"assistant_id": "echo", "input": testutil.UserInput("n")})
	}
	found := s.Must(200, "POST", "/runs/search", map[string]any{"status": "pending", "limit": 10})
	if l := found.List(t); len(l) != 1 || l[0].(map[string]any)["run_id"] != pending || found.Header.Get("X-Pagination-Total") != "1" {
		t.Fatalf("pending search = %s (total %s)", found.Raw, found.Header.Get("X-Pagination-Total"))
	}
}

// A thread stream client that reconnects with Last-Event-ID gets what it
// missed, including a whole run made while it was away, numbered on from
// where it left, without repeats.
func TestThreadJoinStreamReplaysAfterLastEventID(t *testing.T) {
	s := testutil.StartTestGraphs(t)
	tid := testutil.NewThread(t, s)
	first := s.Stream("GET", "/threads/"+tid+"/stream", nil, nil)
	s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "echo", "input": testutil.UserInput("t1")})
	rd := testutil.NewSSEReader(first.Body)
	var seen []testutil.SSEEvent
	for len(seen) < 2 {
		ev, err := rd.Next()
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, ev)
	}
	first.Body.Close()
	last, err := strconv.ParseInt(seen[1].ID, 10, 64)
	if err != nil {
		t.Fatalf("thread stream event without a numeric id: %+v", seen[1])
	}
	// A second run while nobody listens.
	s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "echo", "input": testutil.UserInput("t2")})

	again := s.Stream("GET", "/threads/"+tid+"/stream", nil, http.Header{"Last-Event-ID": {seen[1].ID}})
	defer again.Body.Close()
	// A missing event would leave the reader waiting: give up after a while.
	giveUp := time.AfterFunc(10*time.Second, func() { again.Body.Close() })
	defer giveUp.Stop()
	rd = testutil.NewSSEReader(again.Body)
	runsDone := 0
	for runsDone < 2 {
		ev, err := rd.Next()
		if err != nil {
			t.Fatalf("replay ended early: %v", err)
		}
		id, err := strconv.ParseInt(ev.ID, 10, 64)
		if err != nil || id <= last {
			t.Fatalf("event %q has id %q after %d: want a larger id", ev.Event, ev.ID, last)
		}
		last = id
		if ev.Event == "run_done" {
			runsDone++
		}
	}
	// Events go on from there, live.
	s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "echo", "input": testutil.UserInput("t3")})
	ev, err := rd.Next()
	if id, _ := strconv.ParseInt(ev.ID, 10, 64); err != nil || ev.Event != "metadata" || id <= last {
		t.Fatalf("live after replay: %+v %v (last id %d)", ev, err, last)
	}
}

// threadRunEvents opens GET /threads/{tid}/stream with query, makes one
// echo run on the thread and returns the names of the events the stream
// carried up to the run's run_done.
func threadRunEvents(t *testing.T, s *testutil.Server, tid, query string) map[string]bool {
	t.Helper()
	resp := s.Stream("GET", "/threads/"+tid+"/stream"+query, nil, nil)
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("thread stream: %d %s", resp.StatusCode, b)
	}
	s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "echo", "input": testutil.UserInput("hi")})
	rd := testutil.NewSSEReader(resp.Body)
	seen := map[string]bool{}
	for !seen["run_done"] {
		ev, err := rd.Next()
		if err != nil {
			t.Fatalf("thread stream ended early: %v (seen %v)", err, seen)
		}
		seen[ev.Event] = true
	}
	return seen
}

// GET /threads/{id}/stream reads LangGraph Platform's stream_modes too.
func TestJoinThreadStreamStreamModes(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{})
	tid := testutil.NewThread(t, s)
	bad := s.Stream("GET", "/threads/"+tid+"/stream?stream_modes=everything", nil, nil)
	bad.Body.Close()
	if bad.StatusCode != 422 {
		t.Fatalf("stream_modes=everything: status %d, want 422", bad.StatusCode)
	}
	if seen := threadRunEvents(t, s, tid, "?stream_modes=lifecycle"); seen["values"] || !seen["metadata"] {
		t.Fatalf("lifecycle stream carried %v", seen)
	}
}
