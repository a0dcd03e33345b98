//go:build unix

package jsworker_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/config"
	"agentserver/internal/llm/scripted"
	"agentserver/internal/runs"
	"agentserver/internal/storage"
	"agentserver/internal/testutil"
	"agentserver/internal/threads"
)

// BenchmarkJSAgentConcurrentRuns starts 1,000 runs (JS_AGENT_BENCH_RUNS
// overrides the count) of the fixture's
// tool-calling LangGraph.js agent (js_agent: @langchain/openai's ChatOpenAI,
// streaming) at once, each on its own thread and each waiting on one model
// call that the scripted model answers after 1 s, on a server with 1,100
// run workers, durable bbolt and N graph workers (workers=N) that each run
// up to 1,000 runs at once. One op is the whole batch (use -benchtime 1x).
// It reports the wall time from the first run's creation to the last run's
// end (target: all done within 5 s), the runs' p50 and slowest time to
// their end, the graph workers' CPU time per run (user plus system, over
// the batch), the server's (this process's, with the clients') and the
// workers' peak memory (VmHWM, summed). AGENTSERVER_JS_NODE_ARGS
// gives the workers node options, as it does the server's.
func BenchmarkJSAgentConcurrentRuns(b *testing.B) {
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) { benchJSConcurrentRuns(b, "js_agent", "done", workers) })
	}
}

// BenchmarkJSChatConcurrentRuns is BenchmarkJSAgentConcurrentRuns with the
// fixture's one-node graph (js_chat, which echoes the human message
// without a model): the cost of a run through the server and its worker
// when the graph itself does next to nothing.
func BenchmarkJSChatConcurrentRuns(b *testing.B) {
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			benchJSConcurrentRuns(b, "js_chat", "you said: wait for the model", workers)
		})
	}
}

// benchJSConcurrentRuns runs the batches of graph, whose last message
// must be answer.
func benchJSConcurrentRuns(b *testing.B, graph, answer string, workers int) {
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("JS_AGENT_BENCH_RUNS")); err == nil && v > 0 {
		n = v
	}
	const latency = time.Second
	_, file := fixture(b)
	model, err := scripted.Start("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(model.Close)
	model.SetResponder(func(scripted.ChatRequest) scripted.Step {
		return scripted.Text("done").WithLatency(latency, 0)
	})
	b.Setenv("OPENAI_BASE_URL", model.URL())
	b.Setenv("OPENAI_API_KEY", "bench")
	var logw io.Writer
	if os.Getenv("JS_AGENT_BENCH_LOG") != "" {
		logw = os.Stderr
	}
	s := testutil.StartServer(b, testutil.Options{GraphsFile: file, Jobs: n + 100, Log: logw, Configure: func(c *config.Config) {
		c.JSWorkers = workers
		c.JSWorkerConcurrency = n
		c.JSNodeArgs = os.Getenv(config.EnvJSNodeArgs) // --cpu-prof --cpu-prof-dir=dir profiles the workers
	}})
	ctx := context.Background()
	input := map[string]any{"messages": []any{map[string]any{"role": "user", "content": "wait for the model"}}}
	// One run first: the worker's module cache, the model client's
	// connection pool and the JIT are warm before the batch.
	warm, err := s.Threads.Create(ctx, threads.CreateParams{})
	if err != nil {
		b.Fatal(err)
	}
	if err := jsAgentRun(ctx, s, graph, answer, warm.ThreadID, input); err != nil {
		b.Fatal(err)
	}
	for range b.N {
		b.StopTimer()
		tids := make([]uuid.UUID, n)
		for i := range tids {
			th, err := s.Threads.Create(ctx, threads.CreateParams{})
			if err != nil {
				b.Fatal(err)
			}
			tids[i] = th.ThreadID
		}
		cpu0, self0 := workerCPU(b), selfCPU(b)
		b.StartTimer()
		took, errs, wall := testutil.Concurrently(n, func(i int) error { return jsAgentRun(ctx, s, graph, answer, tids[i], input) })
		b.StopTimer()
		cpu, self := workerCPU(b)-cpu0, selfCPU(b)-self0
		for i, err := range errs {
			if err != nil {
				b.Fatalf("run %d of %d: %v", i, n, err)
			}
		}
		slices.Sort(took)
		b.ReportMetric(wall.Seconds(), "all-done-s")
		b.ReportMetric(took[n/2].Seconds(), "p50-s")
		b.ReportMetric(took[n-1].Seconds(), "slowest-s")
		b.ReportMetric(cpu.Seconds()*1000/float64(n), "workers-cpu-ms/run")
		b.ReportMetric(self.Seconds()*1000/float64(n), "server-cpu-ms/run")
		var hwm float64
		for _, p := range childNodes(b) {
			hwm += p.hwmMiB
		}
		b.ReportMetric(hwm, "workers-VmHWM-MiB")
		if wall > 5*time.Second {
			b.Logf("%d runs took %s, over the 5 s target", n, wall)
		}
	}
}

// jsAgentRun runs graph on thread to its end and checks its answer.
func jsAgentRun(ctx context.Context, s *testutil.Server, graph, answer string, thread uuid.UUID, input map[string]any) error {
	run, err := s.Runs.Create(ctx, runs.CreateParams{ThreadID: &thread, Assistant: graph, Input: input})
	if err != nil {
		return err
	}
	ended, values, err := s.Runs.Wait(ctx, &thread, run.RunID)
	switch {
	case err != nil:
		return err
	case ended.Status != storage.RunSuccess:
		return fmt.Errorf("run %s: %s", ended.Status, ended.Error)
	}
	msgs, _ := values["messages"].([]any)
	if len(msgs) != 2 || msgs[1].(map[string]any)["content"] != answer {
		return fmt.Errorf("final messages %v", msgs)
	}
	return nil
}

// nodeProc is a graph worker process's peak memory and CPU time.
type nodeProc struct {
	hwmMiB float64
	cpu    time.Duration
}

// childNodes reads the child processes of this process named node: the
// graph workers.
func childNodes(b *testing.B) []nodeProc {
	b.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		b.Fatal(err)
	}
	self := strconv.Itoa(os.Getpid())
	var out []nodeProc
	for _, e := range ents {
		raw, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		fields := map[string]string{}
		for _, line := range strings.Split(string(raw), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok {
				fields[k] = strings.TrimSpace(v)
			}
		}
		if fields["Name"] != "node" || fields["PPid"] != self {
			continue
		}
		var p nodeProc
		if kb, err := strconv.ParseFloat(strings.TrimSuffix(fields["VmHWM"], " kB"), 64); err == nil {
			p.hwmMiB = kb / 1024
		}
		// utime and stime are fields 14 and 15 of stat, after the
		// parenthesised command name; in clock ticks (USER_HZ, 100/s).
		if stat, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil {
			if j := strings.LastIndexByte(string(stat), ')'); j > 0 {
				f := strings.Fields(string(stat[j+1:]))
				if len(f) > 12 {
					u, _ := strconv.ParseInt(f[11], 10, 64)
					s, _ := strconv.ParseInt(f[12], 10, 64)
					p.cpu = time.Duration(u+s) * 10 * time.Millisecond
				}
			}
		}
		out = append(out, p)
	}
	return out
}

// selfCPU is this process's CPU time (user plus system): the server's,
// with the benchmark's own clients.
func selfCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// workerCPU sums the graph workers' CPU time.
func workerCPU(b *testing.B) time.Duration {
	var sum time.Duration
	for _, p := range childNodes(b) {
		sum += p.cpu
	}
	return sum
}
