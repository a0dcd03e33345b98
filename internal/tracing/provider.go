package tracing

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
)

// provider is the server's trace.TracerProvider: spans sampled by its
// sampler record into a span of this package and, when they end, are
// encoded straight into the exporter's next OTLP batch. Spans sampled out
// carry their span context and record nothing.
type provider struct {
	embedded.TracerProvider
	sampler sampler
	limits  limits
	exp     *exporter
	t       *spanTracer
}

// newProvider makes a provider that samples with s and hands ended spans
// to exp.
func newProvider(s sampler, l limits, exp *exporter) *provider {
	p := &provider{sampler: s, limits: l, exp: exp}
	p.t = &spanTracer{p: p}
	return p
}

// Tracer implements trace.TracerProvider. Every name gets the same tracer:
// the spans of this server are reported under one instrumentation scope.
func (p *provider) Tracer(string, ...trace.TracerOption) trace.Tracer { return p.t }

type spanTracer struct {
	embedded.Tracer
	p *provider
}

// Start implements trace.Tracer.
func (t *spanTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	var cfg trace.SpanConfig
	if len(opts) > 0 {
		cfg = trace.NewSpanStartConfig(opts...)
	}
	parent := trace.SpanContextFromContext(ctx)
	if cfg.NewRoot() {
		parent = trace.SpanContext{}
	}
	tid := parent.TraceID()
	if !parent.IsValid() {
		tid = newTraceID()
	}
	scc := trace.SpanContextConfig{TraceID: tid, SpanID: newSpanID(), TraceState: parent.TraceState()}
	if !t.p.sampler.sample(parent, tid) {
		// Sampled out: the span only carries its context, so the trace id
		// and the sampled-out flag reach children and remote calls.
		ctx = trace.ContextWithSpanContext(ctx, trace.NewSpanContext(scc))
		return ctx, trace.SpanFromContext(ctx)
	}
	scc.TraceFlags = trace.FlagsSampled
	s := &span{
		p:      t.p,
		sc:     trace.NewSpanContext(scc),
		name:   name,
		kind:   cfg.SpanKind(),
		start:  cfg.Timestamp(),
		remote: parent.IsRemote(),
	}
	if parent.IsValid() {
		s.parent = parent.SpanID()
	}
	if s.start.IsZero() {
		s.start = time.Now()
	}
	s.attrs = s.inline[:0]
	if a := cfg.Attributes(); len(a) > 0 {
		s.SetAttributes(a...)
	}
	for _, l := range cfg.Links() {
		s.AddLink(l)
	}
	return trace.ContextWithSpan(ctx, s), s
}

// newTraceID is a random, non-zero trace id.
func newTraceID() trace.TraceID {
	var id trace.TraceID
	for !id.IsValid() {
		binary.BigEndian.PutUint64(id[:8], rand.Uint64())
		binary.BigEndian.PutUint64(id[8:], rand.Uint64())
	}
	return id
}

// newSpanID is a random, non-zero span id.
func newSpanID() trace.SpanID {
	var id trace.SpanID
	for !id.IsValid() {
		binary.BigEndian.PutUint64(id[:], rand.Uint64())
	}
	return id
}
