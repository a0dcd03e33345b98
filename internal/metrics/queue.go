package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// QueueStats is what a run engine reports about its queue and workers.
type QueueStats struct {
	// Pending runs wait to start; Running runs hold a worker.
	Pending, Running int
	// WorkersMax is the worker pool's size; WorkersActive of them run.
	WorkersMax, WorkersActive int
}

// QueueSource reports queue statistics at scrape time.
type QueueSource interface {
	QueueStats() QueueStats
}

// queueCollector sums the statistics of the registered sources.
type queueCollector struct {
	mu      sync.Mutex
	sources map[*QueueSource]QueueSource

	pending, running, max, active, available *prometheus.Desc
}

var queues = &queueCollector{
	sources:   map[*QueueSource]QueueSource{},
	pending:   prometheus.NewDesc("lg_api_num_pending_runs", "Runs waiting to start.", nil, nil),
	running:   prometheus.NewDesc("lg_api_num_running_runs", "Runs running.", nil, nil),
	max:       prometheus.NewDesc("lg_api_workers_max", "Size of the run worker pool.", nil, nil),
	active:    prometheus.NewDesc("lg_api_workers_active", "Workers executing a run.", nil, nil),
	available: prometheus.NewDesc("lg_api_workers_available", "Workers free to start a run.", nil, nil),
}

// AddQueueSource makes src part of the queue and worker gauges until the
// returned function is called.
func AddQueueSource(src QueueSource) (remove func()) {
	key := &src
	queues.mu.Lock()
	queues.sources[key] = src
	queues.mu.Unlock()
	return func() {
		queues.mu.Lock()
		delete(queues.sources, key)
		queues.mu.Unlock()
	}
}

// Describe implements prometheus.Collector.
func (q *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{q.pending, q.running, q.max, q.active, q.available} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (q *queueCollector) Collect(ch chan<- prometheus.Metric) {
	var sum QueueStats
	q.mu.Lock()
	for _, src := range q.sources {
		s := src.QueueStats()
		sum.Pending += s.Pending
		sum.Running += s.Running
		sum.WorkersMax += s.WorkersMax
		sum.WorkersActive += s.WorkersActive
	}
	q.mu.Unlock()
	gauge := func(d *prometheus.Desc, v int) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v))
	}
	gauge(q.pending, sum.Pending)
	gauge(q.running, sum.Running)
	gauge(q.max, sum.WorkersMax)
	gauge(q.active, sum.WorkersActive)
	gauge(q.available, sum.WorkersMax-sum.WorkersActive)
}
