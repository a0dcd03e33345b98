package a2a

import (
	"encoding/json"
	"strings"
	"time"
)

// Task states (v0.3 spelling; v1.0 is "TASK_STATE_" + upper case, with
// '-' as '_').
const (
	StateSubmitted     = "submitted"
	StateWorking       = "working"
	StateInputRequired = "input-required"
	StateCompleted     = "completed"
	StateCanceled      = "canceled"
	StateFailed        = "failed"
	StateRejected      = "rejected"
)

// TerminalState reports whether a task in state will not change by itself
// (input-required waits for a message: it is final for one exchange).
func TerminalState(state string) bool {
	switch state {
	case StateCompleted, StateCanceled, StateFailed, StateRejected, StateInputRequired:
		return true
	}
	return false
}

// Task is a task in a version-neutral form.
type Task struct {
	ID        string
	ContextID string
	State     string
	// Text is the status message: the answer, the error, or what the
	// interrupt asks.
	Text      string
	Answer    string // the artifact's text (completed tasks only)
	Timestamp time.Time
	// Interrupts are the pending interrupts of an input-required task,
	// sent as a data part {"interrupts": […]} of its status message.
	Interrupts []any
}

// Message is one message in a version-neutral form.
type Message struct {
	ID        string
	Role      string // "user" or "agent"
	Text      string
	ContextID string
	TaskID    string
	// Data, when set, is sent as a data part after the text.
	Data map[string]any
}

// statusMessage is the agent message of a task's status, or nil.
func statusMessage(t Task) *Message {
	if t.Text == "" {
		return nil
	}
	m := &Message{ID: t.ID + "-status", Role: "agent", Text: t.Text, ContextID: t.ContextID, TaskID: t.ID}
	if len(t.Interrupts) > 0 {
		m.Data = map[string]any{"interrupts": t.Interrupts}
	}
	return m
}

// wire renders tasks and events for one protocol version.
type wire interface {
	task(t Task) map[string]any
	// sendResult is the result of a send call.
	sendResult(t Task) map[string]any
	statusEvent(t Task, final bool) map[string]any
	artifactEvent(t Task) map[string]any
	// taskEvent is the first stream event.
	taskEvent(t Task) map[string]any
}

// v03 is the v0.3 wire: "kind" discriminators, lower-case states.
type v03 struct{}

func (v03) message(m Message) map[string]any {
	parts := []any{map[string]any{"kind": "text", "text": m.Text}}
	if m.Data != nil {
		parts = append(parts, map[string]any{"kind": "data", "data": m.Data})
	}
	out := map[string]any{"kind": "message", "messageId": m.ID, "role": m.Role, "parts": parts}
	setIf(out, "contextId", m.ContextID)
	setIf(out, "taskId", m.TaskID)
	return out
}

func (w v03) status(t Task) map[string]any {
	st := map[string]any{"state": t.State, "timestamp": t.Timestamp.UTC().Format(time.RFC3339Nano)}
	if m := statusMessage(t); m != nil {
		st["message"] = w.message(*m)
	}
	return st
}

func (v03) artifact(t Task) map[string]any {
	return map[string]any{"artifactId": t.ID + "-answer", "name": "answer", "parts": []any{map[string]any{"kind": "text", "text": t.Answer}}}
}

func (w v03) task(t Task) map[string]any {
	out := map[string]any{"kind": "task", "id": t.ID, "contextId": t.ContextID, "status": w.status(t)}
	if t.State == StateCompleted {
		out["artifacts"] = []any{w.artifact(t)}
	}
	return out
}

func (w v03) sendResult(t Task) map[string]any { return w.task(t) }
func (w v03) taskEvent(t Task) map[string]any  { return w.task(t) }

func (w v03) statusEvent(t Task, final bool) map[string]any {
	return map[string]any{"kind": "status-update", "taskId": t.ID, "contextId": t.ContextID, "status": w.status(t), "final": final}
}

func (w v03) artifactEvent(t Task) map[string]any {
	return map[string]any{"kind": "artifact-update", "taskId": t.ID, "contextId": t.ContextID, "artifact": w.artifact(t), "lastChunk": true}
}

// v1 is the v1.0 wire: proto JSON names, TASK_STATE_* states, stream
// events wrapped by their kind.
type v1 struct{}

func v1State(state string) string {
	return "TASK_STATE_" + strings.ToUpper(strings.ReplaceAll(state, "-", "_"))
}

func (v1) message(m Message) map[string]any {
	role := "ROLE_USER"
	if m.Role == "agent" {
		role = "ROLE_AGENT"
	}
	parts := []any{map[string]any{"text": m.Text}}
	if m.Data != nil {
		parts = append(parts, map[string]any{"data": m.Data})
	}
	out := map[string]any{"messageId": m.ID, "role": role, "parts": parts}
	setIf(out, "contextId", m.ContextID)
	setIf(out, "taskId", m.TaskID)
	return out
}

func (w v1) status(t Task) map[string]any {
	st := map[string]any{"state": v1State(t.State), "timestamp": t.Timestamp.UTC().Format(time.RFC3339Nano)}
	if m := statusMessage(t); m != nil {
		st["message"] = w.message(*m)
	}
	return st
}

func (v1) artifact(t Task) map[string]any {
	return map[string]any{"artifactId": t.ID + "-answer", "name": "answer", "parts": []any{map[string]any{"text": t.Answer}}}
}

func (w v1) task(t Task) map[string]any {
	out := map[string]any{"id": t.ID, "contextId": t.ContextID, "status": w.status(t)}
	if t.State == StateCompleted {
		out["artifacts"] = []any{w.artifact(t)}
	}
	return out
}

func (w v1) sendResult(t Task) map[string]any { return map[string]any{"task": w.task(t)} }
func (w v1) taskEvent(t Task) map[string]any  { return map[string]any{"task": w.task(t)} }

func (w v1) statusEvent(t Task, final bool) map[string]any {
	return map[string]any{"statusUpdate": map[string]any{"taskId": t.ID, "contextId": t.ContextID, "status": w.status(t), "final": final}}
}

func (w v1) artifactEvent(t Task) map[string]any {
	return map[string]any{"artifactUpdate": map[string]any{"taskId": t.ID, "contextId": t.ContextID, "artifact": w.artifact(t), "lastChunk": true}}
}

func setIf(m map[string]any, k, v string) {
	if v != "" {
		m[k] = v
	}
}

// partsText joins the text of message parts of either version: text parts
// ({"kind": "text", "text"} or {"text"}) as they are, data parts as JSON.
func partsText(parts []map[string]any) string {
	var out []string
	for _, p := range parts {
		if s, ok := p["text"].(string); ok {
			out = append(out, s)
			continue
		}
		if d, ok := p["data"]; ok {
			raw, _ := json.Marshal(d)
			out = append(out, string(raw))
		}
	}
	return strings.Join(out, "\n")
}

// ParseState reads a task state of either version into the v0.3 spelling.
func ParseState(s string) string {
	if rest, ok := strings.CutPrefix(s, "TASK_STATE_"); ok {
		return strings.ToLower(strings.ReplaceAll(rest, "_", "-"))
	}
	return s
}
