package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/assistants"
	"agentserver/internal/errdefs"
	"agentserver/internal/jsonrpc"
	"agentserver/internal/runs"
	"agentserver/internal/storage"
	"agentserver/internal/threads"
	"agentserver/internal/version"
)

// JSON-RPC and A2A error codes (the exported ones are those clients act
// on; the JSON-RPC ones are package jsonrpc's).
const (
	CodeMethodNotFound  = jsonrpc.CodeMethodNotFound
	CodeInvalidParams   = jsonrpc.CodeInvalidParams
	CodeTaskNotFound    = -32001
	CodeNotCancelable   = -32002
	defaultListPageSize = 50
	maxListPageSize     = 100
	// maxRequestBody bounds a JSON-RPC request.
	maxRequestBody = 4 << 20
)

// Deps are the services the A2A endpoint calls.
type Deps struct {
	Assistants *assistants.Service
	Threads    *threads.Service
	Runs       *runs.Service
}

// Handler serves POST /a2a/{assistant_id} (JSON-RPC) and the agent cards
// (GET /.well-known/agent-card.json?assistant_id=… and
// GET /a2a/{assistant_id}/.well-known/agent-card.json).
type Handler struct {
	deps Deps
}

// New returns the A2A handler.
func New(d Deps) *Handler { return &Handler{deps: d} }

// rpcError is a JSON-RPC error object.
type rpcError = jsonrpc.Error

// errorf builds a JSON-RPC error.
func errorf(code int, format string, args ...any) *rpcError {
	return jsonrpc.Errorf(code, format, args...)
}

// asRPC maps an error to its JSON-RPC error.
func asRPC(err error) *rpcError {
	var re *rpcError
	switch {
	case errors.As(err, &re):
		return re
	case errors.Is(err, errdefs.ErrNotFound):
		return errorf(CodeTaskNotFound, "%v", err)
	case errors.Is(err, errdefs.ErrInvalid), errors.Is(err, errdefs.ErrConflict):
		return errorf(CodeInvalidParams, "%v", err)
	}
	return errorf(jsonrpc.CodeInternal, "%v", err)
}

// request is a JSON-RPC request whose envelope parseRequest checked.
type request struct {
	// ID is the request's id as sent (nil when absent).
	ID     json.RawMessage
	Method string
	Params json.RawMessage
}

// parseRequest reads the envelope of one JSON-RPC request: a body that is
// not JSON is a parse error; JSON that is not a request object (a batch,
// which A2A does not define, a scalar, an id that is not a string, an
// integer or null, a missing jsonrpc "2.0" or method) is an invalid
// request. The id is returned once it is known to be valid, so that the
// error can carry it.
func parseRequest(body []byte) (request, *rpcError) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		switch _, batch := jsonrpc.BatchLen(body); {
		case !json.Valid(body):
			return request{}, errorf(jsonrpc.CodeParse, "parse error: the body is not JSON")
		case batch:
			return request{}, errorf(jsonrpc.CodeInvalidRequest, "batches are not served: send one request per call")
		}
		return request{}, errorf(jsonrpc.CodeInvalidRequest, "a JSON-RPC request is an object")
	}
	id, hasID := fields["id"]
	if hasID && !jsonrpc.ValidID(id) {
		return request{}, errorf(jsonrpc.CodeInvalidRequest, "the id must be a string, an integer or null")
	}
	req := request{ID: id, Params: fields["params"]}
	var version string
	if json.Unmarshal(fields["jsonrpc"], &version) != nil || version != "2.0" || json.Unmarshal(fields["method"], &req.Method) != nil || req.Method == "" {
		return req, errorf(jsonrpc.CodeInvalidRequest, `want {"jsonrpc": "2.0", "method": …}`)
	}
	return req, nil
}

// ServeHTTP routes the card and JSON-RPC requests.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/.well-known/agent-card.json" {
		if r.Method != http.MethodGet {
			writeJSON(w, http.StatusMethodNotAllowed, map[string]any{"detail": "GET the agent card", "code": "method_not_allowed"})
			return
		}
		h.serveCard(w, r, r.URL.Query().Get("assistant_id"))
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/a2a/")
	id, sub, _ := strings.Cut(rest, "/")
	if !ok || id == "" {
		writeJSON(w, http.StatusNotFound, map[string]any{"detail": "want /a2a/{assistant_id}", "code": "not_found"})
		return
	}
	switch {
	case r.Method == http.MethodGet && (sub == ".well-known/agent-card.json" || sub == "agent-card.json"):
		h.serveCard(w, r, id)
	case r.Method == http.MethodPost && sub == "":
		h.serveRPC(w, r, id)
	default:
		writeJSON(w, http.StatusMethodNotAllowed, map[string]any{"detail": "POST JSON-RPC to /a2a/{assistant_id}, GET the card under it", "code": "method_not_allowed"})
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeRPC answers a request with its result or err; an answer over
// jsonrpc.MaxAnswerBytes is replaced by an error.
func writeRPC(w http.ResponseWriter, status int, id json.RawMessage, result any, err *rpcError) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(jsonrpc.Response(id, result, err))
}

// serveCard answers an assistant's agent card, readable by v1.0 and v0.3
// clients.
func (h *Handler) serveCard(w http.ResponseWriter, r *http.Request, ref string) {
	if ref == "" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"detail": "the assistant_id query parameter is required", "code": "invalid"})
		return
	}
	a, err := h.deps.Assistants.Get(r.Context(), ref)
	if err != nil {
		writeJSON(w, http.StatusNotFound, map[string]any{"detail": err.Error(), "code": "not_found"})
		return
	}
	writeJSON(w, http.StatusOK, card(a, baseURL(r)))
}

// baseURL is the scheme and host the client reached this server at.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if p := r.Header.Get("X-Forwarded-Proto"); p == "http" || p == "https" {
		scheme = p
	}
	return scheme + "://" + r.Host
}

func card(a assistants.Assistant, base string) map[string]any {
	desc := fmt.Sprintf("The %s assistant (graph %s).", a.Name, a.GraphID)
	if a.Description != nil && *a.Description != "" {
		desc = *a.Description
	}
	url := base + "/a2a/" + a.AssistantID.String()
	return map[string]any{
		// v1.0 clients read supportedInterfaces; v0.3 clients read
		// protocolVersion, url and preferredTransport. Both wires are
		// served at the one url.
		"supportedInterfaces": []any{map[string]any{"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}},
		"protocolVersion":     "0.3.0",
		"name":                a.Name,
		"description":         desc,
		"url":                 url,
		"preferredTransport":  "JSONRPC",
		"version":             version.Get().Version,
		"capabilities":        map[string]any{"streaming": true, "pushNotifications": false, "stateTransitionHistory": false},
		"defaultInputModes":   []string{"text/plain"},
		"defaultOutputModes":  []string{"text/plain"},
		"skills": []any{map[string]any{
			"id": a.AssistantID.String(), "name": a.Name, "description": desc, "tags": []string{"assistant", a.GraphID},
		}},
	}
}

// serveRPC decodes one JSON-RPC request and dispatches it.
func (h *Handler) serveRPC(w http.ResponseWriter, r *http.Request, ref string) {
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody+1))
	if err != nil || len(raw) > maxRequestBody {
		writeRPC(w, http.StatusBadRequest, nil, nil, errorf(jsonrpc.CodeInvalidRequest, "the request body is unreadable or larger than %d bytes", maxRequestBody))
		return
	}
	req, rerr := parseRequest(raw)
	if rerr != nil {
		writeRPC(w, http.StatusOK, req.ID, nil, rerr)
		return
	}
	m, ok := methods[req.Method]
	if !ok {
		writeRPC(w, http.StatusOK, req.ID, nil, errorf(CodeMethodNotFound, "method %q is not supported", req.Method))
		return
	}
	a, err := h.deps.Assistants.Get(r.Context(), ref)
	if err != nil {
		writeRPC(w, http.StatusNotFound, req.ID, nil, errorf(CodeInvalidParams, "%v", err))
		return
	}
	c := &call{h: h, w: w, r: r, id: req.ID, assistant: a, wire: m.wire}
	if m.stream {
		c.stream(req.Params, m.handle)
		return
	}
	result, err := m.handle(c, req.Params)
	if err != nil {
		writeRPC(w, http.StatusOK, req.ID, nil, asRPC(err))
		return
	}
	writeRPC(w, http.StatusOK, req.ID, result, nil)
}

// call is one JSON-RPC call in progress.
type call struct {
	h         *Handler
	w         http.ResponseWriter
	r         *http.Request
	id        json.RawMessage
	assistant assistants.Assistant
	wire      wire
	// events receives the stream events of streaming methods.
	events func(any) error
}

func (c *call) ctx() context.Context { return c.r.Context() }

// method is one supported JSON-RPC method.
type method struct {
	wire   wire
	stream bool
	handle func(c *call, params json.RawMessage) (any, error)
}

var methods = map[string]method{}

func init() {
	for _, m := range []struct {
		v03, v1 string
		stream  bool
		handle  func(c *call, params json.RawMessage) (any, error)
	}{
		{"message/send", "SendMessage", false, (*call).send},
		{"message/stream", "SendStreamingMessage", true, (*call).sendStreaming},
		{"tasks/get", "GetTask", false, (*call).get},
		{"tasks/cancel", "CancelTask", false, (*call).cancel},
		{"tasks/list", "ListTasks", false, (*call).list},
		{"tasks/resubscribe", "SubscribeToTask", true, (*call).resubscribe},
	} {
		methods[m.v03] = method{wire: v03{}, stream: m.stream, handle: m.handle}
		methods[m.v1] = method{wire: v1{}, stream: m.stream, handle: m.handle}
	}
}

// decodeParams reads the params of a call, which must be an object.
func decodeParams(raw json.RawMessage, v any) error {
	if !hasParams(raw) {
		return errorf(CodeInvalidParams, "params are required")
	}
	if trimmed := bytes.TrimLeft(raw, " \t\r\n"); trimmed[0] != '{' {
		return errorf(CodeInvalidParams, "params must be an object")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return errorf(CodeInvalidParams, "params: %v", err)
	}
	return nil
}

// hasParams reports whether a call has params (absent and null are none).
func hasParams(raw json.RawMessage) bool {
	return len(bytes.TrimSpace(raw)) > 0 && string(bytes.TrimSpace(raw)) != "null"
}

// sendParams are the params of message/send and message/stream (both
// versions).
type sendParams struct {
	Message struct {
		MessageID string           `json:"messageId"`
		Parts     []map[string]any `json:"parts"`
		ContextID string           `json:"contextId"`
		TaskID    string           `json:"taskId"`
	} `json:"message"`
	Configuration struct {
		Blocking          *bool `json:"blocking"`
		ReturnImmediately bool  `json:"returnImmediately"`
	} `json:"configuration"`
}

// blocking reports whether a send waits for the task to end: by default
// it does; v0.3's blocking=false and v1.0's returnImmediately say not to.
func (p sendParams) blocking() bool {
	if p.Configuration.ReturnImmediately {
		return false
	}
	return p.Configuration.Blocking == nil || *p.Configuration.Blocking
}

// start creates the run of a message: on a new thread without contextId,
// else on that thread, interrupting its current run; a thread paused on
// an interrupt is resumed with the message's text.
func (c *call) start(raw json.RawMessage) (storage.Run, sendParams, error) {
	var p sendParams
	if err := decodeParams(raw, &p); err != nil {
		return storage.Run{}, p, err
	}
	text := partsText(p.Message.Parts)
	if strings.TrimSpace(text) == "" {
		return storage.Run{}, p, errorf(CodeInvalidParams, "message.parts has no text")
	}
	tid := uuid.Must(uuid.NewV7())
	paused := false
	if p.Message.ContextID != "" {
		var err error
		if tid, err = uuid.Parse(p.Message.ContextID); err != nil {
			return storage.Run{}, p, errorf(CodeInvalidParams, "contextId %q is not a thread id", p.Message.ContextID)
		}
		st, err := c.h.deps.Threads.GetState(c.ctx(), tid, nil)
		if err != nil {
			return storage.Run{}, p, errorf(CodeTaskNotFound, "context %s not found (contexts are made by the server: send without contextId to start one)", tid)
		}
		paused = len(st.Interrupts) > 0
	}
	params := runs.CreateParams{ThreadID: &tid, IfNotExists: "create", Assistant: c.assistant.AssistantID.String(),
		MultitaskStrategy: runs.StrategyInterrupt, Metadata: map[string]any{"a2a_message_id": p.Message.MessageID}}
	if paused {
		params.Command = map[string]any{"resume": text}
	} else {
		params.Input = map[string]any{"messages": []any{map[string]any{"role": "user", "content": text}}}
	}
	run, err := c.h.deps.Runs.Create(c.ctx(), params)
	return run, p, err
}

func (c *call) send(raw json.RawMessage) (any, error) {
	run, p, err := c.start(raw)
	if err != nil {
		return nil, err
	}
	var t Task
	if p.blocking() {
		t, err = c.waitTask(run.RunID)
	} else {
		t, err = c.h.taskOf(c.ctx(), run, nil)
	}
	if err != nil {
		return nil, err
	}
	return c.wire.sendResult(t), nil
}

// waitTask waits for a run to end and returns its task.
func (c *call) waitTask(runID uuid.UUID) (Task, error) {
	run, values, err := c.h.deps.Runs.Wait(c.ctx(), nil, runID)
	if err != nil {
		return Task{}, err
	}
	return c.h.taskOf(c.ctx(), run, values)
}

// taskParams are the params of tasks/get, tasks/cancel and
// tasks/resubscribe.
type taskParams struct {
	ID string `json:"id"`
}

// run loads the run a task id names; runs of other assistants are not
// found.
func (c *call) run(raw json.RawMessage) (storage.Run, error) {
	var p taskParams
	if err := decodeParams(raw, &p); err != nil {
		return storage.Run{}, err
	}
	if p.ID == "" {
		return storage.Run{}, errorf(CodeInvalidParams, "params.id (the task id) is required")
	}
	rid, err := uuid.Parse(p.ID)
	if err != nil {
		return storage.Run{}, errorf(CodeTaskNotFound, "task %q not found", p.ID)
	}
	run, err := c.h.deps.Runs.Get(c.ctx(), nil, rid)
	if err != nil || run.AssistantID != c.assistant.AssistantID {
		return storage.Run{}, errorf(CodeTaskNotFound, "task %q not found", p.ID)
	}
	return run, nil
}

// current returns the task of a run as it is now.
func (c *call) current(run storage.Run) (Task, error) {
	if storage.RunActive(run.Status) {
		return c.h.taskOf(c.ctx(), run, nil)
	}
	return c.waitTask(run.RunID) // ended: answers at once, with the values
}

func (c *call) get(raw json.RawMessage) (any, error) {
	run, err := c.run(raw)
	if err != nil {
		return nil, err
	}
	t, err := c.current(run)
	if err != nil {
		return nil, err
	}
	return c.wire.task(t), nil
}

func (c *call) cancel(raw json.RawMessage) (any, error) {
	run, err := c.run(raw)
	if err != nil {
		return nil, err
	}
	if !storage.RunActive(run.Status) {
		return nil, errorf(CodeNotCancelable, "task %s has ended (%s) and cannot be canceled", run.RunID, run.Status)
	}
	if err := c.h.deps.Runs.Cancel(c.ctx(), nil, run.RunID, runs.ActionInterrupt, false); err != nil && !errors.Is(err, errdefs.ErrConflict) {
		return nil, err
	}
	t, err := c.waitTask(run.RunID)
	if err != nil {
		return nil, err
	}
	return c.wire.task(t), nil
}

// listParams are the params of ListTasks.
type listParams struct {
	ContextID string `json:"contextId"`
	Status    string `json:"status"`
	PageSize  int    `json:"pageSize"`
}

func (c *call) list(raw json.RawMessage) (any, error) {
	var p listParams
	if hasParams(raw) {
		if err := decodeParams(raw, &p); err != nil {
			return nil, err
		}
	}
	size := p.PageSize
	if size <= 0 {
		size = defaultListPageSize
	}
	size = min(size, maxListPageSize)
	q := storage.RunQuery{AssistantID: &c.assistant.AssistantID, Limit: size}
	if p.ContextID != "" {
		tid, err := uuid.Parse(p.ContextID)
		if err != nil {
			return nil, errorf(CodeInvalidParams, "contextId %q is not a thread id", p.ContextID)
		}
		if _, err := c.h.deps.Threads.Get(c.ctx(), tid); err != nil {
			return nil, errorf(CodeTaskNotFound, "context %s not found", tid)
		}
		q.ThreadID = &tid
	}
	found, total, err := c.h.deps.Runs.Search(c.ctx(), q)
	if err != nil {
		return nil, err
	}
	tasks := []any{}
	for _, run := range found {
		t, err := c.current(run)
		if err != nil {
			return nil, err
		}
		if p.Status == "" || ParseState(p.Status) == t.State {
			tasks = append(tasks, c.wire.task(t))
		}
	}
	return map[string]any{"tasks": tasks, "nextPageToken": "", "pageSize": size, "totalSize": total}, nil
}

// stream answers a streaming method with server-sent events, each a
// JSON-RPC response; an error before the first event is one such event.
func (c *call) stream(params json.RawMessage, handle func(*call, json.RawMessage) (any, error)) {
	h := c.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	c.w.WriteHeader(http.StatusOK)
	flusher, _ := c.w.(http.Flusher)
	c.events = func(ev any) error {
		raw, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "result": ev})
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(c.w, "data: %s\n\n", raw); err != nil {
			return err
		}
		if flusher != nil {
			flusher.Flush()
		}
		return nil
	}
	if _, err := handle(c, params); err != nil {
		raw, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "error": asRPC(err)})
		fmt.Fprintf(c.w, "data: %s\n\n", raw)
	}
}

func (c *call) sendStreaming(raw json.RawMessage) (any, error) {
	run, _, err := c.start(raw)
	if err != nil {
		return nil, err
	}
	return nil, c.follow(run)
}

func (c *call) resubscribe(raw json.RawMessage) (any, error) {
	run, err := c.run(raw)
	if err != nil {
		return nil, err
	}
	return nil, c.follow(run)
}

// follow streams a run's task: the task as it is, a working status while
// it runs, then (once it ended) its artifact and its final status.
func (c *call) follow(run storage.Run) error {
	t, err := c.current(run)
	if err != nil {
		return err
	}
	if err := c.events(c.wire.taskEvent(t)); err != nil {
		return nil // the client went away
	}
	if !TerminalState(t.State) {
		t.State, t.Text, t.Timestamp = StateWorking, "", time.Now()
		if err := c.events(c.wire.statusEvent(t, false)); err != nil {
			return nil
		}
		if t, err = c.waitTask(run.RunID); err != nil {
			return err
		}
	}
	if t.State == StateCompleted {
		if err := c.events(c.wire.artifactEvent(t)); err != nil {
			return nil
		}
	}
	_ = c.events(c.wire.statusEvent(t, true))
	return nil
}
