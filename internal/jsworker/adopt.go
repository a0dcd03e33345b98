package jsworker

import (
	"encoding/json"
	"fmt"
	"time"

	"agentserver/internal/graph"
)

// adoptedVersion is the channel version LangGraph.js is told an adopted
// checkpoint's channels have: any number works, since a StateGraph's nodes
// are triggered by its branch channels, which an adopted checkpoint does
// not have, and the next write of a channel versions it above this one.
const adoptedVersion = 1

// adopt returns the LangGraph.js form of a checkpoint that another graph
// (the Go executor) wrote, so that a JavaScript graph can continue its
// thread: a checkpoint (LangGraph.js's JSON serializer's form) whose
// channel values are the stored values, message lists revived as
// LangChain messages, every channel at one version, nothing seen and
// nothing pending. A checkpoint with nodes still to run (a paused or
// stopped run of the other graph) is refused: its tasks are not
// LangGraph.js tasks.
func adopt(cp graph.Checkpoint) (checkpoint, metadata json.RawMessage, err error) {
	if len(cp.Next) > 0 {
		return nil, nil, fmt.Errorf("checkpoint %s %w and still has nodes to run (%v): finish or update that run first", cp.CheckpointID, errNotJS, cp.Next)
	}
	values := make(map[string]any, len(cp.Values))
	versions := make(map[string]int, len(cp.Values))
	for k, v := range cp.Values {
		values[k] = lcMessages(v)
		versions[k] = adoptedVersion
	}
	checkpoint, err = json.Marshal(map[string]any{
		"v":                4,
		"id":               cp.CheckpointID.String(),
		"ts":               cp.CreatedAt.UTC().Format(time.RFC3339Nano),
		"channel_values":   values,
		"channel_versions": versions,
		"versions_seen":    map[string]any{},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("checkpoint %s: %w", cp.CheckpointID, err)
	}
	md := map[string]any{"source": "loop", "step": -1, "parents": map[string]any{}, "writes": nil}
	for _, k := range []string{"source", "step", "parents"} {
		if v, ok := cp.Metadata[k]; ok {
			md[k] = v
		}
	}
	metadata, err = json.Marshal(md)
	if err != nil {
		return nil, nil, fmt.Errorf("checkpoint %s metadata: %w", cp.CheckpointID, err)
	}
	return checkpoint, metadata, nil
}

// lcClasses maps a message's type, as the API shows it, to its LangChain
// class.
var lcClasses = map[string]string{
	"human":  "HumanMessage",
	"ai":     "AIMessage",
	"tool":   "ToolMessage",
	"system": "SystemMessage",
}

// lcMessages returns v with its messages in LangChain's serialized form
// ({"lc": 1, "type": "constructor", "id": [...], "kwargs": {...}}), which
// LangGraph.js's serializer revives as message objects, when v is a list
// of messages as the API shows them (objects with a known type and a
// content); v itself otherwise.
func lcMessages(v any) any {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return v
	}
	out := make([]any, len(list))
	for i, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			return v
		}
		class, ok := lcClasses[fmt.Sprint(m["type"])]
		if _, hasContent := m["content"]; !ok || !hasContent {
			return v
		}
		kwargs := make(map[string]any, len(m))
		for k, x := range m {
			if k != "type" && x != nil {
				kwargs[k] = x
			}
		}
		out[i] = map[string]any{"lc": 1, "type": "constructor", "id": []string{"langchain_core", "messages", class}, "kwargs": kwargs}
	}
	return out
}
