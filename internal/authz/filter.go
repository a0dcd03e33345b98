package authz

import (
	"fmt"

	"agentserver/internal/errdefs"
	"agentserver/internal/jsonx"
)

// Filter restricts what a caller sees, in LangGraph's form: {k: v} and
// {k: {"$eq": v}} require metadata k to equal v; {k: {"$contains": v}}
// requires metadata k to be a list holding v (every element of v when v
// is a list). Keys are ANDed. A nil Filter restricts nothing.
type Filter map[string]any

// Containment returns f as a JSON containment document for the metadata
// of stored objects (the form storage queries take: jsonx.Contains and the
// metadata index), or an error for an operator f does not know.
func (f Filter) Containment() (map[string]any, error) {
	if f == nil {
		return nil, nil
	}
	out := make(map[string]any, len(f))
	for k, v := range f {
		op, ok := v.(map[string]any)
		if !ok {
			out[k] = v
			continue
		}
		if len(op) != 1 {
			return nil, fmt.Errorf("auth filter on %q: want one operator ($eq or $contains): %w", k, errdefs.ErrInvalid)
		}
		switch {
		case op["$eq"] != nil:
			out[k] = op["$eq"]
		case op["$contains"] != nil:
			c := op["$contains"]
			if l, isList := c.([]any); isList {
				out[k] = l
			} else {
				out[k] = []any{c}
			}
		default:
			return nil, fmt.Errorf("auth filter on %q: unknown operator (want $eq or $contains): %w", k, errdefs.ErrInvalid)
		}
	}
	return out, nil
}

// Matches reports whether metadata satisfies f.
func (f Filter) Matches(metadata map[string]any) bool {
	c, err := f.Containment()
	if err != nil {
		return false
	}
	return len(c) == 0 || jsonx.Contains(metadata, c)
}
