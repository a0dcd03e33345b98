package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"agentserver/internal/llm"
	"agentserver/internal/llm/scripted"
)

// fixture is a scripted server and a model pointed at it with fast retries.
type fixture struct {
	srv   *scripted.Server
	model *llm.OpenAI
}

func newFixture(t testing.TB, tweak ...func(*llm.Config)) fixture {
	t.Helper()
	srv := scripted.New()
	t.Cleanup(srv.Close)
	cfg := llm.Config{
		APIKey:         "test-key",
		BaseURL:        srv.URL(),
		Model:          "test-model",
		Timeout:        10 * time.Second,
		RetryBaseDelay: time.Millisecond,
		RetryMaxDelay:  5 * time.Millisecond,
	}
	for _, f := range tweak {
		f(&cfg)
	}
	return fixture{srv: srv, model: llm.NewOpenAI(cfg, nil)}
}

// collector gathers the streamed chunks.
type collector struct {
	mu     sync.Mutex
	chunks []llm.Message
}

func (c *collector) add(m llm.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.chunks = append(c.chunks, m)
}

func (c *collector) all() []llm.Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]llm.Message(nil), c.chunks...)
}

func human(text string) llm.Message { return llm.Message{"type": "human", "content": text} }

func (f fixture) generate(t *testing.T, req llm.Request) (llm.Response, []llm.Message) {
	t.Helper()
	var c collector
	resp, err := f.model.Generate(t.Context(), req, c.add)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	return resp, c.all()
}

func hi() llm.Request { return llm.Request{Messages: []llm.Message{human("hi")}} }

func TestStreamingText(t *testing.T) {
	f := newFixture(t)
	f.srv.Script(scripted.Text("Hello, streaming world").Split(4).WithUsage(12, 5))
	resp, chunks := f.generate(t, hi())

	msg := resp.Message
	id, _ := msg["id"].(string)
	if !strings.HasPrefix(id, "run-") || len(id) != len("run-")+36 {
		t.Fatalf("id %q", id)
	}
	if len(chunks) != 5 { // 4 content deltas + the usage chunk
		t.Fatalf("got %d chunks: %v", len(chunks), chunks)
	}
	var text strings.Builder
	for i, c := range chunks {
		if c["type"] != "AIMessageChunk" || c["id"] != id {
			t.Fatalf("chunk %d: %v", i, c)
		}
		for _, k := range []string{"content", "tool_call_chunks", "additional_kwargs", "response_metadata", "tool_calls", "invalid_tool_calls"} {
			if _, ok := c[k]; !ok {
				t.Fatalf("chunk %d lacks %s", i, k)
			}
		}
		text.WriteString(c["content"].(string))
	}
	if text.String() != "Hello, streaming world" || msg["content"] != text.String() {
		t.Fatalf("content: chunks %q, message %q", text.String(), msg["content"])
	}
	wantUsage := map[string]any{"input_tokens": 12.0, "output_tokens": 5.0, "total_tokens": 17.0}
	if last := chunks[4]; last["content"] != "" || !reflect.DeepEqual(last["usage_metadata"], wantUsage) {
		t.Fatalf("usage chunk %v", last)
	}
	if _, ok := chunks[0]["usage_metadata"]; ok {
		t.Fatal("usage on a content chunk")
	}
	if msg["type"] != "ai" || !reflect.DeepEqual(msg["usage_metadata"], wantUsage) {
		t.Fatalf("message %v", msg)
	}
	if resp.Usage != (llm.Usage{InputTokens: 12, OutputTokens: 5, TotalTokens: 17}) || resp.Model != "test-model" {
		t.Fatalf("response %+v", resp)
	}
	wantMeta := map[string]any{"model_name": "test-model", "finish_reason": "stop"}
	if !reflect.DeepEqual(msg["response_metadata"], wantMeta) {
		t.Fatalf("response_metadata %v", msg["response_metadata"])
	}
	if calls := msg["tool_calls"].([]any); len(calls) != 0 {
		t.Fatalf("tool_calls %v", calls)
	}
	// The message survives a JSON round trip unchanged: it is already in
	// generic JSON form.
	raw, err := json.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, map[string]any(msg)) {
		t.Fatalf("round trip changed the message:\n%v\n%v", back, msg)
	}
}

func TestNilChunkFunc(t *testing.T) {
	f := newFixture(t)
	f.srv.Script(scripted.Text("quiet").Split(2))
	resp, err := f.model.Generate(t.Context(), hi(), nil)
	if err != nil || resp.Message["content"] != "quiet" {
		t.Fatalf("%v %v", resp.Message, err)
	}
}

func TestSingleToolCall(t *testing.T) {
	f := newFixture(t)
	f.srv.Script(scripted.ToolCalls(scripted.Call("search", map[string]any{"q": "go", "n": 3})))
	resp, chunks := f.generate(t, hi())
	want := []any{map[string]any{"name": "search", "args": map[string]any{"q": "go", "n": 3.0}, "id": "call_1", "type": "tool_call"}}
	if !reflect.DeepEqual(resp.Message["tool_calls"], want) {
		t.Fatalf("tool_calls %v", resp.Message["tool_calls"])
	}
	if resp.Message["content"] != "" || resp.Message["response_metadata"].(map[string]any)["finish_reason"] != "tool_calls" {
		t.Fatalf("message %v", resp.Message)
	}
	first := chunks[0]["tool_call_chunks"].([]any)[0].(map[string]any)
	wantChunk := map[string]any{"name": "search", "args": `{"n":3,"q":"go"}`, "id": "call_1", "index": 0.0, "type": "tool_call_chunk"}
	if !reflect.DeepEqual(first, wantChunk) {
		t.Fatalf("tool_call_chunk %v", first)
	}
}

func TestParallelToolCallsSplitArgs(t *testing.T) {
	f := newFixture(t)
	step := scripted.ToolCalls(
		scripted.Call("search", map[string]any{"query": "weather in Paris"}),
		scripted.ToolCall{ID: "call_custom", Name: "read_file", Arguments: `{"path":"/tmp/notes.txt","lines":[1,2]}`},
	)
	step.Text = "Let me look."
	f.srv.Script(step.SplitArgs(3).Split(2))
	resp, chunks := f.generate(t, hi())

	args := map[float64]string{}
	names := map[float64]any{}
	for _, c := range chunks {
		for _, tc := range c["tool_call_chunks"].([]any) {
			m := tc.(map[string]any)
			idx := m["index"].(float64)
			args[idx] += m["args"].(string)
			if m["name"] != nil {
				if names[idx] != nil {
					t.Fatalf("name repeated for index %v", idx)
				}
				names[idx] = m["name"]
			}
		}
	}
	if args[0] != `{"query":"weather in Paris"}` || args[1] != `{"path":"/tmp/notes.txt","lines":[1,2]}` {
		t.Fatalf("streamed args %v", args)
	}
	if names[0] != "search" || names[1] != "read_file" {
		t.Fatalf("streamed names %v", names)
	}
	if len(chunks) != 2+3+3+1 {
		t.Fatalf("%d chunks", len(chunks))
	}
	calls := resp.Message["tool_calls"].([]any)
	if len(calls) != 2 {
		t.Fatalf("tool_calls %v", calls)
	}
	second := calls[1].(map[string]any)
	if second["id"] != "call_custom" || second["name"] != "read_file" ||
		!reflect.DeepEqual(second["args"], map[string]any{"path": "/tmp/notes.txt", "lines": []any{1.0, 2.0}}) {
		t.Fatalf("second call %v", second)
	}
	if resp.Message["content"] != "Let me look." {
		t.Fatalf("content %q", resp.Message["content"])
	}
	// Parallel calls stay allowed: the request does not disable them.
	if r := f.srv.Requests()[0].Chat; r.ParallelToolCalls != nil {
		t.Fatalf("parallel_tool_calls sent: %v", *r.ParallelToolCalls)
	}
}

func TestInvalidToolArgs(t *testing.T) {
	f := newFixture(t)
	f.srv.Script(scripted.ToolCalls(
		scripted.RawCall("search", `{"q": "unterminated`),
		scripted.Call("ok", map[string]any{}),
		scripted.RawCall("list", `[1,2]`),
		scripted.RawCall("noargs", ``),
	).SplitArgs(2))
	resp, _ := f.generate(t, hi())
	calls := resp.Message["tool_calls"].([]any)
	invalid := resp.Message["invalid_tool_calls"].([]any)
	if len(calls) != 2 || len(invalid) != 2 {
		t.Fatalf("calls %v invalid %v", calls, invalid)
	}
	if c := calls[1].(map[string]any); c["name"] != "noargs" || !reflect.DeepEqual(c["args"], map[string]any{}) {
		t.Fatalf("empty args: %v", c)
	}
	bad := invalid[0].(map[string]any)
	if bad["name"] != "search" || bad["args"] != `{"q": "unterminated` || bad["id"] != "call_1" ||
		bad["type"] != "invalid_tool_call" || bad["error"] == "" {
		t.Fatalf("invalid call %v", bad)
	}
}

func TestMessageConversionRoundTrip(t *testing.T) {
	f := newFixture(t)
	f.srv.Script(scripted.ToolCalls(scripted.Call("add", map[string]any{"a": 1, "b": 2})))
	tools := []llm.ToolSpec{
		{Name: "add", Description: "Add two numbers.", Parameters: map[string]any{
			"type": "object", "properties": map[string]any{"a": map[string]any{"type": "number"}, "b": map[string]any{"type": "number"}},
		}},
		{Name: "now", Description: "Current time."},
	}
	temp := 0.0
	sys := llm.Message{"type": "system", "content": "You add numbers."}
	first := llm.Request{Messages: []llm.Message{sys, human("1+2?")}, Tools: tools, Temperature: &temp, MaxTokens: 64}
	resp, _ := f.generate(t, first)

	// Feed the AI message and a tool answer back, as the agent loop does.
	toolMsg := llm.Message{"type": "tool", "content": "3", "tool_call_id": "call_1", "name": "add"}
	f.srv.Script(scripted.Text("It is 3."))
	second := llm.Request{Messages: []llm.Message{sys, human("1+2?"), resp.Message, toolMsg}, Tools: tools}
	f.generate(t, second)

	reqs := f.srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	r0 := reqs[0]
	if r0.Header.Get("Authorization") != "Bearer test-key" || r0.Path != "/v1/chat/completions" {
		t.Fatalf("headers %v path %s", r0.Header, r0.Path)
	}
	c0 := r0.Chat
	if c0.Model != "test-model" || !c0.Stream || c0.StreamOptions == nil || !c0.StreamOptions.IncludeUsage {
		t.Fatalf("request %+v", c0)
	}
	if c0.Temperature == nil || *c0.Temperature > 1e-6 || c0.MaxTokens == nil || *c0.MaxTokens != 64 {
		t.Fatalf("temperature %v max_tokens %v", c0.Temperature, c0.MaxTokens)
	}
	if len(c0.Tools) != 2 || c0.Tools[0].Type != "function" || c0.Tools[0].Function.Name != "add" ||
		c0.Tools[0].Function.Description != "Add two numbers." || c0.Tools[0].Function.Parameters["type"] != "object" {
		t.Fatalf("tools %+v", c0.Tools)
	}
	if p := c0.Tools[1].Function.Parameters; p["type"] != "object" {
		t.Fatalf("default parameters %v", p)
	}

	c1 := reqs[1].Chat
	if c1.Temperature != nil || c1.MaxTokens != nil {
		t.Fatalf("unset options sent: %v %v", c1.Temperature, c1.MaxTokens)
	}
	roles := []string{}
	for _, m := range c1.Messages {
		roles = append(roles, m.Role)
	}
	if strings.Join(roles, ",") != "system,user,assistant,tool" {
		t.Fatalf("roles %v", roles)
	}
	if c1.Messages[0].Content != "You add numbers." || c1.Messages[1].Content != "1+2?" {
		t.Fatalf("messages %+v", c1.Messages[:2])
	}
	ai := c1.Messages[2]
	if len(ai.ToolCalls) != 1 || ai.ToolCalls[0].ID != "call_1" || ai.ToolCalls[0].Type != "function" || ai.ToolCalls[0].Function.Name != "add" {
		t.Fatalf("assistant %+v", ai)
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(ai.ToolCalls[0].Function.Arguments), &args); err != nil || !reflect.DeepEqual(args, map[string]any{"a": 1.0, "b": 2.0}) {
		t.Fatalf("arguments %q: %v", ai.ToolCalls[0].Function.Arguments, err)
	}
	if tm := c1.Messages[3]; tm.ToolCallID != "call_1" || tm.Name != "add" || tm.Content != "3" {
		t.Fatalf("tool %+v", tm)
	}
}

func TestContentBlocksAndRoles(t *testing.T) {
	f := newFixture(t)
	f.srv.Script(scripted.Text("ok"))
	msgs := []llm.Message{
		{"role": "system", "content": []any{map[string]any{"type": "text", "text": "Be "}, map[string]any{"type": "text", "text": "brief."}}},
		{"type": "human", "content": []any{
			map[string]any{"type": "text", "text": "What is this?"},
			map[string]any{"type": "image_url", "image_url": map[string]any{"url": "https://example.invalid/cat.png", "detail": "low"}},
			map[string]any{"type": "image", "source_type": "base64", "data": "AAAA", "mime_type": "image/jpeg"},
			"and this",
		}},
		{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "A cat."}}, "invalid_tool_calls": []any{
			map[string]any{"name": "look", "args": "{bad", "id": "call_x", "error": "bad json", "type": "invalid_tool_call"},
		}},
		{"type": "tool", "tool_call_id": "call_x", "content": []any{map[string]any{"type": "text", "text": "error: bad json"}}},
		{"role": "user", "content": "thanks"},
	}
	f.generate(t, llm.Request{Messages: msgs})
	got := f.srv.Requests()[0].Chat.Messages
	if got[0].Role != "system" || got[0].Content != "Be brief." {
		t.Fatalf("system %+v", got[0])
	}
	parts, ok := got[1].Content.([]any)
	if !ok || len(parts) != 4 {
		t.Fatalf("user parts %#v", got[1].Content)
	}
	wantParts := []any{
		map[string]any{"type": "text", "text": "What is this?"},
		map[string]any{"type": "image_url", "image_url": map[string]any{"url": "https://example.invalid/cat.png", "detail": "low"}},
		map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/jpeg;base64,AAAA"}},
		map[string]any{"type": "text", "text": "and this"},
	}
	if !reflect.DeepEqual(parts, wantParts) {
		t.Fatalf("parts %#v", parts)
	}
	if a := got[2]; a.Role != "assistant" || a.Content != "A cat." || len(a.ToolCalls) != 1 || a.ToolCalls[0].Function.Arguments != "{bad" {
		t.Fatalf("assistant %+v", a)
	}
	if tm := got[3]; tm.Role != "tool" || tm.Content != "error: bad json" || tm.ToolCallID != "call_x" {
		t.Fatalf("tool %+v", tm)
	}
	if got[4].Role != "user" || got[4].Content != "thanks" {
		t.Fatalf("user %+v", got[4])
	}
}

func TestInvalidMessageMakesNoRequest(t *testing.T) {
	f := newFixture(t)
	for _, m := range []llm.Message{
		{"type": "alien", "content": "x"},
		{"type": "tool", "content": "no id"},
	} {
		_, err := f.model.Generate(t.Context(), llm.Request{Messages: []llm.Message{m}}, nil)
		if !errors.Is(err, llm.ErrInvalidMessage) {
			t.Fatalf("%v: err = %v", m, err)
		}
	}
	if n := len(f.srv.Requests()); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}

func TestReasoningModelGetsMaxCompletionTokens(t *testing.T) {
	f := newFixture(t)
	f.srv.Script(scripted.Text("ok"))
	f.generate(t, llm.Request{Model: "o3-mini", Messages: []llm.Message{human("x")}, MaxTokens: 100})
	c := f.srv.Requests()[0].Chat
	if c.Model != "o3-mini" || c.MaxTokens != nil || c.MaxCompletionTokens == nil || *c.MaxCompletionTokens != 100 {
		t.Fatalf("request %+v", c)
	}
}

func TestRetryHonoursRetryAfter(t *testing.T) {
	f := newFixture(t)
	f.srv.Script(
		scripted.Error(http.StatusTooManyRequests, "slow down").WithRetryAfter("0.2"),
		scripted.Text("ok"),
	)
	resp, _ := f.generate(t, hi())
	if resp.Message["content"] != "ok" {
		t.Fatalf("content %v", resp.Message["content"])
	}
	reqs := f.srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	if gap := reqs[1].Received.Sub(reqs[0].Received); gap < 200*time.Millisecond {
		t.Fatalf("retried after %v, want ≥ 200ms (Retry-After)", gap)
	}
}

func TestRetryAfterIsCapped(t *testing.T) {
	f := newFixture(t, func(c *llm.Config) { c.MaxRetryAfter = 10 * time.Millisecond })
	f.srv.Script(scripted.Error(http.StatusTooManyRequests, "").WithRetryAfter("3600"), scripted.Text("ok"))
	start := time.Now()
	f.generate(t, hi())
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %v: Retry-After was not capped", d)
	}
}

func TestRetryServerErrorsThenSuccess(t *testing.T) {
	f := newFixture(t)
	f.srv.Script(scripted.Error(500, "boom"), scripted.Error(502, ""), scripted.Text("ok").Split(2))
	var c collector
	resp, err := f.model.Generate(t.Context(), hi(), c.add)
	if err != nil || resp.Message["content"] != "ok" {
		t.Fatalf("%v %v", resp.Message, err)
	}
	if n := len(f.srv.Requests()); n != 3 {
		t.Fatalf("%d requests", n)
	}
	// Only the successful attempt streamed.
	if n := len(c.all()); n != 3 {
		t.Fatalf("%d chunks", n)
	}
}

func TestRetriesExhausted(t *testing.T) {
	f := newFixture(t, func(c *llm.Config) { c.MaxRetries = 2 })
	f.srv.Script(scripted.Error(503, "down"), scripted.Error(503, "down"), scripted.Error(503, "still down"), scripted.Text("never"))
	_, err := f.model.Generate(t.Context(), hi(), nil)
	var se *llm.StatusError
	if !errors.As(err, &se) || se.StatusCode != 503 || se.Message != "still down" {
		t.Fatalf("err = %v", err)
	}
	if n := len(f.srv.Requests()); n != 3 {
		t.Fatalf("%d requests, want 3", n)
	}
}

func TestNoRetryOnClientErrors(t *testing.T) {
	for _, status := range []int{400, 401, 404, 422} {
		f := newFixture(t)
		f.srv.Script(scripted.Error(status, "nope"), scripted.Text("never"))
		_, err := f.model.Generate(t.Context(), hi(), nil)
		var se *llm.StatusError
		if !errors.As(err, &se) || se.StatusCode != status || se.Retryable() {
			t.Fatalf("%d: err = %v", status, err)
		}
		if n, p := len(f.srv.Requests()), f.srv.Pending(); n != 1 || p != 1 {
			t.Fatalf("%d: %d requests, %d pending", status, n, p)
		}
	}
}

func TestRetryDisabled(t *testing.T) {
	f := newFixture(t, func(c *llm.Config) { c.MaxRetries = -1 })
	f.srv.Script(scripted.Error(500, ""), scripted.Text("never"))
	if _, err := f.model.Generate(t.Context(), hi(), nil); err == nil {
		t.Fatal("want error")
	}
	if n := len(f.srv.Requests()); n != 1 {
		t.Fatalf("%d requests", n)
	}
}

func TestRetryConnectionErrorBeforeChunks(t *testing.T) {
	f := newFixture(t)
	// The first answer drops the connection before any byte.
	f.srv.Script(scripted.Text("lost").AbortAfter(0), scripted.Text("ok"))
	resp, _ := f.generate(t, hi())
	if resp.Message["content"] != "ok" || len(f.srv.Requests()) != 2 {
		t.Fatalf("content %v after %d requests", resp.Message["content"], len(f.srv.Requests()))
	}
}

func TestConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	m := llm.NewOpenAI(llm.Config{BaseURL: "http://" + addr + "/v1", MaxRetries: 2, RetryBaseDelay: time.Millisecond}, nil)
	_, err = m.Generate(t.Context(), hi(), nil)
	if !errors.Is(err, llm.ErrConnection) || !strings.Contains(err.Error(), "attempt 3 of 3") {
		t.Fatalf("err = %v", err)
	}
}

func TestNoRetryAfterChunksDelivered(t *testing.T) {
	f := newFixture(t)
	f.srv.Script(scripted.Text("one two three").Split(3).AbortAfter(1), scripted.Text("duplicate"))
	var c collector
	_, err := f.model.Generate(t.Context(), hi(), c.add)
	if !errors.Is(err, llm.ErrStreamInterrupted) || !errors.Is(err, llm.ErrConnection) {
		t.Fatalf("err = %v", err)
	}
	if n := len(c.all()); n != 1 {
		t.Fatalf("%d chunks delivered", n)
	}
	if n, p := len(f.srv.Requests()), f.srv.Pending(); n != 1 || p != 1 {
		t.Fatalf("%d requests, %d pending: the call was retried", n, p)
	}
}

func TestTimeout(t *testing.T) {
	f := newFixture(t, func(c *llm.Config) { c.Timeout = 100 * time.Millisecond; c.MaxRetries = -1 })
	f.srv.Script(scripted.Hang())
	start := time.Now()
	_, err := f.model.Generate(t.Context(), hi(), nil)
	if !errors.Is(err, llm.ErrTimeout) {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("timed out after %v", d)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := f.srv.WaitDisconnect(ctx); err != nil {
		t.Fatalf("upstream request was not aborted: %v", err)
	}
}

func TestTimeoutMidStreamIsNotRetried(t *testing.T) {
	f := newFixture(t, func(c *llm.Config) { c.Timeout = 200 * time.Millisecond })
	f.srv.Script(scripted.Text("partial").ThenHang(), scripted.Text("duplicate"))
	_, err := f.model.Generate(t.Context(), hi(), func(llm.Message) {})
	if !errors.Is(err, llm.ErrTimeout) || !errors.Is(err, llm.ErrStreamInterrupted) {
		t.Fatalf("err = %v", err)
	}
	if n := len(f.srv.Requests()); n != 1 {
		t.Fatalf("%d requests", n)
	}
}

func TestTimeoutRetried(t *testing.T) {
	f := newFixture(t, func(c *llm.Config) { c.Timeout = 150 * time.Millisecond })
	f.srv.Script(scripted.Hang(), scripted.Text("ok"))
	resp, _ := f.generate(t, hi())
	if resp.Message["content"] != "ok" {
		t.Fatalf("content %v", resp.Message["content"])
	}
}

func TestCancelMidStreamAbortsUpstream(t *testing.T) {
	f := newFixture(t)
	f.srv.Script(scripted.Text("a b c d").Split(4).ThenHang())
	ctx, cancel := context.WithCancelCause(t.Context())
	errStop := errors.New("run cancelled by user")
	got := 0
	done := make(chan error, 1)
	go func() {
		_, err := f.model.Generate(ctx, hi(), func(llm.Message) {
			got++
			if got == 4 {
				cancel(errStop) // everything is streamed; the server now hangs
			}
		})
		done <- err
	}()
	deadline, stop := context.WithTimeout(t.Context(), 5*time.Second)
	defer stop()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || !errors.Is(err, errStop) || errors.Is(err, llm.ErrStreamInterrupted) {
			t.Fatalf("err = %v", err)
		}
	case <-deadline.Done():
		t.Fatal("Generate did not return after cancel")
	}
	if err := f.srv.WaitDisconnect(deadline); err != nil {
		t.Fatalf("upstream request was not aborted: %v", err)
	}
	if n := len(f.srv.Requests()); n != 1 {
		t.Fatalf("%d requests", n)
	}
}

func TestCancelDuringBackoff(t *testing.T) {
	f := newFixture(t)
	f.srv.Script(scripted.Error(429, "").WithRetryAfter("30"), scripted.Text("never"))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := f.model.Generate(ctx, hi(), nil)
		done <- err
	}()
	deadline, stop := context.WithTimeout(t.Context(), 5*time.Second)
	defer stop()
	if err := f.srv.WaitRequests(deadline, 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
	case <-deadline.Done():
		t.Fatal("Generate kept waiting for Retry-After after cancel")
	}
}

func TestConcurrentCalls(t *testing.T) {
	f := newFixture(t)
	f.srv.SetResponder(scripted.Echo)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Go(func() {
			msg := "msg " + strings.Repeat("x", i)
			resp, err := f.model.Generate(t.Context(), llm.Request{Messages: []llm.Message{human(msg)}}, func(llm.Message) {})
			if err == nil && resp.Message["content"] != "echo: "+msg {
				err = errors.New("wrong answer: " + resp.Message["content"].(string))
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestConnectionReuse(t *testing.T) {
	f := newFixture(t)
	for range 5 {
		f.generate(t, hi())
	}
	if n := f.srv.Connections(); n != 1 {
		t.Fatalf("5 sequential calls opened %d connections", n)
	}
}

func TestServerIgnoringStreamIsAnError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`))
	}))
	defer srv.Close()
	m := llm.NewOpenAI(llm.Config{BaseURL: srv.URL + "/v1", MaxRetries: -1}, nil)
	_, err := m.Generate(t.Context(), hi(), nil)
	if !errors.Is(err, llm.ErrConnection) || !strings.Contains(err.Error(), "before its first event") {
		t.Fatalf("err = %v", err)
	}
}

func TestServerHoldingStreamAfterDone(t *testing.T) {
	gone := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("data: {\"id\":\"x\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"))
		w.(http.Flusher).Flush()
		<-r.Context().Done() // keep the response open until the client leaves
		close(gone)
	}))
	defer srv.Close()
	m := llm.NewOpenAI(llm.Config{BaseURL: srv.URL + "/v1", Timeout: -1}, nil)
	resp, err := m.Generate(t.Context(), hi(), nil)
	if err != nil || resp.Message["content"] != "hi" {
		t.Fatalf("%v %v", resp.Message, err)
	}
	deadline := time.NewTimer(5 * time.Second)
	defer deadline.Stop()
	select {
	case <-gone:
	case <-deadline.C:
		t.Fatal("the held-open connection was not closed")
	}
}

func TestErrorEventInStream(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		calls++
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"par\"}}]}\n\n" +
			"data: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\"}}\n\n"))
	}))
	defer srv.Close()
	m := llm.NewOpenAI(llm.Config{BaseURL: srv.URL + "/v1", RetryBaseDelay: time.Millisecond}, nil)
	var c collector
	_, err := m.Generate(t.Context(), hi(), c.add)
	if !errors.Is(err, llm.ErrStreamInterrupted) || !strings.Contains(err.Error(), "overloaded") {
		t.Fatalf("err = %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 1 || len(c.all()) != 1 {
		t.Fatalf("%d calls, %d chunks", calls, len(c.all()))
	}
}
