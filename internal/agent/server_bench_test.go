package agent_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/llm/scripted"
	"agentserver/internal/runs"
	"agentserver/internal/storage"
	"agentserver/internal/testutil"
	"agentserver/internal/testutil/stats"
)

// Agent runtime benchmarks over the whole server (runs.Service, bbolt,
// event log, SSE), with the agent's model served by the scripted server
// in the same process. docs/benchmarks.md ("Agent runtime") has the
// commands and figures.

// BenchmarkAgentServerStepOverhead is BenchmarkAgentStepOverhead
// (internal/agent) through the whole run engine: one op is srv.Runs.Create
// on a fresh, empty thread plus srv.Runs.Wait, for an agent run of k
// tool-call steps and a final answer (k+1 model calls, scripted server at
// zero latency, default stream mode "values" with no subscriber). The run
// wall time includes the run's durable creation, its queueing and start
// (markRunning), one checkpoint commit per super-step (two per tool step),
// the final commit and the waiter's wake-up. The model time is read from
// the scripted server (request body read → finish delta sent), so the llm
// client's request encoding, its loopback HTTP and its stream decoding count
// as runtime overhead. bbolt=fsync is the server's default; bbolt=nosync
// shows how much of it is the disk.
func BenchmarkAgentServerStepOverhead(b *testing.B) {
	for _, noSync := range []bool{false, true} {
		for _, k := range []int{1, 5, 20} {
			name := fmt.Sprintf("bbolt=fsync/k=%d", k)
			if noSync {
				name = fmt.Sprintf("bbolt=nosync/k=%d", k)
			}
			b.Run(name, func(b *testing.B) { benchServerStepOverhead(b, k, noSync) })
		}
	}
}

func benchServerStepOverhead(b *testing.B, k int, noSync bool) {
	s, model := testutil.StartBenchAgent(b, testutil.Options{NoSync: noSync})
	ctx := context.Background()
	steps := k + 1
	var perStep, overheads, walls, models, gaps, fixed, firstGaps []time.Duration
	done := 0
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		tid := testutil.NewBenchThread(b, s)
		model.Script(scripted.ToolLoopSteps(k)...)
		b.StartTimer()
		start := time.Now()
		run, err := s.Runs.Create(ctx, runs.CreateParams{
			ThreadID: &tid, Assistant: "agent", Input: testutil.UserInput("work through the plan"),
			Config: map[string]any{"recursion_limit": 1000},
		})
		if err != nil {
			b.Fatal(err)
		}
		ended, values, err := s.Runs.Wait(ctx, &tid, run.RunID)
		wall := time.Since(start)
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		if ended.Status != storage.RunSuccess {
			b.Fatalf("run %s: %s", ended.Status, ended.Error)
		}
		reqs := model.Requests()
		if len(reqs) != done+steps {
			b.Fatalf("%d model requests, want %d", len(reqs)-done, steps)
		}
		msgs, _ := values["messages"].([]any)
		mt, err := scripted.ModelTime(reqs[done:], msgs)
		if err != nil {
			b.Fatal(err)
		}
		g, err := scripted.StepGaps(reqs[done:], msgs)
		if err != nil {
			b.Fatal(err)
		}
		gaps = append(gaps, g...)
		firstGaps = append(firstGaps, g[0])
		var between time.Duration
		for _, d := range g {
			between += d
		}
		fixed = append(fixed, wall-mt-between)
		done += steps
		perStep = append(perStep, (wall-mt)/time.Duration(steps))
		overheads = append(overheads, wall-mt)
		walls = append(walls, wall)
		models = append(models, mt)
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(perStep)
	slices.Sort(overheads)
	slices.Sort(gaps)
	slices.Sort(fixed)
	slices.Sort(firstGaps)
	b.ReportMetric(stats.Millis(stats.Quantile(firstGaps, 0.5)), "firstgap-p50-ms")
	b.ReportMetric(stats.Millis(stats.Mean(gaps)), "stepgap-mean-ms")
	b.ReportMetric(stats.Millis(stats.Quantile(fixed, 0.5)), "outside-steps-p50-ms/run")
	b.ReportMetric(stats.Millis(stats.Quantile(gaps, 0.5)), "stepgap-p50-ms")
	b.ReportMetric(stats.Millis(stats.Quantile(gaps, 0.99)), "stepgap-p99-ms")
	b.ReportMetric(stats.Millis(stats.Quantile(perStep, 0.5)), "srvstep-p50-ms")
	b.ReportMetric(stats.Millis(stats.Quantile(perStep, 0.99)), "srvstep-p99-ms")
	b.ReportMetric(stats.Millis(stats.Quantile(overheads, 0.5)), "srvoverhead-p50-ms/run")
	b.ReportMetric(stats.Millis(stats.Mean(walls)), "wall-ms/run")
	b.ReportMetric(stats.Millis(stats.Mean(models)), "srvmodel-ms/run")
}

// BenchmarkAgentTokenPassThrough measures how long a token chunk takes from
// the model to the SSE client: one op is one streamed run (POST
// /threads/{id}/runs/stream, stream_mode messages-tuple) of an agent whose
// model streams 500 content deltas 2 ms apart, each carrying its send time
// (scripted WithSendTimestamps; the finish delta carries one too, so 501
// samples per run). The latency of a chunk is the time the client has read
// the event's terminating blank line minus the time the scripted server
// took just before encoding and writing the delta: the scripted server's
// write and flush, loopback TCP, the llm client's SSE decoding and chunk
// assembly, the run's sink (JSON encoding, event log append, broker), the
// SSE handler's write and flush, loopback TCP again, and the client's line
// reading. Client and both servers share this process and its clock.
func BenchmarkAgentTokenPassThrough(b *testing.B) {
	const chunks = 500
	s, model := testutil.StartBenchAgent(b, testutil.Options{})
	var lat []time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		tid := testutil.NewBenchThread(b, s)
		model.Script(scripted.Text(strings.Repeat("x", chunks)).Split(chunks).WithLatency(0, 2*time.Millisecond).WithSendTimestamps())
		b.StartTimer()
		resp := s.Stream("POST", "/threads/"+tid.String()+"/runs/stream", map[string]any{
			"assistant_id": "agent", "input": testutil.UserInput("stream"), "stream_mode": []string{"messages-tuple"},
		}, nil)
		if resp.StatusCode != 200 {
			b.Fatalf("stream: status %d", resp.StatusCode)
		}
		n, bad := 0, ""
		rd := bufio.NewReaderSize(resp.Body, 64<<10)
		var event string
		var data strings.Builder
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				break
			}
			line = strings.TrimRight(line, "\r\n")
			switch {
			case strings.HasPrefix(line, "event:"):
				event = strings.TrimSpace(line[6:])
			case strings.HasPrefix(line, "data:"):
				data.WriteString(strings.TrimPrefix(line[5:], " "))
			case line == "":
				recv := time.Now()
				if event == "error" {
					bad = data.String()
				}
				if event == "messages" {
					var pair []map[string]any
					if err := json.Unmarshal([]byte(data.String()), &pair); err != nil || len(pair) != 2 {
						b.Fatalf("messages event %q: %v", data.String(), err)
					}
					content, _ := pair[0]["content"].(string)
					for _, sent := range scripted.SendTimes(content) {
						lat = append(lat, recv.Sub(sent))
						n++
					}
				}
				event = ""
				data.Reset()
			}
		}
		resp.Body.Close()
		b.StopTimer()
		if bad != "" || n != chunks+1 {
			b.Fatalf("run streamed %d stamped chunks, want %d (error event: %s)", n, chunks+1, bad)
		}
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(stats.Millis(stats.Quantile(lat, 0.5)), "p50-ms")
	b.ReportMetric(stats.Millis(stats.Quantile(lat, 0.99)), "p99-ms")
	b.ReportMetric(stats.Millis(stats.Quantile(lat, 0.999)), "p99.9-ms")
	b.ReportMetric(stats.Millis(lat[len(lat)-1]), "max-ms")
	b.ReportMetric(float64(len(lat)), "chunks")
}

// BenchmarkAgentConcurrentRuns starts 1,000 agent runs at once, each on its
// own thread and each waiting on one model call that answers after 2 s, on
// a server with 1,100 run workers and durable bbolt; one op is the whole
// batch (use -benchtime 1x). It reports the wall time from the first
// srv.Runs.Create to the last srv.Runs.Wait returning, and the memory of
// this process: the server, the scripted model server (1,000 open
// responses) and the benchmark itself. VmHWM is reset (clear_refs 5) just
// before the batch, so it is the batch's peak. With AGENT_BENCH_HEAPPROFILE
// set to a file name, it writes a heap profile there once all 1,000 model
// calls are in flight (after a forced GC; for profiling, not for figures).
func BenchmarkAgentConcurrentRuns(b *testing.B) {
	const n = 1000
	const latency = 2 * time.Second
	s, model := testutil.StartBenchAgent(b, testutil.Options{Jobs: 1100})
	model.SetResponder(func(scripted.ChatRequest) scripted.Step {
		return scripted.Text("done").WithLatency(latency, 0)
	})
	ctx := context.Background()
	for range b.N {
		b.StopTimer()
		tids := make([]uuid.UUID, n)
		for i := range tids {
			tids[i] = testutil.NewBenchThread(b, s)
		}
		reqsBefore := len(model.Requests())
		runtime.GC()
		hwmReset := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
		before := stats.ProcStatusMiB()
		goroutinesBefore := runtime.NumGoroutine()

		// The sampler keeps the largest VmRSS seen and, at that moment, the
		// Go runtime's own view: heap objects, goroutine stacks, and all
		// memory mapped by the runtime.
		var peakRSS float64
		var peakG int
		var atPeak []metrics.Sample
		stop := make(chan struct{})
		var sampler sync.WaitGroup
		sampler.Add(1)
		go func() {
			defer sampler.Done()
			t := time.NewTicker(50 * time.Millisecond)
			defer t.Stop()
			for {
				if rss := stats.ProcStatusMiB()["VmRSS"]; rss > peakRSS {
					peakRSS = rss
					atPeak = []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"}, {Name: "/memory/classes/total:bytes"}}
					metrics.Read(atPeak)
				}
				peakG = max(peakG, runtime.NumGoroutine())
				select {
				case <-stop:
					return
				case <-t.C:
				}
			}
		}()

		b.StartTimer()
		start := time.Now()
		lat := make([]time.Duration, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				run, err := s.Runs.Create(ctx, runs.CreateParams{ThreadID: &tids[i], Assistant: "agent", Input: testutil.UserInput("wait for the model")})
				if err != nil {
					errs[i] = err
					return
				}
				ended, values, err := s.Runs.Wait(ctx, &tids[i], run.RunID)
				lat[i] = time.Since(start)
				switch {
				case err != nil:
					errs[i] = err
				case ended.Status != storage.RunSuccess:
					errs[i] = fmt.Errorf("run %s: %s", ended.Status, ended.Error)
				default:
					msgs, _ := values["messages"].([]any)
					if len(msgs) != 2 || msgs[1].(map[string]any)["content"] != "done" {
						errs[i] = fmt.Errorf("final messages %v", msgs)
					}
				}
			}()
		}
		if path := os.Getenv("AGENT_BENCH_HEAPPROFILE"); path != "" {
			// Profiling only: a heap profile while every run waits on its
			// model call (after a GC, which perturbs the figures).
			wctx, cancel := context.WithTimeout(ctx, time.Minute)
			if err := model.WaitRequests(wctx, reqsBefore+n); err != nil {
				b.Fatal(err)
			}
			cancel()
			runtime.GC()
			f, err := os.Create(path)
			if err != nil {
				b.Fatal(err)
			}
			if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
		wg.Wait()
		wall := time.Since(start)
		b.StopTimer()
		close(stop)
		sampler.Wait()
		after := stats.ProcStatusMiB()
		for i, err := range errs {
			if err != nil {
				b.Fatalf("run %d of %d: %v", i, n, err)
			}
		}
		reqs := model.Requests()[reqsBefore:]
		if len(reqs) != n {
			b.Fatalf("%d model requests, want %d", len(reqs), n)
		}
		first, last := reqs[0].Received, reqs[0].Received
		for _, r := range reqs {
			if r.Received.Before(first) {
				first = r.Received
			}
			if r.Received.After(last) {
				last = r.Received
			}
		}
		slices.Sort(lat)
		b.ReportMetric(wall.Seconds(), "wall-s")
		b.ReportMetric(stats.Millis(stats.Quantile(lat, 0.5))/1000, "done-p50-s")
		b.ReportMetric(stats.Millis(stats.Quantile(lat, 0.99))/1000, "done-p99-s")
		b.ReportMetric(stats.Millis(first.Sub(start)), "first-model-call-ms")
		b.ReportMetric(stats.Millis(last.Sub(start)), "last-model-call-ms")
		b.ReportMetric(before["VmRSS"], "rss-before-MiB")
		b.ReportMetric(peakRSS, "rss-peak-sampled-MiB")
		for i, name := range []string{"heapobjects-at-peak-MiB", "stacks-at-peak-MiB", "goruntime-total-at-peak-MiB"} {
			b.ReportMetric(float64(atPeak[i].Value.Uint64())/(1<<20), name)
		}
		b.ReportMetric(after["VmRSS"], "rss-after-MiB")
		b.ReportMetric(after["RssAnon"], "rssanon-after-MiB")
		if hwmReset {
			b.ReportMetric(after["VmHWM"], "hwm-batch-MiB")
		} else {
			b.ReportMetric(after["VmHWM"], "hwm-process-MiB")
		}
		b.ReportMetric(float64(goroutinesBefore), "goroutines-before")
		b.ReportMetric(float64(peakG), "goroutines-peak")
	}
}
