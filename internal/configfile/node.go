package configfile

import (
	"errors"
	"fmt"
)

// ErrEmpty is the cause of the Error for an empty document.
var ErrEmpty = errors.New("the file is empty")

// Error is a problem of a config document.
type Error struct {
	// File names the document ("" when it has no name).
	File string
	// Line and Column locate the problem, 1-based; 0 when it has no
	// place (an empty document).
	Line, Column int
	// Msg says what is wrong, in the document's terms.
	Msg string
	// Err is a sentinel the error wraps (ErrEmpty), or nil.
	Err error
}

// Error returns "file:line:column: message", leaving out what is unknown.
func (e *Error) Error() string {
	where := e.File
	if e.Line > 0 {
		pos := fmt.Sprintf("%d:%d", e.Line, e.Column)
		if where == "" {
			where = pos
		} else {
			where += ":" + pos
		}
	}
	if where == "" {
		return e.Msg
	}
	return where + ": " + e.Msg
}

// Unwrap returns the sentinel the error wraps.
func (e *Error) Unwrap() error { return e.Err }

// kind is the type of a document value, as the document sees it.
type kind int

const (
	kindNull kind = iota
	kindObject
	kindArray
	kindString
	kindNumber
	kindBool
)

// node is one value of a document with its position.
type node struct {
	kind      kind
	line, col int
	// keys are an object's members in document order.
	keys []member
	// items are an array's elements.
	items []*node
	// scalar is a string, a number (json.Number for JSON; int, uint64
	// or float64 for YAML) or a bool.
	scalar any
}

// member is one key of an object with its value.
type member struct {
	name      string
	line, col int
	value     *node
}

// plain returns the value as encoding/json would decode it into an any.
func (n *node) plain() any {
	switch n.kind {
	case kindObject:
		m := make(map[string]any, len(n.keys))
		for _, k := range n.keys {
			m[k.name] = k.value.plain()
		}
		return m
	case kindArray:
		s := make([]any, len(n.items))
		for i, it := range n.items {
			s[i] = it.plain()
		}
		return s
	case kindNull:
		return nil
	}
	return n.scalar
}

// describe names a value for messages: "an object", "the string \"x\"".
func (n *node) describe() string {
	switch n.kind {
	case kindObject:
		return "an object"
	case kindArray:
		return "an array"
	case kindString:
		s := n.scalar.(string)
		if len(s) > 40 {
			s = s[:37] + "..."
		}
		return fmt.Sprintf("the string %q", s)
	case kindNumber:
		return fmt.Sprintf("the number %v", n.scalar)
	case kindBool:
		return fmt.Sprintf("%v", n.scalar)
	}
	return "null"
}
