// Package tracing is the server's OpenTelemetry tracing: set-up from the
// standard OTEL_* environment (off unless an OTLP endpoint is set), span
// helpers for the few places that open spans, the W3C traceparent carried
// in run records and HTTP headers, and a log handler that stamps log
// records with the active span's trace_id and span_id.
//
// It implements the OpenTelemetry trace API (provider.go, span.go) rather
// than using the OpenTelemetry SDK: a sampled span is one allocation that
// holds its attributes inline, and End encodes it as OTLP protobuf
// (otlp.go) straight into the batch being filled (exporter.go), which one
// goroutine posts to the collector. That is what makes tracing every
// request cheap; the SDK's span snapshots and intermediate protobuf
// messages cost several times more per span.
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
//   - A span is mutable until End and never after: the exporter reads an
//     ended span's fields without its lock.
//   - Ending a span never blocks on the collector: spans beyond the queue
//     size waiting to be sent are dropped (and counted in a warning).
//   - The bytes sent decode with the reference OTLP protobuf definitions
//     (TestExportIsOTLP decodes them with go.opentelemetry.io/proto/otlp).
package tracing
