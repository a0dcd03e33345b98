package asynctasks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"agentserver/api"
	"agentserver/internal/authz"
	"agentserver/internal/errdefs"
	"agentserver/internal/retry"
	"agentserver/internal/tracing"
)

// HTTP defaults.
const (
	DefaultHTTPTimeout    = 30 * time.Second
	DefaultHTTPMaxRetries = 3

	// maxBody bounds every response body read into memory.
	maxBody = 64 << 20
)

// retryPolicy spaces the attempts of a request: 200 ms doubling up to 5 s,
// less up to half at random, or the server's Retry-After up to 30 s.
var retryPolicy = retry.Policy{Base: 200 * time.Millisecond, Max: 5 * time.Second, Jitter: 0.5, MaxAfter: 30 * time.Second}

// HTTPConfig configures an HTTP transport.
type HTTPConfig struct {
	// URL is the server's base URL (http or https), e.g.
	// "http://127.0.0.1:2024"; a path prefix is kept.
	URL string
	// Headers are sent verbatim on every request (the spec's headers).
	Headers map[string]string
	// Getenv reads the API key variables; nil means os.Getenv. It is read
	// once, by NewHTTP.
	Getenv func(string) string
	// Timeout bounds each request attempt (default 30s). Wait's join has no
	// such bound: only its context ends it.
	Timeout time.Duration
	// HTTPClient sends the requests (nil: a new client with its own pool of
	// up to 64 idle connections per host). Its Timeout, if any, applies to every request
	// but Wait's join.
	HTTPClient *http.Client
	// MaxRetries is how many times a safe request is retried (0: the default
	// 3; negative: never).
	MaxRetries int
	// ForwardCredentials sends the credentials of the user the calling
	// run acts for (authz.RunCallerFrom: the Authorization header of the
	// request that created it, held in memory by the replica that created
	// it) with every request, over the configured headers. Off (the
	// default), a user's credentials never leave the server.
	ForwardCredentials bool
}

// HTTP is the transport that speaks the LangGraph Platform API to a server
// (this one or another) through the generated client. Reads (run status,
// state, join) are retried on 5xx, 429 and connection errors; writes (thread
// and run creation, cancel) only when the connection failed before anything
// was sent.
type HTTP struct {
	client     *api.Client // every request but the join
	waiter     *api.Client // the join: no client timeout
	headers    http.Header
	forward    bool
	timeout    time.Duration
	maxRetries int
}

var _ Transport = (*HTTP)(nil)

// NewHTTP checks cfg and returns a transport for the server at cfg.URL.
func NewHTTP(cfg HTTPConfig) (*HTTP, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("subagent url %q: %w", cfg.URL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("subagent url %q: want http(s)://host[:port][/path]", cfg.URL)
	}
	h := &HTTP{headers: resolveHeaders(cfg.Headers, cfg.Getenv), forward: cfg.ForwardCredentials}
	h.timeout, h.maxRetries = cfg.limits()
	hc := cfg.client()
	wc := *hc
	wc.Timeout = 0
	editor := api.WithRequestEditorFn(h.setHeaders)
	if h.client, err = api.NewClient(cfg.URL, api.WithHTTPClient(hc), editor); err != nil {
		return nil, err
	}
	if h.waiter, err = api.NewClient(cfg.URL, api.WithHTTPClient(&wc), editor); err != nil {
		return nil, err
	}
	return h, nil
}

// limits returns the per-request timeout and the retry count, defaults
// applied.
func (cfg HTTPConfig) limits() (time.Duration, int) {
	timeout, retries := cfg.Timeout, cfg.MaxRetries
	if timeout <= 0 {
		timeout = DefaultHTTPTimeout
	}
	switch {
	case retries == 0:
		retries = DefaultHTTPMaxRetries
	case retries < 0:
		retries = 0
	}
	return timeout, retries
}

// client returns cfg.HTTPClient, or a client with a pool wide enough for
// list_async_tasks refreshing many tasks at once (the default keeps only 2
// idle connections per host).
func (cfg HTTPConfig) client() *http.Client {
	if cfg.HTTPClient != nil {
		return cfg.HTTPClient
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	return &http.Client{Transport: tr}
}

// resolveHeaders returns the headers of every request: the spec's headers,
// x-auth-scheme: langsmith unless they set it, and x-api-key from the first
// non-empty of LANGGRAPH_API_KEY, LANGSMITH_API_KEY, LANGCHAIN_API_KEY
// unless they set it (the deepagents / LangGraph SDK rules).
func resolveHeaders(spec map[string]string, getenv func(string) string) http.Header {
	if getenv == nil {
		getenv = os.Getenv
	}
	out := http.Header{}
	for k, v := range spec {
		out.Set(k, v)
	}
	if !hasKey(spec, "x-auth-scheme") {
		out.Set("x-auth-scheme", "langsmith")
	}
	if !hasKey(spec, "x-api-key") {
		for _, name := range []string{"LANGGRAPH_API_KEY", "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY"} {
			if key := strings.Trim(strings.TrimSpace(getenv(name)), `"'`); key != "" {
				out.Set("x-api-key", key)
				break
			}
		}
	}
	return out
}

func hasKey(m map[string]string, name string) bool {
	for k := range m {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}

func (h *HTTP) setHeaders(ctx context.Context, req *http.Request) error {
	for k, v := range h.headers {
		req.Header[k] = slices.Clone(v)
	}
	forwardCredentials(ctx, h.forward, req.Header)
	tracing.Inject(ctx, req.Header) // the remote run joins the caller's trace
	return nil
}

// HTTPError is a non-2xx answer. It matches ErrUnavailable for 5xx and 429,
// and the errdefs kind of 4xx statuses (404 → ErrNotFound, 409 →
// ErrConflict, 400/422 → ErrInvalid, 401/403 → ErrUnauthorized), so callers
// test HTTP and Local errors alike.
type HTTPError struct {
	Code int
	// Message is the body's detail, message or error text, else the raw
	// body, else the status text.
	Message string
}

// Error reads "HTTP <code>: <message>", like the JS SDK.
func (e *HTTPError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.Code, e.Message) }

// Unwrap returns the error kinds the status stands for.
func (e *HTTPError) Unwrap() []error {
	switch c := e.Code; {
	case c >= 500 || c == http.StatusTooManyRequests:
		return []error{ErrUnavailable}
	case c == http.StatusNotFound:
		return []error{errdefs.ErrNotFound}
	case c == http.StatusConflict:
		return []error{errdefs.ErrConflict}
	case c == http.StatusBadRequest || c == http.StatusUnprocessableEntity:
		return []error{errdefs.ErrInvalid}
	case c == http.StatusUnauthorized || c == http.StatusForbidden:
		return []error{errdefs.ErrUnauthorized}
	}
	return nil
}

func newHTTPError(code int, body []byte) *HTTPError {
	msg := ""
	var obj map[string]any
	if json.Unmarshal(body, &obj) == nil {
		for _, k := range []string{"detail", "message", "error"} {
			if s, ok := obj[k].(string); ok && s != "" {
				msg = s
				break
			}
		}
	}
	if msg == "" {
		msg = strings.TrimSpace(string(body))
		if len(msg) > 500 {
			msg = msg[:500] + "…"
		}
	}
	if msg == "" {
		msg = http.StatusText(code)
	}
	return &HTTPError{Code: code, Message: msg}
}

// call sends one request through the generated client.
type call func(ctx context.Context, c *api.Client) (*http.Response, error)

// do sends a request until it succeeds, fails for good, or runs out of
// retries, and returns the 2xx body. idempotent requests (GETs) are retried
// on 5xx, 429 and connection errors; others only when the connection failed
// before the request was handed to a connection.
func (h *HTTP) do(ctx context.Context, idempotent bool, send call) ([]byte, error) {
	for attempt := 0; ; attempt++ {
		body, again, after, err := h.attempt(ctx, idempotent, send)
		if err == nil {
			return body, nil
		}
		if !again || attempt >= h.maxRetries || ctx.Err() != nil {
			return nil, err
		}
		if err := retry.Wait(ctx, retryPolicy.Delay(attempt, after)); err != nil {
			return nil, err
		}
	}
}

// attempt sends the request once, within the per-request timeout.
func (h *HTTP) attempt(ctx context.Context, idempotent bool, send call) (body []byte, again bool, after time.Duration, err error) {
	actx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	var connected atomic.Bool
	actx = httptrace.WithClientTrace(actx, &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { connected.Store(true) }})
	resp, err := send(actx, h.client)
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, 0, context.Cause(ctx)
		}
		return nil, idempotent || !connected.Load(), 0, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	defer resp.Body.Close()
	body, err = readBody(resp.Body)
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, 0, context.Cause(ctx)
		}
		return nil, idempotent, 0, fmt.Errorf("%w: %s %s: reading the response: %w", ErrUnavailable, resp.Request.Method, resp.Request.URL.Path, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return body, false, 0, nil
	}
	again = idempotent && (resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests)
	return nil, again, retryAfter(resp), newHTTPError(resp.StatusCode, body)
}

func readBody(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxBody+1))
	if err == nil && len(b) > maxBody {
		err = fmt.Errorf("response body exceeds %d bytes", maxBody)
	}
	return b, err
}

// retryAfter is the Retry-After hint of resp, 0 without one.
func retryAfter(resp *http.Response) time.Duration {
	return retry.After(resp.Header.Get("Retry-After"), time.Now())
}

func decode(body []byte, v any, what string) error {
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("decode %s: %w", what, err)
	}
	return nil
}

// Start creates a thread, whose metadata names the parent of ctx
// (WithParent), and a run on it.
func (h *HTTP) Start(ctx context.Context, graphID, message string) (string, string, error) {
	body, err := h.do(ctx, false, func(ctx context.Context, c *api.Client) (*http.Response, error) {
		return c.CreateThread(ctx, api.ThreadCreate{Metadata: parentMetadata(ctx)})
	})
	if err != nil {
		return "", "", err
	}
	var t struct {
		ThreadID string `json:"thread_id"`
	}
	if err := decode(body, &t, "thread"); err != nil {
		return "", "", err
	}
	tid, err := uuid.Parse(t.ThreadID)
	if err != nil {
		return "", "", fmt.Errorf("server returned thread id %q: %w", t.ThreadID, err)
	}
	rid, err := h.createRun(ctx, tid, api.RunCreate{AssistantId: &graphID, Input: userInput(message)})
	if err != nil {
		return "", "", err
	}
	return tid.String(), rid, nil
}

// Update starts a new run that interrupts the current one.
func (h *HTTP) Update(ctx context.Context, threadID, graphID, message string) (string, error) {
	tid, _, err := parseIDs(threadID, "")
	if err != nil {
		return "", err
	}
	strategy := api.MultitaskStrategyInterrupt
	return h.createRun(ctx, tid, api.RunCreate{AssistantId: &graphID, Input: userInput(message), MultitaskStrategy: &strategy})
}

func (h *HTTP) createRun(ctx context.Context, tid uuid.UUID, b api.RunCreate) (string, error) {
	body, err := h.do(ctx, false, func(ctx context.Context, c *api.Client) (*http.Response, error) {
		return c.CreateThreadRun(ctx, tid, b)
	})
	if err != nil {
		return "", err
	}
	var r struct {
		RunID string `json:"run_id"`
	}
	if err := decode(body, &r, "run"); err != nil {
		return "", err
	}
	if r.RunID == "" {
		return "", errors.New("decode run: no run_id in the response")
	}
	return r.RunID, nil
}

// Run reads a run's status, and the thread's interrupts when it paused.
func (h *HTTP) Run(ctx context.Context, threadID, runID string) (RunInfo, error) {
	tid, rid, err := parseIDs(threadID, runID)
	if err != nil {
		return RunInfo{}, err
	}
	body, err := h.do(ctx, true, func(ctx context.Context, c *api.Client) (*http.Response, error) {
		return c.GetThreadRun(ctx, tid, rid)
	})
	if err != nil {
		return RunInfo{}, err
	}
	var r struct {
		Status string `json:"status"`
		Error  any    `json:"error"`
	}
	if err := decode(body, &r, "run"); err != nil {
		return RunInfo{}, err
	}
	info := RunInfo{Status: r.Status, Error: errorText(r.Error)}
	if r.Status != StatusSuccess {
		return info, nil
	}
	st, err := h.state(ctx, tid)
	if err != nil {
		return info, nil // the status stands; the interrupts are a bonus (as in Local)
	}
	return paused(info, st.interrupts()), nil
}

// errorText turns a run's error (a string or an object) into text.
func errorText(e any) string {
	switch v := e.(type) {
	case nil:
		return ""
	case string:
		return v
	case map[string]any:
		for _, k := range []string{"message", "detail", "error"} {
			if s, ok := v[k].(string); ok && s != "" {
				return s
			}
		}
	}
	raw, _ := json.Marshal(e)
	return string(raw)
}

// threadState is the part of a ThreadState the transport reads.
type threadState struct {
	Values     any   `json:"values"`
	Interrupts []any `json:"interrupts"`
	Tasks      []struct {
		Interrupts []any `json:"interrupts"`
	} `json:"tasks"`
}

// interrupts returns the pending interrupts: the state's own list (newer
// servers), else those of its tasks.
func (s threadState) interrupts() []any {
	if len(s.Interrupts) > 0 {
		return s.Interrupts
	}
	var out []any
	for _, t := range s.Tasks {
		out = append(out, t.Interrupts...)
	}
	return out
}

func (h *HTTP) state(ctx context.Context, tid uuid.UUID) (threadState, error) {
	var st threadState
	body, err := h.do(ctx, true, func(ctx context.Context, c *api.Client) (*http.Response, error) {
		return c.GetThreadState(ctx, tid, nil)
	})
	if err != nil {
		return st, err
	}
	return st, decode(body, &st, "thread state")
}

// LastMessage returns the content of the thread's last message.
func (h *HTTP) LastMessage(ctx context.Context, threadID string) (any, error) {
	tid, _, err := parseIDs(threadID, "")
	if err != nil {
		return nil, err
	}
	st, err := h.state(ctx, tid)
	if err != nil {
		return nil, err
	}
	values, _ := st.Values.(map[string]any)
	return lastContent(values), nil
}

// Cancel interrupts a run without waiting for it.
func (h *HTTP) Cancel(ctx context.Context, threadID, runID string) error {
	tid, rid, err := parseIDs(threadID, runID)
	if err != nil {
		return err
	}
	wait, action := "0", api.CancelActionInterrupt
	_, err = h.do(ctx, false, func(ctx context.Context, c *api.Client) (*http.Response, error) {
		return c.CancelThreadRun(ctx, tid, rid, &api.CancelThreadRunParams{Wait: &wait, Action: &action})
	})
	return err
}

// Wait joins the run (the server holds the request, writing whitespace,
// until the run ends) and then reports the run like Run. A join that drops
// is sent again, with backoff, while ctx allows: at most MaxRetries times in
// a row without the server having sent anything.
func (h *HTTP) Wait(ctx context.Context, threadID, runID string) (RunInfo, error) {
	tid, rid, err := parseIDs(threadID, runID)
	if err != nil {
		return RunInfo{}, err
	}
	for failures := 0; ; {
		progressed, again, after, err := h.join(ctx, tid, rid)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return RunInfo{}, context.Cause(ctx)
		}
		if progressed {
			failures = 0
		}
		if !again || failures >= h.maxRetries {
			return RunInfo{}, err
		}
		if err := retry.Wait(ctx, retryPolicy.Delay(failures, after)); err != nil {
			return RunInfo{}, err
		}
		failures++
	}
	return h.Run(ctx, threadID, runID)
}

// join sends one join request and reads its body to the end. It succeeds
// when the body is a complete JSON value (the final values or an
// {"__error__": …}); progressed reports whether the server sent anything.
func (h *HTTP) join(ctx context.Context, tid, rid uuid.UUID) (progressed, again bool, after time.Duration, err error) {
	resp, err := h.waiter.JoinThreadRun(ctx, tid, rid, nil)
	if err != nil {
		return false, true, 0, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	defer resp.Body.Close()
	cr := &countingReader{r: resp.Body}
	body, err := readBody(cr)
	progressed = cr.n > 0
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		again = resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests
		return false, again, retryAfter(resp), newHTTPError(resp.StatusCode, body)
	}
	if err != nil {
		return progressed, true, 0, fmt.Errorf("%w: join of run %s dropped: %w", ErrUnavailable, rid, err)
	}
	if trimmed := bytes.TrimSpace(body); len(trimmed) == 0 || !json.Valid(trimmed) {
		return progressed, true, 0, fmt.Errorf("%w: join of run %s ended before the run did", ErrUnavailable, rid)
	}
	return progressed, false, 0, nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// forwardCredentials sets the credentials of the user the run of ctx acts
// for on h, when forward is set; without such a user it sets nothing.
func forwardCredentials(ctx context.Context, forward bool, h http.Header) {
	if !forward {
		return
	}
	if c, ok := authz.RunCallerFrom(ctx); ok {
		for k, v := range c.Credentials {
			h[k] = slices.Clone(v)
		}
	}
}
