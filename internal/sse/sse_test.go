package sse_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/events"
	"agentserver/internal/sse"
)

// recorder is a ResponseWriter that records what reached the client, safe
// to read while a Pump goroutine writes.
type recorder struct {
	mu          sync.Mutex
	header      http.Header
	sentHeader  http.Header // snapshot at WriteHeader
	status      int
	statusCalls int
	body        bytes.Buffer
	flushes     int
	failWrites  bool
}

func newRecorder() *recorder { return &recorder{header: http.Header{}} }

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.statusCalls++
	if r.status == 0 {
		r.status = code
		r.sentHeader = r.header.Clone()
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failWrites {
		return 0, errors.New("connection reset")
	}
	if r.status == 0 {
		r.status = http.StatusOK
		r.sentHeader = r.header.Clone()
	}
	return r.body.Write(b)
}

func (r *recorder) Flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.flushes++
}

func (r *recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.body.String()
}

func (r *recorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.body.Reset()
}

// wrapped hides the Flusher behind Unwrap, like middleware response writers.
type wrapped struct{ rw http.ResponseWriter }

func (w wrapped) Header() http.Header         { return w.rw.Header() }
func (w wrapped) Write(b []byte) (int, error) { return w.rw.Write(b) }
func (w wrapped) WriteHeader(code int)        { w.rw.WriteHeader(code) }
func (w wrapped) Unwrap() http.ResponseWriter { return w.rw }

func TestNewWriterSetsHeadersAndWritesNothing(t *testing.T) {
	rec := newRecorder()
	w := sse.NewWriter(rec)
	for k, v := range map[string]string{
		"Content-Type":      "text/event-stream",
		"Cache-Control":     "no-store",
		"X-Accel-Buffering": "no",
		"Connection":        "keep-alive",
	} {
		if got := rec.header.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if rec.statusCalls != 0 || rec.body.Len() != 0 || rec.flushes != 0 {
		t.Fatalf("NewWriter wrote: status calls %d, body %q, flushes %d", rec.statusCalls, rec.body.String(), rec.flushes)
	}
	// A handler may still answer with an error instead.
	rec.header.Set("Content-Type", "application/json")
	rec.WriteHeader(http.StatusNotFound)
	if rec.status != http.StatusNotFound {
		t.Fatal("status not settable after NewWriter")
	}
	_ = w
}

func TestStartFlushesHeaders(t *testing.T) {
	rec := newRecorder()
	w := sse.NewWriter(rec)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	if rec.status != 200 || rec.statusCalls != 1 || rec.flushes != 1 || rec.body.Len() != 0 {
		t.Fatalf("after Start: status %d (%d calls), flushes %d, body %q", rec.status, rec.statusCalls, rec.flushes, rec.body.String())
	}
	if rec.sentHeader.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("sent headers %v", rec.sentHeader)
	}
}

func TestWireFormat(t *testing.T) {
	cases := []struct {
		name     string
		write    func(w *sse.Writer) error
		wantWire string
	}{
		{"event with id", func(w *sse.Writer) error { return w.Event("7", "values", []byte(`{"a":1}`)) },
			"id: 7\nevent: values\ndata: {\"a\":1}\n\n"},
		{"event without id", func(w *sse.Writer) error {
			return w.Event("", "metadata", []byte(`{"run_id":"x","attempt":1}`))
		}, "event: metadata\ndata: {\"run_id\":\"x\",\"attempt\":1}\n\n"},
		{"subgraph event name", func(w *sse.Writer) error { return w.Event("", "updates|agent:1234", []byte(`{}`)) },
			"event: updates|agent:1234\ndata: {}\n\n"},
		{"null data", func(w *sse.Writer) error { return w.Event("12", "end", []byte("null")) },
			"id: 12\nevent: end\ndata: null\n\n"},
		{"comment", func(w *sse.Writer) error { return w.Comment("heartbeat") },
			": heartbeat\n\n"},
		{"multi-line comment", func(w *sse.Writer) error { return w.Comment("a\nb\r\nc") },
			": a\n: b\n: c\n\n"},
		{"pretty JSON is compacted", func(w *sse.Writer) error {
			return w.Event("", "values", []byte("{\n  \"messages\": [\r\n    \"hi\\nthere\"\n  ]\n}\n"))
		}, "event: values\ndata: {\"messages\":[\"hi\\nthere\"]}\n\n"},
		{"non-JSON lines become data lines", func(w *sse.Writer) error {
			return w.Event("", "custom", []byte("line one\nline two\r\nthree\rfour"))
		}, "event: custom\ndata: line one\ndata: line two\ndata: three\ndata: four\n\n"},
		{"trailing newline in non-JSON", func(w *sse.Writer) error { return w.Event("", "custom", []byte("x\n")) },
			"event: custom\ndata: x\ndata: \n\n"},
		{"newlines stripped from name and id", func(w *sse.Writer) error {
			return w.Event("1\n2\x00", "val\r\nues", []byte("1"))
		}, "id: 12\nevent: values\ndata: 1\n\n"},
		{"empty name omits the event line", func(w *sse.Writer) error { return w.Event("", "\n", []byte("1")) },
			"data: 1\n\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := newRecorder()
			w := sse.NewWriter(rec)
			if err := c.write(w); err != nil {
				t.Fatal(err)
			}
			if got := rec.String(); got != c.wantWire {
				t.Fatalf("wire:\n got %q\nwant %q", got, c.wantWire)
			}
			if rec.status != 200 || rec.flushes != 1 {
				t.Fatalf("status %d, flushes %d", rec.status, rec.flushes)
			}
		})
	}
}

func TestWriterFlushesThroughWrappers(t *testing.T) {
	rec := newRecorder()
	w := sse.NewWriter(wrapped{rec})
	if err := w.Event("1", "values", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if rec.flushes != 1 {
		t.Fatalf("flushes = %d, want 1", rec.flushes)
	}
}

func TestWriteErrorIsSticky(t *testing.T) {
	rec := newRecorder()
	rec.failWrites = true
	w := sse.NewWriter(rec)
	if err := w.Event("", "values", []byte("{}")); err == nil {
		t.Fatal("no error from a failing writer")
	}
	rec.failWrites = false
	if err := w.Comment("x"); err == nil {
		t.Fatal("error not sticky")
	}
}

// pumpFixture runs Pump over a real event log in a goroutine.
type pumpFixture struct {
	log  *events.Log
	rec  *recorder
	errc chan error
	stop context.CancelFunc
}

func startPump(t *testing.T, opts sse.PumpOptions, after int64, prefill func(*events.Log)) *pumpFixture {
	t.Helper()
	l := events.NewBroker(nil, events.BrokerOptions{}).Open(uuid.New(), true)
	if prefill != nil {
		prefill(l)
	}
	sub := l.Subscribe(after)
	rec := newRecorder()
	ctx, cancel := context.WithCancel(context.Background())
	f := &pumpFixture{log: l, rec: rec, errc: make(chan error, 1), stop: cancel}
	go func() {
		defer sub.Close()
		f.errc <- sse.Pump(ctx, sse.NewWriter(rec), sub, opts)
	}()
	return f
}

func TestPumpHeartbeatsWhileIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := startPump(t, sse.PumpOptions{}, 0, nil)
		synctest.Wait()
		if got := f.rec.String(); got != "" {
			t.Fatalf("before any event: %q", got)
		}
		f.rec.mu.Lock()
		flushes, status := f.rec.flushes, f.rec.status
		f.rec.mu.Unlock()
		if flushes != 1 || status != 200 {
			t.Fatal("Pump did not start the stream")
		}

		time.Sleep(sse.DefaultHeartbeat - time.Millisecond)
		synctest.Wait()
		if got := f.rec.String(); got != "" {
			t.Fatalf("heartbeat too early: %q", got)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if got := f.rec.String(); got != ": heartbeat\n\n" {
			t.Fatalf("after 5s idle: %q", got)
		}

		// An event resets the idle clock.
		f.rec.reset()
		time.Sleep(3 * time.Second)
		f.log.Append("values", json.RawMessage(`{"n":1}`))
		synctest.Wait()
		time.Sleep(4 * time.Second) // 7s since the last heartbeat, 4s since the event
		synctest.Wait()
		if got := f.rec.String(); got != "event: values\ndata: {\"n\":1}\n\n" {
			t.Fatalf("heartbeat despite recent event: %q", got)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if got := f.rec.String(); !strings.HasSuffix(got, "\n\n: heartbeat\n\n") {
			t.Fatalf("no heartbeat 5s after the event: %q", got)
		}

		// Three more idle periods, three more heartbeats.
		f.rec.reset()
		time.Sleep(15 * time.Second)
		synctest.Wait()
		if got := f.rec.String(); got != strings.Repeat(": heartbeat\n\n", 3) {
			t.Fatalf("after 15s idle: %q", got)
		}

		f.log.Close()
		if err := <-f.errc; err != nil {
			t.Fatalf("Pump at EOF: %v", err)
		}
	})
}

func TestPumpFiltersAndWritesIDs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		opts := sse.PumpOptions{
			WithIDs: true,
			Filter:  func(name string) bool { return name != "debug" },
		}
		f := startPump(t, opts, 1, func(l *events.Log) {
			l.Append("metadata", json.RawMessage(`{"run_id":"r"}`)) // skipped: after 1
			l.Append("values", json.RawMessage(`{"a":1}`))
		})
		synctest.Wait()
		f.log.Append("debug", json.RawMessage(`{}`))
		f.log.Append("updates|sub:1", json.RawMessage(`{"b":2}`))
		f.log.Append("end", nil)
		f.log.Close()
		if err := <-f.errc; err != nil {
			t.Fatal(err)
		}
		want := "id: 2\nevent: values\ndata: {\"a\":1}\n\n" +
			"id: 4\nevent: updates|sub:1\ndata: {\"b\":2}\n\n" +
			"id: 5\nevent: end\ndata: null\n\n"
		if got := f.rec.String(); got != want {
			t.Fatalf("wire:\n got %q\nwant %q", got, want)
		}
	})
}

func TestPumpFilteredEventsDoNotCountAsActivity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := startPump(t, sse.PumpOptions{Heartbeat: time.Second, Filter: func(string) bool { return false }}, 0, nil)
		for range 10 {
			time.Sleep(200 * time.Millisecond)
			f.log.Append("values", json.RawMessage(`{}`))
		}
		synctest.Wait()
		if got := f.rec.String(); got != strings.Repeat(": heartbeat\n\n", 2) {
			t.Fatalf("after 2s of filtered events: %q", got)
		}
		f.stop()
		if err := <-f.errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("Pump after cancel: %v", err)
		}
	})
}

func TestPumpStopsOnCancelAndWriteError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := startPump(t, sse.PumpOptions{Heartbeat: -1}, 0, nil)
		time.Sleep(time.Hour) // heartbeats disabled: nothing is written
		synctest.Wait()
		if got := f.rec.String(); got != "" {
			t.Fatalf("with heartbeats off: %q", got)
		}
		f.stop()
		if err := <-f.errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("Pump after cancel: %v", err)
		}

		g := startPump(t, sse.PumpOptions{}, 0, nil)
		synctest.Wait()
		g.rec.mu.Lock()
		g.rec.failWrites = true
		g.rec.mu.Unlock()
		g.log.Append("values", json.RawMessage(`{}`))
		if err := <-g.errc; err == nil || err.Error() != "connection reset" {
			t.Fatalf("Pump after write error: %v", err)
		}
		g.stop()
	})
}

// failingSource has no event ready and fails its wait with err.
type failingSource struct{ err error }

func (f failingSource) Next(context.Context) (events.Event, error) { return events.Event{}, f.err }
func (f failingSource) TryNext() (events.Event, bool, error)       { return events.Event{}, false, nil }

func TestPumpReturnsErrorsOfNext(t *testing.T) {
	boom := errors.New("boom")
	err := sse.Pump(context.Background(), sse.NewWriter(newRecorder()), failingSource{boom}, sse.PumpOptions{})
	if !errors.Is(err, boom) {
		t.Fatalf("Pump = %v", err)
	}
	eof := sse.Pump(context.Background(), sse.NewWriter(newRecorder()), failingSource{io.EOF}, sse.PumpOptions{})
	if eof != nil {
		t.Fatalf("Pump at EOF = %v", eof)
	}
}

// Events that are ready together leave in one flush (the headers with the
// first of them), at most maxUnflushed (32) to a flush.
func TestPumpBatchesReadyEvents(t *testing.T) {
	for _, tc := range []struct{ events, flushes int }{{1, 1}, {5, 1}, {32, 1}, {33, 2}, {100, 4}} {
		l := events.NewBroker(nil, events.BrokerOptions{}).Open(uuid.New(), false)
		for i := range tc.events {
			l.Append("values", json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)))
		}
		l.Close()
		sub := l.Subscribe(0)
		rec := newRecorder()
		if err := sse.Pump(context.Background(), sse.NewWriter(rec), sub, sse.PumpOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(rec.String(), "event: values\n"); got != tc.events {
			t.Fatalf("%d events: %d written", tc.events, got)
		}
		if rec.flushes != tc.flushes || rec.status != http.StatusOK {
			t.Fatalf("%d ready events: %d flushes (status %d), want %d", tc.events, rec.flushes, rec.status, tc.flushes)
		}
	}
}
