package tracing_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"agentserver/internal/testutil/stats"
	"agentserver/internal/tracing"
)

// BenchmarkRunSpans measures the spans of one run, exported by the SDK in
// batches over OTLP/HTTP to a local endpoint that discards them:
// "runs-wait" is a POST /runs/wait of a one-node graph (the request's
// server span, the traceparent stored on the run and read back by the
// worker, the run span and the node span), every trace sampled; "agent" is
// the same run of an agent answering in one model call, which adds the
// chat span with its gen_ai attributes; "agent-sampled-out" is that run
// when the request's traceparent says "not sampled" (nothing is recorded
// or exported), and "agent-off" with tracing off. Every 256 runs it waits
// until the spans are sent (tracing.Flush), so that none is dropped for a
// full queue and every export is in the figure. Run it with -cpu 1 so that
// the exporter's goroutine and the garbage collector are in the figure
// too. cpu-µs/run is the process's user + system CPU over the loop divided
// by the runs: unlike ns/op, it does not grow while other processes hold
// the CPU.
func BenchmarkRunSpans(b *testing.B) {
	for _, v := range []struct {
		name       string
		agent, off bool
		header     http.Header
	}{
		{"runs-wait", false, false, http.Header{}},
		{"agent", true, false, http.Header{}},
		{"agent-sampled-out", true, false, http.Header{"Traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"}}},
		{"agent-off", true, true, http.Header{}},
	} {
		b.Run(v.name, func(b *testing.B) {
			sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
			}))
			defer sink.Close()
			b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", sink.URL)
			ctx := context.Background()
			if !v.off {
				stop, err := tracing.Setup(ctx, slog.New(slog.DiscardHandler))
				if err != nil {
					b.Fatal(err)
				}
				defer stop(ctx)
			}
			b.ReportAllocs()
			n := 0
			cpu0 := stats.ProcessCPU()
			for b.Loop() {
				runSpans(ctx, v.header, v.agent)
				if n++; n%256 == 0 {
					if err := tracing.Flush(ctx); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64((stats.ProcessCPU()-cpu0).Nanoseconds())/1e3/float64(b.N), "cpu-µs/run")
		})
	}
}

// runSpans opens and ends the spans of one run as the server does, for a
// request with the headers h.
func runSpans(ctx context.Context, h http.Header, agent bool) {
	route, node := "/runs/wait", "echo"
	if agent {
		node = "model"
	}
	rctx, req := tracing.StartServer(ctx, h, "POST "+route,
		attribute.String("http.request.method", "POST"), attribute.String("http.route", route))
	stored := tracing.Traceparent(rctx)
	wctx, run := tracing.Start(tracing.WithTraceparent(ctx, stored), "run",
		attribute.String("langgraph.run_id", "1f0c6a4e-9b7d-6d1e-8e2f-3a4b5c6d7e8f"),
		attribute.String("langgraph.thread_id", "1f0c6a4e-9b7d-6d1e-8e2f-3a4b5c6d7e90"),
		attribute.String("langgraph.assistant_id", "1f0c6a4e-9b7d-6d1e-8e2f-3a4b5c6d7e91"),
		attribute.String("langgraph.graph_id", node), attribute.Int("langgraph.run.attempt", 1))
	nctx, n := tracing.Start(wctx, "node "+node, attribute.String("langgraph.node", node), attribute.Int("langgraph.step", 1))
	if agent {
		_, chat := tracing.Start(nctx, "chat gpt-4o-mini", attribute.String("gen_ai.operation.name", "chat"), attribute.String("gen_ai.request.model", "gpt-4o-mini"))
		tracing.SetAttributes(chat, attribute.String("gen_ai.response.model", "gpt-4o-mini-2024-07-18"),
			attribute.Int("gen_ai.usage.input_tokens", 12), attribute.Int("gen_ai.usage.output_tokens", 2))
		tracing.End(chat, nil)
	}
	tracing.End(n, nil)
	tracing.SetAttributes(run, attribute.String("langgraph.run.status", "success"))
	tracing.End(run, nil)
	tracing.SetAttributes(req, attribute.Int("http.response.status_code", 200))
	tracing.End(req, nil)
}
