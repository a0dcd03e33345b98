// Package tracing is the server's OpenTelemetry tracing: set-up from the
// standard OTEL_* environment (off unless an OTLP endpoint is set), span
// helpers for the few places that open spans, the W3C traceparent carried
// in run records and HTTP headers, and a log handler that stamps log
// records with the active span's trace_id and span_id.
//
// Spans are recorded and exported by the OpenTelemetry SDK
// (go.opentelemetry.io/otel/sdk with its batch span processor and the
// OTLP/HTTP exporter otlptracehttp), configured by the standard OTEL_*
// variables exactly as the SDK reads them (setup.go). The package adds
// only what the SDK leaves to its user: it refuses at start what the SDK
// would log and ignore (reports.go), and keeps span work off the paths
// where tracing is off or the span is sampled out.
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
//   - Setup turns every report the SDK makes while it reads the
//     environment (a value it logs as unusable and replaces by its
//     default) into an error naming the variable, so a misconfigured
//     server stops at start; later reports go to the server's log.
//   - Ending a span never blocks on the collector: the SDK's batch span
//     processor drops spans beyond OTEL_BSP_MAX_QUEUE_SIZE.
//   - The bytes sent decode with the reference OTLP protobuf definitions
//     (TestExportIsOTLP decodes them with go.opentelemetry.io/proto/otlp).
package tracing
