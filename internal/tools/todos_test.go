package tools

import (
	"reflect"
	"strings"
	"testing"
)

func TestWriteTodos(t *testing.T) {
	t.Parallel()
	tool := NewWriteTodos()
	in := []any{
		map[string]any{"content": "read the spec", "status": "completed"},
		map[string]any{"content": "write the code", "status": "in_progress"},
		map[string]any{"content": "test it", "status": "pending", "extra": "dropped"},
	}
	res, err := callTool(t, tool, "", map[string]any{"todos": in})
	if err != nil {
		t.Fatal(err)
	}
	want := []any{
		map[string]any{"content": "read the spec", "status": "completed"},
		map[string]any{"content": "write the code", "status": "in_progress"},
		map[string]any{"content": "test it", "status": "pending"},
	}
	if !reflect.DeepEqual(res.Update, map[string]any{"todos": want}) {
		t.Errorf("update = %#v", res.Update)
	}
	wantText := `Updated todo list to [{"content":"read the spec","status":"completed"},{"content":"write the code","status":"in_progress"},{"content":"test it","status":"pending"}]`
	if res.Content != wantText {
		t.Errorf("content = %q", res.Content)
	}

	// An empty list clears the plan.
	res, err = callTool(t, tool, "", map[string]any{"todos": []any{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Update["todos"].([]any); len(got) != 0 {
		t.Errorf("cleared update = %#v", got)
	}
}

func TestWriteTodosValidation(t *testing.T) {
	t.Parallel()
	tool := NewWriteTodos()
	many := make([]any, maxTodos+1)
	for i := range many {
		many[i] = map[string]any{"content": "x", "status": "pending"}
	}
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{}, `"todos": is required`},
		{map[string]any{"todos": "do things"}, "must be an array"},
		{map[string]any{"todos": []any{"do things"}}, "item 0 must be an object"},
		{map[string]any{"todos": []any{map[string]any{"status": "pending"}}}, "item 0 needs a non-empty string content"},
		{map[string]any{"todos": []any{map[string]any{"content": "", "status": "pending"}}}, "non-empty"},
		{map[string]any{"todos": []any{
			map[string]any{"content": "a", "status": "pending"},
			map[string]any{"content": "b", "status": "done"},
		}}, `item 1 has status "done"; use "pending", "in_progress" or "completed"`},
		{map[string]any{"todos": []any{map[string]any{"content": "a"}}}, "item 0 has status"},
		{map[string]any{"todos": many}, "the limit is"},
	} {
		res, err := callTool(t, tool, "", c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("write_todos(%v) = %v, %v; want error containing %q", c.args, res, err, c.want)
		}
	}
}
