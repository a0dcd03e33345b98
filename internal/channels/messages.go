package channels

import (
	"fmt"

	"github.com/google/uuid"

	"agentserver/internal/jsonx"
)

// MessagesChannel is the conventional channel holding the conversation.
const MessagesChannel = "messages"

// RemoveAllMessages is the id of a remove message that clears the channel.
const RemoveAllMessages = "__remove_all__"

// roleToType maps OpenAI-style roles to LangChain message types.
var roleToType = map[string]string{
	"user":      "human",
	"human":     "human",
	"assistant": "ai",
	"ai":        "ai",
	"system":    "system",
	"developer": "system",
	"tool":      "tool",
	"function":  "function",
}

// NormalizeMessage converts one message in any accepted input form (a
// LangChain serialized message, an OpenAI-style {role, content} dict, or a
// bare string) to LangChain's serialized form with an id. It returns a copy.
func NormalizeMessage(m any) (map[string]any, error) {
	var msg map[string]any
	switch v := m.(type) {
	case string:
		msg = map[string]any{"type": "human", "content": v}
	case map[string]any:
		msg = jsonx.CloneMap(v)
	default:
		return nil, fmt.Errorf("%w: a message must be an object or a string, got %T", ErrInvalidUpdate, m)
	}
	if _, ok := msg["type"]; !ok {
		role, _ := msg["role"].(string)
		t, known := roleToType[role]
		if !known {
			return nil, fmt.Errorf("%w: message has neither a known type nor a known role (%q)", ErrInvalidUpdate, role)
		}
		msg["type"] = t
		delete(msg, "role")
	}
	switch t := msg["type"].(string); t {
	case "user":
		msg["type"] = "human"
	case "assistant":
		msg["type"] = "ai"
	}
	if _, ok := msg["type"].(string); !ok {
		return nil, fmt.Errorf("%w: message type must be a string", ErrInvalidUpdate)
	}
	if _, ok := msg["content"]; !ok && msg["type"] != "remove" {
		msg["content"] = ""
	}
	if id, _ := msg["id"].(string); id == "" {
		msg["id"] = uuid.NewString()
	}
	if msg["type"] == "ai" {
		if _, ok := msg["tool_calls"]; !ok {
			msg["tool_calls"] = []any{}
		}
	}
	for _, k := range []string{"additional_kwargs", "response_metadata"} {
		if _, ok := msg[k]; !ok && msg["type"] != "remove" {
			msg[k] = map[string]any{}
		}
	}
	return msg, nil
}

// IsNormalized reports whether m is already in the form NormalizeMessage
// returns, as every message in a state written through AddMessages is.
func IsNormalized(m map[string]any) bool {
	t, _ := m["type"].(string)
	switch t {
	case "human", "system", "tool", "function", "chat":
	case "ai":
		if _, ok := m["tool_calls"]; !ok {
			return false
		}
	default:
		return false
	}
	if id, _ := m["id"].(string); id == "" {
		return false
	}
	for _, k := range []string{"content", "additional_kwargs", "response_metadata"} {
		if _, ok := m[k]; !ok {
			return false
		}
	}
	return true
}

// NormalizeMessages accepts a single message or a list and returns the
// normalized list.
func NormalizeMessages(v any) ([]any, error) {
	list, ok := v.([]any)
	if !ok {
		list = []any{v}
	}
	out := make([]any, 0, len(list))
	for _, m := range list {
		nm, err := NormalizeMessage(m)
		if err != nil {
			return nil, err
		}
		out = append(out, nm)
	}
	return out, nil
}

// AddMessages is LangGraph's add_messages reducer: messages whose id is
// already present replace the old one in place, new ones are appended, and a
// message of type "remove" deletes the message with its id (or all messages
// when the id is RemoveAllMessages).
func AddMessages(current, update any) (any, error) {
	var existing []any
	if current != nil {
		l, ok := current.([]any)
		if !ok {
			return nil, fmt.Errorf("%w: current messages are not a list", ErrInvalidUpdate)
		}
		existing = l
	}
	incoming, err := NormalizeMessages(update)
	if err != nil {
		return nil, err
	}
	out := make([]any, len(existing), len(existing)+len(incoming))
	copy(out, existing)
	index := make(map[string]int, len(out))
	for i, m := range out {
		if mm, ok := m.(map[string]any); ok {
			if id, ok := mm["id"].(string); ok {
				index[id] = i
			}
		}
	}
	removed := map[int]bool{}
	for _, m := range incoming {
		msg := m.(map[string]any)
		id := msg["id"].(string)
		if msg["type"] == "remove" {
			if id == RemoveAllMessages {
				out, index, removed = out[:0], map[string]int{}, map[int]bool{}
				continue
			}
			i, ok := index[id]
			if !ok {
				return nil, fmt.Errorf("%w: cannot remove message %q: no such id", ErrInvalidUpdate, id)
			}
			removed[i] = true
			delete(index, id)
			continue
		}
		if i, ok := index[id]; ok {
			out[i] = msg
			continue
		}
		index[id] = len(out)
		out = append(out, msg)
	}
	if len(removed) == 0 {
		return out, nil
	}
	kept := make([]any, 0, len(out)-len(removed))
	for i, m := range out {
		if !removed[i] {
			kept = append(kept, m)
		}
	}
	return kept, nil
}
