package asynctasks

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/a2a"
	"agentserver/internal/errdefs"
	"agentserver/internal/retry"
)

// A2A is the transport that drives an async subagent through the
// Agent2Agent protocol (v0.3 method names, which v1.0 servers of this
// project accept too): Start sends a message in a new context, Update one
// in the task's context (this server interrupts the current task), Run
// gets the task, Cancel cancels it, Wait follows tasks/resubscribe until
// the final event. The task id of the supervisor is the context id; the
// run id is the A2A task id.
type A2A struct {
	endpoint   string
	headers    http.Header
	forward    bool
	client     *http.Client
	timeout    time.Duration
	maxRetries int
	ids        atomic.Int64

	mu sync.Mutex
	// answers remembers the last answer read per context, for servers
	// without tasks/list.
	answers map[string]string
}

var _ Transport = (*A2A)(nil)

// NewA2A checks cfg and returns a transport for the A2A agent whose
// JSON-RPC endpoint (the url of its agent card) is cfg.URL, e.g.
// "http://127.0.0.1:2024/a2a/<assistant_id>". Headers, timeouts and
// retries are as for NewHTTP: reads (tasks/get, tasks/list) and a dropped
// Wait stream are retried, sends and cancels are not.
func NewA2A(cfg HTTPConfig) (*A2A, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("a2a agent url %q: want http(s)://host[:port]/path", cfg.URL)
	}
	x := &A2A{endpoint: cfg.URL, headers: resolveHeaders(cfg.Headers, cfg.Getenv), forward: cfg.ForwardCredentials, client: cfg.client(), answers: map[string]string{}}
	x.timeout, x.maxRetries = cfg.limits()
	return x, nil
}

// rpcError is a JSON-RPC error answer.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// A2AError is a JSON-RPC error of an A2A agent. It matches
// errdefs.ErrNotFound for "task not found" and errdefs.ErrInvalid for bad
// params.
type A2AError struct {
	Method  string
	Code    int
	Message string
}

// Error names the method, the code and the agent's message.
func (e *A2AError) Error() string {
	return fmt.Sprintf("a2a %s: error %d: %s", e.Method, e.Code, e.Message)
}

// Unwrap returns the error kind the code stands for.
func (e *A2AError) Unwrap() error {
	switch e.Code {
	case a2a.CodeTaskNotFound:
		return errdefs.ErrNotFound
	case a2a.CodeInvalidParams:
		return errdefs.ErrInvalid
	}
	return nil
}

// request builds a JSON-RPC request of method.
func (x *A2A) request(ctx context.Context, method string, params any) (*http.Request, error) {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": x.ids.Add(1), "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, x.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	x.setHeaders(ctx, req)
	req.Header.Set("Content-Type", "application/json")
	return req, nil
}

func (x *A2A) setHeaders(ctx context.Context, req *http.Request) {
	for k, v := range x.headers {
		req.Header[k] = append([]string(nil), v...)
	}
	forwardCredentials(ctx, x.forward, req.Header)
}

// call sends one JSON-RPC request and returns its result; reads
// (idempotent) are retried while the agent is unavailable.
func (x *A2A) call(ctx context.Context, method string, params any, idempotent bool) (json.RawMessage, error) {
	for attempt := 0; ; attempt++ {
		result, err := x.attempt(ctx, method, params)
		if err == nil || !idempotent || !errors.Is(err, ErrUnavailable) || attempt >= x.maxRetries || ctx.Err() != nil {
			return result, err
		}
		if err := retry.Wait(ctx, retryPolicy.Delay(attempt, 0)); err != nil {
			return nil, err
		}
	}
}

func (x *A2A) attempt(ctx context.Context, method string, params any) (json.RawMessage, error) {
	actx, cancel := context.WithTimeout(ctx, x.timeout)
	defer cancel()
	req, err := x.request(actx, method, params)
	if err != nil {
		return nil, err
	}
	resp, err := x.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, fmt.Errorf("%w: a2a %s: %w", ErrUnavailable, method, err)
	}
	defer resp.Body.Close()
	body, err := readBody(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%w: a2a %s: reading the response: %w", ErrUnavailable, method, err)
	}
	return decodeRPC(method, resp.StatusCode, body)
}

// decodeRPC reads a JSON-RPC answer; a non-2xx status without a JSON-RPC
// error is an HTTPError.
func decodeRPC(method string, status int, body []byte) (json.RawMessage, error) {
	var out struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	if err := json.Unmarshal(body, &out); err != nil || (out.Error == nil && out.Result == nil) {
		if status < 200 || status > 299 {
			return nil, newHTTPError(status, body)
		}
		return nil, fmt.Errorf("a2a %s: the answer is not a JSON-RPC response: %.200s", method, body)
	}
	if out.Error != nil {
		e := &A2AError{Method: method, Code: out.Error.Code, Message: out.Error.Message}
		if status == http.StatusNotFound {
			return nil, errors.Join(e, errdefs.ErrNotFound)
		}
		return nil, e
	}
	return out.Result, nil
}

// userMessage is a v0.3 user message.
func userMessage(text, contextID string) map[string]any {
	m := map[string]any{"kind": "message", "messageId": uuid.NewString(), "role": "user", "parts": []any{map[string]any{"kind": "text", "text": text}}}
	if contextID != "" {
		m["contextId"] = contextID
	}
	return m
}

// send sends a message without waiting for the task to end.
func (x *A2A) send(ctx context.Context, message, contextID string) (a2a.RemoteTask, error) {
	params := map[string]any{"message": userMessage(message, contextID), "configuration": map[string]any{"blocking": false}}
	raw, err := x.call(ctx, "message/send", params, false)
	if err != nil {
		return a2a.RemoteTask{}, err
	}
	t, err := a2a.ParseTask(raw)
	if err == nil && (t.ID == "" || t.ContextID == "") {
		err = fmt.Errorf("a2a message/send: the agent answered no task (a message-only agent cannot be an async subagent)")
	}
	return t, err
}

// Start sends the message in a new context; graphID is not used (the url
// names the agent).
func (x *A2A) Start(ctx context.Context, _ string, message string) (string, string, error) {
	t, err := x.send(ctx, message, "")
	if err != nil {
		return "", "", err
	}
	return t.ContextID, t.ID, nil
}

// Update sends the message in the task's context.
func (x *A2A) Update(ctx context.Context, threadID, _ string, message string) (string, error) {
	t, err := x.send(ctx, message, threadID)
	if err != nil {
		return "", err
	}
	return t.ID, nil
}

// task gets a task and checks that it belongs to the context.
func (x *A2A) task(ctx context.Context, threadID, runID string) (a2a.RemoteTask, error) {
	raw, err := x.call(ctx, "tasks/get", map[string]any{"id": runID}, true)
	if err != nil {
		return a2a.RemoteTask{}, err
	}
	t, err := a2a.ParseTask(raw)
	if err != nil {
		return t, err
	}
	if t.ContextID != threadID {
		return t, fmt.Errorf("%w: a2a task %s is not in context %q", errdefs.ErrInvalid, runID, threadID)
	}
	return t, nil
}

// Run reads the task's state.
func (x *A2A) Run(ctx context.Context, threadID, runID string) (RunInfo, error) {
	t, err := x.task(ctx, threadID, runID)
	if err != nil {
		return RunInfo{}, err
	}
	return x.info(t), nil
}

// info maps a task to a run state, remembering a completed task's answer.
func (x *A2A) info(t a2a.RemoteTask) RunInfo {
	switch t.State {
	case a2a.StateSubmitted:
		return RunInfo{Status: StatusPending}
	case a2a.StateCompleted:
		x.remember(t)
		return RunInfo{Status: StatusSuccess}
	case a2a.StateInputRequired, "auth-required":
		interrupts := t.Interrupts
		if len(interrupts) == 0 {
			interrupts = []any{map[string]any{"value": t.Text}}
		}
		return RunInfo{Status: StatusInterrupted, Interrupts: interrupts}
	case a2a.StateFailed, a2a.StateRejected:
		return RunInfo{Status: StatusError, Error: t.Text}
	case a2a.StateCanceled:
		return RunInfo{Status: StatusInterrupted} // as a cancelled run reads on the other transports
	}
	return RunInfo{Status: StatusRunning}
}

func (x *A2A) remember(t a2a.RemoteTask) {
	answer := t.Answer
	if answer == "" {
		answer = t.Text
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.answers[t.ContextID] = answer
}

// LastMessage returns the answer of the context's latest task (tasks/list),
// or, for agents without tasks/list, the last answer this transport read.
func (x *A2A) LastMessage(ctx context.Context, threadID string) (any, error) {
	raw, err := x.call(ctx, "tasks/list", map[string]any{"contextId": threadID, "pageSize": 1}, true)
	var rpc *A2AError
	if errors.As(err, &rpc) && rpc.Code == a2a.CodeMethodNotFound {
		x.mu.Lock()
		defer x.mu.Unlock()
		if answer, ok := x.answers[threadID]; ok {
			return answer, nil
		}
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var list struct {
		Tasks []json.RawMessage `json:"tasks"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("a2a tasks/list: %w", err)
	}
	if len(list.Tasks) == 0 {
		return nil, nil
	}
	t, err := a2a.ParseTask(list.Tasks[0])
	if err != nil {
		return nil, err
	}
	if t.Answer != "" {
		return t.Answer, nil
	}
	if t.Text != "" {
		return t.Text, nil
	}
	return nil, nil
}

// Cancel cancels the task; a task that already ended is left as it is.
func (x *A2A) Cancel(ctx context.Context, threadID, runID string) error {
	_, err := x.call(ctx, "tasks/cancel", map[string]any{"id": runID}, false)
	var rpc *A2AError
	if errors.As(err, &rpc) && rpc.Code == a2a.CodeNotCancelable {
		return nil
	}
	return err
}

// Wait follows the task's event stream (tasks/resubscribe) until its final
// event, then reports the task like Run. A stream that drops is opened
// again, with backoff, at most MaxRetries times in a row. An agent that
// refuses the stream with a JSON-RPC error (A2A agents refuse to
// resubscribe to a task that already ended, and agents without streaming
// refuse it always) has the task read with tasks/get until it ends.
func (x *A2A) Wait(ctx context.Context, threadID, runID string) (RunInfo, error) {
	for failures := 0; ; {
		err := x.follow(ctx, runID)
		if err == nil {
			return x.Run(ctx, threadID, runID)
		}
		if ctx.Err() != nil {
			return RunInfo{}, context.Cause(ctx)
		}
		var rpc *A2AError
		if errors.As(err, &rpc) && rpc.Code != a2a.CodeTaskNotFound {
			return x.poll(ctx, threadID, runID)
		}
		if !errors.Is(err, ErrUnavailable) || failures >= x.maxRetries {
			return RunInfo{}, err
		}
		if err := retry.Wait(ctx, retryPolicy.Delay(failures, 0)); err != nil {
			return RunInfo{}, err
		}
		failures++
	}
}

// pollPolicy spaces the tasks/get of poll: the first comes at once, the
// next after 50 ms, the delay doubling up to 2 s.
var pollPolicy = retry.Policy{Base: 50 * time.Millisecond, Max: 2 * time.Second}

// poll reads the task with tasks/get until it has ended.
func (x *A2A) poll(ctx context.Context, threadID, runID string) (RunInfo, error) {
	for attempt := 0; ; attempt++ {
		info, err := x.Run(ctx, threadID, runID)
		if err != nil || Terminal(info.Status) {
			return info, err
		}
		if err := retry.Wait(ctx, pollPolicy.Delay(attempt, 0)); err != nil {
			return RunInfo{}, err
		}
	}
}

// follow reads one tasks/resubscribe stream until a final event.
func (x *A2A) follow(ctx context.Context, runID string) error {
	req, err := x.request(ctx, "tasks/resubscribe", map[string]any{"id": runID})
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := x.client.Do(req)
	if err != nil {
		return fmt.Errorf("%w: a2a tasks/resubscribe: %w", ErrUnavailable, err)
	}
	defer resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		body, _ := readBody(resp.Body)
		_, err := decodeRPC("tasks/resubscribe", resp.StatusCode, body)
		if err == nil {
			err = fmt.Errorf("a2a tasks/resubscribe: the agent answered no event stream")
		}
		return err
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), maxBody)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data:")
		if !ok {
			continue
		}
		result, err := decodeRPC("tasks/resubscribe", resp.StatusCode, []byte(strings.TrimSpace(data)))
		if err != nil {
			return err
		}
		t, err := a2a.ParseTask(result)
		if err != nil {
			return err
		}
		if t.Final || a2a.TerminalState(t.State) {
			return nil
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: a2a tasks/resubscribe dropped: %w", ErrUnavailable, err)
	}
	return fmt.Errorf("%w: a2a tasks/resubscribe ended before the task did", ErrUnavailable)
}
