package protostream

import (
	"encoding/json"
	"strings"

	"agentserver/internal/graph"
	"agentserver/internal/storage"
)

// translator turns one run's events into protocol events. It is used
// under its feed's lock.
type translator struct {
	runID  string
	thread string
	// active is the message being streamed in each namespace.
	active map[string]*streamingMessage
	// inputs are the arguments of the run's tool calls, by call id, kept
	// from their start to their end.
	inputs map[string]any
}

// streamingMessage is an AI message whose chunks are being streamed.
type streamingMessage struct {
	id, node string
	ns       []string
	index    int    // index of the open block; -1: none
	kind     string // "text" or "reasoning": the open block's type
	text     strings.Builder
	calls    []map[string]any // tool call chunks, merged by their index
	usage    any
	reason   string
}

func newTranslator(run storage.Run) *translator {
	return &translator{runID: run.RunID.String(), thread: run.ThreadID.String(), active: map[string]*streamingMessage{}, inputs: map[string]any{}}
}

// splitName splits "mode|ns1|ns2" into the mode and the namespace.
func splitName(name string) (string, []string) {
	parts := strings.Split(name, "|")
	return parts[0], parts[1:]
}

// translate returns the protocol events of one run event.
func (t *translator) translate(h *Hub, name string, payload any) []out {
	mode, ns := splitName(name)
	switch mode {
	case "values":
		evs := []out{{method: "values", ns: ns, data: payload}}
		if len(ns) == 0 {
			evs = append(evs, h.remoteStatus(payload)...)
		}
		return evs
	case "updates":
		return t.updates(ns, payload)
	case "messages":
		return t.messages(ns, payload)
	case "tools":
		return t.tools(h, ns, payload)
	case "checkpoints":
		return []out{{method: "checkpoints", ns: ns, data: checkpointEnvelope(payload)}}
	case "tasks":
		return []out{{method: "tasks", ns: ns, data: payload}}
	case "custom":
		return t.custom(ns, payload)
	}
	return nil
}

// updates ends the node's streamed message (the node has returned) and
// sends one updates event per node.
func (t *translator) updates(ns []string, payload any) []out {
	evs := t.finish(ns)
	m, _ := payload.(map[string]any)
	for node, v := range m {
		values, _ := v.(map[string]any)
		if values == nil {
			values = map[string]any{node: v}
		}
		evs = append(evs, out{method: "updates", ns: ns, data: map[string]any{"node": node, "values": values}})
	}
	return evs
}

func checkpointEnvelope(payload any) map[string]any {
	m, _ := payload.(map[string]any)
	out := map[string]any{"id": checkpointID(m["config"]), "step": 0, "source": "loop"}
	if p := checkpointID(m["parent_config"]); p != "" {
		out["parent_id"] = p
	}
	if md, ok := m["metadata"].(map[string]any); ok {
		if step, ok := md["step"]; ok {
			out["step"] = step
		}
		if src, ok := md["source"].(string); ok {
			out["source"] = src
		}
	}
	return out
}

func checkpointID(cfg any) string {
	c, _ := cfg.(map[string]any)
	conf, _ := c["configurable"].(map[string]any)
	id, _ := conf["checkpoint_id"].(string)
	return id
}

// custom forwards a custom payload and derives the lifecycle of task-tool
// subagents from their task_* progress events.
func (t *translator) custom(ns []string, payload any) []out {
	data := map[string]any{"payload": payload}
	name := ""
	if m, ok := payload.(map[string]any); ok {
		if n, ok := m["name"].(string); ok && n != "" {
			name = n
			data["name"] = n
		}
	}
	evs := []out{{method: "custom", ns: ns, name: name, data: data}}
	m, _ := payload.(map[string]any)
	typ, _ := m["type"].(string)
	id, _ := m["task_id"].(string)
	if id == "" || !strings.HasPrefix(typ, "task_") {
		return evs
	}
	sub := childNamespace(ns, graph.ToolNamespace(id))
	switch typ {
	case "task_started":
		evs = append(evs, out{method: "lifecycle", ns: sub, data: map[string]any{"event": "running"}})
	case "task_completed":
		evs = append(evs, out{method: "lifecycle", ns: sub, data: map[string]any{"event": "completed"}})
	case "task_failed", "task_timed_out", "task_cancelled":
		errText, _ := m["error"].(string)
		evs = append(evs, out{method: "lifecycle", ns: sub, data: map[string]any{"event": "failed", "error": errText}})
	}
	return evs
}

func childNamespace(ns []string, seg string) []string {
	return append(append(make([]string, 0, len(ns)+1), ns...), seg)
}

// tools maps LangGraph.js-style tool events to the protocol's. The task
// tool's own events go in its subagent's namespace (tools:<call id>), where
// the SDK's thread.subagents and useStream scope the subagent; a tool called
// inside a subagent runs in a namespace of its own below the subagent's, as
// LangGraph nests tool executions, so that clients keep it out of the
// root's tool calls.
func (t *translator) tools(h *Hub, ns []string, payload any) []out {
	m, _ := payload.(map[string]any)
	id, _ := m["toolCallId"].(string)
	name, _ := m["name"].(string)
	evNs := ns
	if id != "" && (name == "task" || len(ns) > 0) {
		evNs = childNamespace(ns, graph.ToolNamespace(id))
	}
	base := map[string]any{"tool_call_id": id, "tool_name": name}
	with := func(event string, kv ...any) out {
		d := map[string]any{"event": event}
		for k, v := range base {
			d[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			d[kv[i].(string)] = kv[i+1]
		}
		return out{method: "tools", ns: evNs, data: d}
	}
	switch m["event"] {
	case "on_tool_start":
		t.inputs[id] = m["input"]
		evs := []out{with("tool-started", "input", m["input"])}
		if name == "task" {
			input, _ := m["input"].(map[string]any)
			graphName, _ := input["subagent_type"].(string)
			evs = append(evs, out{method: "lifecycle", ns: evNs, data: map[string]any{"event": "started", "graph_name": graphName, "cause": map[string]any{"type": "toolCall", "tool_call_id": id}}})
		}
		return evs
	case "on_tool_event":
		delta, _ := json.Marshal(m["data"])
		return []out{with("tool-output-delta", "delta", string(delta))}
	case "on_tool_end":
		evs := []out{with("tool-finished", "output", toolOutput(m["output"]))}
		switch input, _ := t.inputs[id].(map[string]any); name {
		case "start_async_task":
			evs = append(evs, h.asyncStarted(input, m["output"])...)
		case "check_async_task":
			h.remoteChecked(m["output"])
		}
		delete(t.inputs, id)
		return evs
	case "on_tool_error":
		delete(t.inputs, id)
		msg := "tool failed"
		if e, ok := m["error"].(map[string]any); ok {
			if s, ok := e["message"].(string); ok {
				msg = s
			}
		}
		return []out{with("tool-error", "message", msg)}
	}
	return nil
}

// toolOutput is a tool message's content, the value the tool returned;
// anything else is passed as it is.
func toolOutput(v any) any {
	if m, ok := v.(map[string]any); ok {
		if c, ok := m["content"]; ok {
			return c
		}
	}
	return v
}
