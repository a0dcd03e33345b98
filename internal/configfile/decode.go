package configfile

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
)

// Options tune the checks of a decode.
type Options struct {
	// Open lists the objects whose unknown keys are left alone, by path:
	// "" is the top level, "store" the store object. A caller that reads
	// some sections of a file opens the levels other callers check.
	Open []string
}

// ReadFile reads the document at path, as JSON when its name ends in
// .json and as YAML otherwise, and decodes it into out (a pointer).
func ReadFile(path string, out any, opt Options) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return Decode(path, raw, strings.EqualFold(filepath.Ext(path), ".json"), out, opt)
}

// Decode parses raw (JSON when asJSON, else YAML, which also reads JSON)
// and decodes it into out (a pointer) when every key is known and every
// value has the type out's field asks for. file names the document in
// errors.
func Decode(file string, raw []byte, asJSON bool, out any, opt Options) error {
	var root *node
	var err error
	if asJSON {
		root, err = parseJSON(file, raw)
	} else {
		root, err = parseYAML(file, raw)
	}
	if err != nil {
		return err
	}
	if root == nil || root.kind == kindNull { // "", comments, "---", "null", "~"
		return &Error{File: file, Msg: ErrEmpty.Error(), Err: ErrEmpty}
	}
	c := checker{file: file, open: map[string]bool{}}
	for _, p := range opt.Open {
		c.open[p] = true
	}
	if err := c.check(root, reflect.TypeOf(out).Elem(), ""); err != nil {
		return err
	}
	doc, err := json.Marshal(root.plain())
	if err != nil {
		return &Error{File: file, Line: root.line, Column: root.col, Msg: err.Error()}
	}
	if err := json.Unmarshal(doc, out); err != nil {
		// The check above accepts only what decodes; this is a value a
		// type's own decoder refused.
		return &Error{File: file, Line: root.line, Column: root.col, Msg: err.Error()}
	}
	return nil
}

// checker compares a node tree with the type it is decoded into.
type checker struct {
	file string
	open map[string]bool
}

var (
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
)

func (c checker) errAt(line, col int, path, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if path != "" {
		msg = path + ": " + msg
	}
	return &Error{File: c.file, Line: line, Column: col, Msg: msg}
}

// want reports a value of the wrong type.
func (c checker) want(n *node, path, what string) error {
	return c.errAt(n.line, n.col, path, "want %s, got %s", what, n.describe())
}

// check checks n against t; path names n in messages.
func (c checker) check(n *node, t reflect.Type, path string) error {
	if n.kind == kindNull {
		return nil // decodes to the zero value, as encoding/json does
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawMessageType || t.Kind() == reflect.Interface {
		return nil
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		// A type that decodes itself takes a string or, when it is a
		// struct, the object of its fields (as agent.Model does).
		if n.kind == kindString {
			return nil
		}
		if t.Kind() != reflect.Struct || n.kind != kindObject {
			return c.want(n, path, "a string or an object")
		}
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.kind != kindObject {
			return c.want(n, path, "an object")
		}
		fields := jsonFields(t)
		for _, m := range n.keys {
			f, ok := fields[m.name]
			if !ok {
				if c.open[path] {
					continue
				}
				return c.errAt(m.line, m.col, "", "%s%s", unknownKey(path, m.name), suggest(m.name, fields))
			}
			if err := c.check(m.value, f, join(path, m.name)); err != nil {
				return err
			}
		}
	case reflect.Map:
		if n.kind != kindObject {
			return c.want(n, path, "an object")
		}
		for _, m := range n.keys {
			if err := c.check(m.value, t.Elem(), join(path, m.name)); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		if n.kind != kindArray {
			return c.want(n, path, "a list")
		}
		for i, it := range n.items {
			if err := c.check(it, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.String:
		if n.kind != kindString {
			return c.want(n, path, "a string")
		}
	case reflect.Bool:
		if n.kind != kindBool {
			return c.want(n, path, "true or false")
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if f, ok := number(n); !ok || f != math.Trunc(f) {
			return c.want(n, path, "a whole number")
		} else if f < -(1<<63) || f >= 1<<63 || reflect.New(t).Elem().OverflowInt(int64(f)) {
			return c.errAt(n.line, n.col, path, "%v is out of range", n.scalar)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if f, ok := number(n); !ok || f != math.Trunc(f) || f < 0 {
			return c.want(n, path, "a whole number, 0 or more")
		} else if f >= 1<<64 || reflect.New(t).Elem().OverflowUint(uint64(f)) {
			return c.errAt(n.line, n.col, path, "%v is out of range", n.scalar)
		}
	case reflect.Float32, reflect.Float64:
		if f, ok := number(n); !ok {
			return c.want(n, path, "a number")
		} else if math.IsInf(f, 0) || math.IsNaN(f) {
			return c.errAt(n.line, n.col, path, "want a finite number, got %v", n.scalar)
		}
	}
	return nil
}

// number returns a number node's value.
func number(n *node) (float64, bool) {
	if n.kind != kindNumber {
		return 0, false
	}
	switch v := n.scalar.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		return f, err == nil
	case int:
		return float64(v), true
	case int64:
		return float64(v), true
	case uint64:
		return float64(v), true
	case float64:
		return v, true
	}
	return 0, false
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func unknownKey(path, key string) string {
	if path == "" {
		return fmt.Sprintf("unknown key %q", key)
	}
	return fmt.Sprintf("unknown key %q in %s", key, path)
}

// jsonFields maps the JSON names of t's fields (embedded structs'
// included) to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() && !f.Anonymous {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range jsonFields(ft) {
					if _, ok := out[k]; !ok {
						out[k] = v
					}
				}
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}
