package graphs

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

func write(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadBuiltinAndEnv(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, ".env", "# comment\nGRAPHS_TEST_A=from-file\nexport GRAPHS_TEST_B=\"quoted\"\n")
	t.Setenv("GRAPHS_TEST_A", "preset")
	os.Unsetenv("GRAPHS_TEST_B")
	t.Cleanup(func() { os.Unsetenv("GRAPHS_TEST_B") })
	p := write(t, dir, "langgraph.json", `{"graphs":{"echo":"builtin:echo","e2":"builtin:echo"},"env":".env"}`)
	r, err := Load(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ids := r.IDs(); len(ids) != 2 || ids[0] != "e2" || ids[1] != "echo" {
		t.Fatalf("ids = %v", ids)
	}
	d, ok := r.Get("e2")
	if !ok || d.ID != "e2" || len(d.Nodes) != 3 {
		t.Fatalf("definition = %+v", d)
	}
	if os.Getenv("GRAPHS_TEST_A") != "preset" || os.Getenv("GRAPHS_TEST_B") != "quoted" {
		t.Fatalf("env: A=%q B=%q", os.Getenv("GRAPHS_TEST_A"), os.Getenv("GRAPHS_TEST_B"))
	}
}

func TestLoadRejects(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"empty":   `{"graphs":{}}`,
		"unknown": `{"graphs":{"x":"builtin:nope"}}`,
		"python":  `{"graphs":{"x":"./agent.py:graph"}}`,
		"badjson": `{"graphs":`,
	} {
		p := write(t, dir, name+".json", body)
		if _, err := Load(p, nil); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: err = %v, want ErrInvalidConfig", name, err)
		}
	}
}

// TestLoadExplainsGraphCode checks that Python graph sources (file and
// module forms) are refused with one message pointing at the worker
// protocol, and that JavaScript sources go to the code resolver, with the
// object form's description.
func TestLoadExplainsGraphCode(t *testing.T) {
	for _, src := range []string{"./agent.py:graph", "agent.PY:app", "my_pkg.agent:graph"} {
		dir := t.TempDir()
		path := write(t, dir, "langgraph.json", `{"graphs": {"agent": "`+src+`"}}`)
		_, err := Load(path, func(id, path string) (*Definition, error) { return nil, errors.New("resolver must not be called") })
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "Python graphs are not served yet") || !strings.Contains(err.Error(), "docs/js-graphs.md#worker-protocol") {
			t.Errorf("%s: %v", src, err)
		}
	}
	dir := t.TempDir()
	path := write(t, dir, "langgraph.json", `{"graphs": {"a": "./src/agent.ts:graph", "b": {"path": "./graph.mjs", "description": "B"}, "e": "builtin:echo"}}`)
	var seen []CodeEntry
	reg, err := LoadWith(path, Sources{Code: func(e CodeEntry) (*Definition, error) {
		seen = append(seen, e)
		return &Definition{}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(seen, func(i, j int) bool { return seen[i].ID < seen[j].ID })
	want := []CodeEntry{
		{ID: "a", Source: "./src/agent.ts:graph", Path: filepath.Join(dir, "src/agent.ts"), Export: "graph"},
		{ID: "b", Source: "./graph.mjs", Path: filepath.Join(dir, "graph.mjs"), Export: "default", Description: "B"},
	}
	if !reflect.DeepEqual(seen, want) {
		t.Errorf("code entries = %+v, want %+v", seen, want)
	}
	if b, _ := reg.Get("b"); b.Description != "B" {
		t.Errorf("description of b = %q", b.Description)
	}
	if _, err := Load(path, nil); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("JavaScript entries without a code resolver: %v", err)
	}
}

// TestLoadErrorLines pins the one line each broken langgraph.json gets:
// the file, the place in it, and what is wrong in the file's terms.
func TestLoadErrorLines(t *testing.T) {
	dir := t.TempDir()
	cases := []struct{ name, body, want string }{
		{"syntax", "{\"graphs\": {\"echo\": \"builtin:echo\"},\n}", `%s:2:1: JSON syntax: invalid character '}' looking for beginning of object key string (JSON allows no comma after the last member)`},
		{"truncated", `{"graphs":`, `%s:1:11: JSON syntax: the file ends before the value does (a missing } or ]?)`},
		{"misspelt", `{"graph": {"echo": "builtin:echo"}}`, `%s:1:2: unknown key "graph" (did you mean "graphs"?)`},
		{"graphs type", `{"graphs": "builtin:echo"}`, `%s:1:12: graphs: want an object, got the string "builtin:echo"`},
		{"entry type", `{"graphs": {"echo": 5}}`, `%s:1:21: graphs.echo: want a string or an object, got the number 5`},
		{"entry key", `{"graphs": {"echo": {"pth": "builtin:echo"}}}`, `%s:1:22: unknown key "pth" in graphs.echo (did you mean "path"?)`},
		{"dependencies type", `{"graphs": {"echo": "builtin:echo"}, "dependencies": "."}`, `%s:1:54: dependencies: want a list, got the string "."`},
		{"empty graphs", `{"graphs": {}}`, `%s: "graphs" is empty: name at least one graph, e.g. {"graphs": {"echo": "builtin:echo"}}`},
		{"empty file", ``, `%s: the file is empty`},
	}
	for _, c := range cases {
		p := write(t, dir, strings.ReplaceAll(c.name, " ", "-")+".json", c.body)
		_, err := Load(p, nil)
		if want := strings.ReplaceAll(c.want, "%s", p); err == nil || err.Error() != want {
			t.Errorf("%s:\ngot  %v\nwant %s", c.name, err, want)
		}
		if !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: %v is not ErrInvalidConfig", c.name, err)
		}
	}
	// LangGraph CLI's keys for images and Python graphs are accepted.
	p := write(t, dir, "cli.json", `{"$schema": "https://langgra.ph/schema.json", "python_version": "3.12", "dockerfile_lines": [], "http": {"cors": {}}, "graphs": {"echo": "builtin:echo"}}`)
	if _, err := Load(p, nil); err != nil {
		t.Fatalf("LangGraph CLI keys: %v", err)
	}
}
