// Package authz decides what the caller of a request may see and do, in
// LangGraph's model: an Authenticator turns a request into a User, and an
// Authorizer answers authorize(resource, action, value) with allow, deny
// (ErrForbidden) or a Filter that the services apply inside their storage
// queries.
//
// The built-in Authorizer is Rules (from the "auth" section of
// langgraph.json: required permissions per action, and owner scoping that
// writes the caller's identity into the metadata of what they create and
// filters every read on it). A JS Auth module run in the graph worker is
// meant to plug in as another Authorizer and Authenticator.
//
// # Invariants
//
//   - A context without a Caller (background work: the run engine, the
//     cron scheduler, TTL sweeps) and an operator Caller (the API key) are
//     unrestricted: Authorize returns a nil Filter.
//   - Every HTTP route is authorised before its handler runs (the route
//     table in internal/httpapi); a route without an entry answers 403, and
//     a test keeps the table complete.
//   - Filters are metadata containment in LangGraph's form: {k: v} and
//     {k: {"$eq": v}} require equality, {k: {"$contains": v}} requires a
//     list holding v; keys are ANDed. Services pass them to storage, which
//     applies them in the query (the metadata index), never by discarding
//     results after a page was cut.
//   - An object the caller may not see is reported as missing
//     (errdefs.ErrNotFound), exactly as an object that does not exist.
//   - A background run carries the per-user caller that created it as a
//     run caller (WithRunCaller), which restricts nothing by itself; only
//     where the run acts for its user through the services (the
//     in-process async-task transport, ActAsRunCaller) does it become the
//     caller. Caller.Credentials leave the server only through a remote
//     transport configured to forward them.
package authz
