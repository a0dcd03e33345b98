package tools

import (
	"context"

	"agentserver/internal/graph"
	"agentserver/internal/llm"
)

// Call is one invocation of a tool.
type Call struct {
	// ID is the model's tool call id.
	ID   string
	Args map[string]any
	// Workspace is the directory the tool may touch (the thread's).
	Workspace string
	ThreadID  string
	// State is a read-only snapshot of the thread's values.
	State map[string]any
	// Config is the run's config (configurable holds assistant_id,
	// graph_id, run_id, thread_id).
	Config map[string]any
	// Emit publishes a "custom" stream event.
	Emit func(payload any)
	// ReportUsage adds tokens spent on the tool's behalf (a subagent's) to
	// the run's totals.
	ReportUsage func(graph.Usage)
	// Namespaced streams a nested graph's events under a namespace when the
	// run asked for subgraph events.
	Namespaced func(ns string) graph.Sink
}

// Result is what a tool returns: the text the model reads, and optional
// state channel writes (e.g. write_todos sets "todos").
type Result struct {
	Content string
	Update  map[string]any
	// Metadata goes to the tool message's additional_kwargs.
	Metadata map[string]any
}

// Tool is a callable tool. An error becomes a tool message with the error
// text; it does not fail the run.
type Tool interface {
	Spec() llm.ToolSpec
	Call(ctx context.Context, call Call) (Result, error)
}

// CancelAnswerer is implemented by tools that answer a call their run was
// cancelled in the middle of with their own text (the default is
// CancelledText).
type CancelAnswerer interface {
	CancelledAnswer() string
}

// CancelledText answers a tool call whose run was cancelled before it
// finished.
const CancelledText = "Cancelled: the run was interrupted before this call finished."

// WorkspaceUser is implemented by tools that work in the thread's
// workspace directory (the file tools and bash).
type WorkspaceUser interface {
	UsesWorkspace() bool
}
