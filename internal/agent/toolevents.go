package agent

import (
	"context"

	"agentserver/internal/graph"
	"agentserver/internal/llm"
)

// The "tools" stream mode follows LangGraph.js: each tool call that runs
// sends on_tool_start (with its arguments as input), on_tool_event for each
// progress payload the tool publishes, then on_tool_end (with the tool
// message as output) or on_tool_error. Calls answered without running (a
// human rejected them) send nothing.

func toolStarted(rt *graph.Runtime, c *ToolCall) {
	rt.ToolEvent("on_tool_start", c.ID, c.Name, map[string]any{"input": c.Args})
}

// toolProgress publishes a tool's progress payload on the "custom" mode, as
// tools always did, and as an on_tool_event of its call.
func toolProgress(rt *graph.Runtime, c *ToolCall) func(any) {
	return func(payload any) {
		rt.Custom(payload)
		rt.ToolEvent("on_tool_event", c.ID, c.Name, map[string]any{"data": payload})
	}
}

// toolFinished reports how a call ended; a call stopped because the run was
// cancelled reports nothing.
func toolFinished(ctx context.Context, rt *graph.Runtime, c *ToolCall, msg llm.Message, err error) {
	switch {
	case ctx.Err() != nil:
	case err != nil:
		rt.ToolEvent("on_tool_error", c.ID, c.Name, map[string]any{"error": map[string]any{"error": "ToolError", "message": err.Error()}})
	default:
		rt.ToolEvent("on_tool_end", c.ID, c.Name, map[string]any{"output": msg})
	}
}
