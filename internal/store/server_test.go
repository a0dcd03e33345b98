package store_test

import (
	"testing"

	"agentserver/internal/testutil"
)

func TestStoreItems(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{})
	put := func(ns []string, key string, value map[string]any) {
		t.Helper()
		s.Must(204, "PUT", "/store/items", map[string]any{"namespace": ns, "key": key, "value": value})
	}
	put([]string{"users", "jane"}, "profile", map[string]any{"name": "Jane", "age": 30})
	put([]string{"users", "joe"}, "profile", map[string]any{"name": "Joe", "age": 40})
	put([]string{"users", "jane", "notes"}, "n1", map[string]any{"text": "hello world"})
	put([]string{"usersx"}, "k", map[string]any{"v": 1})

	for _, q := range []string{
		"namespace=users.jane&key=profile",
		"namespace=users&namespace=jane&key=profile",
		`namespace=["users","jane"]&key=profile`,
	} {
		it := s.Must(200, "GET", "/store/items?"+q, nil).Object(t)
		if it["value"].(map[string]any)["name"] != "Jane" || it["key"] != "profile" || it["created_at"] == nil || it["updated_at"] == nil {
			t.Fatalf("%s: item = %v", q, it)
		}
		if ns := it["namespace"].([]any); len(ns) != 2 || ns[0] != "users" || ns[1] != "jane" {
			t.Fatalf("%s: namespace = %v", q, ns)
		}
	}
	if r := s.Must(200, "GET", "/store/items?namespace=users.nobody&key=profile", nil); r.JSON != nil || string(r.Raw) != "null\n" && string(r.Raw) != "null" {
		t.Fatalf("missing item = %q", r.Raw)
	}

	search := func(body map[string]any) []any {
		t.Helper()
		return s.Must(200, "POST", "/store/items/search", body).Object(t)["items"].([]any)
	}
	if got := search(map[string]any{"namespace_prefix": []string{"users"}, "limit": 10}); len(got) != 3 {
		t.Fatalf("prefix users: %d items (usersx must not match)", len(got))
	}
	if got := search(map[string]any{"namespace_prefix": []string{"users"}, "filter": map[string]any{"name": "Joe"}}); len(got) != 1 {
		t.Fatalf("filter: %v", got)
	}
	if got := search(map[string]any{"namespace_prefix": []string{"users"}, "limit": 1, "offset": 2}); len(got) != 1 {
		t.Fatalf("page: %v", got)
	}
	if got := search(map[string]any{"query": "hello"}); len(got) != 1 {
		t.Fatalf("query: %v", got)
	}

	ns := s.Must(200, "POST", "/store/namespaces", map[string]any{"prefix": []string{"users"}, "max_depth": 2}).Object(t)["namespaces"].([]any)
	if len(ns) != 2 {
		t.Fatalf("namespaces max_depth 2 = %v", ns)
	}
	suffix := s.Must(200, "POST", "/store/namespaces", map[string]any{"suffix": []string{"notes"}}).Object(t)["namespaces"].([]any)
	if len(suffix) != 1 {
		t.Fatalf("namespaces suffix = %v", suffix)
	}

	s.Must(204, "DELETE", "/store/items", map[string]any{"namespace": []string{"users", "joe"}, "key": "profile"})
	if r := s.Must(200, "GET", "/store/items?namespace=users.joe&key=profile", nil); r.JSON != nil {
		t.Fatalf("deleted item still there: %s", r.Raw)
	}

	bad := []map[string]any{
		{"namespace": []string{}, "key": "k", "value": map[string]any{}},
		{"namespace": []string{"a.b"}, "key": "k", "value": map[string]any{}},
		{"namespace": []string{"a"}, "key": "k", "value": "not an object"},
		{"namespace": []string{"a"}, "value": map[string]any{}},
		{"namespace": []string{"a"}, "key": "k", "value": map[string]any{}, "ttl": -5},
	}
	for _, b := range bad {
		if r := s.Do("PUT", "/store/items", b); r.Status != 422 && r.Status != 400 {
			t.Errorf("put %v: status %d: %s", b, r.Status, r.Raw)
		}
	}
	if got := search(map[string]any{"namespace_prefix": []string{"a"}}); len(got) != 0 {
		t.Fatalf("rejected puts wrote items: %v", got)
	}
	s.Must(204, "PUT", "/store/items", map[string]any{"namespace": []string{"ttl"}, "key": "k", "value": map[string]any{}, "ttl": 5})
}
