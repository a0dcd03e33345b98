package authz

import (
	"context"
	"slices"
)

// Scope asks the caller of ctx for action on resource (Authorize) and
// returns the Filter as the metadata containment the objects it acts on
// must satisfy (nil: any object). value is what the action acts on; the
// Authorizer may write owner fields into its "metadata" on create.
func Scope(ctx context.Context, resource, action string, value map[string]any) (map[string]any, error) {
	f, err := Authorize(ctx, resource, action, value)
	if err != nil {
		return nil, err
	}
	return f.Containment()
}

// UserFromAuthUser rebuilds a User from its AuthUser form (what a run's
// config.configurable.langgraph_auth_user holds), for work done later on
// the user's behalf: a cron's firing, the tasks a run starts. It returns
// nil for a map without an identity.
func UserFromAuthUser(m map[string]any) *User {
	id, _ := m["identity"].(string)
	if id == "" {
		return nil
	}
	u := &User{Identity: id, Fields: map[string]any{}}
	if perms, ok := m["permissions"].([]any); ok {
		for _, p := range perms {
			if s, ok := p.(string); ok {
				u.Permissions = append(u.Permissions, s)
			}
		}
	}
	if perms, ok := m["permissions"].([]string); ok {
		u.Permissions = slices.Clone(perms)
	}
	for k, v := range m {
		switch k {
		case "identity", "display_name", "permissions", "is_authenticated":
		default:
			u.Fields[k] = v
		}
	}
	return u
}

type runCallerKey struct{}

// WithRunCaller returns ctx carrying c as the user a background run acts
// for. Unlike WithCaller it restricts nothing by itself: the run's graph
// reads and writes as the server does (as on LangGraph Platform, auth
// handlers guard the API, not a graph's own store). ActAsRunCaller makes
// it the caller where the run calls the services on the user's behalf
// (the async tasks a supervisor starts in process).
func WithRunCaller(ctx context.Context, c Caller) context.Context {
	if c.User == nil {
		return ctx
	}
	return context.WithValue(ctx, runCallerKey{}, c)
}

// RunCallerFrom returns the user a run acts for, if any.
func RunCallerFrom(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(runCallerKey{}).(Caller)
	return c, ok && c.User != nil
}

// ActAsRunCaller returns ctx with the user its run acts for as the
// caller, so that the services it calls are authorised (and filtered) as
// for that user's own requests; a ctx without a run caller is returned
// as it is.
func ActAsRunCaller(ctx context.Context) context.Context {
	if c, ok := RunCallerFrom(ctx); ok {
		return WithCaller(ctx, c)
	}
	return ctx
}
