package httpapi_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"agentserver/internal/llm/scripted"
	"agentserver/internal/testutil"
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
			if on {
				traceToSink(b)
			}
			s := testutil.StartServer(b, testutil.Options{NoSync: true})
			b.SetParallelism(25) // 50 clients on 2 CPUs
			b.ReportAllocs()
			postRunsWait(b, s, `{"assistant_id":"echo","input":{"messages":[{"role":"user","content":"hi"}]}}`)
		})
	}
}

// BenchmarkAgentRunTracing measures what tracing costs an agent run whose
// model call takes 50 ms: one op is a stateless POST /runs/wait of the
// agent of benchAgentServer, answered in one model call that the scripted
// server holds 50 ms before its first byte, with 8 clients at once (2 per
// CPU on 2 CPUs: enough runs per second for the CPU figure, few enough
// that the CPUs stay mostly idle while the model "thinks"). "off" against
// "on" (every trace sampled: the request, run, node and chat spans,
// exported by the SDK over OTLP/HTTP to a local endpoint that discards
// them). wall-ms/run is the mean time from sending a request to reading
// its answer; cpu-µs/run is the whole process's user + system CPU (server,
// model, client and exporter) divided by the runs. Tracing's cost per run
// is the difference between the two.
func BenchmarkAgentRunTracing(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(onOff(on), func(b *testing.B) {
			if on {
				traceToSink(b)
			}
			s, model := benchAgentServer(b, testutil.Options{NoSync: true})
			steps := make([]scripted.Step, b.N)
			for i := range steps {
				steps[i] = scripted.Text("Done.").WithLatency(50*time.Millisecond, 0).WithUsage(12, 2)
			}
			model.Script(steps...)
			b.SetParallelism(4)
			postRunsWait(b, s, `{"assistant_id":"agent","input":{"messages":[{"role":"user","content":"hi"}]}}`)
		})
	}
}

func onOff(on bool) string { return map[bool]string{false: "off", true: "on"}[on] }

// traceToSink turns tracing on for the rest of the benchmark, exporting to
// a local OTLP/HTTP endpoint that discards the spans; the benchmark fails
// if none reached it.
func traceToSink(b *testing.B) {
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
		if received.Load() == 0 {
			b.Error("no span reached the OTLP endpoint")
		}
	})
}

// postRunsWait is the timed loop of the benchmarks: body posted to
// /runs/wait by the parallel clients until b.N runs answered 200. It
// reports cpu-µs/run (the process's CPU over the loop) and wall-ms/run
// (the mean time of one request).
func postRunsWait(b *testing.B, s *testutil.Server, body string) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	raw := []byte(body)
	var wall atomic.Int64
	cpu0 := processCPU()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			start := time.Now()
			resp, err := client.Post(s.URL()+"/runs/wait", "application/json", bytes.NewReader(raw))
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			wall.Add(int64(time.Since(start)))
			if resp.StatusCode != http.StatusOK {
				b.Errorf("POST /runs/wait: %s", resp.Status)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/run")
	b.ReportMetric(float64(wall.Load())/float64(b.N)/1e6, "wall-ms/run")
}

// processCPU is the process's user + system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
