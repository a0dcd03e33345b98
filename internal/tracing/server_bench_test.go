package tracing_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"agentserver/internal/llm/scripted"
	"agentserver/internal/testutil"
	"agentserver/internal/testutil/stats"
	"agentserver/internal/tracing"
)

// BenchmarkRunsWaitTracing measures what tracing every request costs a
// stateless POST /runs/wait of the echo graph (three spans: request, run,
// node), with 50 concurrent clients as in loadgen's runs-wait-c50: "off"
// against "on" (every trace sampled, exported over OTLP/HTTP to a local
// endpoint that discards the spans). cpu-µs/run is the whole process's
// user + system CPU (server, client and exporter) divided by the runs;
// the allocations are per run too.
func BenchmarkRunsWaitTracing(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(onOff(on), func(b *testing.B) {
			var received *atomic.Int64
			if on {
				received = traceToSink(b)
			}
			s := testutil.StartServer(b, testutil.Options{NoSync: true})
			b.SetParallelism(25) // 50 clients on 2 CPUs
			b.ReportAllocs()
			postRunsWait(b, s, `{"assistant_id":"echo","input":{"messages":[{"role":"user","content":"hi"}]}}`)
			if on {
				mustHaveExported(b, received)
			}
		})
	}
}

// BenchmarkAgentRunTracing measures what tracing costs an agent run whose
// model call takes 50 ms: a run is a stateless POST /runs/wait of the
// agent of benchAgentServer, answered in one model call that the scripted
// server holds 50 ms before its first byte, by 8 clients at once (enough
// runs per second for the CPU figure, few enough that the 2 CPUs stay
// mostly idle while the model "thinks"). Tracing is set up once, exporting
// to a local OTLP/HTTP endpoint that discards the spans, and the runs go
// in pairs of blocks of 16: in an "on" block every trace is sampled (the
// request, run, node and chat spans are recorded and exported), in an
// "off" block each request carries a traceparent whose sampled flag is
// clear, so the default parent-based sampler records nothing of its run.
// Which block of a pair goes first alternates, so both modes see the same
// machine: other processes' load drifts far more than tracing costs. Each
// block ends by waiting for the spans to be sent (tracing.Flush), so an
// "on" block's export is inside its figures. cpu-µs/run is the whole
// process's user + system CPU (server, model, client, exporter) over a
// mode's blocks divided by its runs; wall-ms/run is the mean time from
// sending a request to reading its answer. tracing-cpu-µs/run and
// tracing-wall-% are the mean differences, on less off, over the pairs,
// ±se the standard errors of those means, and p50- their medians. What a
// sampled-out run costs against tracing off is in BenchmarkRunSpans.
func BenchmarkAgentRunTracing(b *testing.B) {
	const clients, block = 8, 16
	received := traceToSink(b)
	s, model := testutil.StartBenchAgent(b, testutil.Options{NoSync: true})
	steps := make([]scripted.Step, b.N)
	for i := range steps {
		steps[i] = scripted.Text("Done.").WithLatency(50*time.Millisecond, 0).WithUsage(12, 2)
	}
	model.Script(steps...)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	body := []byte(`{"assistant_id":"agent","input":{"messages":[{"role":"user","content":"hi"}]}}`)
	sampledOut := http.Header{"Traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"}}
	var cpu, wall [2]time.Duration  // by mode: 0 off, 1 on
	var cpuDiff, wallDiff []float64 // per pair: on less off, µs and %
	b.ResetTimer()
	for pair := 0; (pair+1)*2*block <= b.N; pair++ {
		var c, w [2]time.Duration
		for _, on := range []int{pair % 2, 1 - pair%2} { // which goes first alternates
			h := sampledOut
			if on == 1 {
				h = nil
			}
			c[on], w[on] = runBlock(b, block, clients, func() { postOnce(b, client, s.URL()+"/runs/wait", body, h) })
			cpu[on], wall[on] = cpu[on]+c[on], wall[on]+w[on]
		}
		cpuDiff = append(cpuDiff, float64(c[1]-c[0])/block/1e3)
		wallDiff = append(wallDiff, 100*float64(w[1]-w[0])/float64(w[0]))
	}
	b.StopTimer()
	if len(cpuDiff) < 2 {
		return // too few runs for two pairs (go test's first, one-run round)
	}
	mustHaveExported(b, received)
	runs := float64(len(cpuDiff) * block)
	b.ReportMetric(float64(cpu[0])/runs/1e3, "off-cpu-µs/run")
	b.ReportMetric(float64(cpu[1])/runs/1e3, "on-cpu-µs/run")
	b.ReportMetric(float64(wall[0])/runs/1e6, "off-wall-ms/run")
	b.ReportMetric(float64(wall[1])/runs/1e6, "on-wall-ms/run")
	b.ReportMetric(stats.MeanFloat(cpuDiff), "tracing-cpu-µs/run")
	b.ReportMetric(stats.StdErr(cpuDiff), "±se-cpu-µs/run")
	b.ReportMetric(stats.MedianFloat(cpuDiff), "p50-tracing-cpu-µs/run")
	b.ReportMetric(stats.MeanFloat(wallDiff), "tracing-wall-%")
	b.ReportMetric(stats.StdErr(wallDiff), "±se-wall-%")
	b.ReportMetric(stats.MedianFloat(wallDiff), "p50-tracing-wall-%")
}

// runBlock runs post n times from clients goroutines, then waits until
// the spans are sent, and returns the process's CPU over the block and the
// sum of the posts' wall times.
func runBlock(b *testing.B, n, clients int, post func()) (cpu, wall time.Duration) {
	cpu0 := stats.ProcessCPU()
	var next, total atomic.Int64
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				start := time.Now()
				post()
				total.Add(int64(time.Since(start)))
			}
		})
	}
	wg.Wait()
	if err := tracing.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	return stats.ProcessCPU() - cpu0, time.Duration(total.Load())
}

func onOff(on bool) string { return map[bool]string{false: "off", true: "on"}[on] }

// traceToSink turns tracing on for the rest of the benchmark, exporting to
// a local OTLP/HTTP endpoint that discards the spans; it returns the count
// of bytes the endpoint received.
func traceToSink(b *testing.B) *atomic.Int64 {
	var received atomic.Int64
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		received.Add(n)
	}))
	b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", sink.URL)
	stop, err := tracing.Setup(context.Background(), slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		defer sink.Close()
		if err := stop(context.Background()); err != nil {
			b.Error(err)
		}
	})
	return &received
}

// mustHaveExported fails the benchmark unless spans reached the endpoint
// of traceToSink once they are flushed.
func mustHaveExported(b *testing.B, received *atomic.Int64) {
	if err := tracing.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	if received.Load() == 0 {
		b.Fatal("no span reached the OTLP endpoint")
	}
}

// postRunsWait is the timed loop of the benchmarks: body posted to
// /runs/wait by the parallel clients until b.N runs answered 200. It
// reports cpu-µs/run (the process's CPU over the loop) and wall-ms/run
// (the mean time of one request).
func postRunsWait(b *testing.B, s *testutil.Server, body string) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	raw := []byte(body)
	var wall atomic.Int64
	cpu0 := stats.ProcessCPU()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			start := time.Now()
			postOnce(b, client, s.URL()+"/runs/wait", raw, nil)
			wall.Add(int64(time.Since(start)))
		}
	})
	b.StopTimer()
	b.ReportMetric(float64((stats.ProcessCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/run")
	b.ReportMetric(float64(wall.Load())/float64(b.N)/1e6, "wall-ms/run")
}

// postOnce posts body to url with the headers h and reads the answer,
// which must be 200.
func postOnce(b *testing.B, client *http.Client, url string, body []byte, h http.Header) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		b.Error(err)
		return
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Errorf("POST %s: %s", url, resp.Status)
	}
}
