package tracing_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"agentserver/internal/tracing"
)

// BenchmarkRunSpans measures the spans of one POST /runs/wait of a
// one-node graph with tracing on: the request's server span, the
// traceparent stored on the run and read back by the worker, the run span
// and the node span, exported in batches over OTLP/HTTP to a local
// endpoint that discards them.
func BenchmarkRunSpans(b *testing.B) {
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
	}))
	defer sink.Close()
	b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", sink.URL)
	ctx := context.Background()
	stop, err := tracing.Setup(ctx, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	defer stop(ctx)
	h := http.Header{}
	b.ReportAllocs()
	for b.Loop() {
		rctx, req := tracing.StartServer(ctx, h, "POST /runs/wait",
			attribute.String("http.request.method", "POST"), attribute.String("http.route", "/runs/wait"))
		stored := tracing.Traceparent(rctx)
		wctx, run := tracing.Start(tracing.WithTraceparent(ctx, stored), "run",
			attribute.String("langgraph.run_id", "1f0c6a4e-9b7d-6d1e-8e2f-3a4b5c6d7e8f"),
			attribute.String("langgraph.thread_id", "1f0c6a4e-9b7d-6d1e-8e2f-3a4b5c6d7e90"),
			attribute.String("langgraph.assistant_id", "1f0c6a4e-9b7d-6d1e-8e2f-3a4b5c6d7e91"),
			attribute.String("langgraph.graph_id", "echo"), attribute.Int("langgraph.run.attempt", 1))
		_, node := tracing.Start(wctx, "node echo", attribute.String("langgraph.node", "echo"), attribute.Int("langgraph.step", 1))
		tracing.End(node, nil)
		run.SetAttributes(attribute.String("langgraph.run.status", "success"))
		tracing.End(run, nil)
		req.SetAttributes(attribute.Int("http.response.status_code", 200))
		tracing.End(req, nil)
	}
}
