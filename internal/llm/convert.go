package llm

import (
	"encoding/json"
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// MessageText returns the text of a message's content: the string itself,
// or the text blocks of a block list joined without a separator (LangChain's
// message.text).
func MessageText(m Message) string { return contentText(m["content"]) }

func contentText(content any) string {
	switch c := content.(type) {
	case nil:
		return ""
	case string:
		return c
	case []any:
		var b strings.Builder
		for _, block := range c {
			b.WriteString(blockText(block))
		}
		return b.String()
	case []map[string]any:
		var b strings.Builder
		for _, block := range c {
			b.WriteString(blockText(block))
		}
		return b.String()
	default:
		raw, err := json.Marshal(c)
		if err != nil {
			return fmt.Sprint(c)
		}
		return string(raw)
	}
}

func blockText(block any) string {
	switch b := block.(type) {
	case string:
		return b
	case map[string]any:
		if b["type"] == "text" {
			s, _ := b["text"].(string)
			return s
		}
	}
	return ""
}

// blocks returns content as a list of blocks; ok is false when content is
// not a list.
func blocks(content any) (out []any, ok bool) {
	switch c := content.(type) {
	case []any:
		return c, true
	case []map[string]any:
		out = make([]any, len(c))
		for i, b := range c {
			out[i] = b
		}
		return out, true
	}
	return nil, false
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func list(v any) []any {
	l, _ := blocks(v)
	return l
}

// toOpenAIMessages converts LangChain messages to chat completion messages.
func toOpenAIMessages(msgs []Message) ([]openai.ChatCompletionMessage, error) {
	out := make([]openai.ChatCompletionMessage, 0, len(msgs))
	for i, m := range msgs {
		om, err := toOpenAIMessage(m)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		out = append(out, om)
	}
	return out, nil
}

func toOpenAIMessage(m Message) (openai.ChatCompletionMessage, error) {
	kind := str(m["type"])
	if kind == "" {
		kind = str(m["role"])
	}
	var om openai.ChatCompletionMessage
	switch kind {
	case "system":
		om.Role, om.Content = openai.ChatMessageRoleSystem, contentText(m["content"])
	case "developer":
		om.Role, om.Content = openai.ChatMessageRoleDeveloper, contentText(m["content"])
	case "human", "user":
		om.Role = openai.ChatMessageRoleUser
		if bl, ok := blocks(m["content"]); ok {
			parts, err := userParts(bl)
			if err != nil {
				return om, err
			}
			om.MultiContent = parts
		} else {
			om.Content = contentText(m["content"])
		}
	case "ai", "assistant", "AIMessageChunk":
		om.Role, om.Content = openai.ChatMessageRoleAssistant, contentText(m["content"])
		calls, err := assistantToolCalls(m)
		if err != nil {
			return om, err
		}
		om.ToolCalls = calls
	case "tool":
		om.Role, om.Content = openai.ChatMessageRoleTool, contentText(m["content"])
		om.ToolCallID = str(m["tool_call_id"])
		if om.ToolCallID == "" {
			return om, fmt.Errorf("%w: tool message without tool_call_id", ErrInvalidMessage)
		}
		om.Name = str(m["name"])
		return om, nil
	default:
		return om, fmt.Errorf("%w: unknown message type %q", ErrInvalidMessage, kind)
	}
	om.Name = str(m["name"])
	return om, nil
}

// userParts converts content blocks of a human message: text blocks (and
// bare strings) become text parts, image_url blocks pass through, and
// LangChain "image" blocks become image_url parts (data URLs for base64).
// Other blocks are dropped.
func userParts(bl []any) ([]openai.ChatMessagePart, error) {
	parts := make([]openai.ChatMessagePart, 0, len(bl))
	for _, block := range bl {
		if s, ok := block.(string); ok {
			parts = append(parts, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeText, Text: s})
			continue
		}
		b, ok := block.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%w: content block of type %T", ErrInvalidMessage, block)
		}
		switch str(b["type"]) {
		case "text":
			parts = append(parts, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeText, Text: str(b["text"])})
		case "image_url":
			img := &openai.ChatMessageImageURL{}
			switch u := b["image_url"].(type) {
			case string:
				img.URL = u
			case map[string]any:
				img.URL, img.Detail = str(u["url"]), openai.ImageURLDetail(str(u["detail"]))
			}
			if img.URL == "" {
				return nil, fmt.Errorf("%w: image_url block without url", ErrInvalidMessage)
			}
			parts = append(parts, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeImageURL, ImageURL: img})
		case "image":
			url := str(b["url"])
			data := str(b["base64"])
			if data == "" && str(b["source_type"]) == "base64" {
				data = str(b["data"])
			}
			if url == "" && data != "" {
				mime := str(b["mime_type"])
				if mime == "" {
					mime = "image/png"
				}
				url = "data:" + mime + ";base64," + data
			}
			if url == "" {
				return nil, fmt.Errorf("%w: image block without url or base64 data", ErrInvalidMessage)
			}
			parts = append(parts, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeImageURL, ImageURL: &openai.ChatMessageImageURL{URL: url}})
		}
	}
	return parts, nil
}

// assistantToolCalls converts an AI message's tool_calls (LangChain form,
// falling back to OpenAI form in additional_kwargs) and its
// invalid_tool_calls, which are sent back verbatim so that the tool messages
// answering them still match a call.
func assistantToolCalls(m Message) ([]openai.ToolCall, error) {
	var out []openai.ToolCall
	calls := list(m["tool_calls"])
	if len(calls) == 0 {
		if kw, ok := m["additional_kwargs"].(map[string]any); ok {
			for _, c := range list(kw["tool_calls"]) {
				tc, ok := c.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("%w: tool call of type %T", ErrInvalidMessage, c)
				}
				fn, _ := tc["function"].(map[string]any)
				out = append(out, openai.ToolCall{ID: str(tc["id"]), Type: openai.ToolTypeFunction,
					Function: openai.FunctionCall{Name: str(fn["name"]), Arguments: str(fn["arguments"])}})
			}
		}
	}
	for _, c := range calls {
		tc, ok := c.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%w: tool call of type %T", ErrInvalidMessage, c)
		}
		args, err := argsJSON(tc["args"])
		if err != nil {
			return nil, fmt.Errorf("%w: tool call %q args: %w", ErrInvalidMessage, str(tc["name"]), err)
		}
		out = append(out, openai.ToolCall{ID: str(tc["id"]), Type: openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: str(tc["name"]), Arguments: args}})
	}
	for _, c := range list(m["invalid_tool_calls"]) {
		tc, ok := c.(map[string]any)
		if !ok {
			continue
		}
		out = append(out, openai.ToolCall{ID: str(tc["id"]), Type: openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: str(tc["name"]), Arguments: str(tc["args"])}})
	}
	return out, nil
}

// argsJSON encodes tool call args: an object is marshalled, a string is
// taken as already-encoded JSON, nil becomes "{}".
func argsJSON(args any) (string, error) {
	switch a := args.(type) {
	case nil:
		return "{}", nil
	case string:
		return a, nil
	default:
		raw, err := json.Marshal(a)
		if err != nil {
			return "", err
		}
		return string(raw), nil
	}
}

var emptySchema = map[string]any{"type": "object", "properties": map[string]any{}}

func toOpenAITools(specs []ToolSpec) []openai.Tool {
	if len(specs) == 0 {
		return nil
	}
	out := make([]openai.Tool, len(specs))
	for i, s := range specs {
		var params any = s.Parameters
		if s.Parameters == nil {
			params = emptySchema
		}
		out[i] = openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: s.Name, Description: s.Description, Parameters: params,
		}}
	}
	return out
}
