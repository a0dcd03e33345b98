package tracing

import (
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
)

// inlineAttrs is how many attributes a span holds without a second
// allocation: as many as a request span sets (a run span with token usage
// sets nine and grows once).
const inlineAttrs = 6

// span is a sampled span. It is mutable until End, which hands it to the
// exporter; after End every method but SpanContext does nothing, so the
// exporter reads its fields without the lock.
type span struct {
	embedded.Span
	p      *provider
	sc     trace.SpanContext
	parent trace.SpanID // zero for a root span
	remote bool         // the parent came from another process
	kind   trace.SpanKind
	start  time.Time

	mu            sync.Mutex
	ended         bool
	name          string
	attrs         []attribute.KeyValue // backed by inline until it outgrows it
	inline        [inlineAttrs]attribute.KeyValue
	droppedAttrs  int
	events        []event
	droppedEvents int
	links         []link
	droppedLinks  int
	status        codes.Code
	statusMsg     string
}

// event is a span event (an error recorded on the span, for one).
type event struct {
	name    string
	at      time.Time
	attrs   []attribute.KeyValue
	dropped int
}

// link is a span link.
type link struct {
	sc      trace.SpanContext
	attrs   []attribute.KeyValue
	dropped int
}

// SpanContext implements trace.Span.
func (s *span) SpanContext() trace.SpanContext { return s.sc }

// TracerProvider implements trace.Span.
func (s *span) TracerProvider() trace.TracerProvider { return s.p }

// IsRecording implements trace.Span: a span records until it ends.
func (s *span) IsRecording() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.ended
}

// SetName implements trace.Span.
func (s *span) SetName(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended {
		s.name = name
	}
}

// SetAttributes implements trace.Span. A key set again takes the new
// value; attributes beyond the count limit are counted as dropped.
func (s *span) SetAttributes(kvs ...attribute.KeyValue) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	s.attrs, s.droppedAttrs = s.p.limits.addAttrs(s.attrs, s.droppedAttrs, s.p.limits.attrs, kvs)
}

// SetStatus implements trace.Span: Ok is final, Error replaces Unset, and
// only an Error keeps its description.
func (s *span) SetStatus(code codes.Code, description string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended || s.status == codes.Ok || code == codes.Unset {
		return
	}
	s.status = code
	s.statusMsg = ""
	if code == codes.Error {
		s.statusMsg = description
	}
}

// AddEvent implements trace.Span.
func (s *span) AddEvent(name string, opts ...trace.EventOption) {
	cfg := trace.NewEventConfig(opts...)
	s.addEvent(name, cfg.Timestamp(), cfg.Attributes())
}

// RecordError implements trace.Span: an "exception" event with the
// error's type and message (and the stack when asked for). The status is
// left to SetStatus, as the API says.
func (s *span) RecordError(err error, opts ...trace.EventOption) {
	if err == nil {
		return
	}
	cfg := trace.NewEventConfig(opts...)
	attrs := append(make([]attribute.KeyValue, 0, 3+len(cfg.Attributes())),
		attribute.String("exception.type", errorType(err)),
		attribute.String("exception.message", err.Error()))
	if cfg.StackTrace() {
		buf := make([]byte, 16<<10)
		attrs = append(attrs, attribute.String("exception.stacktrace", string(buf[:runtime.Stack(buf, false)])))
	}
	s.addEvent("exception", cfg.Timestamp(), append(attrs, cfg.Attributes()...))
}

// errorType names err's type as OpenTelemetry's exception.type does:
// package path and type name, or the type's own text when it has no name
// (a pointer type).
func errorType(err error) string {
	t := reflect.TypeOf(err)
	if t.PkgPath() == "" && t.Name() == "" {
		return t.String()
	}
	return fmt.Sprintf("%s.%s", t.PkgPath(), t.Name())
}

func (s *span) addEvent(name string, at time.Time, attrs []attribute.KeyValue) {
	if at.IsZero() {
		at = time.Now()
	}
	l := s.p.limits
	kept, dropped := l.addAttrs(nil, 0, l.eventAttrs, attrs)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	if len(s.events) >= l.events {
		s.droppedEvents++
		return
	}
	s.events = append(s.events, event{name: name, at: at, attrs: kept, dropped: dropped})
}

// AddLink implements trace.Span. A link to an invalid span context is
// not kept.
func (s *span) AddLink(l trace.Link) {
	if !l.SpanContext.IsValid() {
		return
	}
	lim := s.p.limits
	kept, dropped := lim.addAttrs(nil, 0, lim.linkAttrs, l.Attributes)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	if len(s.links) >= lim.links {
		s.droppedLinks++
		return
	}
	s.links = append(s.links, link{sc: l.SpanContext, attrs: kept, dropped: dropped})
}

// End implements trace.Span: the span stops recording and goes to the
// exporter's next batch (once; a second End does nothing).
func (s *span) End(opts ...trace.SpanEndOption) {
	end := time.Time{}
	if len(opts) > 0 {
		cfg := trace.NewSpanEndConfig(opts...)
		end = cfg.Timestamp()
	}
	if end.IsZero() {
		end = time.Now()
	}
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.ended = true
	s.mu.Unlock()
	s.p.exp.add(s, end)
}
