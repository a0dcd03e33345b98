package assistants

import (
	"context"
	"fmt"
	"strings"

	"agentserver/internal/graphs"
	"agentserver/internal/jsonx"
)

// Graph is the drawable structure of an assistant's graph.
type Graph struct {
	Nodes []graphs.Node `json:"nodes"`
	Edges []graphs.Edge `json:"edges"`
}

// GraphSchema holds the JSON Schemas of a graph.
type GraphSchema struct {
	GraphID       string         `json:"graph_id"`
	InputSchema   map[string]any `json:"input_schema"`
	OutputSchema  map[string]any `json:"output_schema"`
	StateSchema   map[string]any `json:"state_schema"`
	ConfigSchema  map[string]any `json:"config_schema"`
	ContextSchema map[string]any `json:"context_schema"`
}

// definition returns the assistant ref names and the definition of its graph.
func (s *Service) definition(ctx context.Context, ref string) (Assistant, *graphs.Definition, error) {
	a, err := s.Get(ctx, ref)
	if err != nil {
		return Assistant{}, nil, err
	}
	d, ok := s.graphs.Get(a.GraphID)
	if !ok {
		return Assistant{}, nil, graphNotFound(a.GraphID)
	}
	return a, d, nil
}

// Graph returns the nodes and edges of an assistant's graph. xray is the
// depth to which subgraphs are expanded (0: none, negative: all): a graph
// its host draws (a LangGraph.js graph) is drawn again with them; the
// server's own graphs have no subgraphs.
func (s *Service) Graph(ctx context.Context, ref string, xray int) (Graph, error) {
	_, d, err := s.definition(ctx, ref)
	if err != nil {
		return Graph{}, err
	}
	if dr, ok := d.Worker.(graphs.Drawer); ok && xray != 0 {
		raw, err := dr.Draw(ctx, xray)
		if err != nil {
			return Graph{}, fmt.Errorf("draw graph %q: %w", d.ID, err)
		}
		nodes, edges, err := graphs.ParseDrawing(raw)
		return Graph{Nodes: nodes, Edges: edges}, err
	}
	return Graph{
		Nodes: append([]graphs.Node{}, d.Nodes...),
		Edges: append([]graphs.Edge{}, d.Edges...),
	}, nil
}

// Schemas returns the JSON Schemas of an assistant's graph.
func (s *Service) Schemas(ctx context.Context, ref string) (GraphSchema, error) {
	_, d, err := s.definition(ctx, ref)
	if err != nil {
		return GraphSchema{}, err
	}
	return schemaOf(d), nil
}

func schemaOf(d *graphs.Definition) GraphSchema {
	return GraphSchema{
		GraphID:       d.ID,
		InputSchema:   jsonx.CloneMap(d.InputSchema),
		OutputSchema:  jsonx.CloneMap(d.OutputSchema),
		StateSchema:   jsonx.CloneMap(d.StateSchema),
		ConfigSchema:  jsonx.CloneMap(d.ConfigSchema),
		ContextSchema: jsonx.CloneMap(d.ContextSchema),
	}
}

// Subgraphs returns the schemas of the subgraphs of an assistant's graph,
// keyed by namespace ("node", "node|inner", as LangGraph names them):
// with namespace "", the graph's own subgraphs; otherwise the subgraph at
// namespace; and, with recurse, the subgraphs nested below those. A graph
// without subgraphs (or an unknown namespace) gives an empty map.
func (s *Service) Subgraphs(ctx context.Context, ref, namespace string, recurse bool) (map[string]GraphSchema, error) {
	_, d, err := s.definition(ctx, ref)
	if err != nil {
		return nil, err
	}
	out := map[string]GraphSchema{}
	for ns, sub := range d.Subgraphs {
		var keep bool
		if namespace == "" {
			keep = recurse || !strings.Contains(ns, "|")
		} else {
			keep = ns == namespace || recurse && strings.HasPrefix(ns, namespace+"|")
		}
		if keep {
			out[ns] = schemaOf(sub)
		}
	}
	return out, nil
}
