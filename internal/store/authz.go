package store

import (
	"context"

	"agentserver/internal/authz"
	"agentserver/internal/jsonx"
	"agentserver/internal/storage"
)

// access is what the caller of a store request may reach: the namespace
// (or search prefix) the Authorizer rewrote or kept, and the containment
// the values of the items it reaches must satisfy (nil: any).
type access struct {
	namespace []string
	filter    map[string]any
}

// authorize asks the caller of ctx for action on the store with namespace
// and the rest of value. The Authorizer may rewrite value["namespace"] (the
// built-in rules prefix it with the caller's identity); what it leaves
// there is what the request acts on.
func authorize(ctx context.Context, action string, namespace []string, value map[string]any) (access, error) {
	if !authz.Restricted(ctx) {
		return access{namespace: namespace}, nil
	}
	if value == nil {
		value = map[string]any{}
	}
	labels := make([]any, len(namespace))
	for i, l := range namespace {
		labels[i] = l
	}
	value["namespace"] = labels
	filter, err := authz.Scope(ctx, authz.Store, action, value)
	if err != nil {
		return access{}, err
	}
	ns, err := authz.NamespaceLabels(value["namespace"])
	if err != nil {
		return access{}, err
	}
	return access{namespace: ns, filter: filter}, nil
}

// admits reports whether the caller may reach an item of value v.
func (a access) admits(v map[string]any) bool {
	return len(a.filter) == 0 || jsonx.Contains(v, a.filter)
}

// match ANDs the caller's filter with m, for the storage queries.
func (a access) match(m func(*storage.StoreItem) bool) func(*storage.StoreItem) bool {
	if len(a.filter) == 0 {
		return m
	}
	return func(it *storage.StoreItem) bool {
		return jsonx.Contains(it.Value, a.filter) && (m == nil || m(it))
	}
}
