package supervisor_test

// Benchmarks of the supervisor against a real in-process server (real bbolt
// with fsync, real HTTP listener, scripted OpenAI-compatible model over
// 127.0.0.1). The 1,000-task ones are meant to run once:
//
//	go test -run '^$' -bench . -benchtime 1x ./internal/supervisor/
//
// Figures are reported with b.ReportMetric; docs/benchmarks.md
// ("Supervisor") records them and explains the measurements.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/asynctasks"
	"agentserver/internal/llm/scripted"
	"agentserver/internal/runs"
	"agentserver/internal/supervisor"
	"agentserver/internal/testutil"
	"agentserver/internal/threads"
	"agentserver/internal/tools"
)

const (
	benchTasks        = 1000
	benchModelLatency = time.Second
	// benchTimeout bounds every benchmark iteration.
	benchTimeout = 2 * time.Minute
)

// workerSpec is the subagent: one model call, answered after the scripted
// model's latency.
func workerSpec(modelURL string) string {
	return fmt.Sprintf(`name: worker
description: answers after one slow model call
model:
  name: test-model
  base_url: %s
  max_retries: 0
system_prompt: You work.
max_turns: 2
`, modelURL)
}

// bossSpec is a supervisor whose only async subagent is the worker graph on
// this server (in-process transport).
func bossSpec(modelURL string) string {
	return fmt.Sprintf(`name: boss
description: supervises
model:
  name: test-model
  base_url: %s
  max_retries: 0
system_prompt: You delegate.
max_turns: 3
async_subagents:
  - name: worker
    description: answers after one slow model call
    graph_id: worker
`, modelURL)
}

const benchGraphs = `{"graphs": {"boss": "./boss.yaml", "worker": "./worker.yaml", "echo": "builtin:echo", "gated": "builtin:test-gated"}}`

// benchEnv is a server serving the worker, boss and test graphs, plus a
// supervisor middleware driven directly (the tools, as the agent loop calls
// them) through the in-process transport, with its own notifier.
type benchEnv struct {
	b        *testing.B
	srv      *testutil.Server
	model    *scripted.Server
	local    *asynctasks.Local
	notifier *supervisor.Notifier
	tools    map[string]tools.Tool
	dataDir  string
}

// reportDB reports the size of the server's database file.
func (e *benchEnv) reportDB(b *testing.B) {
	if fi, err := os.Stat(filepath.Join(e.dataDir, "agentserver.db")); err == nil {
		b.ReportMetric(float64(fi.Size())/(1<<20), "db-MiB")
	}
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newBenchEnv starts the scripted model (workers answer after
// benchModelLatency; the boss starts `tasks` workers in one step, then
// answers), the server (jobs workers) and a supervisor over it.
func newBenchEnv(b *testing.B, jobs, tasks int) *benchEnv {
	b.Helper()
	model := scripted.New()
	b.Cleanup(model.Close)
	model.SetResponder(func(req scripted.ChatRequest) scripted.Step {
		if slices.Contains(req.ToolNames(), "start_async_task") { // the boss
			if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == "tool" {
				return scripted.Text("Started them all.")
			}
			calls := make([]scripted.ToolCall, tasks)
			for i := range calls {
				calls[i] = scripted.Call("start_async_task", map[string]any{"description": "task " + strconv.Itoa(i), "subagent_type": "worker"})
				calls[i].ID = "call_" + strconv.Itoa(i)
			}
			return scripted.ToolCalls(calls...)
		}
		return scripted.Text("done: "+req.LastUserText()).WithLatency(benchModelLatency, 0)
	})
	dataDir := b.TempDir()
	srv := testutil.StartServer(b, testutil.Options{Graphs: benchGraphs, Jobs: jobs, DataDir: dataDir, Files: map[string]string{
		"worker.yaml": workerSpec(model.URL()),
		"boss.yaml":   bossSpec(model.URL()),
	}})
	local := &asynctasks.Local{}
	local.Bind(srv.Threads, srv.Runs)
	n := supervisor.NewNotifier(quietLog(), nil)
	n.Bind(srv.Threads, srv.Runs)
	b.Cleanup(n.Close) // registered after the server's, so it runs first
	subs := []supervisor.Subagent{
		{Name: "worker", Description: "answers after one slow model call", GraphID: "worker"},
		{Name: "waiter", Description: "waits on a gate", GraphID: "gated"},
	}
	sup, err := supervisor.New(supervisor.Config{Subagents: subs}, func(supervisor.Subagent) (asynctasks.Transport, error) { return local, nil }, n)
	if err != nil {
		b.Fatal(err)
	}
	e := &benchEnv{b: b, srv: srv, model: model, local: local, notifier: n, tools: map[string]tools.Tool{}, dataDir: dataDir}
	for _, t := range sup.Tools() {
		e.tools[t.Spec().Name] = t
	}
	return e
}

// newThread creates a supervisor thread through the service.
func (e *benchEnv) newThread(ctx context.Context) uuid.UUID {
	e.b.Helper()
	th, err := e.srv.Threads.Create(ctx, threads.CreateParams{})
	if err != nil {
		e.b.Fatal(err)
	}
	return th.ThreadID
}

// call runs a tool as the agent loop does; thread is the supervisor thread.
func (e *benchEnv) call(ctx context.Context, name string, thread uuid.UUID, state, args map[string]any) tools.Result {
	res, err := e.tools[name].Call(ctx, tools.Call{ID: "call-1", Args: args, ThreadID: thread.String(), State: state,
		Config: map[string]any{"configurable": map[string]any{"assistant_id": "boss"}}})
	if err != nil {
		e.b.Fatalf("%s returned an error instead of a message: %v", name, err)
	}
	return res
}

// startAll calls start_async_task n times, concurrently when parallel (as
// the agent loop runs one step's tool calls), and returns the tool results'
// async_tasks writes merged, as the tools node would checkpoint them.
func (e *benchEnv) startAll(ctx context.Context, thread uuid.UUID, kind string, n int, parallel bool, desc func(i int) string) map[string]any {
	e.b.Helper()
	results := make([]tools.Result, n)
	one := func(i int) {
		results[i] = e.call(ctx, "start_async_task", thread, map[string]any{}, map[string]any{"description": desc(i), "subagent_type": kind})
	}
	if parallel {
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() { defer wg.Done(); one(i) }()
		}
		wg.Wait()
	} else {
		for i := range n {
			one(i)
		}
	}
	var merged any = map[string]any{}
	for i, r := range results {
		if !strings.HasPrefix(r.Content, "Launched async subagent. task_id: ") {
			e.b.Fatalf("start %d: %q", i, r.Content)
		}
		var err error
		if merged, err = supervisor.MergeTasks(merged, r.Update[supervisor.Channel]); err != nil {
			e.b.Fatal(err)
		}
	}
	return merged.(map[string]any)
}

// field reads a string field of a task record.
func field(tasks map[string]any, id, key string) string {
	rec, _ := tasks[id].(map[string]any)
	s, _ := rec[key].(string)
	return s
}

// waitRuns blocks on every task's run (Runs.Wait: a completion channel, no
// polling) and returns the time the last one returned and the latest
// ended_at among the runs.
func (e *benchEnv) waitRuns(ctx context.Context, tasks map[string]any) (time.Time, time.Time) {
	e.b.Helper()
	var (
		mu       sync.Mutex
		lastSeen time.Time
		lastEnd  time.Time
		failed   []string
		wg       sync.WaitGroup
	)
	for id := range tasks {
		rid, err := uuid.Parse(field(tasks, id, "run_id"))
		if err != nil {
			e.b.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, _, err := e.srv.Runs.Wait(ctx, nil, rid)
			now := time.Now()
			mu.Lock()
			defer mu.Unlock()
			if err != nil || r.Status != "success" {
				failed = append(failed, fmt.Sprintf("%s: %s %v %s", rid, r.Status, err, r.Error))
				return
			}
			if now.After(lastSeen) {
				lastSeen = now
			}
			if r.EndedAt != nil && r.EndedAt.After(lastEnd) {
				lastEnd = *r.EndedAt
			}
		}()
	}
	wg.Wait()
	if len(failed) > 0 {
		e.b.Fatalf("%d runs did not succeed, e.g. %s", len(failed), failed[0])
	}
	return lastSeen, lastEnd
}

// waitPushed waits (polling the state with a deadline) until every task in
// the supervisor thread's async_tasks has status; it returns the creation
// time of the newest checkpoint, i.e. when the last push was written, so
// the poll interval (up to 100 ms: each read decodes the whole state) does
// not enter the figure.
func (e *benchEnv) waitPushed(ctx context.Context, thread uuid.UUID, want int, status string) (time.Time, error) {
	for wait := time.Millisecond; ; wait = min(wait*2, 100*time.Millisecond) {
		st, err := e.srv.Threads.GetState(ctx, thread, nil)
		if err != nil {
			return time.Time{}, err
		}
		tasks, _ := st.Values[supervisor.Channel].(map[string]any)
		done := 0
		for id := range tasks {
			if field(tasks, id, "status") == status {
				done++
			}
		}
		if done >= want {
			return *st.CreatedAt, nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("%d of %d tasks pushed as %s: %w", done, want, status, ctx.Err())
		case <-time.After(wait):
		}
	}
}

// reportRSS reports VmRSS (with its RssAnon and RssFile parts) and VmHWM of
// this process, which the server, the scripted model and the benchmark
// share.
func reportRSS(b *testing.B) {
	m := procStatusMiB()
	for _, k := range []string{"VmRSS", "RssAnon", "RssFile", "VmHWM"} {
		b.ReportMetric(m[k], k+"-MiB")
	}
}

// procStatusMiB reads the memory lines of /proc/self/status in MiB.
func procStatusMiB() map[string]float64 {
	out := map[string]float64{}
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) == 0 {
			continue
		}
		if kb, err := strconv.ParseFloat(fields[0], 64); err == nil && len(fields) == 2 && fields[1] == "kB" {
			out[k] = kb / 1024
		}
	}
	return out
}

// BenchmarkLaunch1000Tasks: one supervisor launches 1,000 async tasks of a
// worker graph whose model call takes 1 s; wall time from the first start
// to all 1,000 runs finished (Runs.Wait on each run, no polling).
//
//   - tool-parallel: the start_async_task tool driven directly, the 1,000
//     calls at once (as the agent loop runs one step's parallel calls);
//     the records are not written to the supervisor thread, so the
//     notifier's pushes are no-ops;
//   - tool-sequential: the same, one call after another;
//   - agent: a real supervisor run (the boss graph) whose scripted model
//     asks for the 1,000 starts in one step; the server's own notifier then
//     pushes the 1,000 completions into the boss thread: all-pushed-s is
//     the creation time of the checkpoint that recorded the last one.
func BenchmarkLaunch1000Tasks(b *testing.B) {
	for _, mode := range []string{"tool-parallel", "tool-sequential"} {
		b.Run(mode, func(b *testing.B) {
			e := newBenchEnv(b, benchTasks+100, benchTasks)
			for b.Loop() {
				ctx, cancel := context.WithTimeout(context.Background(), benchTimeout)
				thread := e.newThread(ctx)
				t0 := time.Now()
				tasks := e.startAll(ctx, thread, "worker", benchTasks, mode == "tool-parallel", func(i int) string { return "task " + strconv.Itoa(i) })
				launched := time.Since(t0)
				// The records stay out of the supervisor thread (no
				// checkpoint is written here), so the notifier's pushes find
				// nothing to update: this variant measures launching and
				// running; the agent variant adds the pushes.
				lastSeen, lastEnd := e.waitRuns(ctx, tasks)
				b.ReportMetric(launched.Seconds(), "launch-s")
				b.ReportMetric(lastSeen.Sub(t0).Seconds(), "wall-s")
				b.ReportMetric(lastEnd.Sub(t0).Seconds(), "last-ended_at-s")
				reportRSS(b)
				e.reportDB(b)
				cancel()
			}
		})
	}
	b.Run("agent", func(b *testing.B) {
		e := newBenchEnv(b, benchTasks+100, benchTasks)
		for b.Loop() {
			ctx, cancel := context.WithTimeout(context.Background(), benchTimeout)
			thread := e.newThread(ctx)
			t0 := time.Now()
			run, err := e.srv.Runs.Create(ctx, runsCreate(thread, "boss", "start 1000 tasks"))
			if err != nil {
				b.Fatal(err)
			}
			r, values, err := e.srv.Runs.Wait(ctx, &thread, run.RunID)
			if err != nil || r.Status != "success" {
				b.Fatalf("supervisor run: %v %s %s", err, r.Status, r.Error)
			}
			supDone := time.Since(t0)
			tasks, _ := values[supervisor.Channel].(map[string]any)
			if len(tasks) != benchTasks {
				b.Fatalf("supervisor tracks %d tasks, want %d", len(tasks), benchTasks)
			}
			lastSeen, _ := e.waitRuns(ctx, tasks)
			b.ReportMetric(supDone.Seconds(), "supervisor-run-s")
			b.ReportMetric(lastSeen.Sub(t0).Seconds(), "wall-s")
			pushed, err := e.waitPushed(ctx, thread, benchTasks, "success")
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(pushed.Sub(t0).Seconds(), "all-pushed-s")
			reportRSS(b)
			e.reportDB(b)
			cancel()
		}
	})
}

// runsCreate is the run that starts a supervisor conversation.
func runsCreate(thread uuid.UUID, assistant, text string) runs.CreateParams {
	return runs.CreateParams{ThreadID: &thread, Assistant: assistant,
		Input: map[string]any{"messages": []any{map[string]any{"role": "user", "content": text}}}}
}

// BenchmarkList1000 measures list_async_tasks over 1,000 tracked tasks
// (100 calls per iteration; ns/op is per 100 calls):
//
//   - finished: every record is terminal, so no transport call is made;
//   - running: every task's run is live (gated), so each is refreshed
//     through the in-process transport (1,000 concurrent Run calls);
//   - running-http: the same through the HTTP transport to this server.
func BenchmarkList1000(b *testing.B) {
	b.Run("finished", func(b *testing.B) {
		e := newBenchEnv(b, 64, 0)
		thread := e.newThread(context.Background())
		state := map[string]any{supervisor.Channel: fakeTasks(benchTasks, "success")}
		e.benchList(b, thread, state, benchTasks)
	})
	for _, transport := range []string{"running", "running-http"} {
		b.Run(transport, func(b *testing.B) {
			e := newBenchEnv(b, benchTasks+100, 0)
			ctx, cancel := context.WithTimeout(context.Background(), benchTimeout)
			defer cancel()
			thread := e.newThread(ctx)
			gate := "list-" + thread.String()
			b.Cleanup(func() { testutil.Release(gate) }) // before the server stops
			tasks := e.startAll(ctx, thread, "waiter", benchTasks, true, func(int) string { return gate })
			e.waitAllRunning(ctx, gate, benchTasks)
			var tr asynctasks.Transport = e.local
			if transport == "running-http" {
				h, err := asynctasks.NewHTTP(asynctasks.HTTPConfig{URL: e.srv.URL(), Getenv: func(string) string { return "" }})
				if err != nil {
					b.Fatal(err)
				}
				tr = h
			}
			sup, err := supervisor.New(supervisor.Config{Subagents: []supervisor.Subagent{{Name: "waiter", Description: "waits on a gate", GraphID: "gated"}}},
				func(supervisor.Subagent) (asynctasks.Transport, error) { return tr, nil }, nil)
			if err != nil {
				b.Fatal(err)
			}
			for _, t := range sup.Tools() {
				e.tools[t.Spec().Name] = t
			}
			e.benchList(b, thread, map[string]any{supervisor.Channel: tasks}, benchTasks)
		})
	}
}

// listSamples is how many list_async_tasks calls one iteration makes, so
// that -benchtime 1x still gives percentiles.
const listSamples = 100

// benchList times list_async_tasks calls on state (listSamples per
// iteration, one after another) and checks the answers.
func (e *benchEnv) benchList(b *testing.B, thread uuid.UUID, state map[string]any, want int) {
	ctx := context.Background()
	var lat []time.Duration
	for b.Loop() {
		for range listSamples {
			start := time.Now()
			res := e.call(ctx, "list_async_tasks", thread, state, map[string]any{"status_filter": "all"})
			lat = append(lat, time.Since(start))
			if !strings.HasPrefix(res.Content, strconv.Itoa(want)+" tracked task(s):") {
				b.Fatalf("list: %.200q", res.Content)
			}
		}
	}
	b.ReportMetric(float64(len(lat)), "samples")
	reportPercentilesNamed(b, lat, "")
}

// waitAllRunning waits until n gated runs wait at gate: the runs are then
// live, blocked in their node.
func (e *benchEnv) waitAllRunning(ctx context.Context, gate string, n int) {
	e.b.Helper()
	if err := testutil.AwaitWaiters(ctx, gate, n); err != nil {
		e.b.Fatal(err)
	}
}

// fakeTasks builds n task records with status (ids are fresh uuids).
func fakeTasks(n int, status string) map[string]any {
	out := make(map[string]any, n)
	stamp := time.Now().UTC().Format("2006-01-02T15:04:05Z")
	for range n {
		id := uuid.NewString()
		out[id] = map[string]any{"task_id": id, "agent_name": "worker", "thread_id": id, "run_id": uuid.NewString(),
			"status": status, "created_at": stamp, "last_checked_at": stamp, "last_updated_at": stamp}
	}
	return out
}

// BenchmarkPushLatency measures completion-to-supervisor latency over the
// Notifier path, 200 samples per iteration, one after another: a gated task
// is started with start_async_task (which makes the notifier watch its
// run) and its record is persisted in the supervisor thread, as the tools
// node's checkpoint would; once the run is inside its gated node, the gate
// is released and the supervisor thread's state is read with
// Threads.GetState in a loop that only yields (runtime.Gosched, no sleep)
// until the record shows "success".
//
// Stages, each a p50/p99/max in ms:
//   - release-to-visible: Release to the first read that shows the record
//     final (the headline figure);
//   - release-to-ended: to the run's ended_at (stamped inside the run's
//     final write transaction, before its commit);
//   - ended-to-done: to Runs.Wait returning in a side goroutine, as the
//     notifier's does (the subagent's final commit and settle);
//   - done-to-written: to the created_at of the supervisor checkpoint the
//     notifier wrote (its status read, its write transaction starting);
//   - written-to-visible: the notifier's commit and the poll's detection.
//
// fresh-thread uses a new supervisor thread per sample (one record);
// shared-thread one thread whose async_tasks grows to 200 records.
func BenchmarkPushLatency(b *testing.B) {
	for _, mode := range []string{"fresh-thread", "shared-thread"} {
		b.Run(mode, func(b *testing.B) { benchPush(b, mode == "fresh-thread") })
	}
}

func benchPush(b *testing.B, fresh bool) {
	const samples = 200
	e := newBenchEnv(b, 64, 0)
	ctx, cancel := context.WithTimeout(context.Background(), benchTimeout)
	defer cancel()
	thread := e.newThread(ctx)
	stages := map[string][]time.Duration{}
	for b.Loop() {
		if !fresh {
			thread = e.newThread(ctx)
		}
		for i := range samples {
			if fresh {
				thread = e.newThread(ctx)
			}
			gate := fmt.Sprintf("push-%s-%d", thread, i)
			tasks := e.startAll(ctx, thread, "waiter", 1, false, func(int) string { return gate })
			var id string
			for k := range tasks {
				id = k
			}
			if _, err := e.srv.Threads.UpdateState(ctx, thread, threads.StateUpdate{Values: map[string]any{supervisor.Channel: tasks}, AsNode: "tools"}); err != nil {
				b.Fatal(err)
			}
			runID := uuid.MustParse(field(tasks, id, "run_id"))
			e.waitAllRunning(ctx, gate, 1)
			doneAt := make(chan time.Time, 1)
			go func() {
				_, _, _ = e.srv.Runs.Wait(ctx, nil, runID)
				doneAt <- time.Now()
			}()
			released := time.Now()
			testutil.Release(gate)
			var st threads.State
			for {
				var err error
				if st, err = e.srv.Threads.GetState(ctx, thread, nil); err != nil {
					b.Fatal(err)
				}
				if tasks, _ := st.Values[supervisor.Channel].(map[string]any); field(tasks, id, "status") == "success" {
					break
				}
				if ctx.Err() != nil {
					b.Fatalf("task %s never pushed as success", id)
				}
				runtime.Gosched()
			}
			visible := time.Now()
			r, err := e.srv.Runs.Get(ctx, nil, runID)
			if err != nil || r.EndedAt == nil {
				b.Fatalf("run %s: %v", runID, err)
			}
			done := <-doneAt
			stages["release-to-visible"] = append(stages["release-to-visible"], visible.Sub(released))
			stages["release-to-ended"] = append(stages["release-to-ended"], r.EndedAt.Sub(released))
			stages["ended-to-done"] = append(stages["ended-to-done"], done.Sub(*r.EndedAt))
			stages["done-to-written"] = append(stages["done-to-written"], st.CreatedAt.Sub(done))
			stages["written-to-visible"] = append(stages["written-to-visible"], visible.Sub(*st.CreatedAt))
		}
	}
	b.ReportMetric(float64(len(stages["release-to-visible"])), "samples")
	for name, lat := range stages {
		reportPercentilesNamed(b, lat, name)
	}
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p)
	return sorted[i]
}

// reportPercentilesNamed reports p50, p99 and max in milliseconds.
func reportPercentilesNamed(b *testing.B, lat []time.Duration, name string) {
	s := slices.Clone(lat)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	prefix := ""
	if name != "" {
		prefix = name + "-"
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(percentile(s, 0.50)), prefix+"p50-ms")
	b.ReportMetric(ms(percentile(s, 0.99)), prefix+"p99-ms")
	b.ReportMetric(ms(s[len(s)-1]), prefix+"max-ms")
}
