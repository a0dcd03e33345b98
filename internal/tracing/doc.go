// Package tracing is the server's OpenTelemetry tracing: set-up from the
// standard OTEL_* environment (off unless an OTLP endpoint is set), span
// helpers for the few places that open spans, the W3C traceparent carried
// in run records and HTTP headers, and a log handler that stamps log
// records with the active span's trace_id and span_id.
//
// The span tree of a run:
//
//	HTTP request (server span, "POST /threads/{thread_id}/runs")
//	└─ run (the worker's execution; its parent is read from the run
//	   record's traceparent, so it survives the queue and restarts)
//	   └─ node <name> (one per node execution of a super-step)
//	      ├─ chat <model> (one model call, retries included)
//	      └─ tool <name> (one tool call)
//	         ├─ node … (a task-tool subagent runs in-process, below its tool)
//	         └─ HTTP client request to a remote server (asynctasks HTTP
//	            transport; the traceparent header links the remote
//	            server's request, and so its run, into the same trace)
//
// Invariants:
//   - With tracing off, every helper works on OpenTelemetry's no-op tracer:
//     no allocation beyond the span interface, nothing exported.
//   - Attributes given to Start and StartServer reach only spans that
//     record; an unsampled span costs no attribute work.
//   - A run record's traceparent is version 00 as Traceparent writes it;
//     WithTraceparent reads that form directly and leaves any other to the
//     W3C propagator, with the same result.
//   - The provider is process-wide (Setup, once, in the command); servers
//     embedded in one process share it.
//   - Only the W3C trace context is propagated; baggage is not.
package tracing
