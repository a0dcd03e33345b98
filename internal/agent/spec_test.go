package agent

import (
	"errors"
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
		"colour: red\n":                               `field "colour": unknown field`,
		"max_turns: many\n":                           `field "max_turns"`,
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
