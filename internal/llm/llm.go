// Package llm talks to chat models. Messages cross this boundary in
// LangChain's serialized form (maps with "type": "system" | "human" | "ai" |
// "tool", "content", "tool_calls", "tool_call_id", ...), the form threads
// store and clients stream, so no caller converts.
//
// Invariants of every Model in this package:
//   - Messages and chunks it returns are in Go's generic JSON form (what
//     encoding/json decodes into any): map[string]any, []any, string,
//     float64, bool, nil. They equal themselves after a JSON round trip, and
//     every returned map and slice is fresh, so callers may keep or mutate
//     them.
//   - One call has one message id, "run-<uuid>", shared by all its chunks and
//     the final message; retries keep it.
//   - Chunks are delivered synchronously, in order, on the caller's
//     goroutine, and never for an attempt that is later retried: a call is
//     retried only while nothing has been delivered.
//   - Errors are wrapped with %w: ErrInvalidMessage (nothing was sent),
//     *StatusError (the provider's HTTP status), ErrTimeout, ErrConnection,
//     ErrStreamInterrupted (chunks were delivered, then it failed), or the
//     caller's context error (and its cause) when ctx ended.
package llm

import (
	"context"
	"errors"
)

// Message is one LangChain-serialized message.
type Message = map[string]any

// ToolSpec describes a tool the model may call.
type ToolSpec struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the tool's arguments (an object).
	Parameters map[string]any
}

// Request is one chat completion call.
type Request struct {
	// Model overrides the configured model name when not empty.
	Model    string
	Messages []Message
	Tools    []ToolSpec
	// Temperature and MaxTokens are sent only when set.
	Temperature *float64
	MaxTokens   int
}

// Usage counts the tokens of one call.
type Usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

// Response is the model's answer.
type Response struct {
	// Message is the complete AI message (type "ai") with content,
	// tool_calls ([{name, args, id, type: "tool_call"}]), usage_metadata and
	// response_metadata (model_name, finish_reason).
	Message Message
	Usage   Usage
	// Model is the model that answered.
	Model string
}

// ChunkFunc receives streamed deltas as LangChain AIMessageChunk maps
// ("type": "AIMessageChunk", "id", "content" delta, "tool_call_chunks").
// All chunks of one call share the id of the final message. The last chunk
// carries usage_metadata when the provider reported usage. A ChunkFunc runs
// on the caller's goroutine; while it runs, the stream is not read.
type ChunkFunc func(chunk Message)

// Model is a chat model. Generate must honour ctx: cancelling it aborts the
// in-flight HTTP request at once.
type Model interface {
	Generate(ctx context.Context, req Request, onChunk ChunkFunc) (Response, error)
}

// ErrNoModel reports that no model provider is configured.
var ErrNoModel = errors.New("no model is configured")
