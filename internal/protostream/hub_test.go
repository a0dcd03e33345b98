package protostream

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/storage"
	"agentserver/internal/testutil/testdb"
)

func testRun(thread uuid.UUID) storage.Run {
	return storage.Run{RunID: uuid.Must(uuid.NewV7()), ThreadID: thread, GraphID: "agent", Status: storage.RunSuccess}
}

// playRun publishes a whole run of n values events on a followed thread.
func playRun(t *testing.T, h *Hub, thread uuid.UUID, n int) {
	t.Helper()
	if _, err := h.Follow(thread); err != nil {
		t.Fatal(err)
	}
	run := testRun(thread)
	h.RunStarted(run)
	for i := range n {
		h.RunEvent(run, "values", map[string]any{"i": i})
	}
	h.RunEnded(run, nil)
}

// drain reads every event available now.
func drain(t *testing.T, s *Subscription) []Event {
	t.Helper()
	var out []Event
	for {
		ev, ok, err := s.TryNext()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return out
		}
		out = append(out, ev)
	}
}

var everything = Filter{Channels: []string{"values", "lifecycle", "messages", "tools", "custom", "input", "updates", "checkpoints", "tasks"}}

// Events are durable: a new hub on the same store (a restart) replays them
// from `since` and numbers new events after them.
func TestHubReplaysFromStoreAfterRestart(t *testing.T) {
	db := testdb.Open(t)
	thread := uuid.New()
	h1 := NewHub(db, Options{})
	playRun(t, h1, thread, 5)
	h1.Flush(context.Background())
	s1, err := h1.Subscribe(thread, everything, nil)
	if err != nil {
		t.Fatal(err)
	}
	before := drain(t, s1)
	if len(before) != 8 { // started, running, 5 values, completed
		t.Fatalf("a run of 5 values gave %d events", len(before))
	}
	h2 := NewHub(db, Options{})
	since := before[1].Seq
	s2, err := h2.Subscribe(thread, everything, &since)
	if err != nil {
		t.Fatal(err)
	}
	after := drain(t, s2)
	if len(after) != len(before)-2 {
		t.Fatalf("replayed %d events after a restart, want %d", len(after), len(before)-2)
	}
	for i, ev := range after {
		if ev.Method == GapMethod || string(ev.Raw) != string(before[i+2].Raw) || ev.Method != before[i+2].Method {
			t.Fatalf("event %d differs after a restart: %s / %s", i, ev.Raw, before[i+2].Raw)
		}
	}
	playRun(t, h2, thread, 1)
	more := drain(t, s2)
	if len(more) == 0 || more[0].Seq != before[len(before)-1].Seq+1 {
		t.Fatalf("numbering after a restart starts at %v, want %d", more, before[len(before)-1].Seq+1)
	}
}

// Events older than the retention leave the store; asking for them is
// reported as a gap, and what is still kept follows.
func TestHubReportsGapAfterRetention(t *testing.T) {
	db := testdb.Open(t)
	thread := uuid.New()
	now := time.Now()
	h := NewHub(db, Options{Retention: time.Minute, Keep: 1})
	h.now = func() time.Time { return now }
	playRun(t, h, thread, 3)
	h.Flush(context.Background())
	first := h.LastSeq(thread) - 5
	now = now.Add(2 * time.Minute)
	playRun(t, h, thread, 1)
	h.Flush(context.Background())
	h.sweep(context.Background())
	s, err := h.Subscribe(thread, everything, &first)
	if err != nil {
		t.Fatal(err)
	}
	evs := drain(t, s)
	var gap struct {
		Missed struct{ From, To int64 } `json:"missed"`
	}
	if len(evs) < 2 || evs[0].Method != GapMethod || json.Unmarshal(evs[0].Raw, &gap) != nil || gap.Missed.From != first+1 || evs[0].Seq != gap.Missed.To {
		t.Fatalf("first event = %+v, want a gap from %d", evs, first+1)
	}
	if evs[1].Seq != gap.Missed.To+1 || evs[1].Method == GapMethod {
		t.Fatalf("after the gap %+v came %v", gap.Missed, evs[1])
	}
}

// Events not yet stored are never dropped from memory, however small the
// memory bound.
func TestHubKeepsUnsavedEvents(t *testing.T) {
	db := testdb.Open(t)
	thread := uuid.New()
	h := NewHub(db, Options{Keep: 2, KeepBytes: 1})
	since := int64(0)
	f, _ := h.Follow(thread)
	since = f.log.LastSeq()
	playRun(t, h, thread, 20)
	s, err := h.Subscribe(thread, everything, &since)
	if err != nil {
		t.Fatal(err)
	}
	if evs := drain(t, s); len(evs) != 23 {
		t.Fatalf("replayed %d unsaved events, want 23", len(evs))
	}
	h.Flush(context.Background())
	if n := f.log.Len(); n > 2 {
		t.Errorf("kept %d events in memory after the flush, want at most 2", n)
	}
}

// Every subscriber of a thread gets every event, live.
func TestHubFansOut(t *testing.T) {
	db := testdb.Open(t)
	thread := uuid.New()
	h := NewHub(db, Options{})
	var subs []*Subscription
	for range 3 {
		s, err := h.Subscribe(thread, Filter{Channels: []string{"values"}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, s)
	}
	playRun(t, h, thread, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i, s := range subs {
		for k := range 4 {
			ev, err := s.Next(ctx)
			if err != nil {
				t.Fatalf("subscriber %d event %d: %v", i, k, err)
			}
			var env struct {
				Params struct {
					Data map[string]any `json:"data"`
				} `json:"params"`
			}
			if err := json.Unmarshal(ev.Raw, &env); err != nil || env.Params.Data["i"] != float64(k) {
				t.Fatalf("subscriber %d got %s as event %d", i, ev.Raw, k)
			}
		}
	}
}

func TestFilterMatchesNamespacesAndDepth(t *testing.T) {
	depth0, depth1 := 0, 1
	ev := func(method string, ns ...string) *Event { return &Event{Method: method, Namespace: ns} }
	cases := []struct {
		f    Filter
		ev   *Event
		want bool
	}{
		{Filter{Channels: []string{"values"}}, ev("values"), true},
		{Filter{Channels: []string{"values"}}, ev("messages"), false},
		{Filter{Channels: []string{"input"}}, ev("input.requested"), true},
		{Filter{Channels: []string{"values"}, Depth: &depth0}, ev("values", "task:1"), false},
		{Filter{Channels: []string{"tools"}, Namespaces: [][]string{{"task:1"}}}, ev("tools", "task:1", "x"), true},
		{Filter{Channels: []string{"tools"}, Namespaces: [][]string{{"task"}}}, ev("tools", "task:1"), true},
		{Filter{Channels: []string{"tools"}, Namespaces: [][]string{{"task:2"}}}, ev("tools", "task:1"), false},
		{Filter{Channels: []string{"tools"}, Namespaces: [][]string{{"task:1"}}, Depth: &depth1}, ev("tools", "task:1", "a", "b"), false},
		{Filter{Channels: []string{"custom"}}, &Event{Method: "custom", Name: "a2a"}, true},
		{Filter{Channels: []string{"custom:a2a"}}, &Event{Method: "custom", Name: "a2a"}, true},
		{Filter{Channels: []string{"custom:b"}}, &Event{Method: "custom", Name: "a2a"}, false},
	}
	for i, c := range cases {
		if got := c.f.Matches(c.ev); got != c.want {
			t.Errorf("case %d: Matches = %v, want %v", i, got, c.want)
		}
	}
}

// Tool events are namespaced as LangGraph namespaces tool executions and
// the SDKs group subagents: the task tool's own events in its subagent's
// namespace tools:<call id>, a tool a subagent calls one level below it
// (kept out of the root's tool calls), a root tool call at the root.
func TestTranslateToolNamespaces(t *testing.T) {
	tr := newTranslator(testRun(uuid.New()))
	h := NewHub(nil, Options{})
	cases := []struct {
		name, tool, id string
		want           []string
	}{
		{"tools", "read_file", "r1", nil},
		{"tools", "task", "t1", []string{"tools:t1"}},
		{"tools|tools:t1", "read_file", "r2", []string{"tools:t1", "tools:r2"}},
		{"tools|tools:t1", "task", "t2", []string{"tools:t1", "tools:t2"}},
	}
	for _, c := range cases {
		evs := tr.translate(h, c.name, map[string]any{"event": "on_tool_start", "toolCallId": c.id, "name": c.tool, "input": map[string]any{}})
		if len(evs) == 0 {
			t.Fatalf("%s %s: no event", c.name, c.tool)
		}
		if !slices.Equal(evs[0].ns, c.want) {
			t.Fatalf("%s %s: namespace %v, want %v", c.name, c.tool, evs[0].ns, c.want)
		}
	}
}

// A streamed answer with a tool call ends with the call as a tool_call
// block and finish reason tool_use; the task tool's events go in its
// subagent's namespace.
func TestTranslateChunksAndTaskTool(t *testing.T) {
	tr := newTranslator(testRun(uuid.New()))
	h := NewHub(nil, Options{})
	meta := map[string]any{"langgraph_node": "model"}
	chunk := func(content string, calls ...any) any {
		return []any{map[string]any{"type": "AIMessageChunk", "id": "m1", "content": content, "tool_call_chunks": calls}, meta}
	}
	var evs []out
	evs = append(evs, tr.translate(h, "messages", chunk("Hel"))...)
	evs = append(evs, tr.translate(h, "messages", chunk("lo", map[string]any{"index": float64(0), "id": "c1", "name": "task", "args": `{"subagent_type":`}))...)
	evs = append(evs, tr.translate(h, "messages", chunk("", map[string]any{"index": float64(0), "args": `"x"}`}))...)
	evs = append(evs, tr.translate(h, "updates", map[string]any{"model": map[string]any{"messages": []any{}}})...)
	evs = append(evs, tr.translate(h, "tools", map[string]any{"event": "on_tool_start", "toolCallId": "c1", "name": "task", "input": map[string]any{"subagent_type": "x"}})...)
	var kinds []string
	for _, e := range evs {
		d := e.data.(map[string]any)
		name, _ := d["event"].(string)
		kinds = append(kinds, e.method+":"+name)
		if d["event"] == "content-block-start" && d["content"].(map[string]any)["type"] == "tool_call" {
			if args := d["content"].(map[string]any)["args"].(map[string]any); args["subagent_type"] != "x" {
				t.Fatalf("tool call args = %v", args)
			}
		}
		if d["event"] == "message-finish" && d["reason"] != "tool_use" {
			t.Fatalf("finish = %v", d)
		}
		if e.method == "tools" && (len(e.ns) != 1 || e.ns[0] != "tools:c1") {
			t.Fatalf("task tool event in namespace %v", e.ns)
		}
	}
	want := "messages:message-start messages:content-block-start messages:content-block-delta messages:content-block-delta messages:content-block-finish messages:content-block-start messages:content-block-finish messages:message-finish updates:"
	got := ""
	for i, k := range kinds {
		if i > 0 {
			got += " "
		}
		got += k
	}
	if got[:len(want)] != want || kinds[len(kinds)-2] != "tools:tool-started" || kinds[len(kinds)-1] != "lifecycle:started" {
		t.Fatalf("events = %v", kinds)
	}
}

// A task started on another server appears under async_task:<id> with a
// synthetic task call; its status changes in async_tasks become lifecycle
// events, and its end ends the call with what check_async_task reported.
func TestHubRemoteAsyncTask(t *testing.T) {
	h := NewHub(testdb.Open(t), Options{})
	thread, task := uuid.New(), uuid.New()
	f, err := h.Follow(thread)
	if err != nil {
		t.Fatal(err)
	}
	since := f.log.LastSeq()
	run := testRun(thread)
	h.RunStarted(run)
	tool := func(event, id, name string, kv ...any) {
		p := map[string]any{"event": event, "toolCallId": id, "name": name}
		for i := 0; i+1 < len(kv); i += 2 {
			p[kv[i].(string)] = kv[i+1]
		}
		h.RunEvent(run, "tools", p)
	}
	tasks := func(status string) {
		h.RunEvent(run, "values", map[string]any{"async_tasks": map[string]any{task.String(): map[string]any{"task_id": task.String(), "status": status}}})
	}
	tool("on_tool_start", "c1", "start_async_task", "input", map[string]any{"subagent_type": "far", "description": "look it up"})
	tool("on_tool_end", "c1", "start_async_task", "output", map[string]any{"type": "tool", "content": "Launched async subagent. task_id: " + task.String()})
	tasks("running")
	tool("on_tool_start", "c2", "check_async_task", "input", map[string]any{"task_id": task.String()})
	tool("on_tool_end", "c2", "check_async_task", "output", map[string]any{"type": "tool", "content": `{"status": "success", "thread_id": "` + task.String() + `", "result": "42"}`})
	tasks("success")
	s, err := h.Subscribe(thread, Filter{Channels: []string{"tools", "lifecycle"}, Namespaces: [][]string{{"async_task"}}}, &since)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range drain(t, s) {
		var env struct {
			Params struct {
				Namespace []string       `json:"namespace"`
				Data      map[string]any `json:"data"`
			} `json:"params"`
		}
		if err := json.Unmarshal(ev.Raw, &env); err != nil {
			t.Fatal(err)
		}
		if env.Params.Namespace[0] != "async_task:"+task.String() {
			t.Fatalf("event in namespace %v", env.Params.Namespace)
		}
		d := env.Params.Data
		got = append(got, ev.Method+":"+d["event"].(string))
		if d["event"] == "tool-started" && (d["tool_name"] != "task" || d["input"].(map[string]any)["description"] != "look it up") {
			t.Fatalf("synthetic call = %v", d)
		}
		if d["event"] == "tool-finished" && d["output"] != "42" {
			t.Fatalf("call end = %v", d)
		}
	}
	want := []string{"tools:tool-started", "lifecycle:started", "lifecycle:completed", "tools:tool-finished"}
	if len(got) != len(want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("events = %v, want %v", got, want)
		}
	}
}

// Reasoning and text stream as separate blocks with their own indexes; a
// message that was not streamed is sent whole, tool calls included.
func TestTranslateReasoningAndWholeMessages(t *testing.T) {
	tr := newTranslator(testRun(uuid.New()))
	meta := map[string]any{"langgraph_node": "model"}
	chunk := func(reasoning, text string) any {
		return []any{map[string]any{"type": "AIMessageChunk", "id": "m1", "content": text, "additional_kwargs": map[string]any{"reasoning_content": reasoning}}, meta}
	}
	var evs []out
	evs = append(evs, tr.translate(nil, "messages", chunk("think", ""))...)
	evs = append(evs, tr.translate(nil, "messages", chunk("", "say"))...)
	evs = append(evs, tr.finishAll()...)
	whole := []any{map[string]any{"type": "ai", "id": "m2", "content": "hi", "tool_calls": []any{map[string]any{"id": "c1", "name": "ls", "args": map[string]any{"path": "/"}}}}, meta}
	evs = append(evs, tr.translate(nil, "messages|task:x", whole)...)
	var got []string
	for _, e := range evs {
		d := e.data.(map[string]any)
		s := d["event"].(string)
		if idx, ok := d["index"]; ok {
			s += fmt.Sprint(idx)
		}
		if c, ok := d["content"].(map[string]any); ok {
			s += ":" + c["type"].(string)
		}
		if dl, ok := d["delta"].(map[string]any); ok {
			s += ":" + dl["type"].(string)
		}
		got = append(got, s)
	}
	want := "message-start content-block-start0:reasoning content-block-delta0:reasoning-delta content-block-finish0:reasoning " +
		"content-block-start1:text content-block-delta1:text-delta content-block-finish1:text message-finish " +
		"message-start content-block-start0:text content-block-delta0:text-delta content-block-finish0:text content-block-start1:tool_call content-block-finish1:tool_call message-finish"
	if strings.Join(got, " ") != want {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, " "), want)
	}
	if last := evs[len(evs)-1]; len(last.ns) != 1 || last.ns[0] != "task:x" || last.data.(map[string]any)["reason"] != "tool_use" {
		t.Fatalf("whole message end = %v in %v", last.data, last.ns)
	}
}

// A connection that falls behind what memory keeps reads the rest back
// from the store, in order and without a gap.
func TestHubSlowSubscriberReadsBack(t *testing.T) {
	h := NewHub(testdb.Open(t), Options{Keep: 2, KeepBytes: 1})
	thread := uuid.New()
	s, err := h.Subscribe(thread, everything, nil)
	if err != nil {
		t.Fatal(err)
	}
	playRun(t, h, thread, 20)
	h.Flush(context.Background())
	evs := drain(t, s)
	if len(evs) != 23 {
		t.Fatalf("a slow subscriber got %d events, want 23", len(evs))
	}
	for i := 1; i < len(evs); i++ {
		if evs[i].Method == GapMethod || evs[i].Seq != evs[i-1].Seq+1 {
			t.Fatalf("event %d: %s seq %d after %d", i, evs[i].Method, evs[i].Seq, evs[i-1].Seq)
		}
	}
}
