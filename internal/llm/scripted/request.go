package scripted

import (
	"net/http"
	"strings"
	"time"
)

// ChatRequest is the decoded body of one chat completions request. Fields
// the client left out stay nil, so tests can tell "absent" from "zero".
type ChatRequest struct {
	Model               string         `json:"model"`
	Messages            []ChatMessage  `json:"messages"`
	Tools               []Tool         `json:"tools,omitempty"`
	ToolChoice          any            `json:"tool_choice,omitempty"`
	ParallelToolCalls   *bool          `json:"parallel_tool_calls,omitempty"`
	Stream              bool           `json:"stream"`
	StreamOptions       *StreamOptions `json:"stream_options,omitempty"`
	Temperature         *float64       `json:"temperature,omitempty"`
	MaxTokens           *int           `json:"max_tokens,omitempty"`
	MaxCompletionTokens *int           `json:"max_completion_tokens,omitempty"`
}

// StreamOptions is the request's stream_options object.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// ChatMessage is one message of a request as it went over the wire.
type ChatMessage struct {
	Role string `json:"role"`
	// Content is a string, a list of content parts ([]any of
	// map[string]any), or nil when the client omitted it.
	Content    any            `json:"content,omitempty"`
	Name       string         `json:"name,omitempty"`
	ToolCalls  []WireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

// Text returns the message's text: the string content, or the text parts of
// a list content joined without a separator.
func (m ChatMessage) Text() string {
	switch c := m.Content.(type) {
	case string:
		return c
	case []any:
		var b strings.Builder
		for _, p := range c {
			if part, ok := p.(map[string]any); ok && part["type"] == "text" {
				s, _ := part["text"].(string)
				b.WriteString(s)
			}
		}
		return b.String()
	}
	return ""
}

// WireToolCall is a tool call of an assistant message in a request.
type WireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function WireFunction `json:"function"`
}

// WireFunction is the function of a WireToolCall; Arguments is a JSON text.
type WireFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Tool is one entry of a request's tools list.
type Tool struct {
	Type     string       `json:"type"`
	Function ToolFunction `json:"function"`
}

// ToolFunction describes a function tool offered to the model.
type ToolFunction struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters,omitempty"`
}

// LastUserText returns the text of the last message with role "user", or ""
// when there is none.
func (r ChatRequest) LastUserText() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Text()
		}
	}
	return ""
}

// ToolNames returns the names of the function tools offered, in order.
func (r ChatRequest) ToolNames() []string {
	out := make([]string, 0, len(r.Tools))
	for _, t := range r.Tools {
		out = append(out, t.Function.Name)
	}
	return out
}

// Request is one recorded HTTP request.
type Request struct {
	Method string
	Path   string
	Header http.Header
	// Body is the raw request body.
	Body []byte
	// Chat is Body decoded; zero when DecodeErr is set.
	Chat      ChatRequest
	DecodeErr error
	// Received is when the server finished reading the body.
	Received time.Time
}
