package runs

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"agentserver/internal/storage"
	"agentserver/internal/tracing"
)

// startRunSpan opens the span of a run's execution, the child of the
// request that created the run (its record's traceparent).
func startRunSpan(ctx context.Context, run storage.Run) (context.Context, trace.Span) {
	return tracing.Start(tracing.WithTraceparent(ctx, run.Traceparent), "run",
		attribute.String("langgraph.run_id", run.RunID.String()),
		attribute.String("langgraph.thread_id", run.ThreadID.String()),
		attribute.String("langgraph.assistant_id", run.AssistantID.String()),
		attribute.String("langgraph.graph_id", run.GraphID),
		attribute.Int("langgraph.run.attempt", run.Attempt))
}

// usageAttrs are the run's usage fields a run span carries.
var usageAttrs = [...]struct{ field, attr string }{
	{"input_tokens", "gen_ai.usage.input_tokens"}, {"output_tokens", "gen_ai.usage.output_tokens"}, {"total_tokens", "gen_ai.usage.total_tokens"},
}

// endRunSpan records a run's end status and token usage on its span.
func endRunSpan(span trace.Span, run storage.Run) {
	if span == nil {
		return
	}
	attrs := [4]attribute.KeyValue{attribute.String("langgraph.run.status", run.Status)}
	n := 1
	for _, u := range usageAttrs {
		if v, ok := run.Usage[u.field].(float64); ok {
			attrs[n] = attribute.Int64(u.attr, int64(v))
			n++
		} else if v, ok := run.Usage[u.field].(int); ok {
			attrs[n] = attribute.Int(u.attr, v)
			n++
		}
	}
	tracing.SetAttributes(span, attrs[:n]...)
	if run.Status == storage.RunError || run.Status == storage.RunTimeout {
		tracing.Fail(span, fmt.Errorf("%s: %s", run.ErrorName, run.Error))
	}
}
