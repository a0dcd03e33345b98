// Package server assembles the whole server from a config.Config: it opens
// storage, loads the graphs, builds the services and the HTTP handler, and
// owns every background goroutine. Tests embed it and listen on port 0.
//
// Start-up order: New binds the listen address first (a port in use stops
// it before any file is created), then storage → graphs → services →
// system assistants; Start runs recovery and the worker pool, then serves.
// If Start fails, Shutdown still releases everything (it never waits for a
// Serve that was not started). Shutdown: stop the run
// engine (running runs go back to pending and resume at the next start),
// end long-lived requests (SSE streams, waits), stop accepting and finish
// the other in-flight requests, stop background workers and wait for them,
// then close storage (which commits every queued write first). The thread
// TTL sweeper starts after run recovery and stops with the other background
// workers (the store sweeper, the event broker).
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
