package agent_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/agent"
	"agentserver/internal/channels"
	"agentserver/internal/graph"
	"agentserver/internal/llm"
	"agentserver/internal/llm/scripted"
	"agentserver/internal/testutil"
	"agentserver/internal/testutil/stats"
	"agentserver/internal/tools"
)

// modelClock adds up, per run, the time spent inside Generate, excluding
// the time Generate spent in the caller's chunk callback (which is the
// runtime's work: streaming the chunk into the sink).
type modelClock struct {
	mu      sync.Mutex
	calls   int
	inModel time.Duration // Generate wall time minus chunk callbacks
	inChunk time.Duration // time inside the chunk callbacks
}

func (c *modelClock) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls, c.inModel, c.inChunk = 0, 0, 0
}

func (c *modelClock) read() (int, time.Duration, time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls, c.inModel, c.inChunk
}

// timedModel measures each Generate call of the model it wraps.
type timedModel struct {
	inner llm.Model
	clock *modelClock
}

func (m timedModel) Generate(ctx context.Context, req llm.Request, onChunk llm.ChunkFunc) (llm.Response, error) {
	var inChunk time.Duration
	start := time.Now()
	resp, err := m.inner.Generate(ctx, req, func(c llm.Message) {
		t0 := time.Now()
		onChunk(c)
		inChunk += time.Since(t0)
	})
	d := time.Since(start)
	m.clock.mu.Lock()
	m.clock.calls++
	m.clock.inModel += d - inChunk
	m.clock.inChunk += inChunk
	m.clock.mu.Unlock()
	return resp, err
}

// memorySink keeps what a run produces in memory, as a streaming client's
// sink would see it: checkpoints, and the values, updates and messages
// stream payloads (kept, not encoded).
type memorySink struct {
	checkpoints []graph.Checkpoint
	events      []any
	usage       []graph.Usage
}

func (s *memorySink) Checkpoint(_ context.Context, cp graph.Checkpoint, _ bool) error {
	s.checkpoints = append(s.checkpoints, cp)
	return nil
}

func (s *memorySink) Wants(mode string) bool {
	return mode == "values" || mode == "updates" || mode == "messages"
}

func (s *memorySink) Emit(_ string, payload any) { s.events = append(s.events, payload) }
func (s *memorySink) Usage(u graph.Usage)        { s.usage = append(s.usage, u) }
func (s *memorySink) Note(string, any)           {}

func reportQuantiles(b *testing.B, name string, d []time.Duration) {
	slices.Sort(d)
	b.ReportMetric(stats.Millis(stats.Quantile(d, 0.50)), name+"-p50-ms")
	b.ReportMetric(stats.Millis(stats.Quantile(d, 0.99)), name+"-p99-ms")
}

// BenchmarkAgentStepOverhead measures the agent runtime's own time per agent
// step, without the model's: one op is one run of the agent graph (model ⇄
// tools on graph.Executor, the built-in ls and write_todos tools, an
// in-memory sink wanting values, updates and messages) through k tool-call
// steps and a final answer, k+1 model calls against the scripted server at
// zero latency. A step is one model call and, when it asked for tools, the
// tool node that follows; a run has k+1 steps.
//
// Reported, per step, as p50 and p99 over the runs:
//   - step: (run wall − Σ model time) / (k+1), with the model time measured
//     by wrapping the model factory: each Generate call's duration minus the
//     time it spent in the runtime's chunk callback. The llm client's own
//     work (request encoding, loopback HTTP, SSE decoding) and the
//     in-process scripted server are model time here.
//   - srvstep: the same with the model time as the scripted server sees it
//     (request body read → finish delta sent), the measure the full-server
//     benchmark uses; the llm client's request encoding and stream decoding
//     then count as overhead.
func BenchmarkAgentStepOverhead(b *testing.B) {
	for _, k := range []int{1, 5, 20} {
		b.Run(fmt.Sprintf("sink=memory/k=%d", k), func(b *testing.B) { benchStepOverhead(b, k) })
	}
}

func benchStepOverhead(b *testing.B, k int) {
	model := scripted.New()
	b.Cleanup(model.Close)
	spec, err := agent.ParseSpec([]byte(testutil.BenchAgentSpec(model.URL())), false)
	if err != nil {
		b.Fatal(err)
	}
	clock := &modelClock{}
	base := agent.NewModelFactory(func(string) string { return "" }, nil)
	factory := func(m agent.Model, override string) (llm.Model, error) {
		inner, err := base(m, override)
		if err != nil {
			return nil, err
		}
		return timedModel{inner: inner, clock: clock}, nil
	}
	reducers := channels.NewRegistry()
	a, err := agent.New("bench", spec, agent.Options{
		Models: factory, Tools: tools.Builtins(tools.Options{}),
		Workspace: tools.Workspaces{Root: b.TempDir()}.Dir, Reducers: reducers,
	})
	if err != nil {
		b.Fatal(err)
	}
	g := a.Graph()
	ex := &graph.Executor{Reducers: reducers}
	steps := k + 1
	ctx := context.Background()

	var perStep, perStepSrv, walls, modelTimes, srvModelTimes, chunkTimes, overheads []time.Duration
	done := 0 // model requests consumed so far
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		model.Script(scripted.ToolLoopSteps(k)...)
		clock.reset()
		sink := &memorySink{}
		in := graph.Input{
			RunID: uuid.Must(uuid.NewV7()), ThreadID: uuid.Must(uuid.NewV7()),
			Values: map[string]any{"messages": []any{map[string]any{"type": "human", "content": "work through the plan"}}},
			Config: map[string]any{"recursion_limit": 1000},
		}
		b.StartTimer()
		start := time.Now()
		res, err := ex.Run(ctx, g, in, sink)
		wall := time.Since(start)
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		calls, inModel, inChunk := clock.read()
		if calls != steps || model.Pending() != 0 {
			b.Fatalf("%d model calls, %d steps left; want %d calls", calls, model.Pending(), steps)
		}
		msgs, _ := res.Values["messages"].([]any)
		// human, k × (ai + 2 tool messages), final ai
		if len(msgs) != 1+3*k+1 {
			b.Fatalf("%d messages, want %d", len(msgs), 1+3*k+1)
		}
		for _, m := range msgs {
			if mm := m.(map[string]any); mm["type"] == "tool" && mm["status"] != "success" {
				b.Fatalf("tool failed: %v", mm)
			}
		}
		reqs := model.Requests()[done:]
		done += steps
		srvModel, err := scripted.ModelTime(reqs, msgs)
		if err != nil {
			b.Fatal(err)
		}
		perStep = append(perStep, (wall-inModel)/time.Duration(steps))
		perStepSrv = append(perStepSrv, (wall-srvModel)/time.Duration(steps))
		walls = append(walls, wall)
		overheads = append(overheads, wall-srvModel)
		modelTimes = append(modelTimes, inModel)
		srvModelTimes = append(srvModelTimes, srvModel)
		chunkTimes = append(chunkTimes, inChunk)
		b.StartTimer()
	}
	b.StopTimer()
	reportQuantiles(b, "step", perStep)
	reportQuantiles(b, "srvstep", perStepSrv)
	slices.Sort(overheads)
	b.ReportMetric(stats.Millis(stats.Quantile(overheads, 0.5)), "srvoverhead-p50-ms/run")
	b.ReportMetric(stats.Millis(stats.Mean(walls)), "wall-ms/run")
	b.ReportMetric(stats.Millis(stats.Mean(modelTimes)), "model-ms/run")
	b.ReportMetric(stats.Millis(stats.Mean(srvModelTimes)), "srvmodel-ms/run")
	b.ReportMetric(stats.Millis(stats.Mean(chunkTimes))*1000, "chunkcb-µs/run")
}
