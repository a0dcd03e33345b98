package llm

import (
	"encoding/json"
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// accumulator turns a chat completion stream into AIMessageChunk maps and,
// at the end, the complete AI message.
type accumulator struct {
	id        string
	model     string
	content   strings.Builder
	calls     []*callAcc // in index order of first appearance
	finish    string
	usage     *Usage
	events    int // stream events received
	delivered int // chunks passed to the ChunkFunc
}

type callAcc struct {
	index int
	id    string
	name  string
	args  strings.Builder
}

// add folds one stream event in and returns the chunk to deliver, or nil
// when the event carries nothing for the caller (role-only or finish-only
// deltas).
func (a *accumulator) add(ev openai.ChatCompletionStreamResponse) Message {
	a.events++
	if ev.Model != "" {
		a.model = ev.Model
	}
	var text string
	var toolChunks []any
	for _, ch := range ev.Choices {
		if ch.Index != 0 {
			continue
		}
		if ch.FinishReason != "" && ch.FinishReason != openai.FinishReasonNull {
			a.finish = string(ch.FinishReason)
		}
		text = ch.Delta.Content
		a.content.WriteString(text)
		for _, tc := range ch.Delta.ToolCalls {
			c := a.call(tc)
			c.args.WriteString(tc.Function.Arguments)
			toolChunks = append(toolChunks, map[string]any{
				"name":  nilIfEmpty(tc.Function.Name),
				"args":  tc.Function.Arguments,
				"id":    nilIfEmpty(tc.ID),
				"index": float64(c.index),
				"type":  "tool_call_chunk",
			})
		}
	}
	if ev.Usage != nil {
		a.usage = &Usage{InputTokens: ev.Usage.PromptTokens, OutputTokens: ev.Usage.CompletionTokens, TotalTokens: ev.Usage.TotalTokens}
		if a.usage.TotalTokens == 0 {
			a.usage.TotalTokens = a.usage.InputTokens + a.usage.OutputTokens
		}
	}
	if text == "" && len(toolChunks) == 0 && ev.Usage == nil {
		return nil
	}
	if toolChunks == nil {
		toolChunks = []any{}
	}
	chunk := Message{
		"type":               "AIMessageChunk",
		"id":                 a.id,
		"content":            text,
		"tool_call_chunks":   toolChunks,
		"tool_calls":         []any{},
		"invalid_tool_calls": []any{},
		"additional_kwargs":  map[string]any{},
		"response_metadata":  map[string]any{},
	}
	if ev.Usage != nil {
		chunk["usage_metadata"] = a.usage.metadata()
		chunk["response_metadata"] = a.responseMetadata()
	}
	return chunk
}

// call finds or starts the accumulator of a tool-call delta. Deltas name
// their call by index; servers that omit it start a call with each new id
// and continue the last one otherwise.
func (a *accumulator) call(tc openai.ToolCall) *callAcc {
	idx := -1
	if tc.Index != nil {
		idx = *tc.Index
	} else if tc.ID == "" && len(a.calls) > 0 {
		idx = a.calls[len(a.calls)-1].index
	}
	if idx >= 0 {
		for _, c := range a.calls {
			if c.index == idx {
				c.fill(tc)
				return c
			}
		}
	} else {
		idx = len(a.calls)
		for _, c := range a.calls {
			idx = max(idx, c.index+1)
		}
	}
	c := &callAcc{index: idx}
	c.fill(tc)
	a.calls = append(a.calls, c)
	return c
}

func (c *callAcc) fill(tc openai.ToolCall) {
	if c.id == "" {
		c.id = tc.ID
	}
	if tc.Function.Name != "" {
		c.name += tc.Function.Name
	}
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (u *Usage) metadata() map[string]any {
	return map[string]any{
		"input_tokens":  float64(u.InputTokens),
		"output_tokens": float64(u.OutputTokens),
		"total_tokens":  float64(u.TotalTokens),
	}
}

func (a *accumulator) responseMetadata() map[string]any {
	md := map[string]any{"model_name": a.model}
	if a.finish != "" {
		md["finish_reason"] = a.finish
	}
	return md
}

// response assembles the complete AI message.
func (a *accumulator) response() Response {
	calls, invalid := []any{}, []any{}
	for _, c := range a.calls {
		raw := c.args.String()
		args, err := parseArgs(raw)
		if err != nil {
			invalid = append(invalid, map[string]any{
				"name": c.name, "args": raw, "id": c.id, "error": err.Error(), "type": "invalid_tool_call",
			})
			continue
		}
		calls = append(calls, map[string]any{"name": c.name, "args": args, "id": c.id, "type": "tool_call"})
	}
	msg := Message{
		"type":               "ai",
		"id":                 a.id,
		"content":            a.content.String(),
		"tool_calls":         calls,
		"invalid_tool_calls": invalid,
		"additional_kwargs":  map[string]any{},
		"response_metadata":  a.responseMetadata(),
	}
	var usage Usage
	if a.usage != nil {
		usage = *a.usage
		msg["usage_metadata"] = usage.metadata()
	}
	return Response{Message: msg, Usage: usage, Model: a.model}
}

// parseArgs decodes a tool call's arguments, which must be a JSON object;
// empty arguments mean {}.
func parseArgs(raw string) (map[string]any, error) {
	if strings.TrimSpace(raw) == "" {
		return map[string]any{}, nil
	}
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return nil, fmt.Errorf("parse tool call arguments: %w", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("tool call arguments are a JSON %T, not an object", v)
	}
	return obj, nil
}
