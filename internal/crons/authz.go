package crons

import (
	"context"

	"github.com/google/uuid"

	"agentserver/internal/authz"
	"agentserver/internal/jsonx"
	"agentserver/internal/storage"
	"agentserver/internal/threads"
)

// scope asks the caller of ctx for action on crons and returns the
// metadata containment the crons it acts on must satisfy (nil: any).
func scope(ctx context.Context, action string, value map[string]any) (map[string]any, error) {
	return authz.Scope(ctx, authz.Crons, action, value)
}

// creation asks the caller of ctx to create the cron sp describes and
// returns the metadata to store (with the owner fields the Authorizer
// wrote) and the filter the caller's crons satisfy.
func creation(ctx context.Context, sp Spec, assistantID string) (map[string]any, map[string]any, error) {
	value := map[string]any{"metadata": nonNil(jsonx.CloneMap(sp.Metadata)), "assistant_id": assistantID, "schedule": sp.Schedule, "payload": sp.Payload}
	if sp.ThreadID != nil {
		value["thread_id"] = sp.ThreadID.String()
	}
	restrict, err := scope(ctx, authz.Create, value)
	if err != nil {
		return nil, nil, err
	}
	md, _ := value["metadata"].(map[string]any)
	return nonNil(md), restrict, nil
}

// threadRestriction is the filter the thread of a cron must satisfy: the
// cron will create runs on it, so the caller must be allowed to
// (threads:create_run), as for a run of their own.
func threadRestriction(ctx context.Context, threadID *uuid.UUID) (map[string]any, error) {
	if threadID == nil {
		return nil, nil
	}
	return threads.Restriction(ctx, authz.CreateRun, map[string]any{"thread_id": threadID.String()})
}

// creator is the per-user caller of ctx as a cron stores it, nil for an
// unrestricted one.
func creator(ctx context.Context) map[string]any {
	if !authz.Restricted(ctx) {
		return nil
	}
	c, _ := authz.CallerFrom(ctx)
	return c.User.AuthUser()
}

// ownedCrons counts the crons restrict admits (every cron when nil), for
// the per-owner bound.
func ownedCrons(tx *storage.Tx, restrict map[string]any) int {
	if len(restrict) == 0 {
		return tx.CronCount()
	}
	_, n, _ := tx.SearchCrons(storage.CronQuery{Restrict: restrict, CountOnly: true}, jsonx.Contains)
	return n
}

// asCreator returns ctx with the user who created c as its caller, so that
// a firing is authorised and owned as that user's own run would be: its
// run reaches only threads the user may run on, a stateless firing's
// thread is owned by the user, and the run sees them as
// langgraph_auth_user.
func (s *Service) asCreator(ctx context.Context, c storage.Cron) context.Context {
	u := authz.UserFromAuthUser(c.User)
	if u == nil || s.opts.Authorizer == nil {
		return ctx
	}
	return authz.WithCaller(ctx, authz.Caller{User: u, Authorizer: s.opts.Authorizer})
}
