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

// endRunSpan records a run's end status and token usage on its span.
func endRunSpan(span trace.Span, run storage.Run) {
	if span == nil {
		return
	}
	span.SetAttributes(attribute.String("langgraph.run.status", run.Status))
	for _, k := range []string{"input_tokens", "output_tokens", "total_tokens"} {
		if v, ok := run.Usage[k].(float64); ok {
			span.SetAttributes(attribute.Int64("gen_ai.usage."+k, int64(v)))
		} else if v, ok := run.Usage[k].(int); ok {
			span.SetAttributes(attribute.Int("gen_ai.usage."+k, v))
		}
	}
	if run.Status == storage.RunError || run.Status == storage.RunTimeout {
		tracing.Fail(span, fmt.Errorf("%s: %s", run.ErrorName, run.Error))
	}
}
