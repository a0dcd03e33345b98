package agent

import (
	"context"

	"agentserver/internal/channels"
	"agentserver/internal/graph"
	"agentserver/internal/llm"
	"agentserver/internal/tools"
)

// Middleware extends the agent loop. A middleware implements any of the
// hook interfaces below; the agent calls them in the order middlewares were
// given (and unwinds Wrap* hooks in reverse, like HTTP middleware).
type Middleware interface {
	Name() string
}

// ToolProvider adds tools to the agent.
type ToolProvider interface {
	Tools() []tools.Tool
}

// PromptSection adds a section to the system prompt.
type PromptSection interface {
	SystemPrompt(state graph.State) string
}

// ChannelProvider registers state channels with their reducers.
type ChannelProvider interface {
	Channels() map[string]channels.Reducer
}

// ChannelInitializer gives channels a value from a thread's first input on,
// so clients reading the state see it before anything was written to it.
type ChannelInitializer interface {
	InitialValues() map[string]any
}

// ModelCall is one model call in preparation or just made.
type ModelCall struct {
	Runtime *graph.Runtime
	// State is the thread state before the call (read only).
	State graph.State
	// Messages are sent to the model after the system prompt. BeforeModel
	// hooks may replace the list (e.g. with a summary) but must not modify
	// its messages in place: they are shared with the state.
	Messages []llm.Message
	System   string
	Tools    []llm.ToolSpec
	Request  llm.Request
	// Update collects state writes of this step besides the AI message
	// (e.g. compaction's removal of summarised messages).
	Update map[string]any
}

// BeforeModel runs before the model is called.
type BeforeModel interface {
	BeforeModel(ctx context.Context, call *ModelCall) error
}

// ModelHandler performs a model call.
type ModelHandler func(ctx context.Context, call *ModelCall) (llm.Response, error)

// WrapModel runs around the model call (retries, caching, fallbacks).
type WrapModel interface {
	WrapModel(ctx context.Context, call *ModelCall, next ModelHandler) (llm.Response, error)
}

// AfterModel runs after the model answered; it may rewrite or drop tool
// calls of resp.Message.
type AfterModel interface {
	AfterModel(ctx context.Context, call *ModelCall, resp *llm.Response) error
}

// ToolCall is one tool call about to run.
type ToolCall struct {
	Runtime *graph.Runtime
	State   graph.State
	// ID, Name and Args come from the model's tool call; WrapTool hooks may
	// change Args.
	ID   string
	Name string
	Args map[string]any
}

// ToolHandler performs a tool call.
type ToolHandler func(ctx context.Context, call *ToolCall) (tools.Result, error)

// WrapTool runs around each tool call.
type WrapTool interface {
	WrapTool(ctx context.Context, call *ToolCall, next ToolHandler) (tools.Result, error)
}

// ToolBatch is every tool call of one AI message, before any runs.
type ToolBatch struct {
	Runtime *graph.Runtime
	State   graph.State
	Calls   []*ToolCall
	// Answered holds tool messages for calls that must not run (rejected
	// or refused), keyed by tool call id.
	Answered map[string]llm.Message
	// Edited is set by hooks that changed a call's name or arguments; the
	// AI message is then rewritten to show the calls as they ran.
	Edited bool
}

// BeforeTools sees all tool calls of a step at once; it may answer some
// without running them, edit their arguments, or pause the run for a human
// (by returning graph.Interrupt).
type BeforeTools interface {
	BeforeTools(ctx context.Context, batch *ToolBatch) error
}
