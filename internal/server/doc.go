// Package server assembles the whole server from a config.Config: it opens
// storage, loads the graphs, builds the services and the HTTP handler, and
// owns every background goroutine. Tests embed it and listen on port 0.
//
// Lifecycle. Everything the server opens or starts is an entry of one
// lifecycle.Group (internal/lifecycle), in order:
//
//   - New binds the listen address first (a port in use stops it before
//     any file is created), then the metrics address, the replica lock (on
//     PostgreSQL), storage, the graph workers (a JavaScript project), the
//     MCP sessions of agents, and the context of long-lived requests, each
//     added to the group as soon as it is open. The services are then
//     built with everything they need (logger, clock, TTL policy, hooks,
//     observers) in their options. On any error New stops the group: what
//     it opened so far is released in reverse order on that one path.
//   - Start starts the background services of services() in order: the
//     store TTL sweeper, the event broker, the protocol stream hub, JWT key
//     refresh, the agent spec reloader, the graph watcher (--watch),
//     subagent recovery, the run engine (run recovery; on PostgreSQL the
//     replica's registration and heartbeat), then, after the runs are
//     recovered, the thread TTL sweeper and the cron scheduler, the async
//     task notifier, the queue metrics, the metrics listener and last
//     HTTP. If one fails, Start stops the group (that one, everything
//     before it, and what New opened) and returns the error; Shutdown then
//     has nothing left to do.
//   - Shutdown stops the group in reverse: first it drains the entries
//     that take work (HTTP keep-alives off, the notifier, the run engine:
//     running runs go back to pending and resume at the next start, then
//     long-lived requests end, MCP sessions close and the graph workers
//     stop), then it stops the rest (HTTP stops accepting and finishes
//     in-flight requests, the metrics listener, the background loops), and
//     last it closes storage, which commits every queued write first, and
//     the listeners and the replica lock.
//
// One wiring step remains after construction: the run engine tells the
// async task notifier of the runs it creates, and the notifier (and the
// in-process async transport) create runs, so each needs the other; the
// notifier is made first (agent specs compile with it) and bound to the
// engine once the engine exists. The store's semantic index is configured
// after the graph workers start, because the model endpoint it reads may
// come from langgraph.json's env, which starting them loads.
//
// One logger and one clock (Options.Clock, the wall clock in UTC when nil)
// are handed to every service; no service logs through the global logger.
//
// With Config.MetricsAddr set, New binds that address too (before any file
// is created), Start serves GET /metrics there, and Shutdown stops it with
// the main listener. Tracing is process-wide and set up by the command
// (tracing.Setup), not here; New only stamps log records with trace ids.
//
// Agent spec files are reloaded while the server runs: a background worker
// checks them every Options.ReloadInterval, and ReloadGraphs (SIGHUP in the
// command) reloads them at once. See graphs.Reloader for what a reload
// changes and what it leaves alone.
package server
