package tracing

import (
	"context"
	"encoding/hex"
	"net/http"
	"slices"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"agentserver/internal/version"
)

// ServiceName is the service.name of the spans unless OTEL_SERVICE_NAME
// or OTEL_RESOURCE_ATTRIBUTES name another.
const ServiceName = "agentserver"

var (
	// current is the tracer spans are opened with: OpenTelemetry's no-op
	// one until Setup installs a provider.
	current    atomic.Pointer[trace.Tracer]
	propagator = propagation.TraceContext{}
)

func init() { use(noop.NewTracerProvider()) }

// use makes tp the provider of every span opened from now on.
func use(tp trace.TracerProvider) {
	t := tp.Tracer(ServiceName, trace.WithInstrumentationVersion(version.Get().Version))
	current.Store(&t)
}

func tracer() trace.Tracer { return *current.Load() }

// Start opens a span named name below the span of ctx. The attributes
// are set only on a span that records (tracing on and the span sampled):
// a no-op or sampled-out span costs no attribute work.
func Start(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	ctx, span := tracer().Start(ctx, name)
	setIfRecording(span, attrs)
	return ctx, span
}

// StartServer opens the server span of an incoming HTTP request, a child
// of the request's traceparent header when it has one.
func StartServer(ctx context.Context, h http.Header, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if h.Get(traceparentHeader) != "" {
		ctx = propagator.Extract(ctx, propagation.HeaderCarrier(h))
	}
	ctx, span := tracer().Start(ctx, name, serverKind)
	setIfRecording(span, attrs)
	return ctx, span
}

// serverKind is the start option of server spans, made once.
var serverKind = trace.WithSpanKind(trace.SpanKindServer)

const traceparentHeader = "traceparent"

// SetAttributes sets attrs on sp when it records. Prefer it to
// sp.SetAttributes on hot paths: the caller's attributes then stay on its
// stack unless the span records.
func SetAttributes(sp trace.Span, attrs ...attribute.KeyValue) { setIfRecording(sp, attrs) }

func setIfRecording(sp trace.Span, attrs []attribute.KeyValue) {
	// Handing attrs to the span's interface method would make every
	// caller's attribute slice escape to the heap, tracing on or off; a
	// copy is made only for a span that records.
	if len(attrs) > 0 && sp.IsRecording() {
		sp.SetAttributes(slices.Clone(attrs)...)
	}
}

// End ends span, marking it failed when err is not nil.
func End(span trace.Span, err error) {
	Fail(span, err)
	span.End()
}

// Fail marks span failed with err (nothing when err is nil).
func Fail(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
}

// Inject writes the traceparent of ctx's span into h (nothing without
// one).
func Inject(ctx context.Context, h http.Header) {
	propagator.Inject(ctx, propagation.HeaderCarrier(h))
}

// Traceparent is the W3C traceparent of ctx's span, "" without one. It
// is formatted directly (version 00, no tracestate), which is what
// WithTraceparent reads back without the propagator's general parser.
func Traceparent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	tid, sid := sc.TraceID(), sc.SpanID()
	b := make([]byte, 0, traceparentLen)
	b = append(b, "00-"...)
	b = hex.AppendEncode(b, tid[:])
	b = append(b, '-')
	b = hex.AppendEncode(b, sid[:])
	b = append(b, '-')
	b = hex.AppendEncode(b, []byte{byte(sc.TraceFlags() & trace.FlagsSampled)})
	return string(b)
}

// traceparentLen is the length of a version 00 traceparent.
const traceparentLen = len("00-") + 32 + 1 + 16 + 1 + 2

// WithTraceparent returns ctx with the remote span of traceparent as its
// parent; ctx is returned as is when traceparent is empty or invalid.
func WithTraceparent(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" {
		return ctx
	}
	if sc, ok := parseTraceparent00(traceparent); ok {
		return trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	return propagator.Extract(ctx, propagation.MapCarrier{traceparentHeader: traceparent})
}

// parseTraceparent00 reads a version 00 traceparent such as Traceparent
// writes; anything else is left to the propagator.
func parseTraceparent00(s string) (trace.SpanContext, bool) {
	if len(s) != traceparentLen || s[:3] != "00-" || s[35] != '-' || s[52] != '-' {
		return trace.SpanContext{}, false
	}
	tid, err := trace.TraceIDFromHex(s[3:35])
	if err != nil {
		return trace.SpanContext{}, false
	}
	sid, err := trace.SpanIDFromHex(s[36:52])
	if err != nil {
		return trace.SpanContext{}, false
	}
	flags, err := hex.DecodeString(s[53:])
	if err != nil {
		return trace.SpanContext{}, false
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.TraceFlags(flags[0]) & trace.FlagsSampled, Remote: true})
	return sc, sc.IsValid()
}
