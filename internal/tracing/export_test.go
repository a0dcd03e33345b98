package tracing_test

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"agentserver/internal/tracing"
)

// collector is an OTLP/HTTP endpoint that decodes every export with the
// reference protobuf definitions and keeps the requests; status, when set,
// answers instead (and is consumed).
type collector struct {
	*httptest.Server
	mu       sync.Mutex
	requests []*collectortrace.ExportTraceServiceRequest
	headers  []http.Header
	status   []int         // answers to give before accepting, one per request
	block    chan struct{} // when not nil, a request waits for it to close
}

func newCollector(t *testing.T) *collector {
	c := &collector{}
	c.Server = httptest.NewServer(http.HandlerFunc(c.serve))
	t.Cleanup(c.Close)
	return c
}

func (c *collector) serve(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	block := c.block
	c.mu.Unlock()
	if block != nil {
		<-block
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	var req collectortrace.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(raw, &req)
	}
	if err != nil || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, fmt.Sprintf("bad export to %s (%s): %v", r.URL.Path, r.Header.Get("Content-Type"), err), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.status) > 0 {
		code := c.status[0]
		c.status = c.status[1:]
		w.WriteHeader(code)
		return
	}
	c.requests = append(c.requests, &req)
	c.headers = append(c.headers, r.Header.Clone())
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Write(out)
}

// spans are the spans received so far, in order.
func (c *collector) spans() []*tracepb.Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*tracepb.Span
	for _, req := range c.requests {
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				out = append(out, ss.Spans...)
			}
		}
	}
	return out
}

// setup turns tracing on, exporting to c, with env on top of the
// endpoint (the SDK reads the process environment); tracing is off again
// when the test ends.
func setup(t *testing.T, c *collector, env map[string]string) {
	t.Helper()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", c.URL)
	for k, v := range env {
		t.Setenv(k, v)
	}
	stop, err := tracing.Setup(context.Background(), testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
}

// testLog is a logger that writes to the test's log.
func testLog(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), nil))
}

// flushWithin sends the spans ended so far, failing the test if that takes
// longer than d.
func flushWithin(t *testing.T, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := tracing.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

func flush(t *testing.T) {
	t.Helper()
	flushWithin(t, 10*time.Second)
}

func attrMap(kvs []*commonpb.KeyValue) map[string]*commonpb.AnyValue {
	out := map[string]*commonpb.AnyValue{}
	for _, kv := range kvs {
		out[kv.Key] = kv.Value
	}
	return out
}

// TestExportIsOTLP: what the exporter sends decodes with the reference
// OTLP definitions into exactly the spans made: ids, parents, names,
// kinds, times, every attribute type, events, links, status, flags, the
// resource and the scope.
func TestExportIsOTLP(t *testing.T) {
	c := newCollector(t)
	setup(t, c, map[string]string{"OTEL_SERVICE_NAME": "svc-under-test", "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=test%20env,team=x"})

	const remote = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	long := strings.Repeat("é", 300) // a length that takes two varint bytes, in a nested message
	before := time.Now()
	ctx, server := tracing.StartServer(context.Background(), http.Header{"Traceparent": {remote}}, "POST /runs/wait",
		attribute.String("http.route", "/runs/wait"))
	ctx, child := tracing.Start(ctx, "run",
		attribute.Bool("b", true), attribute.Int64("i", -7), attribute.Float64("f", 2.5), attribute.String("s", long),
		attribute.BoolSlice("bs", []bool{true, false}), attribute.Int64Slice("is", []int64{1, -2}),
		attribute.Float64Slice("fs", []float64{0.5}), attribute.StringSlice("ss", []string{"a", "b"}))
	child.SetAttributes(attribute.Int64("i", 8)) // a key set again takes the new value
	child.RecordError(errors.New("boom"))
	child.SetStatus(codes.Error, "it broke")
	linked := trace.SpanContextFromContext(ctx)
	_, third := tracing.Start(ctx, "node", attribute.String("langgraph.node", "echo"))
	third.AddLink(trace.Link{SpanContext: linked, Attributes: []attribute.KeyValue{attribute.String("why", "test")}})
	third.SetStatus(codes.Ok, "ignored for ok")
	third.SetStatus(codes.Error, "too late: ok is final")
	third.End()
	tracing.End(child, nil)
	server.SetAttributes(attribute.Int("http.response.status_code", 200))
	server.End()
	server.SetAttributes(attribute.String("after", "end")) // no effect after End
	after := time.Now()
	flush(t)

	spans := c.spans()
	if len(spans) != 3 {
		t.Fatalf("received %d spans, want 3", len(spans))
	}
	byName := map[string]*tracepb.Span{}
	for _, s := range spans {
		byName[s.Name] = s
	}
	srv, run, node := byName["POST /runs/wait"], byName["run"], byName["node"]
	if srv == nil || run == nil || node == nil {
		t.Fatalf("span names: %v", byName)
	}
	if hex.EncodeToString(srv.TraceId) != "4bf92f3577b34da6a3ce929d0e0e4736" || hex.EncodeToString(srv.ParentSpanId) != "00f067aa0ba902b7" {
		t.Errorf("server span trace %x parent %x, want the traceparent's", srv.TraceId, srv.ParentSpanId)
	}
	if srv.Kind != tracepb.Span_SPAN_KIND_SERVER || run.Kind != tracepb.Span_SPAN_KIND_INTERNAL {
		t.Errorf("kinds %v, %v", srv.Kind, run.Kind)
	}
	if srv.Flags != 0x301 || run.Flags != 0x101 {
		t.Errorf("flags %#x (remote parent), %#x (local parent); want 0x301, 0x101", srv.Flags, run.Flags)
	}
	for _, p := range [][2]*tracepb.Span{{run, srv}, {node, run}} {
		if string(p[0].TraceId) != string(p[1].TraceId) || string(p[0].ParentSpanId) != string(p[1].SpanId) {
			t.Errorf("%q is not a child of %q", p[0].Name, p[1].Name)
		}
	}
	for _, s := range spans {
		start, end := time.Unix(0, int64(s.StartTimeUnixNano)), time.Unix(0, int64(s.EndTimeUnixNano))
		if start.Before(before.Truncate(time.Microsecond)) || end.Before(start) || end.After(after) {
			t.Errorf("%q runs %v → %v, outside %v → %v", s.Name, start, end, before, after)
		}
	}
	if a := attrMap(srv.Attributes); a["http.route"].GetStringValue() != "/runs/wait" || a["http.response.status_code"].GetIntValue() != 200 || a["after"] != nil {
		t.Errorf("server span attributes %v", srv.Attributes)
	}
	a := attrMap(run.Attributes)
	if len(run.Attributes) != 8 || !a["b"].GetBoolValue() || a["i"].GetIntValue() != 8 || a["f"].GetDoubleValue() != 2.5 || a["s"].GetStringValue() != long {
		t.Errorf("run span scalar attributes %v", run.Attributes)
	}
	for k, want := range map[string]string{"bs": "true false", "is": "1 -2", "fs": "0.5", "ss": "a b"} {
		var got []string
		for _, v := range a[k].GetArrayValue().GetValues() {
			got = append(got, anyText(v))
		}
		if strings.Join(got, " ") != want {
			t.Errorf("array attribute %s = %q, want %q", k, got, want)
		}
	}
	if len(run.Events) != 1 || run.Events[0].Name != "exception" {
		t.Fatalf("run span events %v", run.Events)
	}
	ea := attrMap(run.Events[0].Attributes)
	if ea["exception.message"].GetStringValue() != "boom" || ea["exception.type"].GetStringValue() != "*errors.errorString" {
		t.Errorf("exception event attributes %v", run.Events[0].Attributes)
	}
	if run.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || run.Status.GetMessage() != "it broke" {
		t.Errorf("run span status %v", run.Status)
	}
	if node.Status.GetCode() != tracepb.Status_STATUS_CODE_OK || node.Status.GetMessage() != "" {
		t.Errorf("node span status %v, want OK without a message", node.Status)
	}
	if len(node.Links) != 1 || string(node.Links[0].SpanId) != string(run.SpanId) || attrMap(node.Links[0].Attributes)["why"].GetStringValue() != "test" {
		t.Errorf("node span links %v", node.Links)
	}

	c.mu.Lock()
	rs := c.requests[0].ResourceSpans[0]
	c.mu.Unlock()
	res := attrMap(rs.Resource.Attributes)
	if res["service.name"].GetStringValue() != "svc-under-test" || res["deployment.environment"].GetStringValue() != "test env" || res["team"].GetStringValue() != "x" || res["telemetry.sdk.language"].GetStringValue() != "go" {
		t.Errorf("resource %v", rs.Resource.Attributes)
	}
	if rs.ScopeSpans[0].Scope.GetName() != "agentserver" {
		t.Errorf("scope %v", rs.ScopeSpans[0].Scope)
	}
}

// anyText is a scalar AnyValue as text.
func anyText(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_BoolValue:
		return fmt.Sprint(x.BoolValue)
	case *commonpb.AnyValue_IntValue:
		return fmt.Sprint(x.IntValue)
	case *commonpb.AnyValue_DoubleValue:
		return fmt.Sprint(x.DoubleValue)
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	}
	return fmt.Sprintf("unexpected %T", v.GetValue())
}

// TestSamplerFollowsTheStandardVariables: OTEL_TRACES_SAMPLER and its
// argument decide which spans record and reach the collector, and a
// sampled-out span still passes its trace on.
func TestSamplerFollowsTheStandardVariables(t *testing.T) {
	sampledParent := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	unsampledParent := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"
	for _, tc := range []struct {
		sampler, arg string
		parent       string
		want         bool
	}{
		{"", "", "", true},
		{"", "", unsampledParent, false},
		{"", "", sampledParent, true},
		{"always_off", "", "", false},
		{"always_on", "", unsampledParent, true},
		{"parentbased_always_off", "", "", false},
		{"parentbased_always_off", "", sampledParent, true},
		{"traceidratio", "0", sampledParent, false},
		{"traceidratio", "1", unsampledParent, true},
		{"parentbased_traceidratio", "0", "", false},
		{"parentbased_traceidratio", "0", sampledParent, true},
	} {
		parent := map[string]string{"": "root", sampledParent: "sampled-parent", unsampledParent: "unsampled-parent"}[tc.parent]
		t.Run(fmt.Sprintf("%s(%s)/%s", tc.sampler, tc.arg, parent), func(t *testing.T) {
			c := newCollector(t)
			setup(t, c, map[string]string{"OTEL_TRACES_SAMPLER": tc.sampler, "OTEL_TRACES_SAMPLER_ARG": tc.arg})
			ctx := tracing.WithTraceparent(context.Background(), tc.parent)
			ctx, span := tracing.Start(ctx, "s")
			if span.IsRecording() != tc.want {
				t.Errorf("recording = %v, want %v", span.IsRecording(), tc.want)
			}
			tp := tracing.Traceparent(ctx)
			if tc.parent != "" && tp[3:35] != tc.parent[3:35] {
				t.Errorf("traceparent %q is not in the parent's trace", tp)
			}
			if wantFlag := map[bool]string{true: "01", false: "00"}[tc.want]; !strings.HasSuffix(tp, "-"+wantFlag) {
				t.Errorf("traceparent %q, want flags %s", tp, wantFlag)
			}
			span.End()
			flush(t)
			if got := len(c.spans()); got != map[bool]int{true: 1, false: 0}[tc.want] {
				t.Errorf("collector received %d spans", got)
			}
		})
	}
}

// TestSamplerRatioIsAFractionOfTraces: traceidratio 0.25 samples about a
// quarter of new traces.
func TestSamplerRatioIsAFractionOfTraces(t *testing.T) {
	c := newCollector(t)
	setup(t, c, map[string]string{"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.25"})
	sampled := 0
	const n = 4000
	for range n {
		_, span := tracing.Start(context.Background(), "s")
		if span.IsRecording() {
			sampled++
		}
		span.End()
	}
	if sampled < n/5 || sampled > n*3/10 {
		t.Errorf("%d of %d traces sampled at 0.25", sampled, n)
	}
}

// TestSetupRefusesUnusableVariables: a variable set to something the
// SDK cannot use (it would log it and go on with its default) or would
// not honour stops Setup with an error naming it; values the SDK takes
// pass.
func TestSetupRefusesUnusableVariables(t *testing.T) {
	for _, env := range []map[string]string{
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "127.0.0.1:4318"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "localhost:4318"},
		{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
		{"OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"},
		{"OTEL_EXPORTER_OTLP_HEADERS": "novalue"},
		{"OTEL_EXPORTER_OTLP_TIMEOUT": "soon"},
		{"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "soon"},
		{"OTEL_BSP_MAX_QUEUE_SIZE": "-1"},
		{"OTEL_BSP_MAX_QUEUE_SIZE": "many"},
		{"OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT": "lots"},
		{"OTEL_TRACES_SAMPLER": "jaeger_remote"},
		{"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"},
		{"OTEL_RESOURCE_ATTRIBUTES": "a=%zz"},
		{"OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent/ca.pem"},
	} {
		t.Run(fmt.Sprint(env), func(t *testing.T) {
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
			var names []string
			for k, v := range env {
				t.Setenv(k, v)
				names = append(names, k)
			}
			stop, err := tracing.Setup(context.Background(), testLog(t))
			if err == nil {
				stop(context.Background())
				t.Fatalf("Setup with %v: no error", env)
			}
			for _, name := range names {
				if !strings.Contains(err.Error(), name) {
					t.Errorf("Setup with %v: %q does not name %s", env, err, name)
				}
			}
			t.Log(err)
		})
	}
	for _, env := range []map[string]string{
		{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json", "OTEL_EXPORTER_OTLP_COMPRESSION": "none"},
		{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "gzip"},
		{"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.5"},
		{"OTEL_BSP_MAX_QUEUE_SIZE": "100", "OTEL_BSP_SCHEDULE_DELAY": "100", "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT": "-1"},
		{"OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%20x", "OTEL_EXPORTER_OTLP_TIMEOUT": "500"},
	} {
		t.Run(fmt.Sprint("accepted ", env), func(t *testing.T) {
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
			for k, v := range env {
				t.Setenv(k, v)
			}
			stop, err := tracing.Setup(context.Background(), testLog(t))
			if err != nil {
				t.Fatalf("Setup with %v: %v", env, err)
			}
			stop(context.Background())
		})
	}
}

// TestExportHonoursEndpointHeadersAndCompression: the traces endpoint is
// used as given, headers are sent percent-decoded, and gzip is applied.
func TestExportHonoursEndpointHeadersAndCompression(t *testing.T) {
	c := newCollector(t)
	setup(t, c, map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":        "http://127.0.0.1:1",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": c.URL + "/v1/traces",
		"OTEL_EXPORTER_OTLP_HEADERS":         "x-api-key=secret%20value, x-tenant=t1",
		"OTEL_EXPORTER_OTLP_COMPRESSION":     "gzip",
	})
	_, span := tracing.Start(context.Background(), "s")
	span.End()
	flush(t)
	if len(c.spans()) != 1 {
		t.Fatalf("collector received %d spans", len(c.spans()))
	}
	c.mu.Lock()
	h := c.headers[0]
	c.mu.Unlock()
	if h.Get("Content-Encoding") != "gzip" || h.Get("X-Api-Key") != "secret value" || h.Get("X-Tenant") != "t1" {
		t.Errorf("request headers %v", h)
	}
}

// TestExportRetriesAnUnavailableCollector: 503 and 429 answers are
// retried until the batch is accepted; nothing is lost or sent twice. The
// SDK's backoff starts at 5 s (±50 %) and grows by half each time, so this
// takes 6 to 19 seconds.
func TestExportRetriesAnUnavailableCollector(t *testing.T) {
	c := newCollector(t)
	c.status = []int{http.StatusServiceUnavailable, http.StatusTooManyRequests}
	setup(t, c, nil)
	for range 3 {
		_, span := tracing.Start(context.Background(), "s")
		span.End()
	}
	flushWithin(t, time.Minute)
	got := len(c.spans())
	c.mu.Lock()
	defer c.mu.Unlock()
	if got != 3 || len(c.requests) != 1 {
		t.Errorf("received %d spans in %d requests, want 3 in 1", got, len(c.requests))
	}
	if len(c.status) != 0 {
		t.Errorf("answers not given: %v", c.status)
	}
}

// TestExportDropsBeyondTheQueue: while the collector hangs, spans beyond
// OTEL_BSP_MAX_QUEUE_SIZE are dropped instead of piling up, and ending a
// span never waits for the collector. With a queue of 4 and batches of 2,
// at most 6 of 7 spans are held (a batch being sent and a full queue) and
// at least the 4 the queue holds; the rest are dropped.
func TestExportDropsBeyondTheQueue(t *testing.T) {
	c := newCollector(t)
	c.block = make(chan struct{})
	setup(t, c, map[string]string{"OTEL_BSP_MAX_QUEUE_SIZE": "4", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "2"})
	for i := range 7 {
		_, span := tracing.Start(context.Background(), fmt.Sprint("s", i))
		span.End()
	}
	c.mu.Lock()
	close(c.block)
	c.block = nil
	c.mu.Unlock()
	flush(t)
	var names []string
	for _, s := range c.spans() {
		names = append(names, s.Name)
	}
	if len(names) < 4 || len(names) > 6 || names[0] != "s0" || !slices.IsSorted(names) {
		t.Errorf("received %v, want 4 to 6 of the 7 spans, in order, from s0", names)
	}
}
