package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"agentserver/api"
	"agentserver/internal/errdefs"
	"agentserver/internal/runs"
	"agentserver/internal/storage"
)

// requestHeadersKey carries the request headers into strict handlers.
type requestHeadersKey struct{}

// withRequestHeaders is a strict middleware that makes the request headers
// available to handlers (runs copy x-* headers into their config).
func withRequestHeaders(f api.StrictHandlerFunc, _ string) api.StrictHandlerFunc {
	return func(c echo.Context, req any) (any, error) {
		r := c.Request()
		c.SetRequest(r.WithContext(context.WithValue(r.Context(), requestHeadersKey{}, r.Header)))
		return f(c, req)
	}
}

// Limits of the request headers a run keeps in config.configurable.
const (
	// MaxForwardedHeaders bounds how many headers a run keeps.
	MaxForwardedHeaders = 64
	// MaxForwardedHeaderBytes bounds the value of each of them.
	MaxForwardedHeaderBytes = 4096
)

// forwardedHeaders returns the x-* headers (but credentials) and user-agent,
// which runs see in config.configurable as on LangGraph Platform. Too many
// of them, or one too long, is an error: the run would store them all.
func forwardedHeaders(ctx context.Context) (map[string]string, error) {
	h, _ := ctx.Value(requestHeadersKey{}).(http.Header)
	out := map[string]string{}
	for k, v := range h {
		lk := strings.ToLower(k)
		switch {
		case lk == "x-api-key" || lk == "x-tenant-id" || lk == "x-service-key":
		case strings.HasPrefix(lk, "x-") || lk == "user-agent":
			out[lk] = strings.Join(v, ", ")
			if len(out[lk]) > MaxForwardedHeaderBytes {
				return nil, tooLargef("header %s is longer than the limit of %d bytes for headers copied into a run", lk, MaxForwardedHeaderBytes)
			}
		}
	}
	if len(out) > MaxForwardedHeaders {
		return nil, tooLargef("%d x-* headers: more than the limit of %d copied into a run", len(out), MaxForwardedHeaders)
	}
	return out, nil
}

// createParams converts a run-creating body. threadID is nil for stateless.
func (h *Handler) createParams(ctx context.Context, b *api.RunCreate, threadID *uuid.UUID) (runs.CreateParams, error) {
	if b == nil {
		b = &api.RunCreate{}
	}
	headers, err := forwardedHeaders(ctx)
	if err != nil {
		return runs.CreateParams{}, err
	}
	p := runs.CreateParams{
		ThreadID: threadID, Input: b.Input, Metadata: b.Metadata, Config: configMap(b.Config), Context: b.Context,
		FeedbackKeys: b.FeedbackKeys, Webhook: deref(b.Webhook), Headers: headers,
	}
	if ref := firstString(b.AssistantId, b.AgentId); ref != nil {
		p.Assistant = *ref
	} else if ids := h.graphs.IDs(); len(ids) == 1 {
		p.Assistant = ids[0] // the Agent Protocol's default agent
	}
	if len(b.Messages) > 0 {
		input, _ := p.Input.(map[string]any)
		input = mergeMessagesInput(input, b.Messages)
		p.Input = input
	}
	if b.Command != nil {
		if err := checkGoto(b.Command.Goto, true); err != nil {
			return p, err
		}
		p.Command = commandMap(b.Command)
	}
	modes, err := modeList(b.StreamMode)
	if err != nil {
		return p, err
	}
	p.StreamModes = modes
	p.StreamSubgraphs = b.StreamSubgraphs != nil && *b.StreamSubgraphs
	p.StreamResumable = b.StreamResumable != nil && *b.StreamResumable
	if p.InterruptBefore, err = nodeList("interrupt_before", b.InterruptBefore); err != nil {
		return p, err
	}
	if p.InterruptAfter, err = nodeList("interrupt_after", b.InterruptAfter); err != nil {
		return p, err
	}
	if b.MultitaskStrategy != nil {
		p.MultitaskStrategy = string(*b.MultitaskStrategy)
	}
	if b.IfNotExists != nil {
		p.IfNotExists = string(*b.IfNotExists)
	}
	if b.OnCompletion != nil {
		p.OnCompletion = string(*b.OnCompletion)
	}
	if b.AfterSeconds != nil {
		p.AfterSeconds = *b.AfterSeconds
	}
	switch {
	case b.CheckpointId != nil:
		p.CheckpointID, err = checkpointIDFrom(*b.CheckpointId)
	case b.Checkpoint != nil && b.Checkpoint.CheckpointId != nil:
		p.CheckpointID, err = checkpointIDFrom(*b.Checkpoint.CheckpointId)
	}
	if p.Webhook != "" && !strings.HasPrefix(p.Webhook, "http://") && !strings.HasPrefix(p.Webhook, "https://") {
		return p, invalidf("webhook must be an absolute http(s) URL")
	}
	return p, err
}

// checkGoto accepts what command.goto may hold: nothing, a node name, a
// Send object {node, input}, or (when list is true) a list of those.
func checkGoto(v any, list bool) error {
	switch t := v.(type) {
	case nil:
		return nil
	case string:
		if t != "" {
			return nil
		}
	case map[string]any:
		if node, ok := t["node"].(string); ok && node != "" {
			return nil
		}
	case []any:
		if list {
			for _, e := range t {
				if e == nil || checkGoto(e, false) != nil {
					return errBadGoto
				}
			}
			return nil
		}
	}
	return errBadGoto
}

var errBadGoto = invalidf("command.goto must be a node name, a Send object {node, input}, or a list of them")

// mergeMessagesInput adds Agent Protocol messages to the input's messages.
func mergeMessagesInput(input map[string]any, msgs []api.Message) map[string]any {
	out := map[string]any{}
	for k, v := range input {
		out[k] = v
	}
	list, _ := out["messages"].([]any)
	for _, m := range msgs {
		list = append(list, map[string]any(m))
	}
	out["messages"] = list
	return out
}

// modeList reads stream_mode: a string or a list of strings.
func modeList(v any) ([]string, error) {
	switch t := v.(type) {
	case nil:
		return nil, nil
	case string:
		return []string{t}, nil
	case []any:
		out := make([]string, 0, len(t))
		for _, e := range t {
			s, ok := e.(string)
			if !ok {
				return nil, invalidf("stream_mode must be a string or a list of strings")
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, invalidf("stream_mode must be a string or a list of strings")
}

// nodeList reads interrupt_before/after: "*" or a list of node names.
func nodeList(field string, v any) ([]string, error) {
	switch t := v.(type) {
	case nil:
		return nil, nil
	case string:
		if t != "*" {
			return nil, invalidf(field + " must be \"*\" or a list of node names")
		}
		return []string{"*"}, nil
	case []any:
		out := make([]string, 0, len(t))
		for _, e := range t {
			s, ok := e.(string)
			if !ok {
				return nil, invalidf(field + " must be \"*\" or a list of node names")
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, invalidf(field + " must be \"*\" or a list of node names")
}

func onDisconnectCancel(b *api.RunCreate) bool {
	return b == nil || b.OnDisconnect == nil || *b.OnDisconnect == api.OnDisconnectCancel
}

func runLocation(r storage.Run) string {
	if r.Stateless {
		return "/runs/" + r.RunID.String()
	}
	return "/threads/" + r.ThreadID.String() + "/runs/" + r.RunID.String()
}

func streamLocation(r storage.Run) string {
	return runLocation(r) + "/stream"
}

// isAPDialect reports whether a /runs body uses the Agent Protocol shape.
func isAPDialect(b *api.RunCreate) bool {
	return b != nil && (b.AgentId != nil || b.ThreadId != nil || len(b.Messages) > 0)
}

// toAPIRun converts a stored run. apStatus maps running to pending for the
// Agent Protocol routes, whose status enum has no running.
func toAPIRun(r storage.Run, apStatus bool) api.Run {
	status := r.Status
	if apStatus && status == storage.RunRunning {
		status = storage.RunPending
	}
	agent := r.AssistantID.String()
	out := api.Run{
		RunId: r.RunID, ThreadId: r.ThreadID, AssistantId: r.AssistantID, AgentId: &agent,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Status: api.RunStatus(status),
		Metadata: orEmpty(r.Metadata), Kwargs: r.Kwargs.Map(), MultitaskStrategy: api.MultitaskStrategy(r.MultitaskStrategy),
		Attempt: &r.Attempt, StartedAt: r.StartedAt, EndedAt: r.EndedAt,
	}
	if r.Error != "" {
		out.Error = r.Error
	}
	return out
}

// createRun converts a run-creating body and creates the run.
func (h *Handler) createRun(ctx context.Context, b *api.RunCreate, threadID *uuid.UUID) (runs.CreateParams, storage.Run, error) {
	return h.createRunStreamed(ctx, b, threadID, false)
}

// createRunStreamed is createRun for a caller that may stream the run.
func (h *Handler) createRunStreamed(ctx context.Context, b *api.RunCreate, threadID *uuid.UUID, streamed bool) (runs.CreateParams, storage.Run, error) {
	p, err := h.createParams(ctx, b, threadID)
	if err != nil {
		return p, storage.Run{}, err
	}
	p.Streamed = streamed
	r, err := h.runs.Create(ctx, p)
	return p, r, err
}

// CreateThreadRun implements POST /threads/{thread_id}/runs.
func (h *Handler) CreateThreadRun(ctx context.Context, req api.CreateThreadRunRequestObject) (api.CreateThreadRunResponseObject, error) {
	tid := req.ThreadId
	_, r, err := h.createRun(ctx, req.Body, &tid)
	if err != nil {
		return nil, err
	}
	loc := runLocation(r)
	return api.CreateThreadRun200JSONResponse{Body: toAPIRun(r, false), Headers: api.CreateThreadRun200ResponseHeaders{ContentLocation: &loc}}, nil
}

// CreateRun implements POST /runs: stateless (LangGraph) or, with thread_id,
// on that thread (Agent Protocol).
func (h *Handler) CreateRun(ctx context.Context, req api.CreateRunRequestObject) (api.CreateRunResponseObject, error) {
	_, r, err := h.createRun(ctx, req.Body, bodyThread(req.Body))
	if err != nil {
		return nil, err
	}
	loc := runLocation(r)
	return api.CreateRun200JSONResponse{Body: toAPIRun(r, isAPDialect(req.Body)), Headers: api.CreateRun200ResponseHeaders{ContentLocation: &loc}}, nil
}

func bodyThread(b *api.RunCreate) *uuid.UUID {
	if b == nil {
		return nil
	}
	return b.ThreadId
}

// CreateRunBatch implements POST /runs/batch.
func (h *Handler) CreateRunBatch(ctx context.Context, req api.CreateRunBatchRequestObject) (api.CreateRunBatchResponseObject, error) {
	if req.Body == nil || len(*req.Body) == 0 {
		return nil, invalidf("the batch must hold at least one run")
	}
	params := make([]runs.CreateParams, 0, len(*req.Body))
	for i := range *req.Body {
		b := &(*req.Body)[i]
		p, err := h.createParams(ctx, b, bodyThread(b))
		if err != nil {
			return nil, fmt.Errorf("batch item %d: %w", i, err)
		}
		params = append(params, p)
	}
	created, err := h.runs.CreateBatch(ctx, params)
	if err != nil {
		return nil, err
	}
	out := make([]api.Run, 0, len(created))
	for _, r := range created {
		out = append(out, toAPIRun(r, false))
	}
	return api.CreateRunBatch200JSONResponse(out), nil
}

// GetThreadRun implements GET /threads/{thread_id}/runs/{run_id}.
func (h *Handler) GetThreadRun(ctx context.Context, req api.GetThreadRunRequestObject) (api.GetThreadRunResponseObject, error) {
	tid := req.ThreadId
	r, err := h.runs.Get(ctx, &tid, req.RunId)
	if err != nil {
		return nil, err
	}
	return api.GetThreadRun200JSONResponse(toAPIRun(r, false)), nil
}

// GetRun implements the Agent Protocol's GET /runs/{run_id}.
func (h *Handler) GetRun(ctx context.Context, req api.GetRunRequestObject) (api.GetRunResponseObject, error) {
	r, err := h.runs.Get(ctx, nil, req.RunId)
	if err != nil {
		return nil, err
	}
	return api.GetRun200JSONResponse(toAPIRun(r, true)), nil
}

// ListThreadRuns implements GET /threads/{thread_id}/runs.
func (h *Handler) ListThreadRuns(ctx context.Context, req api.ListThreadRunsRequestObject) (api.ListThreadRunsResponseObject, error) {
	status := ""
	if req.Params.Status != nil {
		status = string(*req.Params.Status)
	}
	fields := parseList(req.Params.Select)
	if err := checkSelect(fields, runFields); err != nil {
		return nil, err
	}
	limit, offset := intOr(req.Params.Limit, 10), intOr(req.Params.Offset, 0)
	list, total, err := h.runs.List(ctx, req.ThreadId, status, max(limit, 1), offset)
	if err != nil {
		return nil, err
	}
	list = emptyPageIfZero(list, limit)
	out := make([]api.Run, len(list))
	for i, r := range list {
		out[i] = toAPIRun(r, false)
	}
	return selectedList[api.Run]{items: out, fields: fields, page: pagination(offset, limit, len(out), total)}, nil
}

var runFields = []string{"run_id", "thread_id", "assistant_id", "created_at", "updated_at", "status", "metadata", "kwargs", "multitask_strategy", "error", "agent_id"}

// SearchRuns implements the Agent Protocol's POST /runs/search.
func (h *Handler) SearchRuns(ctx context.Context, req api.SearchRunsRequestObject) (api.SearchRunsResponseObject, error) {
	b := req.Body
	if b == nil {
		b = &api.RunSearchRequest{}
	}
	q := storage.RunQuery{ThreadID: b.ThreadId, Metadata: b.Metadata, Limit: intOr(b.Limit, 10), Offset: intOr(b.Offset, 0)}
	if b.Status != nil {
		q.Status = string(*b.Status)
		if q.Status == storage.RunPending {
			q.Status, q.Active = "", true // the AP's pending also covers running
		}
	}
	if ref := firstString(b.AgentId, b.AssistantId); ref != nil {
		id, err := h.assistants.Resolve(*ref)
		if err != nil {
			return nil, err
		}
		q.AssistantID = &id
	}
	list, total, err := h.runs.Search(ctx, q)
	if err != nil {
		return nil, err
	}
	out := make([]api.Run, 0, len(list))
	for _, r := range list {
		out = append(out, toAPIRun(r, true))
	}
	p := pagination(q.Offset, q.Limit, len(out), total)
	return api.SearchRuns200JSONResponse{Body: out, Headers: api.SearchRuns200ResponseHeaders{XPaginationTotal: &p.total, XPaginationNext: p.nextPtr()}}, nil
}

// DeleteThreadRun implements DELETE /threads/{thread_id}/runs/{run_id}.
func (h *Handler) DeleteThreadRun(ctx context.Context, req api.DeleteThreadRunRequestObject) (api.DeleteThreadRunResponseObject, error) {
	tid := req.ThreadId
	if err := h.runs.Delete(ctx, &tid, req.RunId); err != nil {
		return nil, err
	}
	return api.DeleteThreadRun204Response{}, nil
}

// DeleteRun implements the Agent Protocol's DELETE /runs/{run_id}.
func (h *Handler) DeleteRun(ctx context.Context, req api.DeleteRunRequestObject) (api.DeleteRunResponseObject, error) {
	if err := h.runs.Delete(ctx, nil, req.RunId); err != nil {
		return nil, err
	}
	return api.DeleteRun204Response{}, nil
}

// CancelThreadRun implements POST /threads/{thread_id}/runs/{run_id}/cancel:
// 202 without wait, 204 once stopped with wait.
func (h *Handler) CancelThreadRun(ctx context.Context, req api.CancelThreadRunRequestObject) (api.CancelThreadRunResponseObject, error) {
	wait, err := parseBool(req.Params.Wait, false)
	if err != nil {
		return nil, err
	}
	tid := req.ThreadId
	if err := h.runs.Cancel(ctx, &tid, req.RunId, actionOf(req.Params.Action), wait); err != nil {
		return nil, err
	}
	if wait {
		return api.CancelThreadRun204Response{}, nil
	}
	return api.CancelThreadRun202Response{}, nil
}

// CancelRun implements the Agent Protocol's POST /runs/{run_id}/cancel.
func (h *Handler) CancelRun(ctx context.Context, req api.CancelRunRequestObject) (api.CancelRunResponseObject, error) {
	wait, err := parseBool(req.Params.Wait, false)
	if err != nil {
		return nil, err
	}
	if err := h.runs.Cancel(ctx, nil, req.RunId, actionOf(req.Params.Action), wait); err != nil {
		return nil, err
	}
	if wait {
		return api.CancelRun204Response{}, nil
	}
	return api.CancelRun202Response{}, nil
}

func actionOf(a *api.ActionParam) string {
	if a == nil {
		return runs.ActionInterrupt
	}
	return string(*a)
}

// CancelRuns implements POST /runs/cancel.
func (h *Handler) CancelRuns(ctx context.Context, req api.CancelRunsRequestObject) (api.CancelRunsResponseObject, error) {
	b := req.Body
	if b == nil || (len(b.RunIds) == 0 && b.Status == nil) {
		return nil, invalidf("give either status (pending, running, all) or thread_id with run_ids")
	}
	status := ""
	if b.Status != nil {
		status = string(*b.Status)
	}
	if err := h.runs.CancelMany(ctx, b.ThreadId, b.RunIds, status, actionOf(req.Params.Action)); err != nil {
		return nil, err
	}
	return api.CancelRuns204Response{}, nil
}

// CancelSubagent implements POST /threads/{thread_id}/runs/{run_id}/subagents/{tool_call_id}/cancel:
// it stops one running task-tool subagent; the parent run goes on and gets a
// "Task cancelled" tool message.
func (h *Handler) CancelSubagent(ctx context.Context, req api.CancelSubagentRequestObject) (api.CancelSubagentResponseObject, error) {
	tid := req.ThreadId
	if _, err := h.runs.Get(ctx, &tid, req.RunId); err != nil {
		return nil, err
	}
	if h.cancelSub == nil {
		return nil, fmt.Errorf("run %s has no subagent with tool call id %q: %w", req.RunId, req.ToolCallId, errdefs.ErrNotFound)
	}
	if err := h.cancelSub(req.RunId, req.ToolCallId); err != nil {
		return nil, err
	}
	return api.CancelSubagent202Response{}, nil
}

func firstString(ss ...*string) *string {
	for _, s := range ss {
		if s != nil && *s != "" {
			return s
		}
	}
	return nil
}
