package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Registry holds every collector of the process.
var Registry = prometheus.NewRegistry()

// msBuckets are the bounds, in milliseconds, of the latency histograms
// named after LangGraph Platform's (which report milliseconds).
var msBuckets = []float64{1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000}

// secondBuckets are the bounds of the agentserver_* duration histograms.
var secondBuckets = []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600}

var (
	httpRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lg_api_http_requests_total", Help: "HTTP requests answered, by method, route template and status.",
	}, []string{"method", "path", "status"})
	httpLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "lg_api_http_requests_latency", Help: "HTTP request latency in milliseconds, by method and route template.", Buckets: msBuckets,
	}, []string{"method", "path"})

	queueWait = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "lg_api_run_queue_wait_time_1st_attempt", Help: "Milliseconds a run waited in the queue before its first attempt started.", Buckets: msBuckets,
	})

	runSuccess     = newCounter("lg_api_run_success_counter_total", "Runs that ended with status success.")
	runError       = newCounter("lg_api_run_failed_after_retry_counter_total", "Runs that ended with status error.")
	runInterrupted = newCounter("lg_api_run_canceled_by_request_counter_total", "Runs that ended with status interrupted (cancel, a multitask strategy, or rollback).")
	runTimeout     = newCounter("agentserver_run_timeout_counter_total", "Runs that ended with status timeout.")
	runRetried     = newCounter("lg_api_run_failed_retriable_counter_total", "Runs cut off by a crash and queued again for another attempt.")
	runRequeued    = newCounter("lg_api_run_abandoned_by_shutdown_counter_total", "Running runs put back in the queue by a graceful shutdown.")
	runDuration    = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "agentserver_run_duration_seconds", Help: "Seconds from a run attempt's start to its end, by end status.", Buckets: secondBuckets,
	}, []string{"status"})

	modelLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "agentserver_model_call_duration_seconds", Help: "Seconds a model call took (retries included), by model.", Buckets: secondBuckets,
	}, []string{"model"})
	modelInput = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agentserver_model_input_tokens_total", Help: "Input (prompt) tokens reported by models, by model.",
	}, []string{"model"})
	modelOutput = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agentserver_model_output_tokens_total", Help: "Output (completion) tokens reported by models, by model.",
	}, []string{"model"})
	modelErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agentserver_model_call_errors_total", Help: "Model calls that failed (after their retries), by model.",
	}, []string{"model"})

	toolCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agentserver_tool_calls_total", Help: "Tool calls executed by agents, by tool and result (success or error).",
	}, []string{"tool", "status"})

	asyncActive    = newGauge("agentserver_async_tasks_active", "Async subagent tasks whose current run a supervisor is following.")
	asyncStarted   = newCounter("agentserver_async_tasks_started_total", "Async subagent tasks started by start_async_task.")
	asyncCompleted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agentserver_async_tasks_completed_total", Help: "Runs of async subagent tasks that ended, by run status.",
	}, []string{"status"})

	subagentsQueued   = newGauge("agentserver_subagents_queued", "Task-tool subagents waiting for an admission slot.")
	subagentsRunning  = newGauge("agentserver_subagents_running", "Task-tool subagents running.")
	subagentsFinished = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agentserver_subagents_finished_total", Help: "Task-tool subagents that ended, by status and stop reason (empty when none).",
	}, []string{"status", "stop_reason"})

	sseClients = newGauge("agentserver_sse_clients", "SSE streams open to clients.")

	commitLatency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "agentserver_storage_commit_duration_seconds", Help: "Seconds one storage commit (a batch of writes, fsync included) took.",
		Buckets: []float64{.0001, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
	})
	commitBatch = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "agentserver_storage_commit_batch_size", Help: "Writes grouped into one storage commit.",
		Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128},
	})
)

func newCounter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

func newGauge(name, help string) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
}

func init() {
	Registry.MustRegister(
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		httpRequests, httpLatency, queueWait, queues,
		runSuccess, runError, runInterrupted, runTimeout, runRetried, runRequeued, runDuration,
		modelLatency, modelInput, modelOutput, modelErrors, toolCalls,
		asyncActive, asyncStarted, asyncCompleted,
		subagentsQueued, subagentsRunning, subagentsFinished,
		sseClients, commitLatency, commitBatch,
	)
}

// Handler serves Registry in the Prometheus text format.
func Handler() http.Handler {
	return promhttp.HandlerFor(Registry, promhttp.HandlerOpts{})
}

func milliseconds(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// HTTPRequest records one answered request; route is the route template.
func HTTPRequest(method, route string, status int, took time.Duration) {
	httpRequests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
	httpLatency.WithLabelValues(method, route).Observe(milliseconds(took))
}

// RunFirstStarted records how long a run waited before its first attempt.
func RunFirstStarted(waited time.Duration) {
	queueWait.Observe(milliseconds(max(waited, 0)))
}

// RunEnded records the end of a run attempt with its final status
// (success, error, interrupted or timeout) and how long it ran.
func RunEnded(status string, ran time.Duration) {
	switch status {
	case "success":
		runSuccess.Inc()
	case "error":
		runError.Inc()
	case "interrupted":
		runInterrupted.Inc()
	case "timeout":
		runTimeout.Inc()
	}
	runDuration.WithLabelValues(status).Observe(ran.Seconds())
}

// RunRetried records a run cut off by a crash that is queued again.
func RunRetried() { runRetried.Inc() }

// RunRequeued records a running run put back in the queue at shutdown.
func RunRequeued() { runRequeued.Inc() }

// ModelCall records one model call: its model, duration, reported tokens
// and whether it failed.
func ModelCall(model string, took time.Duration, inputTokens, outputTokens int, failed bool) {
	modelLatency.WithLabelValues(model).Observe(took.Seconds())
	// The error series of a model exists from its first call, at 0, so
	// that a scraper sees it (and its rate) before the first failure.
	errors := modelErrors.WithLabelValues(model)
	if failed {
		errors.Inc()
		return
	}
	modelInput.WithLabelValues(model).Add(float64(inputTokens))
	modelOutput.WithLabelValues(model).Add(float64(outputTokens))
}

// ToolCall records one tool call by an agent.
func ToolCall(tool string, failed bool) {
	status := "success"
	if failed {
		status = "error"
	}
	toolCalls.WithLabelValues(tool, status).Inc()
}

// AsyncTaskStarted records a task started by start_async_task.
func AsyncTaskStarted() { asyncStarted.Inc() }

// AsyncTaskFollowed records that a supervisor follows a task's run; the
// returned function records its end with the run's status ("" when the
// run's end was not learned, e.g. at shutdown).
func AsyncTaskFollowed() (ended func(status string)) {
	asyncActive.Inc()
	return func(status string) {
		// Completed first: a scrape that sees the task no longer active
		// also sees it counted.
		if status != "" {
			asyncCompleted.WithLabelValues(status).Inc()
		}
		asyncActive.Dec()
	}
}

// SubagentQueued records a task-tool subagent waiting for admission; the
// returned function records that it stopped waiting.
func SubagentQueued() (done func()) {
	subagentsQueued.Inc()
	return subagentsQueued.Dec
}

// SubagentRunning records a task-tool subagent that was admitted; the
// returned function records that it stopped.
func SubagentRunning() (done func()) {
	subagentsRunning.Inc()
	return subagentsRunning.Dec
}

// SubagentFinished records how a task-tool subagent ended.
func SubagentFinished(status, stopReason string) {
	subagentsFinished.WithLabelValues(status, stopReason).Inc()
}

// SSEClientConnected records an open SSE stream; the returned function
// records that it closed.
func SSEClientConnected() (closed func()) {
	sseClients.Inc()
	return sseClients.Dec
}

// StorageCommit records one storage commit of batch writes.
func StorageCommit(took time.Duration, batch int) {
	commitLatency.Observe(took.Seconds())
	commitBatch.Observe(float64(batch))
}
