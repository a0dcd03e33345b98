package httpapi_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

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
		name := map[bool]string{false: "off", true: "on"}[on]
		b.Run(name, func(b *testing.B) {
			if on {
				sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body) }))
				defer sink.Close()
				b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", sink.URL)
				stop, err := tracing.Setup(context.Background(), slog.New(slog.DiscardHandler))
				if err != nil {
					b.Fatal(err)
				}
				defer stop(context.Background())
			}
			s := testutil.StartServer(b, testutil.Options{NoSync: true})
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
			body := []byte(`{"assistant_id":"echo","input":{"messages":[{"role":"user","content":"hi"}]}}`)
			b.SetParallelism(25) // 50 clients on 2 CPUs
			b.ReportAllocs()
			cpu0 := processCPU()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := client.Post(s.URL()+"/runs/wait", "application/json", bytes.NewReader(body))
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						b.Errorf("POST /runs/wait: %s", resp.Status)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/run")
		})
	}
}

// processCPU is the process's user + system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
