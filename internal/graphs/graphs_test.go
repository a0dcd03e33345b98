package graphs

import (
	"errors"
	"os"
	"path/filepath"
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

// TestLoadExplainsGraphCode checks that LangGraph's Python and JavaScript
// graph sources get one message naming what this server runs instead.
func TestLoadExplainsGraphCode(t *testing.T) {
	for src, lang := range map[string]string{"./agent.py:graph": "Python", "./src/agent.ts:graph": "JavaScript", "./graph.mjs": "JavaScript", "agent.PY:app": "Python"} {
		dir := t.TempDir()
		path := write(t, dir, "langgraph.json", `{"graphs": {"agent": "`+src+`"}}`)
		_, err := Load(path, func(id, path string) (*Definition, error) { return nil, errors.New("resolver must not be called") })
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), lang+" graph code") || !strings.Contains(err.Error(), "agent specs (YAML or JSON files)") {
			t.Errorf("%s: %v", src, err)
		}
	}
}
