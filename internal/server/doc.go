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
//
// Connections are bounded: headers within 10 s and 64 KiB, idle keep-alive
// connections closed after 120 s, a response written within 60 s unless it
// moves its own write deadline (streams and waits do, per write). There is
// no whole-request read timeout, because net/http would cancel a stream's
// context when it expired; httpapi bounds the reading of request bodies
// itself. Errors net/http answers before any handler runs are rewritten to
// the JSON error body by the listener (httpapi.JSONFramingErrors).
package server
