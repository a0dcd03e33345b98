package protostream

import (
	"fmt"

	"agentserver/internal/runs"
	"agentserver/internal/storage"
)

var _ runs.ThreadObserver = (*Hub)(nil)

// RunStarted opens the run's translation and announces it: lifecycle
// started, then running, on the root namespace.
func (h *Hub) RunStarted(run storage.Run) {
	f := h.feed(run.ThreadID)
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.runs[run.RunID]; ok {
		return // a retry of a run already announced
	}
	f.runs[run.RunID] = newTranslator(run)
	if last := f.log.LastSeq(); f.runStart <= last {
		f.runStart = last + 1
	}
	h.publishLocked(f,
		out{method: "lifecycle", ns: []string{}, data: map[string]any{"event": "started", "graph_name": run.GraphID, "run_id": run.RunID.String()}},
		out{method: "lifecycle", ns: []string{}, data: map[string]any{"event": "running", "graph_name": run.GraphID, "run_id": run.RunID.String()}},
	)
}

// RunEvent translates and publishes one event of a run.
func (h *Hub) RunEvent(run storage.Run, name string, payload any) {
	f := h.feed(run.ThreadID)
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.runs[run.RunID]
	if t == nil {
		// The thread was followed after the run started.
		t = newTranslator(run)
		f.runs[run.RunID] = t
	}
	h.publishLocked(f, t.translate(h, name, payload)...)
}

// RunEnded finishes the run's open messages and announces how it ended:
// input.requested for each interrupt it waits on then lifecycle
// interrupted, or completed, or failed (a cancelled run is failed with
// the cause, since it waits for no input).
func (h *Hub) RunEnded(run storage.Run, interrupts []any) {
	f := h.feed(run.ThreadID)
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var evs []out
	if t := f.runs[run.RunID]; t != nil {
		evs = t.finishAll()
		delete(f.runs, run.RunID)
	}
	root := []string{}
	end := map[string]any{"graph_name": run.GraphID, "run_id": run.RunID.String()}
	switch {
	case run.Status == storage.RunSuccess && len(interrupts) > 0:
		for i, it := range interrupts {
			evs = append(evs, out{method: "input.requested", ns: root, data: map[string]any{"interrupt_id": interruptID(it, i), "payload": interruptValue(it)}})
		}
		end["event"] = "interrupted"
	case run.Status == storage.RunSuccess:
		end["event"] = "completed"
	case run.Status == storage.RunInterrupted:
		end["event"], end["error"] = "failed", "run cancelled"
	default:
		end["event"] = "failed"
		end["error"] = fmt.Sprintf("%s: %s", run.ErrorName, run.Error)
	}
	evs = append(evs, out{method: "lifecycle", ns: root, data: end})
	h.publishLocked(f, evs...)
	h.asyncEnded(f, run, interrupts)
}

func interruptID(it any, i int) string {
	if m, ok := it.(map[string]any); ok {
		if id, ok := m["id"].(string); ok && id != "" {
			return id
		}
		if id, ok := m["interrupt_id"].(string); ok && id != "" {
			return id
		}
	}
	return fmt.Sprintf("interrupt_%d", i)
}

func interruptValue(it any) any {
	if m, ok := it.(map[string]any); ok {
		if v, ok := m["value"]; ok {
			return v
		}
	}
	return it
}
