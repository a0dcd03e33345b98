package a2a

import (
	"encoding/json"
	"fmt"
	"strings"
)

// RemoteTask is a task or task event as a client reads it, from either
// wire version.
type RemoteTask struct {
	ID        string
	ContextID string
	// State is in the v0.3 spelling ("completed", …).
	State string
	// Final is set on the last event of a stream.
	Final bool
	// Text is the text of the status message.
	Text string
	// Answer is the text of the artifacts.
	Answer string
	// Interrupts are those of a data part {"interrupts": […]} of the status
	// message (this server sends them for input-required tasks).
	Interrupts []any
}

// wireTask is the union of the task and event fields of both versions.
type wireTask struct {
	Kind      string     `json:"kind"`
	ID        string     `json:"id"`
	TaskID    string     `json:"taskId"`
	ContextID string     `json:"contextId"`
	Final     bool       `json:"final"`
	Status    wireStatus `json:"status"`
	Artifacts []struct {
		Parts []map[string]any `json:"parts"`
	} `json:"artifacts"`
	Artifact *struct {
		Parts []map[string]any `json:"parts"`
	} `json:"artifact"`
}

type wireStatus struct {
	State   string `json:"state"`
	Message *struct {
		Parts []map[string]any `json:"parts"`
	} `json:"message"`
}

// ParseTask reads a task, a send result ({"task": …} in v1.0) or a stream
// event (status or artifact update, wrapped by kind in v1.0).
func ParseTask(raw json.RawMessage) (RemoteTask, error) {
	var wrapped map[string]json.RawMessage
	if err := json.Unmarshal(raw, &wrapped); err != nil {
		return RemoteTask{}, fmt.Errorf("a2a: decode task: %w", err)
	}
	for _, k := range []string{"task", "statusUpdate", "artifactUpdate", "message"} {
		if inner, ok := wrapped[k]; ok && len(wrapped) == 1 {
			raw = inner
		}
	}
	var w wireTask
	if err := json.Unmarshal(raw, &w); err != nil {
		return RemoteTask{}, fmt.Errorf("a2a: decode task: %w", err)
	}
	t := RemoteTask{ID: w.ID, ContextID: w.ContextID, State: ParseState(w.Status.State), Final: w.Final}
	if t.ID == "" {
		t.ID = w.TaskID
	}
	if m := w.Status.Message; m != nil {
		t.Text = partsText(textParts(m.Parts))
		t.Interrupts = interruptsOf(m.Parts)
	}
	var answer []string
	for _, a := range w.Artifacts {
		answer = append(answer, partsText(textParts(a.Parts)))
	}
	if w.Artifact != nil {
		answer = append(answer, partsText(textParts(w.Artifact.Parts)))
	}
	t.Answer = strings.Join(answer, "\n")
	return t, nil
}

// textParts keeps the parts that carry text.
func textParts(parts []map[string]any) []map[string]any {
	out := make([]map[string]any, 0, len(parts))
	for _, p := range parts {
		if _, ok := p["text"]; ok {
			out = append(out, p)
		}
	}
	return out
}

func interruptsOf(parts []map[string]any) []any {
	for _, p := range parts {
		if d, ok := p["data"].(map[string]any); ok {
			if list, ok := d["interrupts"].([]any); ok {
				return list
			}
		}
	}
	return nil
}
