package graphs

import (
	"context"
	"fmt"
	"sort"

	"github.com/google/uuid"

	"agentserver/internal/channels"
	"agentserver/internal/graph"
)

// builtins maps built-in graph names to constructors.
var builtins = map[string]func() *Definition{
	"echo": Echo,
}

// RegisterBuiltin adds a built-in graph; langgraph.json can then name it as
// "builtin:<name>". It is meant for programs that embed the server (tests
// register graphs of their own); it is not safe to call concurrently with Load.
func RegisterBuiltin(name string, build func() *Definition) {
	builtins[name] = build
}

func builtinNames() []string {
	var names []string
	for n := range builtins {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// messagesSchema is the JSON Schema of a LangChain message list.
func messagesSchema() map[string]any {
	return map[string]any{
		"type":        "array",
		"description": "Conversation messages, in LangChain's serialized form or as {role, content} objects.",
		"items": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"type":    map[string]any{"type": "string", "enum": []any{"human", "ai", "system", "tool", "remove"}},
				"role":    map[string]any{"type": "string"},
				"content": map[string]any{"anyOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "array"}}},
				"id":      map[string]any{"type": "string"},
			},
			"additionalProperties": true,
		},
	}
}

func objectSchema(title string, props map[string]any) map[string]any {
	return map[string]any{"title": title, "type": "object", "properties": props, "additionalProperties": true}
}

// Echo is the deterministic built-in graph: it appends one AI message whose
// content is "echo: " followed by the content of the last human message.
func Echo() *Definition {
	state := objectSchema("EchoState", map[string]any{"messages": messagesSchema()})
	return &Definition{
		Description:   "Deterministic graph that echoes the last user message; needs no model.",
		InputSchema:   objectSchema("EchoInput", map[string]any{"messages": messagesSchema()}),
		OutputSchema:  state,
		StateSchema:   state,
		ConfigSchema:  objectSchema("EchoConfig", map[string]any{}),
		ContextSchema: objectSchema("EchoContext", map[string]any{}),
		Nodes: []Node{
			{ID: "__start__", Type: "schema", Data: "__start__"},
			{ID: "echo", Type: "runnable", Data: "echo"},
			{ID: "__end__", Type: "schema", Data: "__end__"},
		},
		Edges: []Edge{{Source: "__start__", Target: "echo"}, {Source: "echo", Target: "__end__"}},
		Graph: &graph.Graph{Entry: "echo", Nodes: map[string]graph.Node{"echo": echoNode}},
	}
}

// echoNode answers the last human message with "echo: " + its content.
func echoNode(ctx context.Context, rt *graph.Runtime, state graph.State) (graph.Update, error) {
	content := lastHumanContent(state[channels.MessagesChannel])
	msg := map[string]any{
		"type": "ai", "id": uuid.NewString(), "content": "echo: " + content,
		"tool_calls": []any{}, "additional_kwargs": map[string]any{}, "response_metadata": map[string]any{},
	}
	return graph.Update{Values: map[string]any{channels.MessagesChannel: []any{msg}}}, nil
}

func lastHumanContent(v any) string {
	msgs, _ := v.([]any)
	for i := len(msgs) - 1; i >= 0; i-- {
		m, ok := msgs[i].(map[string]any)
		if !ok || m["type"] != "human" {
			continue
		}
		switch c := m["content"].(type) {
		case string:
			return c
		case []any:
			text := ""
			for _, block := range c {
				if b, ok := block.(map[string]any); ok && b["type"] == "text" {
					text += fmt.Sprint(b["text"])
				}
			}
			return text
		default:
			return fmt.Sprint(c)
		}
	}
	return ""
}
