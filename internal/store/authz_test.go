package store

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"agentserver/internal/authz"
	"agentserver/internal/errdefs"
)

// teamHandler decides store requests as a LangGraph auth handler of the
// docs' style does: the namespace must start with the caller's identity
// (checked, not rewritten), and the items they reach are filtered on
// their team.
type teamHandler struct{}

func (teamHandler) Authorize(_ context.Context, req authz.Request) (authz.Filter, error) {
	ns, _ := req.Value["namespace"].([]any)
	if req.Action != authz.Search && req.Action != authz.ListNamespaces && (len(ns) == 0 || ns[0] != req.User.Identity) {
		return nil, fmt.Errorf("namespace must start with %s: %w", req.User.Identity, authz.ErrForbidden)
	}
	if len(ns) == 0 || ns[0] != req.User.Identity {
		req.Value["namespace"] = append([]any{req.User.Identity}, ns...)
	}
	return authz.Filter{"team": map[string]any{"$eq": req.User.Fields["team"]}}, nil
}

// The store applies an Authorizer's filters to get, delete, search and
// list_namespaces, inside the scans (the flaws of LangGraph Agent Server
// v0.12 and of @langchain/langgraph-api, where store filters were dropped).
func TestStoreAuthorizerFilters(t *testing.T) {
	s, _, _ := newTest(t)
	op := context.Background()
	alice := authz.WithCaller(op, authz.Caller{User: &authz.User{Identity: "alice", Fields: map[string]any{"team": "red"}}, Authorizer: teamHandler{}})
	if err := s.Put(alice, []string{"alice", "a"}, "mine", map[string]any{"team": "red"}, nil, nil); err != nil {
		t.Fatal(err)
	}
	// Items alice's filter does not admit, written by the operator, some
	// newer than hers: a page cut before filtering would hide hers.
	for i := 0; i < 3; i++ {
		mustPut(t, s, []string{"alice", "a"}, fmt.Sprint("blue", i), map[string]any{"team": "blue"}, nil)
	}
	mustPut(t, s, []string{"alice", "b"}, "blue", map[string]any{"team": "blue"}, nil)

	page, err := s.Search(alice, nil, nil, 1, 0, "", false)
	if err != nil || len(page) != 1 || page[0].Key != "mine" {
		t.Fatalf("alice's first search page: %v %v", page, err)
	}
	if all, _ := s.Search(alice, []string{"alice"}, map[string]any{"team": "blue"}, 10, 0, "", false); len(all) != 0 {
		t.Errorf("alice searching for blue items: %v", all)
	}
	nss, err := s.ListNamespaces(alice, nil, nil, nil, 10, 0)
	if err != nil || fmt.Sprint(nss) != "[[alice a]]" {
		t.Errorf("alice's namespaces: %v %v", nss, err)
	}
	if it, err := s.Get(alice, []string{"alice", "a"}, "blue0", false); it != nil || err != nil {
		t.Errorf("alice gets a blue item: %v %v", it, err)
	}
	if err := s.Delete(alice, []string{"alice", "a"}, "blue0"); err != nil {
		t.Errorf("alice deletes a blue item: %v", err)
	}
	if mustGet(t, s, []string{"alice", "a"}, "blue0", false) == nil {
		t.Error("alice's delete removed an item her filter hides")
	}
	// Writes outside the rules are refused and change nothing.
	for _, c := range []struct {
		ns    []string
		value map[string]any
	}{{[]string{"bob", "a"}, map[string]any{"team": "red"}}, {[]string{"alice", "a"}, map[string]any{"team": "blue"}}} {
		if err := s.Put(alice, c.ns, "x", c.value, nil, nil); !errors.Is(err, errdefs.ErrForbidden) {
			t.Errorf("put %v %v: %v, want forbidden", c.ns, c.value, err)
		}
		if mustGet(t, s, c.ns, "x", false) != nil {
			t.Errorf("the refused put of %v stored an item", c.ns)
		}
	}
	// The operator is not filtered.
	if all, _ := s.Search(op, nil, nil, 10, 0, "", false); len(all) != 5 {
		t.Errorf("the operator sees %d items, want 5", len(all))
	}
}
