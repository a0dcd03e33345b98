package metrics_test

import (
	"context"
	"testing"
	"time"

	"agentserver/internal/metrics"
	"agentserver/internal/tracing"
)

// BenchmarkStepHooks measures what the instrumentation adds to one agent
// step with tracing off: a node span, a model call (span and metrics), a
// tool call (span and counter) and one storage commit.
func BenchmarkStepHooks(b *testing.B) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		nctx, node := tracing.Start(ctx, "node model")
		mctx, chat := tracing.Start(nctx, "chat bench-model")
		metrics.ModelCall("bench-model", time.Millisecond, 10, 5, false)
		tracing.End(chat, nil)
		_, tool := tracing.Start(mctx, "tool bench")
		metrics.ToolCall("bench", false)
		tracing.End(tool, nil)
		tracing.End(node, nil)
		metrics.StorageCommit(time.Millisecond, 2)
	}
}
