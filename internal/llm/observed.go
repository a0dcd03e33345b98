package llm

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"agentserver/internal/metrics"
	"agentserver/internal/tracing"
)

// observed runs one model call of the model named name in a span of its
// own and records it in the metrics. A call stopped by its context (a
// cancelled run) is not counted as an error.
func observed(ctx context.Context, name string, call func(context.Context) (Response, error)) (Response, error) {
	start := time.Now()
	ctx, span := tracing.Start(ctx, "chat "+name, attribute.String("gen_ai.operation.name", "chat"), attribute.String("gen_ai.request.model", name))
	resp, err := call(ctx)
	metrics.ModelCall(name, time.Since(start), resp.Usage.InputTokens, resp.Usage.OutputTokens, err != nil && ctx.Err() == nil)
	tracing.SetAttributes(span,
		attribute.String("gen_ai.response.model", resp.Model),
		attribute.Int("gen_ai.usage.input_tokens", resp.Usage.InputTokens),
		attribute.Int("gen_ai.usage.output_tokens", resp.Usage.OutputTokens))
	tracing.End(span, err)
	return resp, err
}
