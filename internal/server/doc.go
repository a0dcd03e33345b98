// Package server assembles the whole server from a config.Config: it opens
// storage, loads the graphs, builds the services and the HTTP handler, and
// owns every background goroutine. Tests embed it and listen on port 0.
//
// Start-up order: storage → graphs → services → system assistants →
// background workers → listener. Shutdown runs the reverse: stop accepting
// and finish in-flight requests, stop background workers and wait for them,
// then close storage (which commits every queued write first).
package server
