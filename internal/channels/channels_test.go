package channels

import (
	"errors"
	"testing"
)

func ids(t *testing.T, v any) []string {
	t.Helper()
	var out []string
	for _, m := range v.([]any) {
		out = append(out, m.(map[string]any)["id"].(string))
	}
	return out
}

func TestApplyMessagesAndOverwrite(t *testing.T) {
	r := NewRegistry()
	state := map[string]any{"messages": []any{map[string]any{"type": "human", "content": "a", "id": "1"}}, "x": 1.0}
	got, err := r.Apply(state, map[string]any{
		"messages": []any{
			map[string]any{"role": "assistant", "content": "b", "id": "2"},
			map[string]any{"type": "human", "content": "a2", "id": "1"},
			"plain",
		},
		"x": 2.0,
	})
	if err != nil {
		t.Fatal(err)
	}
	msgs := got["messages"].([]any)
	if len(msgs) != 3 {
		t.Fatalf("len = %d", len(msgs))
	}
	if m := msgs[0].(map[string]any); m["content"] != "a2" {
		t.Errorf("replace by id failed: %v", m)
	}
	if m := msgs[1].(map[string]any); m["type"] != "ai" || m["role"] != nil {
		t.Errorf("role not converted: %v", m)
	}
	if m := msgs[2].(map[string]any); m["type"] != "human" || m["id"] == "" {
		t.Errorf("string not converted: %v", m)
	}
	if got["x"] != 2.0 {
		t.Errorf("overwrite failed: %v", got["x"])
	}
	if state["x"] != 1.0 || len(state["messages"].([]any)) != 1 {
		t.Error("Apply mutated its input")
	}
}

func TestRemoveMessages(t *testing.T) {
	cur := []any{map[string]any{"type": "human", "id": "1"}, map[string]any{"type": "ai", "id": "2"}}
	got, err := AddMessages(cur, []any{map[string]any{"type": "remove", "id": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	if s := ids(t, got); len(s) != 1 || s[0] != "2" {
		t.Fatalf("after remove: %v", s)
	}
	got, err = AddMessages(cur, map[string]any{"type": "remove", "id": RemoveAllMessages})
	if err != nil || len(got.([]any)) != 0 {
		t.Fatalf("remove all: %v %v", got, err)
	}
	if _, err := AddMessages(cur, map[string]any{"type": "remove", "id": "nope"}); !errors.Is(err, ErrInvalidUpdate) {
		t.Fatalf("remove unknown: %v", err)
	}
	if _, err := AddMessages(cur, []any{42.0}); !errors.Is(err, ErrInvalidUpdate) {
		t.Fatalf("bad message: %v", err)
	}
}

func TestRegisteredReducer(t *testing.T) {
	r := NewRegistry()
	r.Register("count", func(cur, upd any) (any, error) {
		c, _ := cur.(float64)
		return c + upd.(float64), nil
	})
	s, _ := r.Apply(nil, map[string]any{"count": 2.0})
	s, _ = r.Apply(s, map[string]any{"count": 3.0})
	if s["count"] != 5.0 {
		t.Fatalf("count = %v", s["count"])
	}
}

// Whatever NormalizeMessage returns is normalized; the input forms it
// converts are not.
func TestIsNormalized(t *testing.T) {
	inputs := []any{
		"hello",
		map[string]any{"role": "user", "content": "hi"},
		map[string]any{"role": "assistant", "content": "x"},
		map[string]any{"type": "ai", "content": "x", "id": "a"},
		map[string]any{"type": "tool", "content": "r", "tool_call_id": "c"},
	}
	for _, in := range inputs {
		if m, ok := in.(map[string]any); ok && IsNormalized(m) {
			t.Errorf("%v: input form reported normalized", in)
		}
		out, err := NormalizeMessage(in)
		if err != nil {
			t.Fatal(err)
		}
		if !IsNormalized(out) {
			t.Errorf("%v: NormalizeMessage output %v not reported normalized", in, out)
		}
	}
	if IsNormalized(map[string]any{"type": "remove", "id": "x"}) {
		t.Error("a remove marker is not a message of the state")
	}
}
