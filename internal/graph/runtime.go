package graph

import (
	"context"
	"strings"

	"github.com/google/uuid"
)

// Runtime is what a node sees of its run besides the state.
type Runtime struct {
	RunID    uuid.UUID
	ThreadID uuid.UUID
	Node     string
	Step     int
	Config   map[string]any
	Context  map[string]any

	sink      Sink
	emitted   *map[string]bool
	resume    any
	hasResume bool
}

// Resume returns the command.resume value a run was started with, when this
// node is the one being resumed after an interrupt.
func (rt *Runtime) Resume() (any, bool) {
	return rt.resume, rt.hasResume
}

// ReportUsage adds one model call's token usage to the run's totals.
func (rt *Runtime) ReportUsage(u Usage) {
	rt.sink.Usage(u)
}

// Note records a fact about the run's outcome, such as why it stopped.
func (rt *Runtime) Note(key string, value any) {
	rt.sink.Note(key, value)
}

// Wants reports whether a stream mode has a listener.
func (rt *Runtime) Wants(mode string) bool {
	return rt.sink.Wants(mode)
}

// Custom publishes a payload on the "custom" stream mode.
func (rt *Runtime) Custom(payload any) {
	if rt.sink.Wants("custom") {
		rt.sink.Emit("custom", payload)
	}
}

// ToolsMode is the stream mode of tool-call lifecycle events.
const ToolsMode = "tools"

// ToolEvent publishes one tool-call lifecycle event on the "tools" stream
// mode, in LangGraph.js's shape: {event, toolCallId, name} plus fields
// (input for on_tool_start, data for on_tool_event, output for on_tool_end,
// error for on_tool_error). toolCallID is left out when empty.
func (rt *Runtime) ToolEvent(event, toolCallID, name string, fields map[string]any) {
	if !rt.sink.Wants(ToolsMode) {
		return
	}
	payload := map[string]any{"event": event, "name": name}
	if toolCallID != "" {
		payload["toolCallId"] = toolCallID
	}
	for k, v := range fields {
		payload[k] = v
	}
	rt.sink.Emit(ToolsMode, payload)
}

// MessageChunk streams one token chunk of an AI message being generated;
// the final message the node returns with the same id is then not streamed
// a second time.
func (rt *Runtime) MessageChunk(chunk map[string]any) {
	if id, ok := chunk["id"].(string); ok {
		(*rt.emitted)[id] = true
	}
	if rt.sink.Wants("messages") {
		rt.sink.Emit("messages", []any{chunk, MessageMetadata(Input{RunID: rt.RunID, ThreadID: rt.ThreadID}, rt.Node, rt.Step)})
	}
}

// ToolNamespace is the stream namespace of what a tool call runs, a task
// subagent's events or a tool called inside one: "tools:<tool call id>",
// the shape LangGraph gives a tool execution and the SDKs group subagent
// events by.
func ToolNamespace(toolCallID string) string { return "tools:" + toolCallID }

// SubgraphsMode is the pseudo stream mode a Sink wants when the run asked
// for subgraph events (stream_subgraphs).
const SubgraphsMode = "subgraphs"

// Namespaced returns a sink that streams a nested graph's events under the
// namespace ns ("values|ns", "messages|ns", ...) when the run asked for
// subgraph events; otherwise it wants nothing. Checkpoints, usage and notes
// of the nested graph are not forwarded.
func (rt *Runtime) Namespaced(ns string) Sink {
	return nsSink{parent: rt.sink, ns: ns}
}

type nsSink struct {
	parent Sink
	ns     string
}

func (n nsSink) Checkpoint(context.Context, Checkpoint, bool) error { return nil }
func (n nsSink) Wants(mode string) bool {
	return n.parent.Wants(SubgraphsMode) && n.parent.Wants(mode)
}

// Emit names the event "<mode>|<ns>"; a nested graph's own namespaces
// follow, so that the outermost comes first ("messages|outer|inner"), as in
// LangGraph.
func (n nsSink) Emit(mode string, payload any) {
	base, nested, _ := strings.Cut(mode, "|")
	name := base + "|" + n.ns
	if nested != "" {
		name += "|" + nested
	}
	n.parent.Emit(name, payload)
}
func (n nsSink) Usage(Usage)      {}
func (n nsSink) Note(string, any) {}
