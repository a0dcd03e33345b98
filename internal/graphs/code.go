package graphs

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"agentserver/internal/graph"
)

// CodeEntry is a graph of langgraph.json written as JavaScript code:
// "path:export" or {"path": "path:export", "description": …}.
type CodeEntry struct {
	ID string
	// Source is the entry as written; Path is its module, absolute, and
	// Export the name of the module's export ("default" when none is
	// given).
	Source, Path, Export string
	Description          string
}

// CodeResolver builds the definition of a JavaScript graph entry (its
// runner, drawing and schemas).
type CodeResolver func(e CodeEntry) (*Definition, error)

// parseEntry checks a graph entry: its source must not be empty.
func parseEntry(e Entry) (source, description string, err error) {
	if e.Path == "" {
		return "", "", fmt.Errorf("%w: a graph entry is a source string or an object with \"path\" (and \"description\")", ErrInvalidConfig)
	}
	return e.Path, e.Description, nil
}

// splitExport splits "path:export" into its file and export; the export
// is "" when none is given.
func splitExport(src string) (file, export string) {
	i := strings.LastIndex(src, ":")
	if i <= 0 || strings.ContainsAny(src[i+1:], `/\.`) {
		return src, ""
	}
	return src[:i], src[i+1:]
}

func codeEntry(dir, id, source, description string) CodeEntry {
	file, export := splitExport(source)
	if export == "" {
		export = "default"
	}
	if !filepath.IsAbs(file) {
		file = filepath.Join(dir, file)
	}
	return CodeEntry{ID: id, Source: source, Path: file, Export: export, Description: description}
}

// ReadCode lists the JavaScript graph entries of the langgraph.json at
// path, sorted by id, with its node_version, without loading anything.
func ReadCode(path string) (entries []CodeEntry, nodeVersion string, err error) {
	f, err := readFile(path)
	if err != nil {
		return nil, "", err
	}
	for id, raw := range f.Graphs {
		source, description, err := parseEntry(raw)
		if err != nil {
			return nil, "", fmt.Errorf("%s: graphs.%s: %w", path, id, err)
		}
		if codeLanguage(source) == "JavaScript" {
			entries = append(entries, codeEntry(filepath.Dir(path), id, source, description))
		}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].ID < entries[j].ID })
	return entries, f.NodeVersion, nil
}

// CodeLoad is what a graph worker found behind a JavaScript graph entry
// when it loaded it.
type CodeLoad struct {
	// Drawing is the graph's drawing as LangChain's Graph.toJSON() writes
	// it (nil: none, for a factory whose graph needs a run's config).
	Drawing json.RawMessage
	// StateKeys are the graph's state channels.
	StateKeys []string
	// Subgraphs are the state channels of the graph's subgraphs, by
	// namespace ("node", "node|inner").
	Subgraphs map[string][]string
	// Schemas are JSON Schemas the worker derived from the graph's own
	// definitions (zod, StateSchema), by kind: "input", "output", "state",
	// "config". They replace the channel-based ones.
	Schemas map[string]map[string]any
}

// CodeDefinition is the definition of a JavaScript graph run by runner.
// Its schemas are those the worker derived (load.Schemas); the others, and
// its subgraphs', are drawn from the state channels: an object with one
// property per channel (a message list for "messages").
func CodeDefinition(e CodeEntry, runner graph.Runner, load CodeLoad) (*Definition, error) {
	d := &Definition{ID: e.ID, Source: e.Source, Description: e.Description, Worker: runner}
	if drawing := load.Drawing; len(drawing) > 0 && string(drawing) != "null" {
		var err error
		if d.Nodes, d.Edges, err = ParseDrawing(drawing); err != nil {
			return nil, fmt.Errorf("graph %q: %w", e.ID, err)
		}
	}
	channelSchemas(d, e.ID, load.StateKeys)
	for kind, target := range map[string]*map[string]any{"input": &d.InputSchema, "output": &d.OutputSchema, "state": &d.StateSchema, "config": &d.ConfigSchema} {
		if sc := load.Schemas[kind]; sc != nil {
			*target = sc
		}
	}
	if len(load.Subgraphs) > 0 {
		d.Subgraphs = map[string]*Definition{}
		for ns, keys := range load.Subgraphs {
			sub := &Definition{ID: e.ID}
			channelSchemas(sub, e.ID, keys)
			d.Subgraphs[ns] = sub
		}
	}
	return d, nil
}

// Drawer is implemented by the runners of graphs their host draws (a
// graph worker): Draw returns the drawing with subgraphs expanded to depth
// xray (negative: all), as LangChain's Graph.toJSON() writes it.
type Drawer interface {
	Draw(ctx context.Context, xray int) (json.RawMessage, error)
}

// ParseDrawing reads a drawing as LangChain's Graph.toJSON() writes it:
// nodes with id, type, data and metadata; edges with source, target,
// conditional and data.
func ParseDrawing(raw json.RawMessage) ([]Node, []Edge, error) {
	var g struct {
		Nodes []struct {
			ID   any            `json:"id"`
			Type string         `json:"type"`
			Data any            `json:"data"`
			Meta map[string]any `json:"metadata"`
		} `json:"nodes"`
		Edges []struct {
			Source      any  `json:"source"`
			Target      any  `json:"target"`
			Conditional bool `json:"conditional"`
			Data        any  `json:"data"`
		} `json:"edges"`
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		return nil, nil, fmt.Errorf("drawing: %w", err)
	}
	nodes := make([]Node, 0, len(g.Nodes))
	for _, n := range g.Nodes {
		nodes = append(nodes, Node{ID: fmt.Sprint(n.ID), Type: n.Type, Data: n.Data, Meta: n.Meta})
	}
	edges := make([]Edge, 0, len(g.Edges))
	for _, ed := range g.Edges {
		edges = append(edges, Edge{Source: fmt.Sprint(ed.Source), Target: fmt.Sprint(ed.Target), Conditional: ed.Conditional, Data: ed.Data})
	}
	return nodes, edges, nil
}

// channelSchemas sets d's schemas to objects with one property per state
// channel (a message list for "messages").
func channelSchemas(d *Definition, name string, stateKeys []string) {
	props := map[string]any{}
	for _, k := range stateKeys {
		if k == "messages" {
			props[k] = messagesSchema()
		} else {
			props[k] = map[string]any{}
		}
	}
	d.InputSchema = objectSchema(name+"Input", props)
	d.OutputSchema = objectSchema(name+"Output", props)
	d.StateSchema = objectSchema(name+"State", props)
	d.ConfigSchema = objectSchema(name+"Config", map[string]any{})
	d.ContextSchema = objectSchema(name+"Context", map[string]any{})
}
