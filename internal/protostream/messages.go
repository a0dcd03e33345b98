package protostream

import (
	"encoding/json"
	"sort"
)

// messages translates one messages-tuple event ([message, metadata]):
// AI chunks open (or continue) a streamed message, complete messages are
// sent whole. Human and tool messages are not sent on this channel (the
// input and the tools channel carry them).
func (t *translator) messages(ns []string, payload any) []out {
	pair, _ := payload.([]any)
	if len(pair) != 2 {
		return nil
	}
	msg, _ := pair[0].(map[string]any)
	meta, _ := pair[1].(map[string]any)
	node, _ := meta["langgraph_node"].(string)
	id, _ := msg["id"].(string)
	switch msg["type"] {
	case "AIMessageChunk":
		return t.chunk(ns, node, id, msg)
	case "ai":
		evs := t.finish(ns)
		return append(evs, t.whole(ns, node, id, msg)...)
	}
	return nil
}

// chunk continues the namespace's streamed message, or ends it and starts
// a new one when the chunk belongs to another message.
func (t *translator) chunk(ns []string, node, id string, msg map[string]any) []out {
	key := nsKey(ns)
	var evs []out
	sm := t.active[key]
	if sm != nil && sm.id != id {
		evs = t.finish(ns)
		sm = nil
	}
	if sm == nil {
		sm = &streamingMessage{id: id, node: node, ns: ns, index: -1}
		t.active[key] = sm
		evs = append(evs, t.start(ns, node, id))
	}
	if kw, ok := msg["additional_kwargs"].(map[string]any); ok {
		if r, ok := kw["reasoning_content"].(string); ok && r != "" {
			evs = append(evs, sm.delta("reasoning", r)...)
		}
	}
	if text, ok := msg["content"].(string); ok && text != "" {
		evs = append(evs, sm.delta("text", text)...)
	}
	if calls, ok := msg["tool_call_chunks"].([]any); ok {
		for _, c := range calls {
			sm.addCallChunk(c)
		}
	}
	if u, ok := msg["usage_metadata"]; ok && u != nil {
		sm.usage = u
	}
	if rm, ok := msg["response_metadata"].(map[string]any); ok {
		if r, ok := rm["finish_reason"].(string); ok {
			sm.reason = r
		}
	}
	return evs
}

func (t *translator) start(ns []string, node, id string) out {
	return out{method: "messages", ns: ns, node: node, data: map[string]any{
		"event": "message-start", "role": "ai", "id": id,
		"metadata": map[string]any{"run_id": t.runID, "thread_id": t.thread},
	}}
}

// delta appends to the open block of kind, closing a block of the other
// kind first.
func (sm *streamingMessage) delta(kind, text string) []out {
	var evs []out
	if sm.index >= 0 && sm.kind != kind {
		evs = append(evs, sm.closeBlock())
	}
	if sm.index < 0 || sm.kind != kind {
		sm.index++
		sm.kind = kind
		sm.text.Reset()
		evs = append(evs, sm.event("content-block-start", map[string]any{"index": sm.index, "content": block(kind, "")}))
	}
	sm.text.WriteString(text)
	d := map[string]any{"type": "text-delta", "text": text}
	if kind == "reasoning" {
		d = map[string]any{"type": "reasoning-delta", "reasoning": text}
	}
	return append(evs, sm.event("content-block-delta", map[string]any{"index": sm.index, "delta": d}))
}

func block(kind, text string) map[string]any {
	if kind == "reasoning" {
		return map[string]any{"type": "reasoning", "reasoning": text}
	}
	return map[string]any{"type": "text", "text": text}
}

func (sm *streamingMessage) event(name string, fields map[string]any) out {
	fields["event"] = name
	return out{method: "messages", ns: sm.ns, node: sm.node, data: fields}
}

// closeBlock finishes the open block; the next block takes the next index.
func (sm *streamingMessage) closeBlock() out {
	ev := sm.event("content-block-finish", map[string]any{"index": sm.index, "content": block(sm.kind, sm.text.String())})
	sm.kind = ""
	return ev
}

// addCallChunk merges a tool_call_chunk into the call of its index.
func (sm *streamingMessage) addCallChunk(c any) {
	ch, _ := c.(map[string]any)
	idx, _ := ch["index"].(float64)
	for _, call := range sm.calls {
		if call["index"] == idx {
			if s, ok := ch["args"].(string); ok {
				call["args"] = call["args"].(string) + s
			}
			if id, ok := ch["id"].(string); ok && id != "" {
				call["id"] = id
			}
			if n, ok := ch["name"].(string); ok && n != "" {
				call["name"] = n
			}
			return
		}
	}
	args, _ := ch["args"].(string)
	call := map[string]any{"index": idx, "args": args, "id": ch["id"], "name": ch["name"]}
	sm.calls = append(sm.calls, call)
}

// finish ends the namespace's streamed message: its open block, its tool
// calls as finished tool_call blocks, then message-finish.
func (t *translator) finish(ns []string) []out {
	key := nsKey(ns)
	sm := t.active[key]
	if sm == nil {
		return nil
	}
	delete(t.active, key)
	return sm.finishEvents()
}

func (sm *streamingMessage) finishEvents() []out {
	var evs []out
	if sm.kind != "" {
		evs = append(evs, sm.closeBlock())
	}
	sort.SliceStable(sm.calls, func(i, j int) bool { return sm.calls[i]["index"].(float64) < sm.calls[j]["index"].(float64) })
	for _, c := range sm.calls {
		var args map[string]any
		if s, _ := c["args"].(string); s != "" {
			_ = json.Unmarshal([]byte(s), &args)
		}
		if args == nil {
			args = map[string]any{}
		}
		evs = append(evs, sm.toolCallBlock(map[string]any{"type": "tool_call", "id": c["id"], "name": c["name"], "args": args})...)
	}
	fin := map[string]any{"reason": finishReason(sm.reason, len(sm.calls) > 0)}
	if sm.usage != nil {
		fin["usage"] = sm.usage
	}
	return append(evs, sm.event("message-finish", fin))
}

// toolCallBlock sends one whole tool_call block.
func (sm *streamingMessage) toolCallBlock(tc map[string]any) []out {
	sm.index++
	return []out{
		sm.event("content-block-start", map[string]any{"index": sm.index, "content": tc}),
		sm.event("content-block-finish", map[string]any{"index": sm.index, "content": tc}),
	}
}

func finishReason(r string, calls bool) string {
	switch {
	case r == "tool_calls" || r == "" && calls:
		return "tool_use"
	case r == "length":
		return "length"
	}
	return "stop"
}

// whole sends a complete AI message that was not streamed.
func (t *translator) whole(ns []string, node, id string, msg map[string]any) []out {
	sm := &streamingMessage{id: id, node: node, ns: ns, index: -1}
	evs := []out{t.start(ns, node, id)}
	if text := contentText(msg["content"]); text != "" {
		evs = append(evs, sm.delta("text", text)...)
	}
	if calls, ok := msg["tool_calls"].([]any); ok {
		for i, c := range calls {
			call, _ := c.(map[string]any)
			sm.calls = append(sm.calls, map[string]any{"index": float64(i), "args": argsText(call["args"]), "id": call["id"], "name": call["name"]})
		}
	}
	sm.usage = msg["usage_metadata"]
	if rm, ok := msg["response_metadata"].(map[string]any); ok {
		sm.reason, _ = rm["finish_reason"].(string)
	}
	return append(evs, sm.finishEvents()...)
}

func argsText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	raw, _ := json.Marshal(v)
	return string(raw)
}

// contentText is the text of a message's content: a string, or the text
// blocks of a list.
func contentText(c any) string {
	switch v := c.(type) {
	case string:
		return v
	case []any:
		s := ""
		for _, b := range v {
			if m, ok := b.(map[string]any); ok && m["type"] == "text" {
				t, _ := m["text"].(string)
				s += t
			}
		}
		return s
	}
	return ""
}

// finishAll ends every streamed message of the run (it ended).
func (t *translator) finishAll() []out {
	keys := make([]string, 0, len(t.active))
	for k := range t.active {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var evs []out
	for _, k := range keys {
		evs = append(evs, t.active[k].finishEvents()...)
		delete(t.active, k)
	}
	return evs
}
