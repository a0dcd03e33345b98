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
// then close storage (which commits every queued write first).
package server
