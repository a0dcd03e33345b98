package graphs

import (
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

// parseEntry reads a graph entry: a source string or an object with path
// and description.
func parseEntry(raw json.RawMessage) (source, description string, err error) {
	if err := json.Unmarshal(raw, &source); err == nil {
		return source, "", nil
	}
	var obj struct {
		Path        string `json:"path"`
		Description string `json:"description"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil || obj.Path == "" {
		return "", "", fmt.Errorf("%w: a graph entry is a source string or an object with \"path\" (and \"description\")", ErrInvalidConfig)
	}
	return obj.Path, obj.Description, nil
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

// CodeDefinition is the definition of a JavaScript graph run by runner.
// drawing is the graph's drawing as LangChain's Graph.toJSON() writes it
// (nil: none, for a factory whose graph needs a run's config); the
// schemas are drawn from stateKeys, the graph's state channels: an object
// with one property per channel (a message list for "messages"), since
// the channels' types are not known outside the worker.
func CodeDefinition(e CodeEntry, runner graph.Runner, drawing json.RawMessage, stateKeys []string) (*Definition, error) {
	d := &Definition{ID: e.ID, Source: e.Source, Description: e.Description, Worker: runner}
	if len(drawing) > 0 && string(drawing) != "null" {
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
		if err := json.Unmarshal(drawing, &g); err != nil {
			return nil, fmt.Errorf("graph %q: drawing: %w", e.ID, err)
		}
		for _, n := range g.Nodes {
			d.Nodes = append(d.Nodes, Node{ID: fmt.Sprint(n.ID), Type: n.Type, Data: n.Data, Meta: n.Meta})
		}
		for _, ed := range g.Edges {
			d.Edges = append(d.Edges, Edge{Source: fmt.Sprint(ed.Source), Target: fmt.Sprint(ed.Target), Conditional: ed.Conditional, Data: ed.Data})
		}
	}
	props := map[string]any{}
	for _, k := range stateKeys {
		if k == "messages" {
			props[k] = messagesSchema()
		} else {
			props[k] = map[string]any{}
		}
	}
	d.InputSchema = objectSchema(e.ID+"Input", props)
	d.OutputSchema = objectSchema(e.ID+"Output", props)
	d.StateSchema = objectSchema(e.ID+"State", props)
	d.ConfigSchema = objectSchema(e.ID+"Config", map[string]any{})
	d.ContextSchema = objectSchema(e.ID+"Context", map[string]any{})
	return d, nil
}
