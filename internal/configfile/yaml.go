package configfile

import (
	"errors"
	"fmt"

	yaml "go.yaml.in/yaml/v4"
)

// parseYAML parses a YAML document; nil for an empty one (no content, or
// comments only).
func parseYAML(file string, raw []byte) (*node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, yamlError(file, raw, err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, nil
	}
	return fromYAML(file, doc.Content[0], 0)
}

// yamlError turns the parser's error into a positioned one.
func yamlError(file string, raw []byte, err error) error {
	var le *yaml.LoadError
	if !errors.As(err, &le) || le.Mark.Line == 0 {
		return &Error{File: file, Msg: fmt.Sprintf("YAML syntax: %v", err)}
	}
	msg := "YAML syntax: " + le.Message
	if le.ContextMsg != "" && le.ContextMark.Line > 0 && le.ContextMark != le.Mark {
		msg += fmt.Sprintf(" (%s from %d:%d)", le.ContextMsg, le.ContextMark.Line, le.ContextMark.Column)
	}
	if i := le.Mark.Index; i >= 0 && i < len(raw) && raw[i] == '\t' {
		msg += " (YAML is indented with spaces, not tabs)"
	}
	return &Error{File: file, Line: le.Mark.Line, Column: le.Mark.Column, Msg: msg}
}

// maxAliasDepth bounds alias chains (an alias of an alias of ...).
const maxAliasDepth = 32

// fromYAML converts a yaml.Node (aliases followed, merge keys applied).
func fromYAML(file string, y *yaml.Node, depth int) (*node, error) {
	n := &node{line: y.Line, col: y.Column}
	fail := func(format string, args ...any) error {
		return &Error{File: file, Line: y.Line, Column: y.Column, Msg: fmt.Sprintf(format, args...)}
	}
	switch y.Kind {
	case yaml.AliasNode:
		if depth >= maxAliasDepth || y.Alias == nil {
			return nil, fail("alias *%s: too deep or unknown", y.Value)
		}
		return fromYAML(file, y.Alias, depth+1)
	case yaml.MappingNode:
		n.kind = kindObject
		seen := map[string]int{}
		add := func(m member, merged bool) error {
			if i, dup := seen[m.name]; dup {
				if merged {
					return nil // keys of the mapping win over merged ones
				}
				first := n.keys[i]
				return &Error{File: file, Line: m.line, Column: m.col, Msg: fmt.Sprintf("key %q appears twice (first at %d:%d)", m.name, first.line, first.col)}
			}
			seen[m.name] = len(n.keys)
			n.keys = append(n.keys, m)
			return nil
		}
		var merges []*node
		for i := 0; i+1 < len(y.Content); i += 2 {
			k, v := y.Content[i], y.Content[i+1]
			val, err := fromYAML(file, v, depth)
			if err != nil {
				return nil, err
			}
			if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
				merges = append(merges, val)
				continue
			}
			if k.Kind != yaml.ScalarNode {
				return nil, &Error{File: file, Line: k.Line, Column: k.Column, Msg: "a key must be a plain value, not a list or mapping"}
			}
			if err := add(member{name: k.Value, line: k.Line, col: k.Column, value: val}, false); err != nil {
				return nil, err
			}
		}
		for _, m := range merges {
			sources := []*node{m}
			if m.kind == kindArray {
				sources = m.items
			}
			for _, s := range sources {
				if s.kind != kindObject {
					return nil, &Error{File: file, Line: s.line, Column: s.col, Msg: "a merge key (<<) takes a mapping or a list of mappings"}
				}
				for _, k := range s.keys {
					if err := add(k, true); err != nil {
						return nil, err
					}
				}
			}
		}
	case yaml.SequenceNode:
		n.kind = kindArray
		for _, c := range y.Content {
			item, err := fromYAML(file, c, depth)
			if err != nil {
				return nil, err
			}
			n.items = append(n.items, item)
		}
	case yaml.ScalarNode:
		var v any
		if err := y.Decode(&v); err != nil {
			return nil, fail("%v", err)
		}
		switch v := v.(type) {
		case nil:
			n.kind = kindNull
		case string:
			n.kind, n.scalar = kindString, v
		case bool:
			n.kind, n.scalar = kindBool, v
		case int, int64, uint64, float64:
			n.kind, n.scalar = kindNumber, v
		default: // timestamps and the like: keep the text
			n.kind, n.scalar = kindString, y.Value
		}
	default:
		return nil, fail("unsupported YAML node")
	}
	return n, nil
}
