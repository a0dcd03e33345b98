package authz

import (
	"context"
	"net/http"
	"slices"

	"agentserver/internal/errdefs"
)

// Resources and their actions, as LangGraph names them.
const (
	Threads    = "threads"
	Assistants = "assistants"
	Crons      = "crons"
	Store      = "store"

	Create    = "create"
	Read      = "read"
	Update    = "update"
	Delete    = "delete"
	Search    = "search"
	CreateRun = "create_run"

	Put            = "put"
	Get            = "get"
	ListNamespaces = "list_namespaces"
)

// User is who is calling.
type User struct {
	// Identity is the user's id (a token's sub).
	Identity string
	// Permissions are what the credentials grant.
	Permissions []string
	// Fields are the user's other attributes (a token's custom claims).
	Fields map[string]any
	// Operator marks the holder of the server's API key: it sees
	// everything and is never filtered.
	Operator bool
}

// AuthUser is the user as runs see it, in
// config.configurable.langgraph_auth_user: identity, permissions,
// is_authenticated, display_name and the custom fields.
func (u *User) AuthUser() map[string]any {
	out := make(map[string]any, len(u.Fields)+4)
	for k, v := range u.Fields {
		out[k] = v
	}
	perms := make([]any, len(u.Permissions))
	for i, p := range u.Permissions {
		perms[i] = p
	}
	out["identity"] = u.Identity
	out["display_name"] = u.Identity
	out["permissions"] = perms
	out["is_authenticated"] = true
	return out
}

// HasPermission reports whether u holds p.
func (u *User) HasPermission(p string) bool { return slices.Contains(u.Permissions, p) }

// Request is one authorisation question: may User do Action on Resource
// with Value? Value is what the route acts on (for create, the object to be
// made, whose "metadata" the Authorizer may write owner fields into; for
// store, the "namespace" it may rewrite).
type Request struct {
	User     *User
	Resource string
	Action   string
	Value    map[string]any
}

// Authorizer decides requests. It returns ErrForbidden (wrapped) to deny,
// and a nil Filter to allow without restriction.
type Authorizer interface {
	Authorize(ctx context.Context, req Request) (Filter, error)
}

// Authenticator says who sent r. It returns (nil, nil) when r carries no
// credentials it recognises, and an error wrapping errdefs.ErrUnauthorized
// when it carries bad ones.
type Authenticator interface {
	Authenticate(r *http.Request) (*User, error)
}

// ErrForbidden denies a request (403).
var ErrForbidden = errdefs.ErrForbidden

// Caller is the user of a request and the Authorizer that decides for it.
type Caller struct {
	User       *User
	Authorizer Authorizer
	// Credentials are the headers that authenticated a per-user caller
	// (Authorization), for the remote transports configured to forward
	// them; nil for the operator and for work the server does itself.
	Credentials http.Header
}

type callerKey struct{}

// WithCaller returns ctx carrying c.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the Caller of ctx, if any.
func CallerFrom(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok && c.User != nil
}

// Restricted reports whether ctx carries a caller whose reads may be
// filtered (an authenticated user who is not the operator).
func Restricted(ctx context.Context) bool {
	c, ok := CallerFrom(ctx)
	return ok && !c.User.Operator && c.Authorizer != nil
}

// Authorize asks the Authorizer of ctx's caller; without a restricted
// caller everything is allowed (nil Filter).
func Authorize(ctx context.Context, resource, action string, value map[string]any) (Filter, error) {
	if !Restricted(ctx) {
		return nil, nil
	}
	c, _ := CallerFrom(ctx)
	if value == nil {
		value = map[string]any{}
	}
	return c.Authorizer.Authorize(ctx, Request{User: c.User, Resource: resource, Action: action, Value: value})
}
