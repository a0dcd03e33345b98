package assistants

import (
	"context"

	"agentserver/internal/jsonx"
)

// Agent is the Agent Protocol view of an assistant.
type Agent struct {
	AgentID      string          `json:"agent_id"`
	Name         string          `json:"name"`
	Description  *string         `json:"description"`
	Metadata     map[string]any  `json:"metadata"`
	Capabilities map[string]bool `json:"capabilities"`
}

// AgentSchema holds the JSON Schemas of an agent.
type AgentSchema struct {
	AgentID      string         `json:"agent_id"`
	InputSchema  map[string]any `json:"input_schema"`
	OutputSchema map[string]any `json:"output_schema"`
	StateSchema  map[string]any `json:"state_schema"`
	ConfigSchema map[string]any `json:"config_schema"`
}

// AgentQuery selects and pages agents. Zero fields do not filter.
type AgentQuery struct {
	// Name matches a case-insensitive substring of the name.
	Name     string
	Metadata map[string]any
	// Limit defaults to DefaultLimit and may not exceed MaxLimit.
	Limit  int
	Offset int
}

// agentOf builds the agent view of a. An assistant without a description
// borrows its graph's, so that agent discovery has something to show.
func (s *Service) agentOf(a Assistant) Agent {
	desc := a.Description
	if desc == nil {
		if d, ok := s.graphs.Get(a.GraphID); ok && d.Description != "" {
			v := d.Description
			desc = &v
		}
	}
	return Agent{
		AgentID:      a.AssistantID.String(),
		Name:         a.Name,
		Description:  desc,
		Metadata:     jsonx.Merge(nil, a.Metadata),
		Capabilities: map[string]bool{"ap.io.messages": true, "ap.io.streaming": true},
	}
}

// GetAgent returns the agent view of an assistant, named by UUID or graph id.
func (s *Service) GetAgent(ctx context.Context, ref string) (Agent, error) {
	a, err := s.Get(ctx, ref)
	if err != nil {
		return Agent{}, err
	}
	return s.agentOf(a), nil
}

// SearchAgents returns one page of the agents that match q, newest first,
// and the number of matching agents.
func (s *Service) SearchAgents(ctx context.Context, q AgentQuery) ([]Agent, int, error) {
	page, total, err := s.Search(ctx, Query{Name: q.Name, Metadata: q.Metadata, Limit: q.Limit, Offset: q.Offset})
	if err != nil {
		return nil, 0, err
	}
	out := make([]Agent, 0, len(page))
	for _, a := range page {
		out = append(out, s.agentOf(a))
	}
	return out, total, nil
}

// AgentSchemas returns the JSON Schemas of an agent's graph.
func (s *Service) AgentSchemas(ctx context.Context, ref string) (AgentSchema, error) {
	a, d, err := s.definition(ctx, ref)
	if err != nil {
		return AgentSchema{}, err
	}
	gs := schemaOf(d)
	return AgentSchema{
		AgentID:      a.AssistantID.String(),
		InputSchema:  gs.InputSchema,
		OutputSchema: gs.OutputSchema,
		StateSchema:  gs.StateSchema,
		ConfigSchema: gs.ConfigSchema,
	}, nil
}
