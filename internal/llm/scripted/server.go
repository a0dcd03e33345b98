package scripted

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Server is a scripted OpenAI-compatible server. It is safe for concurrent
// use.
type Server struct {
	url  string
	ln   net.Listener
	srv  *http.Server
	quit chan struct{} // closed by Close; stops hanging handlers

	serveDone chan struct{}
	handlers  sync.WaitGroup
	closeOnce sync.Once

	mu          sync.Mutex
	closed      bool
	queue       []Step
	responder   Responder
	requests    []Request
	disconnects int
	seq         int
	conns       int
	changed     chan struct{} // closed and replaced whenever requests or disconnects change
}

// New starts a Server on a free port of 127.0.0.1. It panics when it cannot
// listen, as httptest.NewServer does.
func New() *Server {
	s, err := Start("127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("scripted: %v", err))
	}
	return s
}

// Start starts a Server listening on addr (host:port), for tools that need
// a fixed address.
func Start(addr string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	s := &Server{
		url:       "http://" + ln.Addr().String() + "/v1",
		ln:        ln,
		quit:      make(chan struct{}),
		serveDone: make(chan struct{}),
		responder: Echo,
		changed:   make(chan struct{}),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.handleChat)
	mux.HandleFunc("GET /v1/models", s.handleModels)
	mux.HandleFunc("POST /v1/embeddings", s.handleEmbeddings)
	s.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
		ConnState: func(_ net.Conn, state http.ConnState) {
			if state == http.StateNew {
				s.mu.Lock()
				s.conns++
				s.mu.Unlock()
			}
		},
	}
	go func() {
		defer close(s.serveDone)
		_ = s.srv.Serve(ln) // returns http.ErrServerClosed after Close
	}()
	return s, nil
}

// URL returns the base URL to configure clients with, ending in "/v1".
func (s *Server) URL() string { return s.url }

// Close stops the server: it ends hanging and delayed responses, closes
// every connection and waits for all handlers and the accept loop to return.
// It is idempotent.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		close(s.quit)
		_ = s.srv.Close()
		s.handlers.Wait()
		<-s.serveDone
	})
}

// Script queues steps; each chat completions request consumes the oldest.
func (s *Server) Script(steps ...Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, steps...)
}

// SetResponder sets the function answering requests when no step is queued;
// nil restores Echo.
func (s *Server) SetResponder(r Responder) {
	if r == nil {
		r = Echo
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.responder = r
}

// Pending returns how many queued steps have not been consumed yet.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// Requests returns a copy of the requests received so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Disconnects returns how many clients went away mid-response.
func (s *Server) Disconnects() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.disconnects
}

// Connections returns how many TCP connections clients opened; with
// keep-alive working, sequential calls share one.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns
}

// WaitDisconnect waits until at least one client disconnect was observed.
func (s *Server) WaitDisconnect(ctx context.Context) error {
	return s.WaitDisconnects(ctx, 1)
}

// WaitDisconnects waits until at least n client disconnects were observed,
// or ctx ends.
func (s *Server) WaitDisconnects(ctx context.Context, n int) error {
	return s.waitFor(ctx, func() bool { return s.disconnects >= n }, "disconnects", n)
}

// WaitRequests waits until at least n requests were received, or ctx ends.
func (s *Server) WaitRequests(ctx context.Context, n int) error {
	return s.waitFor(ctx, func() bool { return len(s.requests) >= n }, "requests", n)
}

func (s *Server) waitFor(ctx context.Context, cond func() bool, what string, n int) error {
	for {
		s.mu.Lock()
		ok, ch := cond(), s.changed
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("wait for %d %s: %w", n, what, ctx.Err())
		}
	}
}

// notifyLocked wakes waiters; s.mu must be held.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// errGone reports that the response cannot go on: the client disconnected
// or the server is closing.
var errGone = errors.New("response abandoned")

// gone records why a response stopped. A disconnect counts only when the
// server is not closing.
func (s *Server) gone() error {
	select {
	case <-s.quit:
	default:
		s.mu.Lock()
		s.disconnects++
		s.notifyLocked()
		s.mu.Unlock()
	}
	return errGone
}

// pause waits d (forever when d < 0) unless the client goes away first.
func (s *Server) pause(ctx context.Context, d time.Duration) error {
	if d == 0 {
		return nil
	}
	var timeout <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-timeout:
		return nil
	case <-s.quit:
		return errGone
	case <-ctx.Done():
		return s.gone()
	}
}

func (s *Server) handleModels(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"scripted","object":"model","owned_by":"scripted"}]}`)
}

// begin registers a handler with Close; false when the server is closing.
func (s *Server) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.handlers.Add(1)
	return true
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	if !s.begin() {
		http.Error(w, "server closing", http.StatusServiceUnavailable)
		return
	}
	defer s.handlers.Done()

	body, err := io.ReadAll(r.Body)
	rec := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body, Received: time.Now()}
	if err == nil {
		err = json.Unmarshal(body, &rec.Chat)
	}
	if err != nil {
		rec.Chat, rec.DecodeErr = ChatRequest{}, err
	}

	s.mu.Lock()
	s.requests = append(s.requests, rec)
	s.notifyLocked()
	var step Step
	if rec.DecodeErr != nil {
		step = Error(http.StatusBadRequest, "could not decode request body: "+rec.DecodeErr.Error())
	} else if len(s.queue) > 0 {
		step, s.queue = s.queue[0], s.queue[1:]
	} else {
		responder := s.responder
		s.mu.Unlock()
		step = responder(rec.Chat) // outside the lock: it may call back into s
		s.mu.Lock()
	}
	s.seq++
	id := "chatcmpl-scripted-" + strconv.Itoa(s.seq)
	s.mu.Unlock()

	ctx := r.Context()
	if err := s.pause(ctx, step.FirstByteDelay); err != nil {
		return
	}
	if step.Abort && step.AbortAfterChunks == 0 {
		panic(http.ErrAbortHandler)
	}
	if step.Hang && (!step.hasContent() || !rec.Chat.Stream) {
		_ = s.pause(ctx, -1)
		return
	}
	for k, vs := range step.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if step.isError() {
		writeError(w, step)
		return
	}
	model := step.Model
	if model == "" {
		model = rec.Chat.Model
	}
	if model == "" {
		model = "scripted-model"
	}
	if rec.Chat.Stream {
		s.stream(ctx, w, rec.Chat, step, id, model)
		return
	}
	writeCompletion(w, rec.Chat, step, id, model)
}

func writeError(w http.ResponseWriter, step Step) {
	msg := step.ErrorMessage
	if msg == "" {
		msg = http.StatusText(step.Status)
	}
	typ := "invalid_request_error"
	switch {
	case step.Status == http.StatusTooManyRequests:
		typ = "rate_limit_exceeded"
	case step.Status >= 500:
		typ = "server_error"
	}
	body, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(step.Status)
	_, _ = w.Write(body)
}

// Wire shapes of the responses.
type (
	completionJSON struct {
		ID      string             `json:"id"`
		Object  string             `json:"object"`
		Created int64              `json:"created"`
		Model   string             `json:"model"`
		Choices []completionChoice `json:"choices"`
		Usage   usageJSON          `json:"usage"`
	}
	completionChoice struct {
		Index        int         `json:"index"`
		Message      messageJSON `json:"message"`
		FinishReason string      `json:"finish_reason"`
	}
	messageJSON struct {
		Role      string         `json:"role"`
		Content   *string        `json:"content"`
		ToolCalls []WireToolCall `json:"tool_calls,omitempty"`
	}
	usageJSON struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	}
	chunkJSON struct {
		ID      string        `json:"id"`
		Object  string        `json:"object"`
		Created int64         `json:"created"`
		Model   string        `json:"model"`
		Choices []chunkChoice `json:"choices"`
		Usage   any           `json:"usage,omitempty"`
	}
	chunkChoice struct {
		Index        int       `json:"index"`
		Delta        deltaJSON `json:"delta"`
		FinishReason *string   `json:"finish_reason"`
	}
	deltaJSON struct {
		Role      string          `json:"role,omitempty"`
		Content   *string         `json:"content,omitempty"`
		ToolCalls []toolDeltaJSON `json:"tool_calls,omitempty"`
	}
	toolDeltaJSON struct {
		Index    int         `json:"index"`
		ID       string      `json:"id,omitempty"`
		Type     string      `json:"type,omitempty"`
		Function fnDeltaJSON `json:"function"`
	}
	fnDeltaJSON struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	}
)

func toUsageJSON(u Usage) usageJSON {
	return usageJSON{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.PromptTokens + u.CompletionTokens}
}

func callID(c ToolCall, i int) string {
	if c.ID != "" {
		return c.ID
	}
	return "call_" + strconv.Itoa(i+1)
}

func writeCompletion(w http.ResponseWriter, req ChatRequest, step Step, id, model string) {
	msg := messageJSON{Role: "assistant"}
	if step.Text != "" || len(step.ToolCalls) == 0 || step.SendTimestamps {
		text := step.Text
		if step.SendTimestamps {
			text = SendMarker(time.Now())
		}
		msg.Content = &text
	}
	for i, c := range step.ToolCalls {
		msg.ToolCalls = append(msg.ToolCalls, WireToolCall{ID: callID(c, i), Type: "function", Function: WireFunction{Name: c.Name, Arguments: c.Arguments}})
	}
	body, _ := json.Marshal(completionJSON{
		ID: id, Object: "chat.completion", Created: time.Now().Unix(), Model: model,
		Choices: []completionChoice{{Message: msg, FinishReason: step.finishReason()}},
		Usage:   toUsageJSON(step.usage(req)),
	})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// sseWriter writes "data:" events and flushes each one, turning write
// failures into disconnects.
type sseWriter struct {
	s   *Server
	w   http.ResponseWriter
	rc  *http.ResponseController
	buf bytes.Buffer
}

func (e *sseWriter) event(v any) error {
	e.buf.Reset()
	e.buf.WriteString("data: ")
	if raw, ok := v.(string); ok {
		e.buf.WriteString(raw)
	} else if err := json.NewEncoder(&e.buf).Encode(v); err != nil { // Encode appends '\n'
		return fmt.Errorf("encode chunk: %w", err)
	}
	if e.buf.Bytes()[e.buf.Len()-1] != '\n' {
		e.buf.WriteByte('\n')
	}
	e.buf.WriteByte('\n')
	if _, err := e.w.Write(e.buf.Bytes()); err != nil {
		return e.s.gone()
	}
	if err := e.rc.Flush(); err != nil {
		return e.s.gone()
	}
	return nil
}

// stream writes step as server-sent events: a role delta, the content
// deltas, the tool-call deltas, a finish delta, the usage chunk when asked
// for, and [DONE].
func (s *Server) stream(ctx context.Context, w http.ResponseWriter, req ChatRequest, step Step, id, model string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	out := &sseWriter{s: s, w: w, rc: http.NewResponseController(w)}
	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	created := time.Now().Unix()
	chunk := func(d deltaJSON, finish *string) chunkJSON {
		c := chunkJSON{ID: id, Object: "chat.completion.chunk", Created: created, Model: model,
			Choices: []chunkChoice{{Delta: d, FinishReason: finish}}}
		if includeUsage {
			c.Usage = json.RawMessage("null")
		}
		return c
	}
	empty := ""
	if out.event(chunk(deltaJSON{Role: "assistant", Content: &empty}, nil)) != nil {
		return
	}

	var deltas []deltaJSON
	for _, piece := range split(step.Text, step.Chunks) {
		deltas = append(deltas, deltaJSON{Content: &piece})
	}
	for i, c := range step.ToolCalls {
		pieces := split(c.Arguments, step.ArgChunks)
		if len(pieces) == 0 {
			pieces = []string{""}
		}
		for j, piece := range pieces {
			td := toolDeltaJSON{Index: i, Function: fnDeltaJSON{Arguments: piece}}
			if j == 0 {
				td.ID, td.Type, td.Function.Name = callID(c, i), "function", c.Name
			}
			deltas = append(deltas, deltaJSON{ToolCalls: []toolDeltaJSON{td}})
		}
	}
	for i, d := range deltas {
		if step.Abort && i == step.AbortAfterChunks {
			panic(http.ErrAbortHandler)
		}
		if i > 0 && s.pause(ctx, step.ChunkDelay) != nil {
			return
		}
		if step.SendTimestamps && d.Content != nil {
			marker := SendMarker(time.Now())
			d.Content = &marker
		}
		if out.event(chunk(d, nil)) != nil {
			return
		}
	}
	if step.Abort {
		panic(http.ErrAbortHandler)
	}
	if step.Hang {
		_ = s.pause(ctx, -1)
		return
	}
	finish := step.finishReason()
	var last deltaJSON
	if step.SendTimestamps {
		marker := SendMarker(time.Now())
		last.Content = &marker
	}
	if out.event(chunk(last, &finish)) != nil {
		return
	}
	if includeUsage {
		u := toUsageJSON(step.usage(req))
		if out.event(chunkJSON{ID: id, Object: "chat.completion.chunk", Created: created, Model: model, Choices: []chunkChoice{}, Usage: u}) != nil {
			return
		}
	}
	_ = out.event("[DONE]")
}
