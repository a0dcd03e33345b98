package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseSpec(t *testing.T) {
	s, err := ParseSpec([]byte("name: a\nmodel: gpt-x\ntools: [ls, read_file]\nmax_turns: 3\nmiddleware:\n  interrupt_on:\n    ls: true\n    read_file: {allowed_decisions: [approve]}\n"), false)
	if err != nil {
		t.Fatal(err)
	}
	if s.Model.Name != "gpt-x" || len(s.Tools) != 2 || s.MaxTurns != 3 {
		t.Fatalf("spec = %+v", s)
	}
	j, err := ParseSpec([]byte(`{"name":"b","model":{"name":"m","temperature":0.5}}`), true)
	if err != nil || j.Model.Name != "m" || *j.Model.Temperature != 0.5 {
		t.Fatalf("json spec = %+v, %v", j, err)
	}
	cases := map[string]string{
		"colour: red\n":                               `1:1: unknown key "colour"`,
		"max_turns: many\n":                           `1:12: max_turns: want a whole number, got the string "many"`,
		"tools: [ls, ls]\n":                           "listed twice",
		"tools: [teleport]\n":                         `unknown tool "teleport"`,
		"model: {name: m, temperature: 3}\n":          "model.temperature",
		"middleware: {compaction: {max_tokens: 0}}\n": "compaction.max_tokens",
		"middleware: {interrupt_on: {ls: {allowed_decisions: [shrug]}}}\n": "unknown decision",
		"model: {name: m, colour: red}\n":                                  "colour",
	}
	for body, want := range cases {
		if _, err := ParseSpec([]byte(body), false); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want it to mention %q", body, err, want)
		}
	}
	if _, err := LoadSpec("does-not-exist.yaml"); !errors.Is(err, ErrInvalidSpec) {
		t.Errorf("missing file: %v", err)
	}
}

func TestSplitPointKeepsToolResultsWithTheirCall(t *testing.T) {
	msgs := []map[string]any{
		{"type": "human"}, {"type": "ai"}, {"type": "tool"}, {"type": "tool"}, {"type": "ai"},
	}
	if got := splitPoint(msgs, 3); got != 1 {
		t.Fatalf("split = %d, want 1 (the kept part may not start with tool results)", got)
	}
	if got := splitPoint(msgs, 10); got != 0 {
		t.Fatalf("split with little history = %d", got)
	}
}

func TestDecisionsOf(t *testing.T) {
	for name, c := range map[string]struct {
		resume any
		n      int
		ok     bool
	}{
		"wrapped list": {map[string]any{"decisions": []any{map[string]any{"type": "approve"}}}, 1, true},
		"bare list":    {[]any{map[string]any{"type": "reject"}, map[string]any{"type": "approve"}}, 2, true},
		"one for all":  {map[string]any{"type": "approve"}, 3, true},
		"string":       {"approve", 2, true},
		"wrong count":  {[]any{map[string]any{"type": "approve"}}, 2, false},
		"not a map":    {[]any{42.0}, 1, false},
		"number":       {7.0, 1, false},
	} {
		got, err := decisionsOf(c.resume, c.n)
		if (err == nil) != c.ok || (c.ok && len(got) != c.n) {
			t.Errorf("%s: %v %v", name, got, err)
		}
	}
}

// TestLoadSpecErrors pins the one line a broken spec file gets: the file,
// the place in it and what is wrong, in the file's terms.
func TestLoadSpecErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct{ file, body, want string }{
		{"empty.yaml", "", "invalid agent spec: %s: the file is empty"},
		{"blank.yaml", "\n  \n", "invalid agent spec: %s: the file is empty"},
		{"comments.yaml", "# researcher, to do\n", "invalid agent spec: %s: the file is empty"},
		{"empty.json", "", "invalid agent spec: %s: the file is empty"},
		{"syntax.yaml", "model:\n  name: [gpt\n", "invalid agent spec: %s:3:1: YAML syntax: did not find expected ',' or ']' (while parsing a flow sequence from 2:9)"},
		{"syntax.json", "{\"model\": \"m\",}", "invalid agent spec: %s:1:15: JSON syntax: invalid character '}' looking for beginning of object key string (JSON allows no comma after the last member)"},
		{"typo.yaml", "model: m\nsytem_prompt: hi\n", `invalid agent spec: %s:2:1: unknown key "sytem_prompt" (did you mean "system_prompt"?)`},
		{"nested.yaml", "model: {name: m, temprature: 1}\n", `invalid agent spec: %s:1:18: unknown key "temprature" in model (did you mean "temperature"?)`},
		{"type.yaml", "model: m\ntools: ls\n", `invalid agent spec: %s:2:8: tools: want a list, got the string "ls"`},
		{"mcp.yaml", "mcp_servers:\n  - name: fs\n    command: npx\n    args: npx -y server\n", `invalid agent spec: %s:4:11: mcp_servers[0].args: want a list, got the string "npx -y server"`},
		{"check.yaml", "max_turns: -1\n", `invalid agent spec: %s: field "max_turns": must not be negative`},
	}
	for _, c := range cases {
		path := filepath.Join(dir, c.file)
		if err := os.WriteFile(path, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadSpec(path)
		if want := fmt.Sprintf(c.want, path); err == nil || err.Error() != want {
			t.Errorf("%s:\ngot  %v\nwant %s", c.file, err, want)
		}
		if !errors.Is(err, ErrInvalidSpec) {
			t.Errorf("%s: %v is not ErrInvalidSpec", c.file, err)
		}
	}
}
