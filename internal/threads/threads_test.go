package threads_test

import (
	"fmt"
	"testing"

	"github.com/google/uuid"

	"agentserver/internal/testutil"
)

func TestThreadLifecycle(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{})
	th := s.Must(200, "POST", "/threads", map[string]any{"metadata": map[string]any{"owner": "a"}}).Object(t)
	id := th["thread_id"].(string)
	if th["status"] != "idle" || th["metadata"].(map[string]any)["owner"] != "a" {
		t.Fatalf("created = %v", th)
	}
	if _, err := uuid.Parse(id); err != nil {
		t.Fatalf("thread_id %q: %v", id, err)
	}
	got := s.Must(200, "GET", "/threads/"+id, nil).Object(t)
	if got["thread_id"] != id || got["created_at"] == nil || got["updated_at"] == nil {
		t.Fatalf("get = %v", got)
	}
	patched := s.Must(200, "PATCH", "/threads/"+id, map[string]any{"metadata": map[string]any{"extra": 1}}).Object(t)
	md := patched["metadata"].(map[string]any)
	if md["owner"] != "a" || md["extra"] != 1.0 {
		t.Fatalf("metadata not merged: %v", md)
	}
	s.Must(204, "DELETE", "/threads/"+id, nil)
	s.Must(404, "GET", "/threads/"+id, nil)
	s.Must(404, "DELETE", "/threads/"+id, nil)
}

func TestThreadCreateIfExists(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{})
	id := uuid.Must(uuid.NewV7()).String()
	s.Must(200, "POST", "/threads", map[string]any{"thread_id": id, "metadata": map[string]any{"v": 1}})
	cases := []struct {
		name   string
		body   map[string]any
		status int
	}{
		{"default raises", map[string]any{"thread_id": id}, 409},
		{"raise", map[string]any{"thread_id": id, "if_exists": "raise"}, 409},
		{"do_nothing returns existing", map[string]any{"thread_id": id, "if_exists": "do_nothing", "metadata": map[string]any{"v": 2}}, 200},
		{"bad if_exists", map[string]any{"if_exists": "sometimes"}, 422},
		{"bad thread id", map[string]any{"thread_id": "nope"}, 422},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := s.Do("POST", "/threads", c.body)
			if r.Status != c.status {
				t.Fatalf("status %d, want %d: %s", r.Status, c.status, r.Raw)
			}
			if c.status == 200 && r.Object(t)["metadata"].(map[string]any)["v"] != 1.0 {
				t.Fatalf("do_nothing changed the thread: %s", r.Raw)
			}
			if c.status >= 400 {
				body := r.Object(t)
				if body["detail"] == "" || body["detail"] != body["message"] || body["code"] == nil {
					t.Fatalf("error body = %v", body)
				}
			}
		})
	}
}

func TestThreadSearchAndCount(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{})
	var ids []string
	for i := 0; i < 7; i++ {
		th := s.Must(200, "POST", "/threads", map[string]any{"metadata": map[string]any{"group": fmt.Sprintf("g%d", i%2), "i": i}}).Object(t)
		ids = append(ids, th["thread_id"].(string))
	}
	cases := []struct {
		name  string
		body  map[string]any
		want  []string // expected ids in order
		total string
		next  string
	}{
		{"newest first by default", map[string]any{"limit": 2}, []string{ids[6], ids[5]}, "7", "2"},
		{"ascending", map[string]any{"limit": 2, "sort_order": "asc", "sort_by": "created_at"}, []string{ids[0], ids[1]}, "7", "2"},
		{"offset", map[string]any{"limit": 3, "offset": 6}, []string{ids[0]}, "7", ""},
		{"metadata", map[string]any{"metadata": map[string]any{"group": "g1"}, "sort_order": "asc"}, []string{ids[1], ids[3], ids[5]}, "3", ""},
		{"ids", map[string]any{"ids": []string{ids[2], ids[4]}, "sort_order": "asc"}, []string{ids[2], ids[4]}, "2", ""},
		{"status", map[string]any{"status": "busy"}, []string{}, "0", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := s.Must(200, "POST", "/threads/search", c.body)
			list := r.List(t)
			if len(list) != len(c.want) {
				t.Fatalf("got %d threads, want %d: %s", len(list), len(c.want), r.Raw)
			}
			for i, id := range c.want {
				if list[i].(map[string]any)["thread_id"] != id {
					t.Fatalf("position %d: %v, want %s", i, list[i], id)
				}
			}
			if got := r.Header.Get("X-Pagination-Total"); got != c.total {
				t.Errorf("X-Pagination-Total = %q, want %q", got, c.total)
			}
			if got := r.Header.Get("X-Pagination-Next"); got != c.next {
				t.Errorf("X-Pagination-Next = %q, want %q", got, c.next)
			}
		})
	}
	sel := s.Must(200, "POST", "/threads/search", map[string]any{"limit": 1, "select": []string{"thread_id", "status"}}).List(t)
	if m := sel[0].(map[string]any); len(m) != 2 || m["thread_id"] == nil || m["status"] == nil {
		t.Fatalf("select = %v", m)
	}
	s.Must(422, "POST", "/threads/search", map[string]any{"select": []string{"bogus"}})
	s.Must(422, "POST", "/threads/search", map[string]any{"limit": 0})
	s.Must(422, "POST", "/threads/search", map[string]any{"sort_by": "color"})
	if n := s.Must(200, "POST", "/threads/count", map[string]any{"metadata": map[string]any{"group": "g0"}}).JSON; n != 4.0 {
		t.Fatalf("count = %v", n)
	}
	if n := s.Must(200, "POST", "/threads/count", nil).JSON; n != 7.0 {
		t.Fatalf("count all = %v", n)
	}
}

func TestThreadStateAndHistory(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{})
	id := s.Must(200, "POST", "/threads", nil).Object(t)["thread_id"].(string)
	empty := s.Must(200, "GET", "/threads/"+id+"/state", nil).Object(t)
	if len(empty["values"].(map[string]any)) != 0 || len(empty["next"].([]any)) != 0 || empty["checkpoint"] != nil {
		t.Fatalf("empty state = %v", empty)
	}
	up1 := s.Must(200, "POST", "/threads/"+id+"/state", map[string]any{
		"values":  map[string]any{"messages": []any{map[string]any{"type": "human", "content": "hi", "id": "m1"}}, "topic": "a"},
		"as_node": "echo",
	}).Object(t)
	cp1 := up1["checkpoint"].(map[string]any)["checkpoint_id"].(string)
	s.Must(200, "POST", "/threads/"+id+"/state", map[string]any{
		"values": map[string]any{"messages": []any{map[string]any{"role": "assistant", "content": "yo", "id": "m2"}}, "topic": "b"},
	})
	up3 := s.Must(200, "POST", "/threads/"+id+"/state", map[string]any{
		"values": map[string]any{"messages": []any{map[string]any{"type": "human", "content": "hi again", "id": "m1"}}},
	}).Object(t)
	cp3 := up3["checkpoint"].(map[string]any)["checkpoint_id"].(string)

	st := s.Must(200, "GET", "/threads/"+id+"/state", nil).Object(t)
	vals := st["values"].(map[string]any)
	msgs := vals["messages"].([]any)
	if len(msgs) != 2 || msgs[0].(map[string]any)["content"] != "hi again" || msgs[1].(map[string]any)["type"] != "ai" || vals["topic"] != "b" {
		t.Fatalf("state values = %v", vals)
	}
	if st["checkpoint"].(map[string]any)["checkpoint_id"] != cp3 || st["parent_checkpoint"] == nil {
		t.Fatalf("state checkpoint = %v", st["checkpoint"])
	}
	if st["metadata"].(map[string]any)["step"] != 2.0 || st["metadata"].(map[string]any)["source"] != "update" {
		t.Fatalf("state metadata = %v", st["metadata"])
	}
	thread := s.Must(200, "GET", "/threads/"+id, nil).Object(t)
	if thread["values"].(map[string]any)["topic"] != "b" {
		t.Fatalf("thread values are not the newest checkpoint's: %v", thread["values"])
	}

	at := s.Must(200, "GET", "/threads/"+id+"/state/"+cp1, nil).Object(t)
	if at["values"].(map[string]any)["topic"] != "a" {
		t.Fatalf("state at cp1 = %v", at["values"])
	}
	byCfg := s.Must(200, "POST", "/threads/"+id+"/state/checkpoint", map[string]any{"checkpoint": map[string]any{"checkpoint_id": cp1}}).Object(t)
	if byCfg["values"].(map[string]any)["topic"] != "a" {
		t.Fatalf("state by config = %v", byCfg["values"])
	}
	s.Must(404, "GET", "/threads/"+id+"/state/"+uuid.NewString(), nil)

	hist := s.Must(200, "POST", "/threads/"+id+"/history", map[string]any{"limit": 10}).List(t)
	if len(hist) != 3 || hist[0].(map[string]any)["checkpoint"].(map[string]any)["checkpoint_id"] != cp3 {
		t.Fatalf("history = %d entries", len(hist))
	}
	befores := []any{
		cp3,
		map[string]any{"checkpoint_id": cp3},
		map[string]any{"configurable": map[string]any{"checkpoint_id": cp3}},
	}
	for _, before := range befores {
		h := s.Must(200, "POST", "/threads/"+id+"/history", map[string]any{"limit": 1, "before": before}).List(t)
		if len(h) != 1 || h[0].(map[string]any)["values"].(map[string]any)["topic"] != "b" {
			t.Fatalf("history before %v = %v", before, h)
		}
	}
	gh := s.Must(200, "GET", "/threads/"+id+"/history?limit=5&before="+cp3, nil).List(t)
	if len(gh) != 2 {
		t.Fatalf("GET history before = %d entries", len(gh))
	}
	filtered := s.Must(200, "POST", "/threads/"+id+"/history", map[string]any{"metadata": map[string]any{"step": 0}}).List(t)
	if len(filtered) != 1 || filtered[0].(map[string]any)["checkpoint"].(map[string]any)["checkpoint_id"] != cp1 {
		t.Fatalf("history metadata filter = %v", filtered)
	}

	// Forking from cp1 starts a new branch from its values.
	s.Must(200, "POST", "/threads/"+id+"/state", map[string]any{"values": map[string]any{"topic": "fork"}, "checkpoint_id": cp1})
	fork := s.Must(200, "GET", "/threads/"+id+"/state", nil).Object(t)
	if len(fork["values"].(map[string]any)["messages"].([]any)) != 1 || fork["parent_checkpoint"].(map[string]any)["checkpoint_id"] != cp1 {
		t.Fatalf("fork state = %v", fork)
	}

	// A bad update changes nothing.
	before := s.Must(200, "GET", "/threads/"+id+"/state", nil).Object(t)
	s.Must(422, "POST", "/threads/"+id+"/state", map[string]any{"values": map[string]any{"messages": []any{42}}})
	s.Must(422, "POST", "/threads/"+id+"/state", map[string]any{"values": "text"})
	after := s.Must(200, "GET", "/threads/"+id+"/state", nil).Object(t)
	if before["checkpoint"].(map[string]any)["checkpoint_id"] != after["checkpoint"].(map[string]any)["checkpoint_id"] {
		t.Fatal("a rejected update wrote a checkpoint")
	}
}

func TestThreadCopyAndSupersteps(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{})
	src := s.Must(200, "POST", "/threads", map[string]any{
		"metadata": map[string]any{"k": "v"},
		"supersteps": []any{
			map[string]any{"updates": []any{map[string]any{"values": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "one"}}}, "as_node": "__input__"}}},
			map[string]any{"updates": []any{map[string]any{"values": map[string]any{"messages": []any{map[string]any{"role": "assistant", "content": "two"}}}, "as_node": "echo"}}},
		},
	}).Object(t)
	srcID := src["thread_id"].(string)
	if msgs := src["values"].(map[string]any)["messages"].([]any); len(msgs) != 2 {
		t.Fatalf("supersteps values = %v", src["values"])
	}
	cp := s.Must(200, "POST", "/threads/"+srcID+"/copy", nil).Object(t)
	cpID := cp["thread_id"].(string)
	if cpID == srcID || cp["metadata"].(map[string]any)["k"] != "v" || cp["status"] != "idle" {
		t.Fatalf("copy = %v", cp)
	}
	if h := s.Must(200, "POST", "/threads/"+cpID+"/history", map[string]any{"limit": 10}).List(t); len(h) != 2 {
		t.Fatalf("copied history has %d entries, want 2", len(h))
	}
	// Copies are independent.
	s.Must(200, "POST", "/threads/"+cpID+"/state", map[string]any{"values": map[string]any{"x": 1}})
	if v := s.Must(200, "GET", "/threads/"+srcID+"/state", nil).Object(t)["values"].(map[string]any); v["x"] != nil {
		t.Fatal("update of the copy leaked into the source")
	}
	s.Must(404, "POST", "/threads/"+uuid.NewString()+"/copy", nil)
	s.Must(422, "POST", "/threads", map[string]any{"supersteps": []any{map[string]any{"updates": []any{map[string]any{"as_node": "x", "command": map[string]any{"resume": 1}}}}}})
}
