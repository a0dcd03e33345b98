package configfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// position turns a byte offset of raw into a 1-based line and column (the
// column counts characters).
func position(raw []byte, off int) (line, col int) {
	off = min(max(off, 0), len(raw))
	before := raw[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	lineStart := bytes.LastIndexByte(before, '\n') + 1
	return line, utf8.RuneCount(before[lineStart:]) + 1
}

// jsonParser builds the node tree of a JSON document from the decoder's
// tokens; the decoder's offsets give each value's position.
type jsonParser struct {
	file string
	raw  []byte
	dec  *json.Decoder
}

// parseJSON parses a JSON document; nil for an empty one.
func parseJSON(file string, raw []byte) (*node, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	p := &jsonParser{file: file, raw: raw, dec: dec}
	root, err := p.value()
	if err != nil {
		return nil, err
	}
	if end := p.next(); end < len(p.raw) {
		return nil, p.errAt(end, "JSON syntax: more after the end of the top-level value")
	}
	return root, nil
}

// next is the offset where the next token starts.
func (p *jsonParser) next() int {
	off := int(p.dec.InputOffset())
	for off < len(p.raw) {
		switch p.raw[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
			continue
		}
		break
	}
	return off
}

func (p *jsonParser) errAt(off int, format string, args ...any) *Error {
	line, col := position(p.raw, off)
	return &Error{File: p.file, Line: line, Column: col, Msg: fmt.Sprintf(format, args...)}
}

// token reads the next token, turning the decoder's errors into positioned
// syntax errors.
func (p *jsonParser) token() (json.Token, int, error) {
	start := p.next()
	tok, err := p.dec.Token()
	if err == nil {
		return tok, start, nil
	}
	var syn *json.SyntaxError
	switch {
	case errors.As(err, &syn):
		off := int(syn.Offset) // the decoder's offset is the offending character's
		msg := syn.Error()
		if off >= 0 && off < len(p.raw) && (p.raw[off] == '}' || p.raw[off] == ']') && strings.Contains(msg, "looking for beginning of") {
			msg += " (JSON allows no comma after the last member)"
		}
		return nil, 0, p.errAt(off, "JSON syntax: %s", msg)
	case err == io.EOF, errors.Is(err, io.ErrUnexpectedEOF):
		return nil, 0, p.errAt(len(p.raw), "JSON syntax: the file ends before the value does (a missing } or ]?)")
	}
	return nil, 0, p.errAt(start, "JSON syntax: %v", err)
}

// value parses one value.
func (p *jsonParser) value() (*node, error) {
	tok, start, err := p.token()
	if err != nil {
		return nil, err
	}
	line, col := position(p.raw, start)
	n := &node{line: line, col: col}
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			return n, p.object(n)
		}
		if t == '[' {
			n.kind = kindArray
			for p.dec.More() {
				item, err := p.value()
				if err != nil {
					return nil, err
				}
				n.items = append(n.items, item)
			}
			_, _, err := p.token() // ]
			return n, err
		}
		return nil, p.errAt(start, "JSON syntax: unexpected %q", string(t))
	case string:
		n.kind, n.scalar = kindString, t
	case json.Number:
		n.kind, n.scalar = kindNumber, t
	case bool:
		n.kind, n.scalar = kindBool, t
	case nil:
		n.kind = kindNull
	}
	return n, nil
}

// object parses the members of an object whose { was read.
func (p *jsonParser) object(n *node) error {
	n.kind = kindObject
	seen := map[string]member{}
	for p.dec.More() {
		tok, start, err := p.token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		line, col := position(p.raw, start)
		if first, dup := seen[key]; dup {
			return &Error{File: p.file, Line: line, Column: col, Msg: fmt.Sprintf("key %q appears twice (first at %d:%d)", key, first.line, first.col)}
		}
		v, err := p.value()
		if err != nil {
			return err
		}
		m := member{name: key, line: line, col: col, value: v}
		seen[key] = m
		n.keys = append(n.keys, m)
	}
	_, _, err := p.token() // }
	return err
}
