package scripted_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"agentserver/internal/llm/scripted"
)

func newServer(t *testing.T) *scripted.Server {
	t.Helper()
	s := scripted.New()
	t.Cleanup(s.Close)
	return s
}

func post(t *testing.T, ctx context.Context, url, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// sseData returns the data payloads of an SSE body.
func sseData(t *testing.T, r io.Reader) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestStreamWireFormat(t *testing.T) {
	s := newServer(t)
	s.Script(scripted.Text("abcdef").Split(3).WithUsage(7, 3))
	resp := post(t, t.Context(), s.URL(), `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`)
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	data := sseData(t, resp.Body)
	// role, 3 content deltas, finish, usage, [DONE]
	if len(data) != 7 || data[6] != "[DONE]" {
		t.Fatalf("events: %q", data)
	}
	var text strings.Builder
	for _, d := range data[1:4] {
		var c openai.ChatCompletionStreamResponse
		if err := json.Unmarshal([]byte(d), &c); err != nil {
			t.Fatal(err)
		}
		if c.Object != "chat.completion.chunk" || c.Model != "m" || c.Usage != nil {
			t.Fatalf("chunk %s", d)
		}
		text.WriteString(c.Choices[0].Delta.Content)
	}
	if text.String() != "abcdef" {
		t.Fatalf("text %q", text.String())
	}
	if !strings.Contains(data[4], `"finish_reason":"stop"`) {
		t.Fatalf("finish event %s", data[4])
	}
	var u openai.ChatCompletionStreamResponse
	if err := json.Unmarshal([]byte(data[5]), &u); err != nil {
		t.Fatal(err)
	}
	if len(u.Choices) != 0 || u.Usage == nil || u.Usage.PromptTokens != 7 || u.Usage.CompletionTokens != 3 || u.Usage.TotalTokens != 10 {
		t.Fatalf("usage event %s", data[5])
	}
}

func TestStreamWithoutUsage(t *testing.T) {
	s := newServer(t)
	s.Script(scripted.Text("x"))
	resp := post(t, t.Context(), s.URL(), `{"model":"m","stream":true,"messages":[]}`)
	defer resp.Body.Close()
	data := sseData(t, resp.Body)
	if len(data) != 4 || strings.Contains(strings.Join(data, ""), "usage") {
		t.Fatalf("events: %q", data)
	}
}

func TestNonStreamingWithGoOpenAI(t *testing.T) {
	s := newServer(t)
	s.Script(scripted.ToolCalls(scripted.Call("search", map[string]any{"q": "go"}), scripted.Call("read", map[string]any{"path": "a"})))
	cfg := openai.DefaultConfig("k")
	cfg.BaseURL = s.URL()
	c := openai.NewClientWithConfig(cfg)
	resp, err := c.CreateChatCompletion(t.Context(), openai.ChatCompletionRequest{
		Model:    "m",
		Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "find"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ch := resp.Choices[0]
	if ch.FinishReason != openai.FinishReasonToolCalls || len(ch.Message.ToolCalls) != 2 {
		t.Fatalf("choice %+v", ch)
	}
	if tc := ch.Message.ToolCalls[1]; tc.ID != "call_2" || tc.Function.Name != "read" || tc.Function.Arguments != `{"path":"a"}` {
		t.Fatalf("call %+v", tc)
	}
	if resp.Usage.TotalTokens == 0 {
		t.Fatal("want estimated usage")
	}
	reqs := s.Requests()
	if len(reqs) != 1 || reqs[0].Chat.LastUserText() != "find" || reqs[0].Header.Get("Authorization") != "Bearer k" {
		t.Fatalf("recorded %+v", reqs)
	}
}

func TestErrorStatusAndDefaultResponder(t *testing.T) {
	s := newServer(t)
	s.Script(scripted.Error(http.StatusTooManyRequests, "slow down").WithRetryAfter("2"))
	resp := post(t, t.Context(), s.URL(), `{"model":"m","messages":[]}`)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "2" || !strings.Contains(string(body), "slow down") {
		t.Fatalf("got %d %v %s", resp.StatusCode, resp.Header, body)
	}

	// Queue empty: the default responder echoes.
	resp = post(t, t.Context(), s.URL(), `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"ping"}]}]}`)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"content":"echo: ping"`) {
		t.Fatalf("echo: %s", body)
	}

	s.SetResponder(func(req scripted.ChatRequest) scripted.Step {
		return scripted.Text("tools: " + strings.Join(req.ToolNames(), ","))
	})
	resp = post(t, t.Context(), s.URL(), `{"model":"m","messages":[],"tools":[{"type":"function","function":{"name":"a"}},{"type":"function","function":{"name":"b"}}]}`)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"content":"tools: a,b"`) {
		t.Fatalf("responder: %s", body)
	}

	resp = post(t, t.Context(), s.URL(), `{not json`)
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Fatalf("bad body: %d", resp.StatusCode)
	}
	if reqs := s.Requests(); len(reqs) != 4 || reqs[3].DecodeErr == nil {
		t.Fatalf("recorded %d requests", len(reqs))
	}
}

func TestDisconnectWhileHanging(t *testing.T) {
	s := newServer(t)
	s.Script(scripted.Text("partial").ThenHang())
	ctx, cancel := context.WithCancel(t.Context())
	resp := post(t, ctx, s.URL(), `{"model":"m","stream":true,"messages":[]}`)
	// Read the role and content events, then go away.
	r := bufio.NewReader(resp.Body)
	for seen := 0; seen < 2; {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(line, "data: ") {
			seen++
		}
	}
	cancel()
	resp.Body.Close()

	wctx, wcancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer wcancel()
	if err := s.WaitDisconnect(wctx); err != nil {
		t.Fatal(err)
	}
	if got := s.Disconnects(); got != 1 {
		t.Fatalf("disconnects = %d", got)
	}
}

func TestCloseEndsHangingHandlers(t *testing.T) {
	s := scripted.New()
	s.Script(scripted.Hang())
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, s.URL()+"/chat/completions", strings.NewReader(`{"messages":[]}`))
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := s.WaitRequests(ctx, 1); err != nil {
		t.Fatal(err)
	}
	s.Close() // must return although the handler hangs
	select {
	case <-errc:
	case <-ctx.Done():
		t.Fatal("client still blocked after Close")
	}
	if got := s.Disconnects(); got != 0 {
		t.Fatalf("server close counted as %d disconnects", got)
	}
}

// /v1/embeddings answers the same vector for the same text, of the asked
// length, and texts sharing words are closer than texts that share none.
func TestEmbeddingsAreDeterministic(t *testing.T) {
	s, err := scripted.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	body := `{"model":"m","input":["I love pizza","pizza night","I fix pipes"],"dimensions":32}`
	resp, err := http.Post(s.URL()+"/embeddings", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if len(out.Data) != 3 || len(out.Data[0].Embedding) != 32 {
		t.Fatalf("answer = %+v", out)
	}
	dot := func(a, b []float32) (d float32) {
		for i := range a {
			d += a[i] * b[i]
		}
		return d
	}
	if got, want := out.Data[0].Embedding, scripted.Embed("I love pizza", 32); dot(got, want) < 0.999 {
		t.Fatalf("embedding differs from Embed: %v vs %v", got, want)
	}
	if dot(out.Data[0].Embedding, out.Data[1].Embedding) <= dot(out.Data[0].Embedding, out.Data[2].Embedding) {
		t.Fatal("a shared word does not bring texts closer")
	}
}
