package jsonx

import (
	"encoding/json"
	"testing"
)

func TestContains(t *testing.T) {
	doc := map[string]any{"a": 1.0, "b": map[string]any{"c": "x", "d": []any{1.0, 2.0}}, "n": nil}
	cases := []struct {
		filter string
		want   bool
	}{
		{`{}`, true},
		{`{"a":1}`, true},
		{`{"a":2}`, false},
		{`{"b":{"c":"x"}}`, true},
		{`{"b":{"d":[2]}}`, true},
		{`{"b":{"d":[3]}}`, false},
		{`{"missing":null}`, false},
		{`{"n":null}`, true},
		{`{"a":"1"}`, false},
	}
	for _, c := range cases {
		var f any
		if err := json.Unmarshal([]byte(c.filter), &f); err != nil {
			t.Fatal(err)
		}
		if got := Contains(doc, f); got != c.want {
			t.Errorf("Contains(doc, %s) = %v, want %v", c.filter, got, c.want)
		}
	}
}

func TestCloneIsDeep(t *testing.T) {
	m := map[string]any{"x": map[string]any{"y": []any{1.0}}}
	c := CloneMap(m)
	c["x"].(map[string]any)["y"].([]any)[0] = 2.0
	if m["x"].(map[string]any)["y"].([]any)[0] != 1.0 {
		t.Fatal("clone aliases the original")
	}
}
