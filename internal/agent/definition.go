package agent

import (
	"agentserver/internal/graphs"
)

// Definition describes the agent as a served graph: its schemas (the
// spec's, or defaults for a messages-based agent) and its drawing.
func (a *Agent) Definition() *graphs.Definition {
	s := a.spec.Schemas
	state := orSchema(s.State, defaultStateSchema())
	return &graphs.Definition{
		Description:   a.spec.Description,
		InputSchema:   orSchema(s.Input, defaultInputSchema()),
		OutputSchema:  orSchema(s.Output, state),
		StateSchema:   state,
		ConfigSchema:  orSchema(s.Config, defaultConfigSchema()),
		ContextSchema: orSchema(s.Context, defaultConfigSchema()),
		Nodes: []graphs.Node{
			{ID: "__start__", Type: "schema", Data: "__start__"},
			{ID: ModelNode, Type: "runnable", Data: ModelNode},
			{ID: ToolsNode, Type: "runnable", Data: ToolsNode},
			{ID: "__end__", Type: "schema", Data: "__end__"},
		},
		Edges: []graphs.Edge{
			{Source: "__start__", Target: ModelNode},
			{Source: ModelNode, Target: ToolsNode, Conditional: true},
			{Source: ModelNode, Target: "__end__", Conditional: true},
			{Source: ToolsNode, Target: ModelNode},
		},
		Graph: a.Graph(),
	}
}

// Resolver returns the graphs.SourceResolver that serves agent spec files.
func Resolver(opts Options) graphs.SourceResolver {
	return func(id, path string) (*graphs.Definition, error) {
		spec, err := LoadSpec(path)
		if err != nil {
			return nil, err
		}
		a, err := New(id, spec, opts)
		if err != nil {
			return nil, err
		}
		d := a.Definition()
		if d.Description == "" {
			d.Description = spec.Name
		}
		return d, nil
	}
}

func orSchema(s, def map[string]any) map[string]any {
	if len(s) > 0 {
		return s
	}
	return def
}

func messagesProperty() map[string]any {
	return map[string]any{
		"type":        "array",
		"description": "Conversation messages, in LangChain's serialized form or as {role, content} objects.",
		"items":       map[string]any{"type": "object", "additionalProperties": true},
	}
}

func defaultInputSchema() map[string]any {
	return map[string]any{"title": "AgentInput", "type": "object", "properties": map[string]any{"messages": messagesProperty()}, "additionalProperties": true}
}

func defaultStateSchema() map[string]any {
	return map[string]any{"title": "AgentState", "type": "object", "additionalProperties": true, "properties": map[string]any{
		"messages": messagesProperty(),
		"todos": map[string]any{"type": "array", "items": map[string]any{"type": "object", "properties": map[string]any{
			"content": map[string]any{"type": "string"},
			"status":  map[string]any{"type": "string", "enum": []any{"pending", "in_progress", "completed"}},
		}}},
	}}
}

func defaultConfigSchema() map[string]any {
	return map[string]any{"title": "AgentConfig", "type": "object", "additionalProperties": true, "properties": map[string]any{
		"model":         map[string]any{"type": "string", "description": "Overrides the spec's model name."},
		"system_prompt": map[string]any{"type": "string", "description": "Overrides the spec's system prompt."},
	}}
}
