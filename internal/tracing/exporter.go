package tracing

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// exporter batches ended spans, already encoded as OTLP ScopeSpans.spans
// entries, and posts them to the OTLP/HTTP endpoint from one goroutine: a
// batch goes when it holds maxBatch spans or scheduleDelay after the last
// send. Spans beyond maxQueue waiting to be sent are dropped and counted,
// so a slow or absent collector never holds the server back.
type exporter struct {
	cfg    exportConfig
	client *http.Client
	// The Resource and the InstrumentationScope of every request, encoded
	// once with their tags.
	resource []byte // ResourceSpans.resource (field 1)
	scope    []byte // ScopeSpans.scope (field 1)

	mu      sync.Mutex
	cur     []byte   // encoded spans of the batch being filled
	curN    int      // spans in cur
	full    []batch  // batches waiting to be sent, oldest first
	queued  int      // spans in cur and full
	spare   [][]byte // emptied span buffers for reuse
	dropped int      // spans dropped since the last report
	flushes []chan struct{}

	body []byte // the request being sent, reused (only the sending goroutine uses it)

	kick     chan struct{} // a batch is full or a flush was asked for
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

// batch is a full batch of encoded spans.
type batch struct {
	spans []byte
	n     int
}

// newExporter starts the exporter's sending goroutine; Shutdown stops it.
func newExporter(cfg exportConfig, resource, scope []byte) *exporter {
	e := &exporter{
		cfg:      cfg,
		client:   &http.Client{Transport: cfg.transport()},
		resource: resource,
		scope:    scope,
		kick:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	go e.loop()
	return e
}

// add encodes s, ended at end, into the batch being filled.
func (e *exporter) add(s *span, end time.Time) {
	e.mu.Lock()
	if e.queued >= e.cfg.maxQueue {
		e.dropped++
		e.mu.Unlock()
		return
	}
	e.cur = appendSpan(e.cur, scopeSpansSpans, s, unixNanos(end.UnixNano()))
	e.curN++
	e.queued++
	full := e.curN >= e.cfg.maxBatch
	if full {
		e.sealLocked()
	}
	e.mu.Unlock()
	if full {
		e.signal()
	}
}

// sealLocked moves the batch being filled to the batches to send.
func (e *exporter) sealLocked() {
	if e.curN == 0 {
		return
	}
	e.full = append(e.full, batch{spans: e.cur, n: e.curN})
	e.cur, e.curN = nil, 0
	if n := len(e.spare); n > 0 {
		e.cur, e.spare = e.spare[n-1][:0], e.spare[:n-1]
	}
}

func (e *exporter) signal() {
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

// loop sends batches until Shutdown, then sends what is left.
func (e *exporter) loop() {
	defer close(e.done)
	timer := time.NewTimer(e.cfg.scheduleDelay)
	defer timer.Stop()
	for {
		stopping := false
		select {
		case <-e.kick:
		case <-timer.C:
			e.mu.Lock()
			e.sealLocked()
			e.mu.Unlock()
		case <-e.stop:
			stopping = true
		}
		e.sendAll(stopping)
		if stopping {
			return
		}
		timer.Reset(e.cfg.scheduleDelay)
	}
}

// sendAll sends the sealed batches (and, for a flush or the last round,
// the one being filled), then answers the flushes waiting for them.
func (e *exporter) sendAll(everything bool) {
	e.mu.Lock()
	if everything || len(e.flushes) > 0 {
		e.sealLocked()
	}
	flushes := e.flushes
	e.flushes = nil
	e.mu.Unlock()
	for {
		e.mu.Lock()
		if len(e.full) == 0 {
			dropped := e.dropped
			e.dropped = 0
			e.mu.Unlock()
			if dropped > 0 {
				slog.Warn("tracing: spans dropped, the export queue was full", "spans", dropped, "max_queue_size", e.cfg.maxQueue)
			}
			break
		}
		b := e.full[0]
		e.full = e.full[1:]
		e.mu.Unlock()
		if err := e.export(b.spans); err != nil {
			slog.Warn("tracing: export failed", "spans", b.n, "endpoint", e.cfg.endpoint, "err", err)
		}
		e.mu.Lock()
		e.queued -= b.n
		e.spare = append(e.spare, b.spans[:0])
		e.mu.Unlock()
	}
	for _, f := range flushes {
		close(f)
	}
}

// flush sends every span ended so far and waits until they are sent or
// ctx ends.
func (e *exporter) flush(ctx context.Context) error {
	f := make(chan struct{})
	e.mu.Lock()
	e.flushes = append(e.flushes, f)
	e.mu.Unlock()
	e.signal()
	select {
	case <-f:
		return nil
	case <-e.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// shutdown sends what is left and stops the sending goroutine; it gives
// up waiting when ctx ends. Calling it again only waits again.
func (e *exporter) shutdown(ctx context.Context) error {
	e.stopOnce.Do(func() { close(e.stop) })
	select {
	case <-e.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Field numbers of the export request's nesting.
const (
	requestResourceSpans = 1 // ExportTraceServiceRequest.resource_spans
	resourceSpansScope   = 2 // ResourceSpans.scope_spans
	scopeSpansSpans      = 2 // ScopeSpans.spans
)

// request wraps spans (encoded ScopeSpans.spans entries) in an
// ExportTraceServiceRequest with the exporter's resource and scope.
func (e *exporter) request(dst, spans []byte) []byte {
	scopeSpans := len(e.scope) + len(spans)
	resourceSpans := len(e.resource) + tagLen + protowire.SizeVarint(uint64(scopeSpans)) + scopeSpans
	dst = protowire.AppendTag(dst, requestResourceSpans, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(resourceSpans))
	dst = append(dst, e.resource...)
	dst = protowire.AppendTag(dst, resourceSpansScope, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(scopeSpans))
	dst = append(dst, e.scope...)
	return append(dst, spans...)
}

// tagLen is the length of the tags of fields 1 to 15.
const tagLen = 1

// retryable is an HTTP status the OTLP/HTTP spec says to retry.
func retryable(status int) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// export posts one batch, retrying a throttled or unavailable collector
// (with backoff, or after its Retry-After) within the export timeout.
func (e *exporter) export(spans []byte) error {
	e.body = e.request(e.body[:0], spans)
	body := e.body
	if e.cfg.gzip {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(body)
		if err := zw.Close(); err != nil {
			return err
		}
		body = buf.Bytes()
	}
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.exportTimeout)
	defer cancel()
	backoff := retryBackoff
	for {
		wait, err := e.post(ctx, body)
		if err == nil {
			return nil
		}
		if wait < 0 {
			return err
		}
		if wait == 0 {
			wait = backoff
			backoff = min(2*backoff, maxRetryBackoff)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (gave up retrying: %v)", err, ctx.Err())
		case <-time.After(wait):
		}
	}
}

// Backoff between retries of one export, when the collector does not
// say how long to wait.
const (
	retryBackoff    = 250 * time.Millisecond
	maxRetryBackoff = 5 * time.Second
)

// post sends one export request. wait < 0: not worth retrying; 0: retry
// after the backoff; > 0: retry after that long (Retry-After).
func (e *exporter) post(ctx context.Context, body []byte) (wait time.Duration, err error) {
	rctx, cancel := context.WithTimeout(ctx, e.cfg.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, e.cfg.endpoint, bytes.NewReader(body))
	if err != nil {
		return -1, err
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if e.cfg.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	for _, h := range e.cfg.headers {
		req.Header.Set(h.key, h.value)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return -1, err
		}
		return 0, err // a refused or timed-out connection may be a collector restarting
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return 0, nil
	}
	err = fmt.Errorf("collector answered %s: %s", resp.Status, bytes.TrimSpace(msg))
	if !retryable(resp.StatusCode) {
		return -1, err
	}
	if s, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && s > 0 {
		return time.Duration(s) * time.Second, err
	}
	return 0, err
}
