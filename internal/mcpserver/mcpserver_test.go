package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"agentserver/internal/jsonrpc"
	"agentserver/internal/testutil"
)

const graphsJSON = `{"graphs": {"echo": "builtin:echo", "gated": "builtin:test-gated"}}`

// keyTransport sends the API key with every request.
type keyTransport struct{ key string }

func (k keyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("x-api-key", k.key)
	return http.DefaultTransport.RoundTrip(r)
}

func connect(t *testing.T, s *testutil.Server, key string) (*mcp.ClientSession, error) {
	return connectVersion(t, s, key, "")
}

// connectVersion connects with a protocol version ("" is the SDK's latest).
func connectVersion(t *testing.T, s *testutil.Server, key, protocol string) (*mcp.ClientSession, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: s.URL() + "/mcp", HTTPClient: &http.Client{Transport: keyTransport{key}}, DisableStandaloneSSE: true, MaxRetries: -1}
	cs, err := c.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// call calls a tool and decodes its JSON text answer into out.
func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if out != nil {
		if res.IsError {
			t.Fatalf("%s failed: %s", name, res.Content[0].(*mcp.TextContent).Text)
		}
		if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), out); err != nil {
			t.Fatalf("%s answer: %v", name, err)
		}
	}
	return res
}

type task struct {
	TaskID string `json:"task_id"`
	Status string `json:"status"`
	Result any    `json:"result"`
}

func TestMCPAssistantsAreTools(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{Graphs: graphsJSON, APIKey: "k"})
	s.Header = http.Header{"X-Api-Key": []string{"k"}}
	if _, err := connect(t, s, "wrong"); err == nil {
		t.Fatal("a wrong API key connected")
	}
	cs, err := connect(t, s, "k")
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if tool.Name == "echo" {
			sch, _ := json.Marshal(tool.InputSchema)
			if !strings.Contains(string(sch), `"messages"`) {
				t.Fatalf("echo input schema = %s", sch)
			}
		}
	}
	for _, want := range []string{"echo", "gated", "start_async_task", "check_async_task", "update_async_task", "cancel_async_task", "list_async_tasks"} {
		if !slices.Contains(names, want) {
			t.Fatalf("tools = %v, want %s", names, want)
		}
	}
	out := call(t, cs, "echo", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "ping"}}}, nil)
	if out.IsError || !strings.Contains(out.Content[0].(*mcp.TextContent).Text, "ping") {
		t.Fatalf("echo answered %+v", out.Content[0])
	}
	// An assistant created through the API is a tool at once.
	s.Must(200, "POST", "/assistants", map[string]any{"graph_id": "echo", "name": "second echo", "description": "Echoes twice."})
	res, _ = cs.ListTools(context.Background(), nil)
	found := false
	for _, tool := range res.Tools {
		found = found || (tool.Name == "second_echo" && tool.Description == "Echoes twice.")
	}
	if !found {
		t.Fatal("the new assistant is not a tool")
	}
}

func TestMCPAsyncTasks(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{Graphs: graphsJSON})
	cs, err := connect(t, s, "")
	if err != nil {
		t.Fatal(err)
	}
	gate := "mcp-" + uuid.NewString()
	var started, checked task
	call(t, cs, "start_async_task", map[string]any{"subagent_type": "gated", "description": gate}, &started)
	if started.Status != "running" || started.TaskID == "" {
		t.Fatalf("started = %+v", started)
	}
	call(t, cs, "check_async_task", map[string]any{"task_id": started.TaskID}, &checked)
	if checked.Status != "running" && checked.Status != "pending" {
		t.Fatalf("checked before release = %+v", checked)
	}
	testutil.Release(gate)
	testutil.Eventually(t, 10*time.Second, "the task did not succeed", func() bool {
		call(t, cs, "check_async_task", map[string]any{"task_id": started.TaskID}, &checked)
		return checked.Status == "success"
	})
	if checked.Result != "released "+gate {
		t.Fatalf("result = %v", checked.Result)
	}
	// Update starts a new run on the same thread; cancel interrupts it.
	second := "mcp-" + uuid.NewString()
	var updated, cancelled task
	call(t, cs, "update_async_task", map[string]any{"task_id": started.TaskID, "message": second}, &updated)
	if updated.TaskID != started.TaskID || updated.Status != "running" {
		t.Fatalf("updated = %+v", updated)
	}
	call(t, cs, "cancel_async_task", map[string]any{"task_id": started.TaskID}, &cancelled)
	if cancelled.Status != "interrupted" {
		t.Fatalf("cancelled = %+v", cancelled)
	}
	var listed struct{ Tasks []task }
	call(t, cs, "list_async_tasks", map[string]any{"status_filter": "interrupted"}, &listed)
	if len(listed.Tasks) != 1 || listed.Tasks[0].TaskID != started.TaskID {
		t.Fatalf("listed = %+v", listed)
	}
	call(t, cs, "list_async_tasks", map[string]any{"status_filter": "success"}, &listed)
	if len(listed.Tasks) != 0 {
		t.Fatalf("listed success = %+v", listed)
	}
	// A thread that is not a task is refused.
	other := s.Must(200, "POST", "/threads", map[string]any{}).Object(t)["thread_id"].(string)
	if res := call(t, cs, "check_async_task", map[string]any{"task_id": other}, nil); !res.IsError {
		t.Fatal("a plain thread was reported as a task")
	}
}

// TestMCPCancelledCallCancelsTheRun covers the latest protocol (the SDK
// ties the handler to its request) and an older one (the handler watches
// the request itself).
func TestMCPCancelledCallCancelsTheRun(t *testing.T) {
	for _, protocol := range []string{"", "2025-06-18"} {
		t.Run("protocol "+protocol, func(t *testing.T) { cancelledCall(t, protocol) })
	}
}

func cancelledCall(t *testing.T, protocol string) {
	s := testutil.StartServer(t, testutil.Options{Graphs: graphsJSON})
	cs, err := connectVersion(t, s, "", protocol)
	if err != nil {
		t.Fatal(err)
	}
	gate := "mcp-cancel-" + uuid.NewString()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "gated", Arguments: map[string]any{"messages": []any{map[string]any{"role": "user", "content": gate}}}})
		done <- err
	}()
	if err := testutil.AwaitWaiters(t.Context(), gate, 1); err != nil {
		t.Fatal(err)
	}
	threads := func() int { return len(s.Must(200, "POST", "/threads/search", map[string]any{}).List(t)) }
	if n := threads(); n != 1 {
		t.Fatalf("threads while the call runs = %d, want its temporary thread", n)
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the cancelled call succeeded")
	}
	// The run was cancelled: it ended and took its temporary thread along.
	testutil.Eventually(t, 10*time.Second, "the run of the cancelled call still runs", func() bool { return threads() == 0 })
}

// postMCP posts a raw JSON-RPC body to /mcp as a client of protocol
// 2025-03-26 (the last that allows batches) and returns the status and body.
func postMCP(t *testing.T, s *testutil.Server, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", s.URL()+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-03-26")
	resp, err := s.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, raw
}

// batchOf is a JSON-RPC batch of n calls of method with params.
func batchOf(n int, method string, params any) string {
	calls := make([]any, n)
	for i := range calls {
		calls[i] = map[string]any{"jsonrpc": "2.0", "id": i + 1, "method": method, "params": params}
	}
	raw, _ := json.Marshal(calls)
	return string(raw)
}

// wantRPCError checks that raw is one JSON-RPC error of null id with code,
// whose message names the bound.
func wantRPCError(t *testing.T, raw []byte, code int, bound int) {
	t.Helper()
	var out struct {
		ID    any `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("not one JSON-RPC answer: %v: %.300s", err, raw)
	}
	if out.ID != nil || out.Error.Code != code || !strings.Contains(out.Error.Message, strconv.Itoa(bound)) {
		t.Fatalf("answer = %+v, want error %d naming %d", out, code, bound)
	}
}

// TestMCPBatchAndAnswerBounds sends batches over the wire: one of more
// than jsonrpc.MaxBatch calls is refused whole (none of its calls runs),
// one at the bound is answered, and an answer over jsonrpc.MaxAnswerBytes
// leaves as an error naming the bound. Before, a batch of any length was
// run and answered, however large its answer.
func TestMCPBatchAndAnswerBounds(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{Graphs: graphsJSON})
	start := map[string]any{"name": "start_async_task", "arguments": map[string]any{"description": "x", "subagent_type": "echo"}}
	status, raw := postMCP(t, s, batchOf(jsonrpc.MaxBatch+1, "tools/call", start))
	if status != http.StatusBadRequest {
		t.Fatalf("batch over the bound: status %d: %.300s", status, raw)
	}
	wantRPCError(t, raw, jsonrpc.CodeInvalidRequest, jsonrpc.MaxBatch)
	if n := s.Must(200, "POST", "/threads/count", nil).JSON; n != 0.0 {
		t.Fatalf("a refused batch started %v tasks", n)
	}

	status, raw = postMCP(t, s, batchOf(jsonrpc.MaxBatch, "tools/list", map[string]any{}))
	var answers []map[string]any
	if err := json.Unmarshal(raw, &answers); status != 200 || err != nil || len(answers) != jsonrpc.MaxBatch || answers[0]["result"] == nil {
		t.Fatalf("batch at the bound: status %d, %d answers, %v: %.300s", status, len(answers), err, raw)
	}

	// Two assistants with long descriptions make each tools/list answer
	// over MaxAnswerBytes/MaxBatch.
	desc := strings.Repeat("d", jsonrpc.MaxAnswerBytes/jsonrpc.MaxBatch/2+1024)
	for _, name := range []string{"long-1", "long-2"} {
		s.Must(200, "POST", "/assistants", map[string]any{"graph_id": "echo", "name": name, "description": desc})
	}
	status, raw = postMCP(t, s, batchOf(jsonrpc.MaxBatch, "tools/list", map[string]any{}))
	if status != 200 || len(raw) > 4096 {
		t.Fatalf("answer over the bound: status %d, %d bytes", status, len(raw))
	}
	wantRPCError(t, raw, jsonrpc.CodeInternal, jsonrpc.MaxAnswerBytes)
}
