package metrics_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"agentserver/internal/llm/scripted"
	"agentserver/internal/testutil"
)

// series maps a scraped series ("name{label="v",...}", labels sorted by
// name) to its value; a histogram gives name_count and name_sum.
type series map[string]float64

// scrape reads the exposition at url as series.
func scrape(t *testing.T, url, apiKey string) series {
	t.Helper()
	return seriesOf(scrapeFamilies(t, url, apiKey))
}

// scrapeFamilies GETs url and parses the Prometheus text exposition with
// the Prometheus text parser, which refuses anything malformed (names,
// labels, values, TYPE lines, histogram layout).
func scrapeFamilies(t *testing.T, url, apiKey string) map[string]*dto.MetricFamily {
	t.Helper()
	resp := getMetrics(t, url, apiKey)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: status %d: %s", url, resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("GET %s: Content-Type %q, want the text format", url, ct)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: not a valid Prometheus text exposition: %v", url, err)
	}
	return families
}

// seriesOf flattens parsed families into series.
func seriesOf(families map[string]*dto.MetricFamily) series {
	out := series{}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			labels := seriesLabels(m.GetLabel())
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[name+labels] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[name+labels] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[name+"_count"+labels] = float64(m.GetHistogram().GetSampleCount())
				out[name+"_sum"+labels] = m.GetHistogram().GetSampleSum()
			case dto.MetricType_SUMMARY:
				out[name+"_count"+labels] = float64(m.GetSummary().GetSampleCount())
				out[name+"_sum"+labels] = m.GetSummary().GetSampleSum()
			default:
				out[name+labels] = m.GetUntyped().GetValue()
			}
		}
	}
	return out
}

// seriesLabels renders labels as {a="x",b="y"}, sorted by name; "" for
// none.
func seriesLabels(pairs []*dto.LabelPair) string {
	if len(pairs) == 0 {
		return ""
	}
	parts := make([]string, len(pairs))
	for i, p := range pairs {
		parts[i] = p.GetName() + "=" + strconv.Quote(p.GetValue())
	}
	slices.Sort(parts)
	return "{" + strings.Join(parts, ",") + "}"
}

// documentedFamilies reads the metric families that docs/observability.md
// lists (the first two cells of each table row: the name in backticks and
// its type) and returns their types by name.
func documentedFamilies(t *testing.T) map[string]dto.MetricType {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "observability.md"))
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]dto.MetricType{"counter": dto.MetricType_COUNTER, "gauge": dto.MetricType_GAUGE, "histogram": dto.MetricType_HISTOGRAM}
	out := map[string]dto.MetricType{}
	for _, m := range documentedMetricRow.FindAllStringSubmatch(string(doc), -1) {
		typ, ok := types[m[2]]
		if !ok {
			t.Fatalf("docs/observability.md: metric %s has type %q", m[1], m[2])
		}
		out[m[1]] = typ
	}
	if len(out) < 20 {
		t.Fatalf("docs/observability.md lists %d metric families; the table format changed?", len(out))
	}
	return out
}

// documentedMetricRow matches a row of the metric tables of
// docs/observability.md: | `name` | type ... |.
var documentedMetricRow = regexp.MustCompile("(?m)^\\| `((?:lg_api|agentserver)_[a-z0-9_]+)` \\| ([a-z]+)")

// wantDocumentedFamilies fails unless every family that
// docs/observability.md lists is served with the documented type and at
// least one series.
func wantDocumentedFamilies(t *testing.T, served map[string]*dto.MetricFamily) {
	t.Helper()
	for name, typ := range documentedFamilies(t) {
		f, ok := served[name]
		switch {
		case !ok:
			t.Errorf("documented family %s is not served", name)
		case f.GetType() != typ:
			t.Errorf("family %s is a %s, documented as a %s", name, f.GetType(), typ)
		case len(f.GetMetric()) == 0:
			t.Errorf("family %s has no series", name)
		}
	}
}

// statusOf is the status of GET url.
func statusOf(t *testing.T, url, apiKey string) int {
	t.Helper()
	resp := getMetrics(t, url, apiKey)
	resp.Body.Close()
	return resp.StatusCode
}

func getMetrics(t *testing.T, url, apiKey string) *http.Response {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if apiKey != "" {
		req.Header.Set("x-api-key", apiKey)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// wantDelta fails unless each named series grew from before to after by
// the amount given.
func wantDelta(t *testing.T, before, after series, want map[string]float64) {
	t.Helper()
	for name, d := range want {
		if got := after[name] - before[name]; got != d {
			t.Errorf("%s grew by %g, want %g (now %g)", name, got, d, after[name])
		}
	}
}

// TestMetricsOfASupervisorRun drives a supervisor run that starts an async
// subagent, delegates to a task-tool subagent and calls a tool, and checks
// every metric family against what happened.
func TestMetricsOfASupervisorRun(t *testing.T) {
	model := scripted.New()
	t.Cleanup(model.Close)
	s := testutil.StartServer(t, testutil.Options{
		Graphs: `{"graphs": {"boss": "./boss.yaml", "echo": "builtin:echo", "gated": "builtin:test-gated", "failing": "builtin:test-failing"}}`,
		Files:  map[string]string{"boss.yaml": testutil.SupervisorSpec(model.URL(), "") + "tools: [write_todos]\nsubagents: {}\n"},
		Jobs:   3,
	})
	url := s.URL() + "/metrics"
	before := scrape(t, url, "")

	gate := "metrics-gate-" + testutil.NewThread(t, s)
	model.Script(
		scripted.ToolCalls(
			scripted.Call("start_async_task", map[string]any{"description": gate, "subagent_type": "waiter"}),
			scripted.Call("task", map[string]any{"description": "sum", "prompt": "add 2 and 2", "subagent_type": "general-purpose"}),
			scripted.Call("write_todos", map[string]any{"todos": []any{map[string]any{"content": "watch", "status": "pending"}}}),
		).WithUsage(10, 5),
		scripted.Text("It is 4.").WithUsage(20, 3),
		scripted.Text("All started.").WithUsage(30, 4),
	)
	tid := testutil.NewThread(t, s)
	out := s.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "boss", "input": testutil.UserInput("go")}).Object(t)
	tasks, _ := out["async_tasks"].(map[string]any)
	if len(tasks) != 1 {
		t.Fatalf("async_tasks = %v", out["async_tasks"])
	}
	var task string
	for id := range tasks {
		task = id
	}
	failed := s.Do("POST", "/runs/wait", map[string]any{"assistant_id": "failing", "input": map[string]any{}}).Status

	// The async subagent's run waits at its gate: it holds a worker, the
	// supervisor follows it, and a client streams it.
	runID := testutil.ThreadRuns(t, s, task)[0].(map[string]any)["run_id"].(string)
	stream := s.Stream("GET", "/threads/"+task+"/runs/"+runID+"/stream", nil, nil)
	defer stream.Body.Close()
	var during series
	testutil.Eventually(t, 5*time.Second, "the gated run to be running and streamed", func() bool {
		during = scrape(t, url, "")
		return during["lg_api_num_running_runs"] == 1 && during["agentserver_sse_clients"]-before["agentserver_sse_clients"] == 1
	})
	for name, want := range map[string]float64{"lg_api_workers_max": 3, "lg_api_workers_active": 1, "lg_api_workers_available": 2, "lg_api_num_pending_runs": 0} {
		if during[name] != want {
			t.Errorf("%s = %g while the gated run runs, want %g", name, during[name], want)
		}
	}
	wantDelta(t, before, during, map[string]float64{
		"agentserver_async_tasks_active":        1,
		"agentserver_async_tasks_started_total": 1,
		"agentserver_subagents_running":         0,
	})

	testutil.Release(gate)
	io.Copy(io.Discard, stream.Body)
	var after series
	var families map[string]*dto.MetricFamily
	testutil.Eventually(t, 5*time.Second, "the async task's end to be recorded", func() bool {
		after = scrape(t, url, "")
		return after["agentserver_async_tasks_active"] == before["agentserver_async_tasks_active"] && after["lg_api_num_running_runs"] == 0
	})
	// A scrape reads the families one after another, so the one that saw
	// the task leave the active gauge may have read the completion count
	// before it grew: the figures come from the next scrape.
	families = scrapeFamilies(t, url, "")
	after = seriesOf(families)
	want := map[string]float64{
		`lg_api_run_success_counter_total`:                                                                  2,
		`lg_api_run_failed_after_retry_counter_total`:                                                       1,
		`agentserver_run_duration_seconds_count{status="success"}`:                                          2,
		`agentserver_run_duration_seconds_count{status="error"}`:                                            1,
		`lg_api_run_queue_wait_time_1st_attempt_count`:                                                      3,
		`agentserver_model_input_tokens_total{model="test-model"}`:                                          60,
		`agentserver_model_output_tokens_total{model="test-model"}`:                                         12,
		`agentserver_model_call_duration_seconds_count{model="test-model"}`:                                 3,
		`agentserver_model_call_errors_total{model="test-model"}`:                                           0,
		`agentserver_tool_calls_total{status="success",tool="start_async_task"}`:                            1,
		`agentserver_tool_calls_total{status="success",tool="task"}`:                                        1,
		`agentserver_tool_calls_total{status="success",tool="write_todos"}`:                                 1,
		`agentserver_async_tasks_completed_total{status="success"}`:                                         1,
		`agentserver_subagents_finished_total{status="completed",stop_reason=""}`:                           1,
		`agentserver_sse_clients`:                                                                           0,
		`agentserver_subagents_queued`:                                                                      0,
		`lg_api_http_requests_total{method="POST",path="/threads/{thread_id}/runs/wait",status="200"}`:      1,
		`lg_api_http_requests_total{method="POST",path="/runs/wait",status="` + strconv.Itoa(failed) + `"}`: 1,
	}
	wantDocumentedFamilies(t, families)
	wantDelta(t, before, after, want)
	if n := after[`lg_api_http_requests_latency_count{method="POST",path="/threads/{thread_id}/runs/wait"}`] - before[`lg_api_http_requests_latency_count{method="POST",path="/threads/{thread_id}/runs/wait"}`]; n != 1 {
		t.Errorf("latency observations of /threads/{thread_id}/runs/wait grew by %g, want 1", n)
	}
	if after["agentserver_storage_commit_batch_size_count"] <= before["agentserver_storage_commit_batch_size_count"] || after["agentserver_storage_commit_duration_seconds_count"] <= before["agentserver_storage_commit_duration_seconds_count"] {
		t.Error("storage commits were not recorded")
	}
}

// TestMetricsListenerAndAPIKey: without --metrics-addr, /metrics is on the
// main listener behind the API key; with it, /metrics is served there
// without the key and not on the main listener.
func TestMetricsListenerAndAPIKey(t *testing.T) {
	main := testutil.StartServer(t, testutil.Options{APIKey: "secret"})
	if code := statusOf(t, main.URL()+"/metrics", ""); code != http.StatusUnauthorized {
		t.Errorf("/metrics without the key: status %d, want 401", code)
	}
	if got := scrape(t, main.URL()+"/metrics", "secret"); len(got) == 0 {
		t.Error("/metrics with the key served no series")
	}
	if main.MetricsURL() != "" {
		t.Errorf("MetricsURL = %q without --metrics-addr", main.MetricsURL())
	}

	sep := testutil.StartServer(t, testutil.Options{APIKey: "secret", MetricsAddr: "127.0.0.1:0"})
	got := scrape(t, sep.MetricsURL()+"/metrics", "")
	if _, ok := got["lg_api_workers_max"]; !ok {
		t.Error("the metrics listener serves no lg_api_workers_max")
	}
	if code := statusOf(t, sep.URL()+"/metrics", "secret"); code != http.StatusNotFound {
		t.Errorf("/metrics on the main listener with --metrics-addr: status %d, want 404", code)
	}
	if code := statusOf(t, sep.MetricsURL()+"/threads", ""); code != http.StatusNotFound {
		t.Errorf("the metrics listener answers /threads: status %d, want 404", code)
	}
}

// TestMetricsOfRunEnds counts a cancelled run, a timed-out run and a
// running run put back in the queue by a graceful shutdown.
func TestMetricsOfRunEnds(t *testing.T) {
	dir := t.TempDir()
	s := testutil.StartServer(t, testutil.Options{Graphs: testutil.TestGraphs, DataDir: dir, RunTimeout: 300 * time.Millisecond})
	url := s.URL() + "/metrics"
	before := scrape(t, url, "")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	startGated := func(gate string) string {
		tid := testutil.NewThread(t, s)
		rid := s.Must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "gated", "input": map[string]any{"gate": gate}}).Object(t)["run_id"].(string)
		if err := testutil.AwaitWaiters(ctx, gate, 1); err != nil {
			t.Fatal(err)
		}
		return "/threads/" + tid + "/runs/" + rid
	}
	cancelled := startGated("metrics-cancel-" + dir)
	s.Must(204, "POST", cancelled+"/cancel?wait=1&action=interrupt", nil)
	timedOut := startGated("metrics-timeout-" + dir)
	s.Must(200, "GET", timedOut+"/join", nil)
	if st := s.Must(200, "GET", timedOut, nil).Object(t)["status"]; st != "timeout" {
		t.Fatalf("run status = %v, want timeout", st)
	}
	wantDelta(t, before, scrape(t, url, ""), map[string]float64{
		"lg_api_run_canceled_by_request_counter_total":                 1,
		"agentserver_run_timeout_counter_total":                        1,
		`agentserver_run_duration_seconds_count{status="interrupted"}`: 1,
		`agentserver_run_duration_seconds_count{status="timeout"}`:     1,
		"lg_api_run_abandoned_by_shutdown_counter_total":               0,
	})

	startGated("metrics-shutdown-" + dir)
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	wantDelta(t, before, scrape(t, testutil.StartServer(t, testutil.Options{Graphs: testutil.TestGraphs}).URL()+"/metrics", ""), map[string]float64{
		"lg_api_run_abandoned_by_shutdown_counter_total": 1,
		"lg_api_run_canceled_by_request_counter_total":   1,
	})
}
