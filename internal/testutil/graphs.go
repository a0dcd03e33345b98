package testutil

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/google/uuid"

	"agentserver/internal/graph"
	"agentserver/internal/graphs"
)

// TestGraphs is a langgraph.json serving echo and the test graphs below.
const TestGraphs = `{"graphs": {"echo": "builtin:echo", "gated": "builtin:test-gated", "failing": "builtin:test-failing", "steps": "builtin:test-steps", "asking": "builtin:test-asking", "stubborn": "builtin:test-stubborn"}}`

var (
	registerOnce sync.Once
	gatesMu      sync.Mutex
	gates        = map[string]chan struct{}{}
	// waiting counts the gated nodes waiting at each gate; waitersChanged
	// is closed (and replaced) whenever a count changes.
	waiting        = map[string]int{}
	waitersChanged = make(chan struct{})
)

// addWaiter changes the count of nodes waiting at gate name by delta.
func addWaiter(name string, delta int) {
	gatesMu.Lock()
	defer gatesMu.Unlock()
	waiting[name] += delta
	close(waitersChanged)
	waitersChanged = make(chan struct{})
}

// AwaitWaiters blocks until at least n gated nodes wait at gate name (they
// have started and block until Release), or ctx ends.
func AwaitWaiters(ctx context.Context, name string, n int) error {
	return awaitWaiters(ctx, name, func(got int) bool { return got >= n }, fmt.Sprintf("at least %d", n))
}

// AwaitWaitersBelow blocks until fewer than n gated nodes wait at gate
// name (a waiting node returned: released, or its run cancelled), or ctx
// ends.
func AwaitWaitersBelow(ctx context.Context, name string, n int) error {
	return awaitWaiters(ctx, name, func(got int) bool { return got < n }, fmt.Sprintf("fewer than %d", n))
}

func awaitWaiters(ctx context.Context, name string, done func(int) bool, want string) error {
	for {
		gatesMu.Lock()
		got, changed := waiting[name], waitersChanged
		gatesMu.Unlock()
		if done(got) {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("gate %q: %d nodes waiting, want %s: %w", name, got, want, ctx.Err())
		}
	}
}

// Gate returns the channel a "gated" run named name waits on; closing it
// (Release) lets the run finish.
func Gate(name string) chan struct{} {
	gatesMu.Lock()
	defer gatesMu.Unlock()
	g, ok := gates[name]
	if !ok {
		g = make(chan struct{})
		gates[name] = g
	}
	return g
}

// Release opens a gate once.
func Release(name string) {
	g := Gate(name)
	select {
	case <-g:
	default:
		close(g)
	}
}

// RegisterTestGraphs adds the test graphs to the built-in registry:
//   - test-gated: emits a custom event {"waiting": gate}, then waits until
//     the gate named by input "gate" (or, without one, by the last message's
//     content) is released or its context ends, then answers "released <gate>";
//   - test-stubborn: as test-gated, but its node ignores its context: it
//     returns only once the gate is released, then a second node "after"
//     answers "after <gate>" (a run that does not stop when cancelled);
//   - test-failing: its only node fails with "boom";
//   - test-steps: nodes a → b → c, each appending its name to "trail";
//   - test-asking: pauses on an interrupt {"question": "approve?"} and,
//     resumed with a value v, answers "answered v".
func RegisterTestGraphs() {
	registerOnce.Do(func() {
		graphs.RegisterBuiltin("test-gated", func() *graphs.Definition {
			d := graphs.Echo()
			d.Graph = &graph.Graph{Entry: "wait", Nodes: map[string]graph.Node{"wait": gatedNode}}
			return d
		})
		graphs.RegisterBuiltin("test-stubborn", func() *graphs.Definition {
			d := graphs.Echo()
			d.Graph = &graph.Graph{
				Entry: "wait",
				Nodes: map[string]graph.Node{"wait": stubbornNode, "after": afterNode},
				Edges: map[string]graph.Router{"wait": func(graph.State) []string { return []string{"after"} }},
			}
			return d
		})
		graphs.RegisterBuiltin("test-failing", func() *graphs.Definition {
			d := graphs.Echo()
			d.Graph = &graph.Graph{Entry: "fail", Nodes: map[string]graph.Node{"fail": func(context.Context, *graph.Runtime, graph.State) (graph.Update, error) {
				return graph.Update{}, errors.New("boom")
			}}}
			return d
		})
		graphs.RegisterBuiltin("test-asking", func() *graphs.Definition {
			d := graphs.Echo()
			d.Graph = &graph.Graph{Entry: "ask", Nodes: map[string]graph.Node{"ask": func(_ context.Context, rt *graph.Runtime, _ graph.State) (graph.Update, error) {
				if v, ok := rt.Resume(); ok {
					msg := map[string]any{"type": "ai", "id": uuid.NewString(), "content": fmt.Sprint("answered ", v)}
					return graph.Update{Values: map[string]any{"messages": []any{msg}}}, nil
				}
				return graph.Update{}, graph.Interrupt(map[string]any{"question": "approve?"})
			}}}
			return d
		})
		graphs.RegisterBuiltin("test-steps", func() *graphs.Definition {
			d := graphs.Echo()
			step := func(name string) graph.Node {
				return func(_ context.Context, _ *graph.Runtime, st graph.State) (graph.Update, error) {
					trail, _ := st["trail"].([]any)
					return graph.Update{Values: map[string]any{"trail": append(append([]any{}, trail...), name)}}, nil
				}
			}
			d.Graph = &graph.Graph{
				Entry: "a",
				Nodes: map[string]graph.Node{"a": step("a"), "b": step("b"), "c": step("c")},
				Edges: map[string]graph.Router{
					"a": func(graph.State) []string { return []string{"b"} },
					"b": func(graph.State) []string { return []string{"c"} },
				},
			}
			return d
		})
	})
}

func gatedNode(ctx context.Context, rt *graph.Runtime, st graph.State) (graph.Update, error) {
	return waitAtGate(ctx, rt, st, true)
}

func stubbornNode(ctx context.Context, rt *graph.Runtime, st graph.State) (graph.Update, error) {
	return waitAtGate(ctx, rt, st, false)
}

// waitAtGate blocks until the state's gate is released or, when
// honourContext is set, its context ends; it then answers "released <gate>".
func waitAtGate(ctx context.Context, rt *graph.Runtime, st graph.State, honourContext bool) (graph.Update, error) {
	name := gateOf(st)
	rt.Custom(map[string]any{"waiting": name})
	addWaiter(name, 1)
	defer addWaiter(name, -1)
	cancelled := ctx.Done()
	if !honourContext {
		cancelled = nil
	}
	select {
	case <-Gate(name):
	case <-cancelled:
		return graph.Update{}, context.Cause(ctx)
	}
	return answer("released " + name), nil
}

func afterNode(_ context.Context, _ *graph.Runtime, st graph.State) (graph.Update, error) {
	return answer("after " + gateOf(st)), nil
}

// gateOf names the gate of a gated run: its "gate" value or, without one,
// the content of its last message.
func gateOf(st graph.State) string {
	name, _ := st["gate"].(string)
	if name == "" {
		if msgs, _ := st["messages"].([]any); len(msgs) > 0 {
			name, _ = msgs[len(msgs)-1].(map[string]any)["content"].(string)
		}
	}
	return name
}

func answer(text string) graph.Update {
	msg := map[string]any{"type": "ai", "id": uuid.NewString(), "content": text}
	return graph.Update{Values: map[string]any{"messages": []any{msg}}}
}
