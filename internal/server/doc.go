// Package server assembles the whole server from a config.Config: it opens
// storage, loads the graphs, builds the services and the HTTP handler, and
// owns every background goroutine. Tests embed it and listen on port 0.
//
// Start-up order: storage → graphs → services → system assistants →
// run recovery and the worker pool → listener. Shutdown: stop the run
// engine (running runs go back to pending and resume at the next start),
// end long-lived requests (SSE streams, waits), stop accepting and finish
// the other in-flight requests, stop background workers and wait for them,
// then close storage (which commits every queued write first).
package server
