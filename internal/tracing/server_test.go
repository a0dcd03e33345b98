package tracing_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"agentserver/internal/llm/scripted"
	"agentserver/internal/testutil"
	"agentserver/internal/tracing"
)

// otlpReceiver is an OTLP/HTTP trace endpoint that keeps every span it is
// sent.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (r *otlpReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	var export collectortrace.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &export)
	}
	if req.URL.Path != "/v1/traces" || err != nil {
		http.Error(w, fmt.Sprintf("bad export to %s: %v", req.URL.Path, err), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	for _, rs := range export.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			r.spans = append(r.spans, ss.Spans...)
		}
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// find returns the spans named name whose attributes include attrs.
func (r *otlpReceiver) find(name string, attrs map[string]string) []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range r.spans {
		if s.Name == name && hasAttrs(s, attrs) {
			out = append(out, s)
		}
	}
	return out
}

func hasAttrs(s *tracepb.Span, want map[string]string) bool {
	for k, v := range want {
		if got, ok := attr(s, k); !ok || (v != "*" && got != v) {
			return false
		}
	}
	return true
}

// attr is a span attribute as text.
func attr(s *tracepb.Span, key string) (string, bool) {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return anyValue(kv.Value), true
		}
	}
	return "", false
}

func anyValue(v *commonpb.AnyValue) string {
	switch x := v.Value.(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return fmt.Sprint(x.IntValue)
	case *commonpb.AnyValue_BoolValue:
		return fmt.Sprint(x.BoolValue)
	}
	return v.String()
}

// one returns the only span named name with attrs.
func (r *otlpReceiver) one(t *testing.T, name string, attrs map[string]string) *tracepb.Span {
	t.Helper()
	got := r.find(name, attrs)
	if len(got) != 1 {
		t.Fatalf("%d spans %q with %v, want 1", len(got), name, attrs)
	}
	return got[0]
}

// childOf fails unless child's parent is parent, in parent's trace.
func childOf(t *testing.T, child, parent *tracepb.Span) {
	t.Helper()
	if hex.EncodeToString(child.TraceId) != hex.EncodeToString(parent.TraceId) || hex.EncodeToString(child.ParentSpanId) != hex.EncodeToString(parent.SpanId) {
		t.Errorf("span %q (trace %x, parent %x) is not a child of %q (trace %x, span %x)",
			child.Name, child.TraceId, child.ParentSpanId, parent.Name, parent.TraceId, parent.SpanId)
	}
}

// parentIn returns the span of candidates that is child's parent.
func parentIn(t *testing.T, child *tracepb.Span, candidates []*tracepb.Span) *tracepb.Span {
	t.Helper()
	for _, c := range candidates {
		if string(c.SpanId) == string(child.ParentSpanId) {
			return c
		}
	}
	t.Fatalf("span %q has none of the %d candidates as its parent", child.Name, len(candidates))
	return nil
}

// childrenOf keeps the spans whose parent is parent.
func childrenOf(spans []*tracepb.Span, parent *tracepb.Span) []*tracepb.Span {
	var out []*tracepb.Span
	for _, s := range spans {
		if string(s.ParentSpanId) == string(parent.SpanId) {
			out = append(out, s)
		}
	}
	return out
}

// TestTracingAcrossServers runs a supervisor whose async subagent is on a
// second server, reached over the HTTP transport, and checks that one
// trace holds request → run → node → model and tool on the supervisor,
// then the remote request → run → node, with ids and usage as attributes;
// and that log lines carry the trace id.
func TestTracingAcrossServers(t *testing.T) {
	receiver := &otlpReceiver{}
	collector := httptest.NewServer(receiver)
	t.Cleanup(collector.Close)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	stop, err := tracing.Setup(context.Background(), slog.New(slog.NewTextHandler(t.Output(), nil)))
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	flush := func() {
		if !stopped {
			stopped = true
			if err := stop(context.Background()); err != nil {
				t.Errorf("flush spans: %v", err)
			}
		}
	}
	t.Cleanup(flush)

	model := scripted.New()
	t.Cleanup(model.Close)
	host := testutil.StartServer(t, testutil.Options{Graphs: testutil.TestGraphs})
	logs := &testutil.LogBuffer{}
	sup := testutil.StartServer(t, testutil.Options{
		Graphs: `{"graphs": {"boss": "./boss.yaml"}}`,
		Files:  map[string]string{"boss.yaml": testutil.SupervisorSpec(model.URL(), host.URL()) + "subagents: {}\n"},
		Log:    logs,
	})
	model.Script(
		scripted.ToolCalls(
			scripted.Call("start_async_task", map[string]any{"description": "hello", "subagent_type": "echoer"}),
			scripted.Call("task", map[string]any{"description": "sum", "prompt": "add 2 and 2", "subagent_type": "general-purpose"}),
		).WithUsage(10, 5),
		scripted.Text("It is 4.").WithUsage(7, 1), // the task-tool subagent
		scripted.Text("Started.").WithUsage(20, 3),
	)
	tid := testutil.NewThread(t, sup)
	out := sup.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "boss", "input": testutil.UserInput("start it")}).Object(t)
	var asyncTask string
	for id := range out["async_tasks"].(map[string]any) {
		asyncTask = id
	}
	testutil.Eventually(t, 5*time.Second, "the remote echo run to end", func() bool {
		runs := testutil.ThreadRuns(t, host, asyncTask)
		return len(runs) == 1 && runs[0].(map[string]any)["status"] == "success"
	})
	supRun := sup.Must(200, "GET", "/threads/"+tid+"/runs", nil).List(t)[0].(map[string]any)
	remoteRun := testutil.ThreadRuns(t, host, asyncTask)[0].(map[string]any)
	flush()

	request := receiver.one(t, "POST /threads/{thread_id}/runs/wait", map[string]string{"langgraph.thread_id": tid, "http.response.status_code": "200"})
	run := receiver.one(t, "run", map[string]string{
		"langgraph.run_id": supRun["run_id"].(string), "langgraph.thread_id": tid, "langgraph.assistant_id": supRun["assistant_id"].(string),
		"langgraph.run.status": "success", "gen_ai.usage.input_tokens": "*", "gen_ai.usage.output_tokens": "*",
	})
	childOf(t, run, request)
	modelNodes := childrenOf(receiver.find("node model", nil), run)
	toolNodes := childrenOf(receiver.find("node tools", nil), run)
	if len(modelNodes) != 2 || len(toolNodes) != 1 {
		t.Fatalf("%d model nodes and %d tool nodes below the run, want 2 and 1", len(modelNodes), len(toolNodes))
	}
	chat := receiver.one(t, "chat test-model", map[string]string{"gen_ai.usage.input_tokens": "10", "gen_ai.usage.output_tokens": "5"})
	childOf(t, chat, parentIn(t, chat, modelNodes))
	tool := receiver.one(t, "tool start_async_task", map[string]string{"gen_ai.tool.call.id": "*"})
	childOf(t, tool, toolNodes[0])

	// The task-tool subagent runs below its tool call.
	task := receiver.one(t, "tool task", nil)
	childOf(t, task, toolNodes[0])
	subNodes := childrenOf(receiver.find("node model", nil), task)
	if len(subNodes) != 1 {
		t.Fatalf("%d model nodes below the task tool, want 1", len(subNodes))
	}
	childOf(t, receiver.one(t, "chat test-model", map[string]string{"gen_ai.usage.input_tokens": "7"}), subNodes[0])

	// The remote server: the run-creating request carries the tool's
	// traceparent, and the remote run is its child.
	remoteReq := receiver.one(t, "POST /threads/{thread_id}/runs", map[string]string{"langgraph.thread_id": asyncTask})
	childOf(t, remoteReq, tool)
	remote := receiver.one(t, "run", map[string]string{"langgraph.run_id": remoteRun["run_id"].(string), "langgraph.graph_id": "echo"})
	childOf(t, remote, remoteReq)
	if n := len(childrenOf(receiver.find("node echo", nil), remote)); n != 1 {
		t.Errorf("%d echo node spans below the remote run, want 1", n)
	}

	traceID := hex.EncodeToString(request.TraceId)
	if !strings.Contains(logs.String(), "trace_id="+traceID) {
		t.Errorf("no log line carries trace_id=%s:\n%s", traceID, logs.String())
	}
}
