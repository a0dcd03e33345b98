package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"agentserver/internal/llm/scripted"
)

func client(baseURL string) *openai.Client {
	cfg := openai.DefaultConfig("test-key")
	cfg.BaseURL = baseURL
	return openai.NewClientWithConfig(cfg)
}

func tool(name string) openai.Tool {
	return openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{Name: name, Parameters: map[string]any{"type": "object"}}}
}

var offered = []openai.Tool{tool("write_todos"), tool("write_file"), tool("read_file")}

func user(text string) openai.ChatCompletionMessage {
	return openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: text}
}

// streamed sends req streaming and returns the text deltas, the tool calls
// (merged by index) and the usage chunk.
func streamed(t *testing.T, c *openai.Client, req openai.ChatCompletionRequest) ([]string, []openai.ToolCall, *openai.Usage) {
	t.Helper()
	req.Model, req.Stream = "test-model", true
	req.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	st, err := c.CreateChatCompletionStream(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var deltas []string
	var calls []openai.ToolCall
	var usage *openai.Usage
	for {
		resp, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if resp.Usage != nil {
			usage = resp.Usage
		}
		for _, ch := range resp.Choices {
			if ch.Delta.Content != "" {
				deltas = append(deltas, ch.Delta.Content)
			}
			for _, tc := range ch.Delta.ToolCalls {
				i := 0
				if tc.Index != nil {
					i = *tc.Index
				}
				for len(calls) <= i {
					calls = append(calls, openai.ToolCall{})
				}
				if tc.ID != "" {
					calls[i].ID = tc.ID
				}
				calls[i].Function.Name += tc.Function.Name
				calls[i].Function.Arguments += tc.Function.Arguments
			}
		}
	}
	return deltas, calls, usage
}

func newModel(t *testing.T) *openai.Client {
	t.Helper()
	s := scripted.New()
	t.Cleanup(s.Close)
	s.SetResponder(Respond)
	return client(s.URL())
}

func args(t *testing.T, call openai.ToolCall) map[string]any {
	t.Helper()
	var out map[string]any
	if err := json.Unmarshal([]byte(call.Function.Arguments), &out); err != nil {
		t.Fatalf("arguments %q: %v", call.Function.Arguments, err)
	}
	return out
}

func TestPlainTextIsStreamedInFourChunksWithUsage(t *testing.T) {
	c := newModel(t)
	msgs := []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleSystem, Content: "be brief"}, user("hello there world")}
	deltas, calls, usage := streamed(t, c, openai.ChatCompletionRequest{Messages: msgs, Tools: offered})
	if got := strings.Join(deltas, ""); got != "You said: hello there world" || len(deltas) != 4 || len(calls) != 0 {
		t.Fatalf("deltas %q, calls %v", deltas, calls)
	}
	if usage == nil || usage.PromptTokens != 20 || usage.CompletionTokens != 5 || usage.TotalTokens != 25 {
		t.Fatalf("usage = %+v", usage)
	}
}

func TestWriteBecomesAWriteFileCall(t *testing.T) {
	c := newModel(t)
	_, calls, usage := streamed(t, c, openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{user("write /notes/a.txt hello  big\nworld")}, Tools: offered})
	if len(calls) != 1 || calls[0].Function.Name != "write_file" || calls[0].ID != "call_1" {
		t.Fatalf("calls = %+v", calls)
	}
	if got, want := args(t, calls[0]), map[string]any{"file_path": "/notes/a.txt", "content": "hello  big\nworld"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("args = %v, want %v", got, want)
	}
	if usage == nil || usage.PromptTokens != 10 || usage.CompletionTokens != 10 {
		t.Fatalf("usage = %+v", usage)
	}
}

func TestTodoBecomesAWriteTodosCall(t *testing.T) {
	c := newModel(t)
	_, calls, _ := streamed(t, c, openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{user("todo read the docs;  write tests ;")}, Tools: offered})
	if len(calls) != 1 || calls[0].Function.Name != "write_todos" {
		t.Fatalf("calls = %+v", calls)
	}
	want := map[string]any{"todos": []any{
		map[string]any{"content": "read the docs", "status": "pending"},
		map[string]any{"content": "write tests", "status": "pending"},
	}}
	if got := args(t, calls[0]); !reflect.DeepEqual(got, want) {
		t.Fatalf("args = %v, want %v", got, want)
	}
}

func TestToolsAreOnlyCalledWhenOffered(t *testing.T) {
	c := newModel(t)
	for _, text := range []string{"write /a.txt x", "todo a; b"} {
		deltas, calls, _ := streamed(t, c, openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{user(text)}, Tools: []openai.Tool{tool("ls")}})
		if got := strings.Join(deltas, ""); got != "You said: "+text || len(calls) != 0 {
			t.Fatalf("%q: deltas %q calls %v", text, deltas, calls)
		}
	}
}

func TestToolResultIsAcknowledged(t *testing.T) {
	c := newModel(t)
	msgs := []openai.ChatCompletionMessage{
		user("write /a.txt x"),
		{Role: openai.ChatMessageRoleAssistant, ToolCalls: []openai.ToolCall{{ID: "call_1", Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: "write_file", Arguments: `{"file_path":"/a.txt","content":"x"}`}}}},
		{Role: openai.ChatMessageRoleTool, ToolCallID: "call_1", Content: "Updated file /a.txt\nsecond line"},
	}
	// Non-streaming too: the rules do not depend on the dialect.
	resp, err := c.CreateChatCompletion(t.Context(), openai.ChatCompletionRequest{Model: "m", Messages: msgs, Tools: offered})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Choices[0].Message.Content; got != "done: Updated file /a.txt" || len(resp.Choices[0].Message.ToolCalls) != 0 {
		t.Fatalf("answer = %+v", resp.Choices[0].Message)
	}
	if resp.Usage.PromptTokens != 30 || resp.Usage.CompletionTokens != 4 {
		t.Fatalf("usage = %+v", resp.Usage)
	}
}

func TestRunPrintsTheURLAndStopsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, []string{"-addr", "127.0.0.1:0"}, pw, io.Discard)
		pw.Close()
		done <- err
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	url := strings.TrimSpace(line)
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/v1") {
		t.Fatalf("printed %q", line)
	}
	deltas, _, _ := streamed(t, client(url), openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{user("ping")}})
	if got := strings.Join(deltas, ""); got != "You said: ping" {
		t.Fatalf("answer %q", got)
	}
	go io.Copy(io.Discard, pr)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("run did not return after the context ended")
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	if err := run(t.Context(), []string{"extra"}, io.Discard, io.Discard); err == nil {
		t.Fatal("stray argument accepted")
	}
	if err := run(t.Context(), []string{"-addr", "127.0.0.1:99999"}, io.Discard, io.Discard); err == nil {
		t.Fatal("bad address accepted")
	}
}

var supervisorTools = []openai.Tool{tool("start_async_task"), tool("check_async_task"), tool("update_async_task"), tool("cancel_async_task"), tool("list_async_tasks"), tool("task")}

func TestCommandsBecomeSupervisorAndTaskCalls(t *testing.T) {
	c := newModel(t)
	for _, tc := range []struct {
		text string
		name string
		args map[string]any
	}{
		{"start researcher: Compare bbolt and SQLite", "start_async_task", map[string]any{"subagent_type": "researcher", "description": "Compare bbolt and SQLite"}},
		{"Check 0a1b-2c", "check_async_task", map[string]any{"task_id": "0a1b-2c"}},
		{"update 0a1b-2c: Focus on crash safety", "update_async_task", map[string]any{"task_id": "0a1b-2c", "message": "Focus on crash safety"}},
		{"cancel 0a1b-2c", "cancel_async_task", map[string]any{"task_id": "0a1b-2c"}},
		{"list", "list_async_tasks", map[string]any{}},
		{"list running", "list_async_tasks", map[string]any{"status_filter": "running"}},
		{"delegate: Summarise the README of this repository please", "task", map[string]any{"description": "Summarise the README of this", "prompt": "Summarise the README of this repository please", "subagent_type": "general-purpose"}},
		{"delegate analyst: Which files mention bbolt?", "task", map[string]any{"description": "Which files mention bbolt?", "prompt": "Which files mention bbolt?", "subagent_type": "analyst"}},
	} {
		_, calls, _ := streamed(t, c, openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{user(tc.text)}, Tools: supervisorTools})
		if len(calls) != 1 || calls[0].Function.Name != tc.name {
			t.Fatalf("%q: calls %+v, want one %s", tc.text, calls, tc.name)
		}
		if got := args(t, calls[0]); !reflect.DeepEqual(got, tc.args) {
			t.Fatalf("%q: args %v, want %v", tc.text, got, tc.args)
		}
	}
}

func TestSeveralCommandLinesAreParallelCalls(t *testing.T) {
	c := newModel(t)
	_, calls, usage := streamed(t, c, openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{user("start researcher: a\n\nstart coder: b")}, Tools: supervisorTools})
	if len(calls) != 2 || calls[0].ID != "call_1" || calls[1].ID != "call_1_2" || args(t, calls[1])["subagent_type"] != "coder" {
		t.Fatalf("calls = %+v", calls)
	}
	if usage == nil || usage.CompletionTokens != 20 {
		t.Fatalf("usage = %+v", usage)
	}
	// One line that is not a command makes the whole text plain.
	deltas, calls, _ := streamed(t, c, openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{user("start researcher: a\nthanks")}, Tools: supervisorTools})
	if len(calls) != 0 || !strings.HasPrefix(strings.Join(deltas, ""), "You said: ") {
		t.Fatalf("mixed text: deltas %q calls %v", deltas, calls)
	}
	// A command whose tool is not offered is plain text too.
	deltas, calls, _ = streamed(t, c, openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{user("list")}, Tools: offered})
	if len(calls) != 0 || strings.Join(deltas, "") != "You said: list" {
		t.Fatalf("not offered: deltas %q calls %v", deltas, calls)
	}
}

func TestEveryTrailingToolResultIsAcknowledged(t *testing.T) {
	c := newModel(t)
	msgs := []openai.ChatCompletionMessage{
		user("start researcher: a\nstart coder: b"),
		{Role: openai.ChatMessageRoleAssistant, ToolCalls: []openai.ToolCall{
			{ID: "call_1", Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: "start_async_task", Arguments: `{}`}},
			{ID: "call_1_2", Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: "start_async_task", Arguments: `{}`}},
		}},
		{Role: openai.ChatMessageRoleTool, ToolCallID: "call_1", Content: "Launched one"},
		{Role: openai.ChatMessageRoleTool, ToolCallID: "call_1_2", Content: "Launched two\nmore"},
	}
	deltas, _, _ := streamed(t, c, openai.ChatCompletionRequest{Messages: msgs, Tools: supervisorTools})
	if got := strings.Join(deltas, ""); got != "done: Launched one\ndone: Launched two" {
		t.Fatalf("answer %q", got)
	}
}

func TestSystemPromptIsShownOnRequest(t *testing.T) {
	c := newModel(t)
	msgs := []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleSystem, Content: "You coordinate.\n\n## Tasks"}, user("System prompt")}
	deltas, _, _ := streamed(t, c, openai.ChatCompletionRequest{Messages: msgs, Tools: supervisorTools})
	if got := strings.Join(deltas, ""); got != "You coordinate.\n\n## Tasks" {
		t.Fatalf("answer %q", got)
	}
}

func TestSlowTextIsStreamedInOneDeltaPerWordWithPauses(t *testing.T) {
	c := newModel(t)
	start := time.Now()
	deltas, _, _ := streamed(t, c, openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{user("slow: one two three")}})
	if got := strings.Join(deltas, ""); got != "You said: one two three" || len(deltas) != 5 {
		t.Fatalf("deltas %q", deltas)
	}
	if took := time.Since(start); took < 4*slowDelta {
		t.Fatalf("answer took %v, want at least %v between its five deltas", took, 4*slowDelta)
	}
}

// TestCommandsUseTheOfferedToolsNames: tools whose schema names their
// arguments as the JavaScript deepagents tools do get calls with those
// names.
func TestCommandsUseTheOfferedToolsNames(t *testing.T) {
	c := newModel(t)
	jsTool := func(name string, props ...string) openai.Tool {
		p := map[string]any{}
		for _, k := range props {
			p[k] = map[string]any{"type": "string"}
		}
		return openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{Name: name, Parameters: map[string]any{"type": "object", "properties": p}}}
	}
	tools := []openai.Tool{jsTool("start_async_task", "description", "agentName"), jsTool("check_async_task", "taskId"), jsTool("list_async_tasks", "statusFilter")}
	for _, tc := range []struct {
		text string
		args map[string]any
	}{
		{"start chatter: hello", map[string]any{"agentName": "chatter", "description": "hello"}},
		{"check t-1", map[string]any{"taskId": "t-1"}},
		{"list success", map[string]any{"statusFilter": "success"}},
	} {
		_, calls, _ := streamed(t, c, openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{user(tc.text)}, Tools: tools})
		if len(calls) != 1 {
			t.Fatalf("%q: calls %+v", tc.text, calls)
		}
		if got := args(t, calls[0]); !reflect.DeepEqual(got, tc.args) {
			t.Errorf("%q: args %v, want %v", tc.text, got, tc.args)
		}
	}
}
