package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"agentserver/internal/assistants"
	"agentserver/internal/asynctasks"
	"agentserver/internal/jsonrpc"
	"agentserver/internal/runs"
	"agentserver/internal/threads"
	"agentserver/internal/version"
)

// Deps are the services the MCP endpoint calls.
type Deps struct {
	Assistants *assistants.Service
	Threads    *threads.Service
	Runs       *runs.Service
	Log        *slog.Logger
}

// Handler answers MCP requests (POST /mcp; GET and DELETE are 405 in
// stateless mode).
type Handler struct {
	deps  Deps
	local *asynctasks.Local
	http  http.Handler
}

// New returns the /mcp handler.
func New(d Deps) *Handler {
	h := &Handler{deps: d, local: &asynctasks.Local{}}
	h.local.Bind(d.Threads, d.Runs)
	h.http = mcp.NewStreamableHTTPHandler(h.server, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, PropagateRequestCancellation: true, Logger: d.Log})
	return h
}

// ServeHTTP implements http.Handler. A batch of more than
// jsonrpc.MaxBatch calls is refused before any call runs, and an answer
// over jsonrpc.MaxAnswerBytes leaves as an error (package jsonrpc). The
// body was read whole, within the server's body limit, by the HTTP edge.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && r.Body != nil {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			jsonrpc.WriteError(w, http.StatusBadRequest, jsonrpc.Errorf(jsonrpc.CodeParse, "reading the body: %v", err))
			return
		}
		if rerr := jsonrpc.CheckBatch(body); rerr != nil {
			jsonrpc.WriteError(w, http.StatusBadRequest, rerr)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	bw := jsonrpc.BoundAnswers(w)
	defer bw.End()
	h.http.ServeHTTP(bw, r)
}

// server builds the MCP server of one request: a tool per assistant and
// the task tools.
func (h *Handler) server(r *http.Request) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "agentserver", Version: version.Get().Version}, nil)
	list, _, err := h.deps.Assistants.Search(r.Context(), assistants.Query{Limit: assistants.MaxLimit, SortBy: "created_at", SortOrder: "asc"})
	if err != nil && h.deps.Log != nil {
		h.deps.Log.Warn("mcp: listing assistants", "err", err)
	}
	taken := map[string]bool{}
	for _, t := range taskTools {
		taken[t] = true
	}
	for _, a := range list {
		name := toolName(a, taken)
		taken[name] = true
		s.AddTool(&mcp.Tool{Name: name, Description: h.description(a), InputSchema: h.inputSchema(r.Context(), a)}, h.runAssistant(a.AssistantID.String(), r.Context()))
	}
	h.addTaskTools(s)
	return s
}

// toolName is an assistant's tool name: its name with characters outside
// [A-Za-z0-9_-] replaced by '_', or, when that is taken, the name and the
// first eight characters of its id.
func toolName(a assistants.Assistant, taken map[string]bool) string {
	base := a.Name
	if base == "" {
		base = a.GraphID
	}
	var b strings.Builder
	for _, c := range base {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
		if !ok {
			c = '_'
		}
		b.WriteRune(c)
	}
	name := b.String()
	if len(name) > 54 {
		name = name[:54]
	}
	if taken[name] {
		name += "_" + a.AssistantID.String()[:8]
	}
	return name
}

func (h *Handler) description(a assistants.Assistant) string {
	if a.Description != nil && *a.Description != "" {
		return *a.Description
	}
	return fmt.Sprintf("Runs the assistant %q (graph %s) and returns its answer.", a.Name, a.GraphID)
}

// inputSchema is the assistant's graph input schema (an object schema).
func (h *Handler) inputSchema(ctx context.Context, a assistants.Assistant) map[string]any {
	sch, err := h.deps.Assistants.Schemas(ctx, a.AssistantID.String())
	if err == nil && sch.InputSchema != nil && sch.InputSchema["type"] == "object" {
		return sch.InputSchema
	}
	return map[string]any{"type": "object", "additionalProperties": true}
}

// runAssistant runs the assistant statelessly with the call's arguments as
// input and answers with its final values. The call also ends with request,
// the HTTP request that carries it: the SDK does not tie a stateless
// handler to its request for older protocol versions, and a client that
// gives up on a call closes that request.
func (h *Handler) runAssistant(assistantID string, request context.Context) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ctx, stop := context.WithCancel(ctx)
		defer stop()
		defer context.AfterFunc(request, stop)()
		input := map[string]any{}
		if len(req.Params.Arguments) > 0 {
			if err := json.Unmarshal(req.Params.Arguments, &input); err != nil {
				return failure(fmt.Errorf("arguments: %w", err)), nil
			}
		}
		run, err := h.deps.Runs.Create(ctx, runs.CreateParams{Assistant: assistantID, Input: input})
		if err != nil {
			return failure(err), nil
		}
		ended, values, err := h.deps.Runs.Wait(ctx, nil, run.RunID)
		if err != nil {
			if ctx.Err() != nil {
				h.cancelRun(run.RunID)
			}
			return failure(err), nil
		}
		if ended.Status != "success" {
			return failure(fmt.Errorf("run %s ended %s: %s", run.RunID, ended.Status, ended.Error)), nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: answerText(values)}}, StructuredContent: values}, nil
	}
}

// cancelRun cancels a run whose caller went away; the caller's context is
// gone, so a fresh one bounds the cancellation.
func (h *Handler) cancelRun(id uuid.UUID) {
	ctx, cancel := context.WithTimeout(context.Background(), cancelTimeout)
	defer cancel()
	if err := h.deps.Runs.Cancel(ctx, nil, id, runs.ActionInterrupt, false); err != nil && h.deps.Log != nil {
		h.deps.Log.Warn("mcp: cancelling the run of a cancelled call", "run_id", id, "err", err)
	}
}

// answerText is the content of the last message of values, as text, or
// the values as JSON when there are no messages.
func answerText(values map[string]any) string {
	msgs, _ := values["messages"].([]any)
	if len(msgs) > 0 {
		if m, ok := msgs[len(msgs)-1].(map[string]any); ok {
			if s, ok := m["content"].(string); ok {
				return s
			}
			raw, _ := json.Marshal(m["content"])
			return string(raw)
		}
	}
	raw, _ := json.Marshal(values)
	return string(raw)
}

func failure(err error) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
}

func textResult(v any) *mcp.CallToolResult {
	raw, _ := json.Marshal(v)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(raw)}}, StructuredContent: v}
}
