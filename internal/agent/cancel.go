package agent

import (
	"github.com/google/uuid"

	"agentserver/internal/channels"
	"agentserver/internal/graph"
	"agentserver/internal/tools"
)

// answerOpenToolCalls is the agent graph's cancel repair: the tool calls of
// the last AI message that have no result yet get an error result each, so
// that no history ends on an unanswered tool call (a model would reject
// it) and the paused tools node is not resumed by accident. It returns the
// messages write, or nil when every call was answered.
func (a *Agent) answerOpenToolCalls(values graph.State) map[string]any {
	msgs, _ := values[channels.MessagesChannel].([]any)
	answered := map[string]bool{}
	for _, m := range msgs {
		msg, _ := m.(map[string]any)
		if msg["type"] == "tool" {
			id, _ := msg["tool_call_id"].(string)
			answered[id] = true
		}
	}
	var replies []any
	for i := len(msgs) - 1; i >= 0; i-- {
		msg, _ := msgs[i].(map[string]any)
		if msg["type"] != "ai" {
			continue
		}
		calls, _ := msg["tool_calls"].([]any)
		for _, c := range calls {
			call, _ := c.(map[string]any)
			if id, _ := call["id"].(string); id != "" && !answered[id] {
				replies = append(replies, a.cancelledReply(call))
			}
		}
		break
	}
	if len(replies) == 0 {
		return nil
	}
	return map[string]any{channels.MessagesChannel: replies}
}

// cancelledReply is the error tool message that answers an open call.
func (a *Agent) cancelledReply(call map[string]any) map[string]any {
	name, _ := call["name"].(string)
	text := tools.CancelledText
	if ca, ok := a.tools[name].(tools.CancelAnswerer); ok {
		text = ca.CancelledAnswer()
	}
	return map[string]any{"type": "tool", "id": uuid.NewString(), "tool_call_id": call["id"], "name": name,
		"content": text, "status": "error", "additional_kwargs": map[string]any{}, "response_metadata": map[string]any{}}
}
