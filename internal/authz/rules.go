package authz

import (
	"context"
	"fmt"
)

// Rules is the Authorizer configured in langgraph.json without code: the
// permissions each action requires and, with OwnerScoped, per-user
// ownership of threads, assistants, crons and store namespaces.
type Rules struct {
	// OwnerScoped makes every thread, assistant and cron owned by its
	// creator (OwnerKey in its metadata) and visible to its owner only, and
	// prefixes every store namespace with the caller's identity.
	OwnerScoped bool
	// OwnerKey is the metadata key holding the owner ("owner").
	OwnerKey string
	// Permissions maps "resource:action", "resource" or "*" to the
	// permissions a caller must all hold; the most specific entry applies.
	Permissions map[string][]string
}

// Authorize implements Authorizer.
func (r *Rules) Authorize(ctx context.Context, req Request) (Filter, error) {
	if err := r.checkPermissions(req); err != nil {
		return nil, err
	}
	if !r.OwnerScoped {
		return nil, nil
	}
	if req.Resource == Store {
		return nil, prefixNamespace(req)
	}
	key := r.ownerKey()
	if req.Action == Create {
		md, _ := req.Value["metadata"].(map[string]any)
		if md == nil {
			md = map[string]any{}
		}
		md[key] = req.User.Identity
		req.Value["metadata"] = md
	}
	return Filter{key: req.User.Identity}, nil
}

func (r *Rules) ownerKey() string {
	if r.OwnerKey == "" {
		return "owner"
	}
	return r.OwnerKey
}

// checkPermissions applies the most specific permissions entry of req.
func (r *Rules) checkPermissions(req Request) error {
	need, ok := r.Permissions[req.Resource+":"+req.Action]
	if !ok {
		need, ok = r.Permissions[req.Resource]
	}
	if !ok {
		need = r.Permissions["*"]
	}
	for _, p := range need {
		if !req.User.HasPermission(p) {
			return fmt.Errorf("%s:%s needs permission %q: %w", req.Resource, req.Action, p, ErrForbidden)
		}
	}
	return nil
}

// prefixNamespace rewrites the namespace (or the search prefix) of a store
// request so that it starts with the caller's identity, as LangGraph's
// resource-owner example does. A namespace that already starts with it is
// kept, so that the namespaces a search or list returns (which carry the
// prefix) can be sent back as they are.
func prefixNamespace(req Request) error {
	ns, err := NamespaceLabels(req.Value["namespace"])
	if err != nil {
		return err
	}
	if len(ns) > 0 && ns[0] == req.User.Identity {
		req.Value["namespace"] = ns
		return nil
	}
	req.Value["namespace"] = append([]string{req.User.Identity}, ns...)
	return nil
}

// NamespaceLabels reads a store namespace as a request's value holds it
// (a list of strings, decoded from JSON or not; nil is the root). Anything
// else is forbidden: a handler must leave a namespace the store can use.
func NamespaceLabels(v any) ([]string, error) {
	switch ns := v.(type) {
	case nil:
		return nil, nil
	case []string:
		return ns, nil
	case []any:
		out := make([]string, len(ns))
		for i, l := range ns {
			s, ok := l.(string)
			if !ok {
				return nil, fmt.Errorf("store namespace labels must be strings: %w", ErrForbidden)
			}
			out[i] = s
		}
		return out, nil
	default:
		return nil, fmt.Errorf("store namespace must be a list of strings: %w", ErrForbidden)
	}
}
