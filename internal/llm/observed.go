package llm

import (
	"context"
	"time"

	"agentserver/internal/metrics"
)

// observed runs one model call of the model named name and records it in
// the metrics. A call stopped by its context (a cancelled run) is not
// counted as an error.
func observed(ctx context.Context, name string, call func() (Response, error)) (Response, error) {
	start := time.Now()
	resp, err := call()
	metrics.ModelCall(name, time.Since(start), resp.Usage.InputTokens, resp.Usage.OutputTokens, err != nil && ctx.Err() == nil)
	return resp, err
}
