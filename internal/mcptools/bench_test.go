package mcptools_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"agentserver/internal/mcptools"
	"agentserver/internal/tools"
)

// BenchmarkStdioToolCallOverhead measures what our MCP client path adds to
// a tool call over stdio: the `echo` tool of the reference "everything"
// server called through an agent's tool (mcptools: pooled session, timeout,
// result rendering), against the same call made with the Go SDK client
// directly on a session of its own to a second process of the same server
// (the baseline: the pipe round trip plus the server's own time). Calls
// alternate between the two so both see the same machine load.
//
// Metrics (ms): ours-p50/p99, sdk-p50/p99, and overhead-p50, the
// difference of the medians (target ≤ 1 ms).
func BenchmarkStdioToolCallOverhead(b *testing.B) {
	sdk := sdkDir(b)
	script := filepath.Join(sdk, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	ctx := context.Background()

	pool := mcptools.NewPool(nil)
	b.Cleanup(func() { pool.Close() })
	server := pool.Server(mcptools.ServerConfig{Name: "everything", Command: "node", Args: []string{script, "stdio"}})
	echo := findTool(b, ctx, server, "everything_echo")

	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	direct, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command("node", script, "stdio")}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { direct.Close() })

	args := map[string]any{"message": "hello"}
	ours := func() {
		res, err := echo.Call(ctx, tools.Call{ID: "call-1", Args: args})
		if err != nil || res.Content != "Echo: hello" {
			b.Fatalf("mcptools echo = %q, %v", res.Content, err)
		}
	}
	baseline := func() {
		res, err := direct.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: args})
		if err != nil || res.IsError {
			b.Fatalf("go-sdk echo = %v, %v", res, err)
		}
	}
	for range 50 { // warm both processes (JIT) and both clients
		ours()
		baseline()
	}
	var oursLat, sdkLat []time.Duration
	for b.Loop() {
		oursLat = append(oursLat, timed(ours))
		sdkLat = append(sdkLat, timed(baseline))
	}
	reportMillis(b, "ours", oursLat)
	reportMillis(b, "sdk", sdkLat)
	b.ReportMetric(ms(median(oursLat)-median(sdkLat)), "overhead-p50-ms")
}

func findTool(b *testing.B, ctx context.Context, s *mcptools.Server, name string) tools.Tool {
	b.Helper()
	list, err := s.Tools(ctx)
	if err != nil {
		b.Fatal(err)
	}
	for _, t := range list {
		if t.Spec().Name == name {
			return t
		}
	}
	b.Fatalf("the server offers no %s", name)
	return nil
}

func timed(f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func median(lat []time.Duration) time.Duration { return quantile(lat, 0.5) }

// quantile is the q-quantile of lat (nearest rank below).
func quantile(lat []time.Duration, q float64) time.Duration {
	s := slices.Clone(lat)
	slices.Sort(s)
	return s[int(float64(len(s)-1)*q)]
}

// reportMillis reports the p50 and p99 of lat in milliseconds.
func reportMillis(b *testing.B, name string, lat []time.Duration) {
	b.ReportMetric(ms(quantile(lat, 0.5)), name+"-p50-ms")
	b.ReportMetric(ms(quantile(lat, 0.99)), name+"-p99-ms")
}
