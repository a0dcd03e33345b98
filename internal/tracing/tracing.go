package tracing

import (
	"context"
	"encoding/hex"
	"net/http"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
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
	t := tp.Tracer("agentserver")
	current.Store(&t)
}

func tracer() trace.Tracer { return *current.Load() }

// Enabled reports whether the environment asks for traces: an OTLP
// endpoint is set (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
// OTEL_EXPORTER_OTLP_ENDPOINT), OTEL_SDK_DISABLED is not true and
// OTEL_TRACES_EXPORTER is not none.
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") || strings.EqualFold(getenv("OTEL_TRACES_EXPORTER"), "none") {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
}

// Setup installs the process-wide tracer provider when the environment
// asks for traces (Enabled): sampled spans are encoded as OTLP protobuf
// when they end and sent in batches to the OTLP/HTTP endpoint, configured
// by the standard OTEL_EXPORTER_OTLP_*, OTEL_BSP_*, OTEL_TRACES_SAMPLER*,
// OTEL_SPAN_*/OTEL_ATTRIBUTE_* limits, OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES variables; a variable set to something unusable
// is an error. The returned function sends the spans not yet sent and
// stops tracing; with tracing off it does nothing.
func Setup(ctx context.Context, getenv func(string) string) (shutdown func(context.Context) error, err error) {
	if !Enabled(getenv) {
		return func(context.Context) error { return nil }, nil
	}
	cfg, err := loadExportConfig(getenv)
	if err != nil {
		return nil, err
	}
	smp, err := loadSampler(getenv)
	if err != nil {
		return nil, err
	}
	lim, err := loadLimits(getenv)
	if err != nil {
		return nil, err
	}
	res, err := resourceAttributes(getenv)
	if err != nil {
		return nil, err
	}
	exp := newExporter(cfg, encodeResource(res), encodeScope())
	tp := newProvider(smp, lim, exp)
	otel.SetTracerProvider(tp)
	use(tp)
	return func(ctx context.Context) error {
		use(noop.NewTracerProvider())
		return exp.shutdown(ctx)
	}, nil
}

// Flush sends the spans ended so far and waits until they are sent (or
// ctx ends); with tracing off it does nothing.
func Flush(ctx context.Context) error {
	if t, ok := (*current.Load()).(*spanTracer); ok {
		return t.p.exp.flush(ctx)
	}
	return nil
}

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
// sp.SetAttributes on hot paths: the attributes then need no allocation.
func SetAttributes(sp trace.Span, attrs ...attribute.KeyValue) { setIfRecording(sp, attrs) }

func setIfRecording(sp trace.Span, attrs []attribute.KeyValue) {
	// Only this package's spans record (a no-op or sampled-out span does
	// not); calling the concrete method lets the caller's attribute slice
	// stay on its stack.
	if s, ok := sp.(*span); ok && len(attrs) > 0 {
		s.SetAttributes(attrs...)
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
