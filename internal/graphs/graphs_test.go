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
