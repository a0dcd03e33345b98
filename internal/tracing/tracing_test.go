package tracing_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"agentserver/internal/tracing"
)

func TestEnabledFollowsTheStandardVariables(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none"}, false},
	} {
		if got := tracing.Enabled(func(k string) string { return c.env[k] }); got != c.want {
			t.Errorf("Enabled(%v) = %v, want %v", c.env, got, c.want)
		}
	}
}

// TestTraceparentSurvivesARecord: a traceparent stored and read back
// makes the next span part of the same trace, and JSON log records made
// within it carry the trace and span ids.
func TestTraceparentSurvivesARecord(t *testing.T) {
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	if got := tracing.Traceparent(context.Background()); got != "" {
		t.Fatalf("Traceparent without a span = %q", got)
	}
	ctx, span := tracing.Start(tracing.WithTraceparent(context.Background(), parent), "run")
	defer span.End()
	if got := tracing.Traceparent(ctx); !strings.HasPrefix(got, "00-4bf92f3577b34da6a3ce929d0e0e4736-") {
		t.Fatalf("Traceparent = %q, want the stored trace", got)
	}
	var buf bytes.Buffer
	log := slog.New(tracing.LogHandler(slog.NewJSONHandler(&buf, nil))).With("run_id", "r1")
	log.InfoContext(ctx, "inside")
	log.Info("outside")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	var inside, outside map[string]any
	if len(lines) != 2 || json.Unmarshal([]byte(lines[0]), &inside) != nil || json.Unmarshal([]byte(lines[1]), &outside) != nil {
		t.Fatalf("log output: %s", buf.String())
	}
	if inside["trace_id"] != "4bf92f3577b34da6a3ce929d0e0e4736" || inside["span_id"] == nil || inside["run_id"] != "r1" {
		t.Errorf("record within the span = %v", inside)
	}
	if _, ok := outside["trace_id"]; ok {
		t.Errorf("record without a span has a trace_id: %v", outside)
	}
}

// TestTraceparentMatchesThePropagator: the traceparent written for a run
// record is the W3C propagator's, and reading it back gives the same
// remote span context the propagator gives, sampled or not; what the fast
// reader does not take (other versions, bad ids) is still the
// propagator's call.
func TestTraceparentMatchesThePropagator(t *testing.T) {
	prop := propagation.TraceContext{}
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	for _, flags := range []trace.TraceFlags{0, trace.FlagsSampled} {
		ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags}))
		want := propagation.MapCarrier{}
		prop.Inject(ctx, want)
		got := tracing.Traceparent(ctx)
		if got != want["traceparent"] {
			t.Fatalf("Traceparent = %q, the propagator writes %q", got, want["traceparent"])
		}
		back := trace.SpanContextFromContext(tracing.WithTraceparent(context.Background(), got))
		viaProp := trace.SpanContextFromContext(prop.Extract(context.Background(), want))
		if !back.Equal(viaProp) || !back.IsRemote() || back.TraceFlags() != flags {
			t.Errorf("WithTraceparent(%q) = %+v, the propagator reads %+v", got, back, viaProp)
		}
	}
	for _, tp := range []string{
		"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-future",
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-zz",
		"garbage",
	} {
		got := trace.SpanContextFromContext(tracing.WithTraceparent(context.Background(), tp))
		want := trace.SpanContextFromContext(prop.Extract(context.Background(), propagation.MapCarrier{"traceparent": tp}))
		if !got.Equal(want) {
			t.Errorf("WithTraceparent(%q) = %+v, the propagator reads %+v", tp, got, want)
		}
	}
}
