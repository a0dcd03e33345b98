package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// ErrInvalidArgument reports a tool argument that is missing or of the
// wrong type or value.
var ErrInvalidArgument = errors.New("invalid argument")

// args reads tool arguments decoded from JSON. Models are lenient about
// types, so numbers and booleans may also arrive as strings.
type args map[string]any

func argError(name, format string, a ...any) error {
	return fmt.Errorf("%w %q: %s", ErrInvalidArgument, name, fmt.Sprintf(format, a...))
}

// str returns a string argument; a missing one is "" unless required.
func (a args) str(name string, required bool) (string, error) {
	v, ok := a[name]
	if !ok || v == nil {
		if required {
			return "", argError(name, "is required")
		}
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", argError(name, "must be a string")
	}
	if required && s == "" {
		return "", argError(name, "must not be empty")
	}
	return s, nil
}

// int returns an integer argument, or def when it is missing.
func (a args) int(name string, def int) (int, error) {
	v, ok := a[name]
	if !ok || v == nil {
		return def, nil
	}
	var f float64
	switch n := v.(type) {
	case float64:
		f = n
	case int:
		return n, nil
	case int64:
		f = float64(n)
	case json.Number:
		i, err := n.Int64()
		if err != nil {
			return 0, argError(name, "must be an integer")
		}
		f = float64(i)
	case string:
		i, err := strconv.Atoi(n)
		if err != nil {
			return 0, argError(name, "must be an integer")
		}
		return i, nil
	default:
		return 0, argError(name, "must be an integer")
	}
	if f != math.Trunc(f) || math.Abs(f) > math.MaxInt32 {
		return 0, argError(name, "must be an integer")
	}
	return int(f), nil
}

// bool returns a boolean argument, or def when it is missing.
func (a args) bool(name string, def bool) (bool, error) {
	v, ok := a[name]
	if !ok || v == nil {
		return def, nil
	}
	switch b := v.(type) {
	case bool:
		return b, nil
	case string:
		p, err := strconv.ParseBool(b)
		if err != nil {
			return false, argError(name, "must be a boolean")
		}
		return p, nil
	}
	return false, argError(name, "must be a boolean")
}

// schema builds a JSON Schema object for a tool's parameters.
func schema(props map[string]any, required ...string) map[string]any {
	s := map[string]any{
		"type":                 "object",
		"properties":           props,
		"additionalProperties": false,
	}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

func prop(typ, description string) map[string]any {
	return map[string]any{"type": typ, "description": description}
}
