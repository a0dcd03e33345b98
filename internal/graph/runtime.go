package graph

import (
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

	sink    Sink
	emitted *map[string]bool
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
