package llm_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"agentserver/internal/llm"
)

func offlineRun(t *testing.T, req llm.Request) (llm.Response, []llm.Message) {
	t.Helper()
	var c collector
	resp, err := llm.Offline{}.Generate(t.Context(), req, c.add)
	if err != nil {
		t.Fatal(err)
	}
	return resp, c.all()
}

// withoutIDs drops the per-call message id.
func withoutIDs(msgs ...llm.Message) []llm.Message {
	out := make([]llm.Message, len(msgs))
	for i, m := range msgs {
		c := llm.Message{}
		for k, v := range m {
			if k != "id" {
				c[k] = v
			}
		}
		out[i] = c
	}
	return out
}

func TestOfflineDeterministic(t *testing.T) {
	req := llm.Request{
		Messages: []llm.Message{{"type": "system", "content": "be nice"}, human("What is   the\nweather?")},
		Tools:    []llm.ToolSpec{{Name: "weather"}},
	}
	r1, c1 := offlineRun(t, req)
	r2, c2 := offlineRun(t, req)

	want := "[offline] No model is configured (set OPENAI_API_KEY or OPENAI_BASE_URL). Last message: What is the weather?"
	if r1.Message["content"] != want {
		t.Fatalf("content %q", r1.Message["content"])
	}
	if !reflect.DeepEqual(withoutIDs(r1.Message), withoutIDs(r2.Message)) || !reflect.DeepEqual(withoutIDs(c1...), withoutIDs(c2...)) {
		t.Fatal("two calls with the same request differ")
	}
	if r1.Usage != r2.Usage || r1.Usage.InputTokens != 6 || r1.Usage.OutputTokens != len(strings.Fields(want)) {
		t.Fatalf("usage %+v", r1.Usage)
	}
	if len(c1) < 2 || len(c1) > 4 {
		t.Fatalf("%d chunks", len(c1))
	}
	var text strings.Builder
	for _, c := range c1 {
		if c["type"] != "AIMessageChunk" || c["id"] != r1.Message["id"] {
			t.Fatalf("chunk %v", c)
		}
		text.WriteString(c["content"].(string))
	}
	if text.String() != want {
		t.Fatalf("chunks spell %q", text.String())
	}
	if _, ok := c1[len(c1)-1]["usage_metadata"]; !ok {
		t.Fatal("last chunk lacks usage_metadata")
	}
	if calls := r1.Message["tool_calls"].([]any); len(calls) != 0 {
		t.Fatalf("offline called tools: %v", calls)
	}
	if r1.Model != llm.OfflineModelName || r1.Message["response_metadata"].(map[string]any)["finish_reason"] != "stop" {
		t.Fatalf("response %+v", r1)
	}
}

func TestOfflineEdgeCases(t *testing.T) {
	resp, _ := offlineRun(t, llm.Request{})
	if !strings.HasSuffix(resp.Message["content"].(string), "Last message: (none)") {
		t.Fatalf("content %q", resp.Message["content"])
	}
	long := strings.Repeat("word ", 100)
	resp, _ = offlineRun(t, llm.Request{Messages: []llm.Message{human(long)}})
	if !strings.HasSuffix(resp.Message["content"].(string), "…") {
		t.Fatalf("long message not truncated: %q", resp.Message["content"])
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := (llm.Offline{}).Generate(ctx, llm.Request{}, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

func TestNewChoosesModel(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))

	if _, ok := llm.New(llm.Config{}, log).(llm.Offline); !ok {
		t.Fatal("empty config: want Offline")
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 || !strings.Contains(logs.String(), "no model is configured") {
		t.Fatalf("logs: %s", logs.String())
	}
	logs.Reset()
	if _, ok := llm.New(llm.Config{APIKey: "k"}, log).(*llm.OpenAI); !ok {
		t.Fatal("api key: want OpenAI")
	}
	if _, ok := llm.New(llm.Config{BaseURL: "http://127.0.0.1:1/v1"}, log).(*llm.OpenAI); !ok {
		t.Fatal("base url: want OpenAI")
	}
	if logs.Len() != 0 {
		t.Fatalf("unexpected logs: %s", logs.String())
	}
}

func TestFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	tests := []struct {
		name      string
		env       map[string]string
		overrides llm.Config
		key, base string
	}{
		{"nothing", nil, llm.Config{}, "", ""},
		{"env only", map[string]string{"OPENAI_API_KEY": "sk-env", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}, llm.Config{}, "sk-env", "http://127.0.0.1:9/v1"},
		{"overrides win", map[string]string{"OPENAI_API_KEY": "sk-env", "OPENAI_BASE_URL": "http://env/v1"}, llm.Config{APIKey: "sk-flag", BaseURL: "http://flag/v1"}, "sk-flag", "http://flag/v1"},
		{"mixed", map[string]string{"OPENAI_API_KEY": "sk-env", "OPENAI_BASE_URL": "http://env/v1"}, llm.Config{BaseURL: "http://flag/v1"}, "sk-env", "http://flag/v1"},
		{"blank is unset", map[string]string{"OPENAI_API_KEY": "  ", "OPENAI_BASE_URL": " http://env/v1 "}, llm.Config{}, "", "http://env/v1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.overrides.Model = "m"
			got := llm.FromEnv(env(tt.env), tt.overrides)
			if got.APIKey != tt.key || got.BaseURL != tt.base || got.Model != "m" {
				t.Fatalf("got %+v", got)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []llm.Config{{}, {BaseURL: "http://127.0.0.1:8080/v1"}, {BaseURL: "https://api.openai.com/v1"}} {
		if err := c.Validate(); err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
	}
	for _, c := range []llm.Config{{BaseURL: "127.0.0.1:8080"}, {BaseURL: "ftp://x/v1"}, {RetryBaseDelay: -1}} {
		if err := c.Validate(); err == nil {
			t.Fatalf("%+v: want error", c)
		}
	}
}
