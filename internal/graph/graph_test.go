package graph

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/channels"
)

// memSink records what a run produced.
type memSink struct {
	mu     sync.Mutex
	cps    []Checkpoint
	finals int
	events []string
	usage  []Usage
}

func (m *memSink) Checkpoint(_ context.Context, cp Checkpoint, final bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cps = append(m.cps, cp)
	if final {
		m.finals++
	}
	return nil
}
func (m *memSink) Wants(string) bool { return true }
func (m *memSink) Usage(u Usage) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.usage = append(m.usage, u)
}
func (m *memSink) Note(key string, value any) {}
func (m *memSink) Emit(mode string, _ any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events = append(m.events, mode)
}

func appendNode(name string) Node {
	return func(_ context.Context, _ *Runtime, st State) (Update, error) {
		trail, _ := st["trail"].([]any)
		return Update{Values: map[string]any{"trail": append(append([]any{}, trail...), name)}}, nil
	}
}

func chain() *Graph {
	return &Graph{
		Entry: "a",
		Nodes: map[string]Node{"a": appendNode("a"), "b": appendNode("b"), "c": appendNode("c")},
		Edges: map[string]Router{"a": func(State) []string { return []string{"b"} }, "b": func(State) []string { return []string{"c"} }},
	}
}

func run(t *testing.T, g *Graph, in Input) (Result, *memSink, error) {
	t.Helper()
	ex := &Executor{Reducers: channels.NewRegistry()}
	sink := &memSink{}
	if in.RunID == uuid.Nil {
		in.RunID, in.ThreadID = uuid.New(), uuid.New()
	}
	res, err := ex.Run(context.Background(), g, in, sink)
	return res, sink, err
}

func trailOf(v map[string]any) []any {
	t, _ := v["trail"].([]any)
	return t
}

func TestRunWritesOneCheckpointPerStep(t *testing.T) {
	res, sink, err := run(t, chain(), Input{Values: map[string]any{"trail": []any{}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := trailOf(res.Values); !slices.Equal(got, []any{"a", "b", "c"}) {
		t.Fatalf("trail = %v", got)
	}
	if len(sink.cps) != 5 || sink.finals != 1 {
		t.Fatalf("%d checkpoints (%d final), want input + __start__ + 3 steps with one final", len(sink.cps), sink.finals)
	}
	for i, cp := range sink.cps {
		if cp.Metadata["step"] != float64(i-1) {
			t.Fatalf("checkpoint %d step = %v, want %d (LangGraph numbers an empty thread's input -1)", i, cp.Metadata["step"], i-1)
		}
		if i > 0 && *cp.ParentID != sink.cps[i-1].CheckpointID {
			t.Fatalf("checkpoint %d parent is not the previous one", i)
		}
	}
	if sink.cps[0].ParentID != nil {
		t.Fatalf("the first checkpoint of a thread has a parent: %v", sink.cps[0].ParentID)
	}
}

// TestInputCheckpointChain checks LangGraph's chain for an input: an
// "input" checkpoint with the values before the input and __start__
// pending, then the __start__ step's "loop" checkpoint that applies it and
// schedules the entry node; the values stream starts with the applied
// input, not with the values before it.
func TestInputCheckpointChain(t *testing.T) {
	first, sink, err := run(t, chain(), Input{Values: map[string]any{"trail": []any{"x"}}})
	if err != nil {
		t.Fatal(err)
	}
	in, start := sink.cps[0], sink.cps[1]
	if in.Metadata["source"] != "input" || !slices.Equal(in.Next, []string{Start}) || len(trailOf(in.Values)) != 0 {
		t.Fatalf("input checkpoint: source %v next %v values %v", in.Metadata["source"], in.Next, in.Values)
	}
	if w, _ := in.Metadata["writes"].(map[string]any); !slices.Equal(trailOf(mapOf(w[Start])), []any{"x"}) {
		t.Fatalf("input checkpoint writes = %v", in.Metadata["writes"])
	}
	if start.Metadata["source"] != "loop" || !slices.Equal(start.Next, []string{"a"}) || !slices.Equal(trailOf(start.Values), []any{"x"}) {
		t.Fatalf("__start__ checkpoint: source %v next %v values %v", start.Metadata["source"], start.Next, start.Values)
	}
	if n := countOf(sink.events, "values"); n != len(sink.cps)-1 {
		t.Fatalf("%d values events for %d checkpoints; want one per checkpoint but the input's", n, len(sink.cps))
	}
	// A second run on the thread: its input checkpoint holds the first
	// run's final values and is its child.
	last := sink.cps[len(sink.cps)-1]
	_, sink2, err := run(t, chain(), Input{From: &last, Values: map[string]any{"trail": []any{"y"}}})
	if err != nil {
		t.Fatal(err)
	}
	in2 := sink2.cps[0]
	if *in2.ParentID != last.CheckpointID || !slices.Equal(trailOf(in2.Values), trailOf(first.Values)) || in2.Metadata["step"] != float64(4) {
		t.Fatalf("second input checkpoint: parent %v values %v step %v", in2.ParentID, in2.Values, in2.Metadata["step"])
	}
}

// TestBegunCheckpointsAreNotRewritten checks the contract of Begin and
// Input.Begun: the checkpoints Begin returns are those the run would write
// first, and a run given them continues after them without handing them
// to the sink again, streaming them as its own.
func TestBegunCheckpointsAreNotRewritten(t *testing.T) {
	ex := &Executor{Reducers: channels.NewRegistry()}
	in := Input{RunID: uuid.New(), ThreadID: uuid.New(), Values: map[string]any{"trail": []any{"x"}}, InterruptBefore: []string{"a"}}
	begun, err := ex.Begin(chain(), in)
	if err != nil || len(begun) != 2 {
		t.Fatalf("Begin = %d checkpoints, %v", len(begun), err)
	}
	in.Begun = begun
	sink := &memSink{}
	res, err := ex.Run(context.Background(), chain(), in, sink)
	if err != nil {
		t.Fatal(err)
	}
	// interrupt_before still fires on the entry node: the begun run is a
	// fresh start, not a resume.
	if !slices.Equal(res.Next, []string{"a"}) {
		t.Fatalf("next = %v, want a (interrupt_before)", res.Next)
	}
	for _, cp := range sink.cps {
		if cp.CheckpointID == begun[0].CheckpointID {
			t.Fatal("the stored input checkpoint was handed to the sink again")
		}
	}
	if n := countOf(sink.events, "values"); n != 1 || countOf(sink.events, "checkpoints") != 2 {
		t.Fatalf("events %v; want the begun checkpoints streamed, values only for the applied input", sink.events)
	}
	// Run to the end from the begun checkpoints: the next checkpoint is
	// the child of the last begun one.
	in.InterruptBefore = nil
	sink = &memSink{}
	if _, err := ex.Run(context.Background(), chain(), in, sink); err != nil {
		t.Fatal(err)
	}
	if *sink.cps[0].ParentID != begun[1].CheckpointID || sink.cps[0].Metadata["step"] != float64(1) {
		t.Fatalf("first new checkpoint: parent %v step %v", sink.cps[0].ParentID, sink.cps[0].Metadata["step"])
	}
	if resumed, err := ex.Begin(chain(), Input{From: &begun[1]}); err != nil || resumed != nil {
		t.Fatalf("Begin of a resume = %v, %v; want nothing", resumed, err)
	}
}

// TestForkFromInputCheckpoint checks the branch an edited first message
// makes: a run from the input checkpoint (values before the message) with
// a new input is a sibling of the original __start__ step, and a run from
// it without input replays the input it holds.
func TestForkFromInputCheckpoint(t *testing.T) {
	_, sink, err := run(t, chain(), Input{Values: map[string]any{"trail": []any{"x"}}})
	if err != nil {
		t.Fatal(err)
	}
	root := sink.cps[0]
	res, fork, err := run(t, chain(), Input{From: &root, Values: map[string]any{"trail": []any{"edited"}}})
	if err != nil {
		t.Fatal(err)
	}
	if *fork.cps[0].ParentID != root.CheckpointID || !slices.Equal(trailOf(res.Values), []any{"edited", "a", "b", "c"}) {
		t.Fatalf("fork: parent %v values %v", fork.cps[0].ParentID, res.Values)
	}
	res, replay, err := run(t, chain(), Input{From: &root})
	if err != nil {
		t.Fatal(err)
	}
	if replay.cps[0].Metadata["source"] != "loop" || *replay.cps[0].ParentID != root.CheckpointID || !slices.Equal(trailOf(res.Values), []any{"x", "a", "b", "c"}) {
		t.Fatalf("replay: first %v parent %v values %v", replay.cps[0].Metadata["source"], replay.cps[0].ParentID, res.Values)
	}
	// A retry of a run stopped right after its input checkpoint applies
	// the input once.
	res, _, err = run(t, chain(), Input{From: &root, Retry: true, Values: map[string]any{"trail": []any{"x"}}})
	if err != nil || !slices.Equal(trailOf(res.Values), []any{"x", "a", "b", "c"}) {
		t.Fatalf("retry from the input checkpoint = %v, %v", res.Values, err)
	}
}

func countOf(list []string, v string) int {
	n := 0
	for _, e := range list {
		if e == v {
			n++
		}
	}
	return n
}

func mapOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func TestInterruptsAndResume(t *testing.T) {
	res, sink, err := run(t, chain(), Input{Values: map[string]any{}, InterruptBefore: []string{"c"}})
	if err != nil || !slices.Equal(res.Next, []string{"c"}) {
		t.Fatalf("interrupt_before: %v next %v", err, res.Next)
	}
	last := sink.cps[len(sink.cps)-1]
	// Resuming with no input continues the paused checkpoint and does not
	// pause again before the same node.
	res2, _, err := run(t, chain(), Input{From: &last, InterruptBefore: []string{"c"}})
	if err != nil || len(res2.Next) != 0 || !slices.Equal(trailOf(res2.Values), []any{"a", "b", "c"}) {
		t.Fatalf("resume: %v %v", err, res2.Values)
	}
	res3, _, err := run(t, chain(), Input{Values: map[string]any{}, InterruptAfter: []string{"*"}})
	if err != nil || !slices.Equal(res3.Next, []string{"b"}) || len(trailOf(res3.Values)) != 1 {
		t.Fatalf("interrupt_after: %v %v %v", err, res3.Next, res3.Values)
	}
}

func TestRetryContinuesFromCheckpointWithoutReapplyingInput(t *testing.T) {
	_, sink, err := run(t, chain(), Input{Values: map[string]any{"trail": []any{"x"}}, InterruptAfter: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	mid := sink.cps[len(sink.cps)-1]
	res, _, err := run(t, chain(), Input{From: &mid, Retry: true, Values: map[string]any{"trail": []any{"x"}}})
	if err != nil || !slices.Equal(trailOf(res.Values), []any{"x", "a", "b", "c"}) {
		t.Fatalf("retry = %v %v", err, res.Values)
	}
}

func TestParallelNodesAndDeterministicOrder(t *testing.T) {
	var running, peak atomic.Int32
	gate := make(chan struct{})
	slow := func(name string) Node {
		return func(ctx context.Context, rt *Runtime, st State) (Update, error) {
			n := running.Add(1)
			if n > peak.Load() {
				peak.Store(n)
			}
			if n == 2 { // only the second arrival sees 2: the gate closes once
				close(gate)
			}
			<-gate
			running.Add(-1)
			return Update{Values: map[string]any{"messages": []any{map[string]any{"type": "ai", "content": name, "id": name}}}}, nil
		}
	}
	g := &Graph{Entry: "fan", Nodes: map[string]Node{
		"fan": func(context.Context, *Runtime, State) (Update, error) { return Update{Goto: []string{"x", "y"}}, nil },
		"x":   slow("x"), "y": slow("y"),
	}}
	res, _, err := run(t, g, Input{Values: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if peak.Load() != 2 {
		t.Fatalf("nodes of one step did not run concurrently (peak %d)", peak.Load())
	}
	msgs := res.Values["messages"].([]any)
	if msgs[0].(map[string]any)["content"] != "x" || msgs[1].(map[string]any)["content"] != "y" {
		t.Fatalf("updates not applied in node order: %v", msgs)
	}
}

func TestRecursionLimitAndNodeErrors(t *testing.T) {
	loop := &Graph{Entry: "a", Nodes: map[string]Node{"a": appendNode("a")}, Edges: map[string]Router{"a": func(State) []string { return []string{"a"} }}}
	if _, _, err := run(t, loop, Input{Values: map[string]any{}, Config: map[string]any{"recursion_limit": 5.0}}); !errors.Is(err, ErrRecursionLimit) {
		t.Fatalf("loop: %v", err)
	}
	boom := &Graph{Entry: "a", Nodes: map[string]Node{"a": func(context.Context, *Runtime, State) (Update, error) { return Update{}, errors.New("boom") }}}
	if _, _, err := run(t, boom, Input{Values: map[string]any{}}); err == nil || err.Error() != "node a: boom" {
		t.Fatalf("node error: %v", err)
	}
	if _, _, err := run(t, chain(), Input{Values: "not an object"}); !errors.Is(err, channels.ErrInvalidUpdate) {
		t.Fatalf("bad input: %v", err)
	}
}

func TestCommandUpdateAndGoto(t *testing.T) {
	res, _, err := run(t, chain(), Input{Command: map[string]any{"update": []any{[]any{"trail", []any{"u"}}}, "goto": "c"}})
	if err != nil || !slices.Equal(trailOf(res.Values), []any{"u", "c"}) {
		t.Fatalf("command = %v %v", err, res.Values)
	}
	res, sink, err := run(t, chain(), Input{})
	if err != nil || len(sink.cps) != 0 || len(res.Values) != 0 {
		t.Fatalf("null input on an empty thread = %v, %d checkpoints", err, len(sink.cps))
	}
}

func TestCancelStopsTheRun(t *testing.T) {
	started := make(chan struct{})
	g := &Graph{Entry: "wait", Nodes: map[string]Node{"wait": func(ctx context.Context, _ *Runtime, _ State) (Update, error) {
		close(started)
		<-ctx.Done()
		return Update{}, ctx.Err()
	}}}
	ctx, cancel := context.WithCancel(context.Background())
	ex := &Executor{Reducers: channels.NewRegistry()}
	done := make(chan error, 1)
	go func() {
		_, err := ex.Run(ctx, g, Input{RunID: uuid.New(), ThreadID: uuid.New(), Values: map[string]any{}}, &memSink{})
		done <- err
	}()
	<-started
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled run: %v", err)
	}
}

func TestNodeInterruptAndResume(t *testing.T) {
	ask := func(_ context.Context, rt *Runtime, _ State) (Update, error) {
		if v, ok := rt.Resume(); ok {
			return Update{Values: map[string]any{"answer": v}}, nil
		}
		return Update{}, Interrupt(map[string]any{"question": "ok?"})
	}
	g := &Graph{Entry: "ask", Nodes: map[string]Node{"ask": ask}}
	res, sink, err := run(t, g, Input{Values: map[string]any{"q": 1}})
	if err != nil || !slices.Equal(res.Next, []string{"ask"}) {
		t.Fatalf("interrupt: %v next %v", err, res.Next)
	}
	paused := sink.cps[len(sink.cps)-1]
	if len(paused.Tasks) != 1 || len(paused.Tasks[0].Interrupts) != 1 || sink.finals != 1 {
		t.Fatalf("paused checkpoint tasks = %+v (finals %d)", paused.Tasks, sink.finals)
	}
	res2, _, err := run(t, g, Input{From: &paused, Command: map[string]any{"resume": "yes"}})
	if err != nil || res2.Values["answer"] != "yes" || len(res2.Next) != 0 {
		t.Fatalf("resume: %v %v", err, res2)
	}
}

// A graph nested in a graph nested in a run streams its events under both
// namespaces, outermost first, as LangGraph names them.
func TestNestedNamespacesOutermostFirst(t *testing.T) {
	inner := &Graph{Entry: "leaf", Nodes: map[string]Node{"leaf": appendNode("leaf")}}
	var innerEx Executor
	innerEx.Reducers = channels.NewRegistry()
	middle := &Graph{Entry: "mid", Nodes: map[string]Node{"mid": func(ctx context.Context, rt *Runtime, st State) (Update, error) {
		_, err := innerEx.Run(ctx, inner, Input{RunID: uuid.New(), ThreadID: uuid.New(), Values: map[string]any{}}, rt.Namespaced("task:inner"))
		return Update{}, err
	}}}
	outer := &Graph{Entry: "top", Nodes: map[string]Node{"top": func(ctx context.Context, rt *Runtime, st State) (Update, error) {
		_, err := innerEx.Run(ctx, middle, Input{RunID: uuid.New(), ThreadID: uuid.New(), Values: map[string]any{}}, rt.Namespaced("task:outer"))
		return Update{}, err
	}}}
	_, sink, err := run(t, outer, Input{Values: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	var nested, middleOnly bool
	for _, e := range sink.events {
		switch {
		case strings.HasPrefix(e, "updates|task:outer|task:inner"):
			nested = true
		case e == "updates|task:outer":
			middleOnly = true
		case strings.Contains(e, "task:inner|task:outer"):
			t.Fatalf("innermost first: %q", e)
		}
	}
	if !nested || !middleOnly {
		t.Fatalf("events %v: want updates|task:outer and updates|task:outer|task:inner", sink.events)
	}
}

// A checkpoint that lists End in Next (as a thread update with goto
// "__end__" once stored) has nothing left to run: continuing it succeeds
// without running a node.
func TestContinuingEndRunsNothing(t *testing.T) {
	from := Checkpoint{CheckpointID: uuid.Must(uuid.NewV7()), Values: map[string]any{"trail": []any{"x"}}, Next: []string{End}}
	res, _, err := run(t, chain(), Input{From: &from})
	if err != nil || len(res.Next) != 0 || !slices.Equal(trailOf(res.Values), []any{"x"}) {
		t.Fatalf("continuing End = %v, next %v, values %v", err, res.Next, res.Values)
	}
	res, sink, err := run(t, chain(), Input{Command: map[string]any{"update": map[string]any{"trail": []any{"u"}}, "goto": []any{End}}})
	if err != nil || !slices.Equal(trailOf(res.Values), []any{"u"}) || len(sink.cps) != 1 || len(sink.cps[0].Next) != 0 {
		t.Fatalf("goto End = %v %v (%d checkpoints)", err, res.Values, len(sink.cps))
	}
}

// A Send runs its node with the Send's input as the node's state, once per
// Send, and the node's updates fold into the thread's state in order.
func TestSendInputIsTheNodeState(t *testing.T) {
	sends := []any{
		map[string]any{"node": "c", "input": map[string]any{"trail": []any{"s1"}}},
		map[string]any{"lg_name": "Send", "node": "c", "args": map[string]any{"trail": []any{"s2"}}},
	}
	res, sink, err := run(t, chain(), Input{Values: map[string]any{"trail": []any{"state"}}, Command: map[string]any{"goto": sends}})
	if err != nil || !slices.Equal(trailOf(res.Values), []any{"s2", "c"}) {
		t.Fatalf("sends = %v, trail %v", err, trailOf(res.Values))
	}
	if w := sink.cps[len(sink.cps)-1].Metadata["writes"].(map[string]any)["c"]; len(w.([]any)) != 2 {
		t.Fatalf("writes of two tasks of c = %v", w)
	}
	// A Send that waits behind interrupt_before keeps its input.
	res, sink, err = run(t, chain(), Input{Command: map[string]any{"goto": sends[0]}, InterruptBefore: []string{"c"}})
	if err != nil || !slices.Equal(res.Next, []string{"c"}) {
		t.Fatalf("paused send = %v next %v", err, res.Next)
	}
	paused := sink.cps[len(sink.cps)-1]
	res, _, err = run(t, chain(), Input{From: &paused})
	if err != nil || !slices.Equal(trailOf(res.Values), []any{"s1", "c"}) {
		t.Fatalf("resumed send = %v, trail %v", err, trailOf(res.Values))
	}
	if _, _, err := run(t, chain(), Input{Command: map[string]any{"goto": map[string]any{"node": "c", "input": "text"}}}); !errors.Is(err, channels.ErrInvalidUpdate) {
		t.Fatalf("a Send with a string input = %v", err)
	}
}

// A resume map keyed by interrupt id gives each paused task its own value.
func TestResumeMapByInterruptID(t *testing.T) {
	ask := func(_ context.Context, rt *Runtime, _ State) (Update, error) {
		if v, ok := rt.Resume(); ok {
			return Update{Values: map[string]any{rt.Node: v}}, nil
		}
		return Update{}, Interrupt(rt.Node + "?")
	}
	g := &Graph{Entry: "fan", Nodes: map[string]Node{"fan": appendNode("fan"), "p": ask, "q": ask},
		Edges: map[string]Router{"fan": func(State) []string { return []string{"p", "q"} }}}
	_, sink, err := run(t, g, Input{Values: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	paused := sink.cps[len(sink.cps)-1]
	byID := map[string]any{}
	for _, task := range paused.Tasks {
		byID[task.Interrupts[0].(map[string]any)["id"].(string)] = "for " + task.Name
	}
	res, _, err := run(t, g, Input{From: &paused, Command: map[string]any{"resume": byID}})
	if err != nil || res.Values["p"] != "for p" || res.Values["q"] != "for q" {
		t.Fatalf("resume by id = %v %v", err, res.Values)
	}
}

// TestNewCheckpointIDOrder: checkpoint ids sort, as bytes and as text, in
// the order they were made, and after the UUIDv7 ids earlier releases
// minted.
func TestNewCheckpointIDOrder(t *testing.T) {
	old := uuid.Must(uuid.NewV7())
	before := time.Now()
	prev := NewCheckpointID()
	if bytes.Compare(prev[:], old[:]) <= 0 {
		t.Fatalf("checkpoint id %s sorts before the UUIDv7 %s", prev, old)
	}
	if prev.Version() != 6 || prev.Variant() != uuid.RFC4122 {
		t.Fatalf("checkpoint id %s is version %d, variant %v", prev, prev.Version(), prev.Variant())
	}
	// RFC 9562: the 60-bit timestamp is time_high, time_mid, time_low.
	ticks := uint64(binary.BigEndian.Uint32(prev[0:]))<<28 | uint64(binary.BigEndian.Uint16(prev[4:]))<<12 | uint64(binary.BigEndian.Uint16(prev[6:])&0x0fff)
	made := time.Unix(0, int64(ticks-gregorianOffset)*100)
	if made.Before(before.Add(-time.Millisecond)) || made.After(time.Now().Add(time.Millisecond)) {
		t.Fatalf("checkpoint id %s carries the time %v, made at %v", prev, made, before)
	}
	for i := 0; i < 10000; i++ {
		id := NewCheckpointID()
		if bytes.Compare(id[:], prev[:]) <= 0 || id.String() <= prev.String() {
			t.Fatalf("checkpoint id %s made after %s sorts before it", id, prev)
		}
		prev = id
	}
}
