package main

import (
	"context"
	"log/slog"
	"testing"

	"agentserver/internal/tracing"
)

// TestOTLPSinkReceivesTheServersSpans: the real OTLP/HTTP exporter, set up
// as the server sets it up, delivers spans to the sink, which accepts them.
func TestOTLPSinkReceivesTheServersSpans(t *testing.T) {
	sink, err := startOTLPSink()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.close() })
	ctx := context.Background()
	// The exporter reads the process environment itself.
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", sink.url)
	stop, err := tracing.Setup(ctx, slog.New(slog.NewTextHandler(t.Output(), nil)))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		_, span := tracing.Start(ctx, "probe")
		tracing.End(span, nil)
	}
	if err := stop(ctx); err != nil {
		t.Fatalf("flushing spans to the sink: %v", err)
	}
	if sink.requests.Load() == 0 || sink.bytes.Load() == 0 {
		t.Fatalf("sink received %s, want the flushed spans", sink.summary())
	}
}
