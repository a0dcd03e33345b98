package configfile

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// model decodes itself from a name or an object, as agent.Model does.
type model struct {
	Name        string   `json:"name"`
	Temperature *float64 `json:"temperature"`
}

func (m *model) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, &m.Name); err == nil {
		return nil
	}
	type plain model
	return json.Unmarshal(b, (*plain)(m))
}

type doc struct {
	Graphs map[string]json.RawMessage `json:"graphs"`
	Env    any                        `json:"env"`
	Store  *struct {
		TTL *struct {
			DefaultTTL *float64 `json:"default_ttl"`
			Refresh    bool     `json:"refresh_on_read"`
		} `json:"ttl"`
	} `json:"store"`
	Model    model    `json:"model"`
	Tools    []string `json:"tools"`
	MaxTurns int      `json:"max_turns"`
}

// TestDecodeErrors pins the one line each kind of mistake gets.
func TestDecodeErrors(t *testing.T) {
	cases := []struct {
		name, body string
		json       bool
		open       []string
		want       string
	}{
		{"json trailing comma", "{\"graphs\": {\"a\": \"builtin:echo\"},\n }", true, nil,
			`lg.json:2:2: JSON syntax: invalid character '}' looking for beginning of object key string (JSON allows no comma after the last member)`},
		{"json missing comma", "{\"graphs\": {}\n \"env\": \".env\"}", true, nil,
			`lg.json:2:2: JSON syntax: invalid character '"' after object key:value pair`},
		{"json truncated", "{\"graphs\": {\"a\": \"b\"}", true, nil,
			`lg.json:1:22: JSON syntax: the file ends before the value does (a missing } or ]?)`},
		{"json extra value", "{}\n{}", true, nil,
			`lg.json:2:1: JSON syntax: more after the end of the top-level value`},
		{"json duplicate key", "{\"env\": \"a\",\n \"env\": \"b\"}", true, nil,
			`lg.json:2:2: key "env" appears twice (first at 1:2)`},
		{"unknown key with suggestion", `{"graph": {"a": "builtin:echo"}}`, true, nil,
			`lg.json:1:2: unknown key "graph" (did you mean "graphs"?)`},
		{"unknown nested key", "{\"store\": {\"ttl\": {\"default_tll\": 5}}}", true, nil,
			`lg.json:1:20: unknown key "default_tll" in store.ttl (did you mean "default_ttl"?)`},
		{"unknown key, nothing close", `{"colour": "red"}`, true, nil,
			`lg.json:1:2: unknown key "colour" (known keys: env, graphs, max_turns, model, store, tools)`},
		{"unknown key at an open level", `{"python_version": "3.12", "store": {"ttl": {"default_ttl": "x"}}}`, true, []string{""},
			`lg.json:1:61: store.ttl.default_ttl: want a number, got the string "x"`},
		{"object wanted", `{"graphs": 5}`, true, nil,
			`lg.json:1:12: graphs: want an object, got the number 5`},
		{"string wanted in a list", `{"tools": ["ls", 3]}`, true, nil,
			`lg.json:1:18: tools[1]: want a string, got the number 3`},
		{"bool wanted", `{"store": {"ttl": {"refresh_on_read": "yes"}}}`, true, nil,
			`lg.json:1:39: store.ttl.refresh_on_read: want true or false, got the string "yes"`},
		{"whole number wanted", "max_turns: 2.5\n", false, nil,
			`spec.yaml:1:12: max_turns: want a whole number, got the number 2.5`},
		{"string or object", "model: [a, b]\n", false, nil,
			`spec.yaml:1:8: model: want a string or an object, got an array`},
		{"self-decoding struct's fields", "model:\n  name: m\n  temprature: 1\n", false, nil,
			`spec.yaml:3:3: unknown key "temprature" in model (did you mean "temperature"?)`},
		{"yaml syntax", "model:\n  name: [x\n", false, nil,
			`spec.yaml:3:1: YAML syntax: did not find expected ',' or ']' (while parsing a flow sequence from 2:9)`},
		{"yaml tab", "model:\n\tname: x\n", false, nil,
			`spec.yaml:2:1: YAML syntax: found character that cannot start any token (YAML is indented with spaces, not tabs)`},
		{"yaml duplicate key", "tools: [ls]\ntools: [glob]\n", false, nil,
			`spec.yaml:2:1: key "tools" appears twice (first at 1:1)`},
		{"yaml list wanted", "tools: ls\n", false, nil,
			`spec.yaml:1:8: tools: want a list, got the string "ls"`},
		{"empty json", " \n", true, nil, `lg.json: the file is empty`},
		{"empty yaml", "", false, nil, `spec.yaml: the file is empty`},
		{"comments only", "# an agent\n\n# nothing yet\n", false, nil, `spec.yaml: the file is empty`},
		{"a document marker only", "# an agent\n---\n", false, nil, `spec.yaml: the file is empty`},
		{"yaml null", "~\n", false, nil, `spec.yaml: the file is empty`},
		{"json null", "null", true, nil, `lg.json: the file is empty`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file := "spec.yaml"
			if c.json {
				file = "lg.json"
			}
			var d doc
			err := Decode(file, []byte(c.body), c.json, &d, Options{Open: c.open})
			if err == nil || err.Error() != c.want {
				t.Fatalf("got  %v\nwant %s", err, c.want)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("%T is not an *Error", err)
			}
			if !reflect.DeepEqual(d, doc{}) {
				t.Errorf("a refused document decoded partly: %+v", d)
			}
		})
	}
}

func TestDecodeEmptyIsErrEmpty(t *testing.T) {
	var d doc
	if err := Decode("a.yaml", []byte("# x\n"), false, &d, Options{}); !errors.Is(err, ErrEmpty) {
		t.Fatalf("err = %v, want ErrEmpty", err)
	}
}

// TestDecodeAccepts decodes both syntaxes to the same values, with YAML's
// aliases and merge keys.
func TestDecodeAccepts(t *testing.T) {
	var j, y doc
	if err := Decode("lg.json", []byte(`{"graphs": {"a": "builtin:echo", "b": {"path": "./b.yaml"}}, "env": {"K": "v"},
		"store": {"ttl": {"default_ttl": 1.5, "refresh_on_read": true}}, "model": "gpt", "tools": ["ls"], "max_turns": 3}`), true, &j, Options{}); err != nil {
		t.Fatal(err)
	}
	yaml := "base: &base {default_ttl: 1.5}\ngraphs:\n  a: builtin:echo\n  b: {path: ./b.yaml}\nenv: {K: v}\nstore:\n  ttl:\n    <<: *base\n    refresh_on_read: true\nmodel: gpt\ntools: [ls]\nmax_turns: 3\n"
	if err := Decode("spec.yaml", []byte(yaml), false, &y, Options{Open: []string{""}}); err != nil {
		t.Fatal(err)
	}
	jb, _ := json.Marshal(j)
	yb, _ := json.Marshal(y)
	if string(jb) != string(yb) {
		t.Fatalf("json %s\nyaml %s", jb, yb)
	}
	if j.Model.Name != "gpt" || *j.Store.TTL.DefaultTTL != 1.5 || string(j.Graphs["a"]) != `"builtin:echo"` {
		t.Fatalf("decoded %+v", j)
	}
	var m doc
	if err := Decode("spec.yaml", []byte("model: {name: m, temperature: 0.5}\n"), false, &m, Options{}); err != nil || m.Model.Name != "m" || *m.Model.Temperature != 0.5 {
		t.Fatalf("model object: %+v, %v", m.Model, err)
	}
}

func TestSuggest(t *testing.T) {
	fields := jsonFields(reflect.TypeFor[doc]())
	for key, want := range map[string]string{
		"graph":    ` (did you mean "graphs"?)`,
		"Graphs":   ` (did you mean "graphs"?)`,
		"maxturns": ` (did you mean "max_turns"?)`,
		"tool":     ` (did you mean "tools"?)`,
		"stor":     ` (did you mean "store"?)`,
		"xyzzy":    ` (known keys: env, graphs, max_turns, model, store, tools)`,
	} {
		if got := suggest(key, fields); got != want {
			t.Errorf("suggest(%q) = %q, want %q", key, got, want)
		}
	}
}

// FuzzDecode checks that no document panics the parsers or the check, and
// that every refusal is an *Error (one line: no newline in it).
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{`{"graphs": {"a": "b"}}`, "model: {name: m}\ntools: [ls]\n", "a: &x [1]\nb: *x\n", "{\"a\": 1,}", "- [", "<<: 5", "\t", ""} {
		f.Add([]byte(seed), true)
		f.Add([]byte(seed), false)
	}
	f.Fuzz(func(t *testing.T, raw []byte, asJSON bool) {
		var d doc
		err := Decode("f", raw, asJSON, &d, Options{})
		if err == nil {
			return
		}
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("%T %v is not an *Error", err, err)
		}
		if strings.Contains(e.Msg, "\n") {
			t.Fatalf("the error is not one line: %q", e.Msg)
		}
	})
}
