package runs

import (
	"context"
	"net/http"

	"agentserver/internal/authz"
	"agentserver/internal/storage"
)

// withRunCaller returns the context a run executes in with the user it
// acts for (Run.ActsFor, written at creation from a per-user caller, with
// the caller's credentials when this process created it) as its run
// caller: what the run then starts
// on that user's behalf in process (a supervisor's async tasks) is
// authorised, filtered and owned as that user's own requests are. A run
// made without a per-user caller acts for nobody: it stays unrestricted.
func (s *Service) withRunCaller(ctx context.Context, run storage.Run, credentials http.Header) context.Context {
	if s.opts.Authorizer == nil {
		return ctx
	}
	user := authz.UserFromAuthUser(run.ActsFor)
	if user == nil {
		return ctx
	}
	return authz.WithRunCaller(ctx, authz.Caller{User: user, Authorizer: s.opts.Authorizer, Credentials: credentials})
}
