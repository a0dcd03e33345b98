package mcptools_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"agentserver/internal/llm/scripted"
	"agentserver/internal/testutil"
)

// seenHeaders records the Authorization headers each path received.
type seenHeaders struct {
	mu   sync.Mutex
	auth map[string][]string
}

func (h *seenHeaders) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.auth[r.URL.Path] = append(h.auth[r.URL.Path], r.Header.Get("Authorization"))
		h.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

// only reports whether every request to path carried want.
func (h *seenHeaders) only(path, want string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, got := range h.auth[path] {
		if got != want {
			return false
		}
	}
	return len(h.auth[path]) > 0
}

// goSDKServer serves a small MCP server of the official Go SDK on
// 127.0.0.1, over streamable HTTP at /mcp and over SSE at /sse (messages
// to /message). Its tools: whoami answers "me", fail answers an error
// result, picture answers an image.
func goSDKServer(t *testing.T) (string, *seenHeaders) {
	t.Helper()
	newServer := func(*http.Request) *mcp.Server {
		s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
		schema := map[string]any{"type": "object"}
		s.AddTool(&mcp.Tool{Name: "whoami", Description: "Says who called.", InputSchema: schema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "me"}}}, nil
		})
		s.AddTool(&mcp.Tool{Name: "fail", InputSchema: schema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "it broke"}}}, nil
		})
		s.AddTool(&mcp.Tool{Name: "picture", InputSchema: schema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: []byte("png"), MIMEType: "image/png"}}}, nil
		})
		return s
	}
	seen := &seenHeaders{auth: map[string][]string{}}
	mux := http.NewServeMux()
	mux.Handle("/mcp", seen.wrap(mcp.NewStreamableHTTPHandler(newServer, nil)))
	mux.Handle("/sse", seen.wrap(mcp.NewSSEHandler(newServer, nil)))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String(), seen
}

func TestHTTPServersGetHeadersAndResultsAreRendered(t *testing.T) {
	base, seen := goSDKServer(t)
	s, model := mcpAgent(t, fmt.Sprintf(`  - name: web
    url: %s/mcp
    headers: {Authorization: "Bearer one"}
  - name: old
    transport: sse
    url: %s/sse
    headers: {Authorization: "Bearer two"}
`, base, base))
	model.Script(
		scripted.ToolCalls(
			scripted.Call("web_whoami", map[string]any{}),
			scripted.Call("old_whoami", map[string]any{}),
			scripted.Call("web_fail", map[string]any{}),
			scripted.Call("old_picture", map[string]any{}),
		),
		scripted.Text("done"),
	)
	got := toolResults(runAgent(t, s, testutil.NewThread(t, s), "who am I?"))
	if got["web_whoami"] != "me" || got["old_whoami"] != "me" {
		t.Fatalf("whoami results = %v", got)
	}
	if !seen.only("/mcp", "Bearer one") || !seen.only("/sse", "Bearer two") {
		t.Fatalf("headers received = %v", seen.auth)
	}
	if got["web_fail"] != "Error: it broke" {
		t.Fatalf("an error result must be an error tool message: %q", got["web_fail"])
	}
	if pic := got["old_picture"]; !strings.Contains(pic, `"type":"image"`) || !strings.Contains(pic, `"mimeType":"image/png"`) {
		t.Fatalf("picture result = %q", pic)
	}
}

func TestUnreachableServerFailsTheRunWithItsName(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	s, _ := mcpAgent(t, fmt.Sprintf("  - name: gone\n    url: http://%s/mcp\n    timeout_seconds: 5\n", dead))
	thread := testutil.NewThread(t, s)
	out := s.Do("POST", "/threads/"+thread+"/runs/wait", map[string]any{"assistant_id": "agent", "input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}}}).Object(t)
	if msg, _ := out["__error__"].(map[string]any)["message"].(string); !strings.Contains(msg, `mcp server "gone"`) {
		t.Fatalf("run result = %v", out)
	}
}
