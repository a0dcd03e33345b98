package a2a

import (
	"context"
	"encoding/json"
	"strings"

	"agentserver/internal/storage"
)

// taskOf describes a run as a task. values are the run's final values
// (nil while it runs).
func (h *Handler) taskOf(ctx context.Context, run storage.Run, values map[string]any) (Task, error) {
	t := Task{ID: run.RunID.String(), ContextID: run.ThreadID.String(), Timestamp: run.UpdatedAt}
	switch run.Status {
	case storage.RunPending:
		t.State = StateSubmitted
	case storage.RunRunning:
		t.State = StateWorking
	case storage.RunSuccess:
		asks, err := h.pendingInterrupts(ctx, run)
		if err != nil {
			return t, err
		}
		if len(asks) > 0 {
			t.State, t.Text, t.Interrupts = StateInputRequired, interruptText(asks), asks
			break
		}
		t.State = StateCompleted
		t.Answer = lastText(values)
		t.Text = t.Answer
	case storage.RunError, storage.RunTimeout:
		t.State, t.Text = StateFailed, run.Error
	default: // interrupted: cancelled, or replaced by a newer message
		t.State = StateCanceled
	}
	return t, nil
}

// pendingInterrupts are the interrupts a run left its thread paused on,
// or none when the thread is not paused or a later run exists.
func (h *Handler) pendingInterrupts(ctx context.Context, run storage.Run) ([]any, error) {
	st, err := h.deps.Threads.GetState(ctx, run.ThreadID, nil)
	if err != nil || len(st.Interrupts) == 0 {
		return nil, nil // a deleted thread: the run's own status stands
	}
	latest, _, err := h.deps.Runs.Search(ctx, storage.RunQuery{ThreadID: &run.ThreadID, Limit: 1})
	if err != nil {
		return nil, err
	}
	if len(latest) == 0 || latest[0].RunID != run.RunID {
		return nil, nil
	}
	return st.Interrupts, nil
}

// interruptText renders interrupt values: a string value as it is,
// anything else as JSON, one per line.
func interruptText(interrupts []any) string {
	parts := make([]string, 0, len(interrupts))
	for _, in := range interrupts {
		v := in
		if m, ok := in.(map[string]any); ok {
			if val, ok := m["value"]; ok {
				v = val
			}
		}
		if s, ok := v.(string); ok {
			parts = append(parts, s)
			continue
		}
		raw, _ := json.Marshal(v)
		parts = append(parts, string(raw))
	}
	return strings.Join(parts, "\n")
}

// lastText is the content of the last message of values, as text.
func lastText(values map[string]any) string {
	msgs, _ := values["messages"].([]any)
	if len(msgs) == 0 {
		return ""
	}
	m, _ := msgs[len(msgs)-1].(map[string]any)
	switch c := m["content"].(type) {
	case string:
		return c
	case nil:
		return ""
	default:
		raw, _ := json.Marshal(c)
		return string(raw)
	}
}
