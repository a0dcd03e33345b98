// Package jsonx holds small helpers for JSON values decoded into Go's generic
// form (map[string]any, []any, string, float64, bool, nil), and for encoded
// JSON objects split into their members without decoding them
// (members.go: the request path's way to leave a large value undecoded).
package jsonx

import (
	"encoding/json"
	"reflect"
)

// Contains reports whether doc contains filter in the sense of PostgreSQL's
// jsonb @> operator: objects match when every key of filter is present in doc
// with a contained value, arrays match when every element of filter is
// contained in some element of doc, and scalars match when equal.
func Contains(doc, filter any) bool {
	switch f := filter.(type) {
	case map[string]any:
		d, ok := doc.(map[string]any)
		if !ok {
			return false
		}
		for k, fv := range f {
			dv, present := d[k]
			if !present || !Contains(dv, fv) {
				return false
			}
		}
		return true
	case []any:
		d, ok := doc.([]any)
		if !ok {
			return false
		}
		for _, fv := range f {
			found := false
			for _, dv := range d {
				if Contains(dv, fv) {
					found = true
					break
				}
			}
			if !found {
				return false
			}
		}
		return true
	default:
		return scalarEqual(doc, filter)
	}
}

func scalarEqual(a, b any) bool {
	an, aok := a.(json.Number)
	bn, bok := b.(json.Number)
	if aok {
		if f, err := an.Float64(); err == nil {
			a = f
		}
	}
	if bok {
		if f, err := bn.Float64(); err == nil {
			b = f
		}
	}
	return reflect.DeepEqual(a, b)
}

// Clone returns a deep copy of a generic JSON value.
func Clone(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = Clone(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = Clone(e)
		}
		return out
	default:
		return v
	}
}

// CloneMap deep-copies an object; nil stays nil.
func CloneMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	return Clone(m).(map[string]any)
}

// Merge returns a shallow merge of base and over (over wins), never nil.
func Merge(base, over map[string]any) map[string]any {
	out := make(map[string]any, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}
