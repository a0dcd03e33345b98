package sse

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"agentserver/internal/events"
	"agentserver/internal/metrics"
)

// DefaultHeartbeat is the idle time after which Pump sends a heartbeat
// comment, the cadence of LangGraph Platform.
const DefaultHeartbeat = 5 * time.Second

// DefaultWriteTimeout is how long one write to a client may block before
// the client is dropped: a client that stops reading fills its socket
// buffers, and the write that no longer fits then fails instead of holding
// the connection and its buffers forever.
const DefaultWriteTimeout = 30 * time.Second

// maxKeptBuffer bounds the frame buffer a Writer keeps between frames.
const maxKeptBuffer = 64 << 10

// Writer writes SSE frames to an HTTP response and flushes each one. It is
// not safe for concurrent use.
type Writer struct {
	w            http.ResponseWriter
	rc           *http.ResponseController
	started      bool
	err          error // sticky: the first write or flush failure
	buf          []byte
	writeTimeout time.Duration
}

// NewWriter prepares w for an event stream: it sets Content-Type:
// text/event-stream, Cache-Control: no-store, X-Accel-Buffering: no and
// Connection: keep-alive, and writes nothing until the first Start, Event or
// Comment. Each write may block for DefaultWriteTimeout.
func NewWriter(w http.ResponseWriter) *Writer {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	h.Set("Connection", "keep-alive")
	return &Writer{w: w, rc: http.NewResponseController(w), writeTimeout: DefaultWriteTimeout}
}

// SetWriteTimeout sets how long each later write or flush may block; zero
// or less means no limit.
func (w *Writer) SetWriteTimeout(d time.Duration) {
	w.writeTimeout = d
}

// armDeadline gives the next write its deadline. A response that cannot
// take deadlines (a recorder in tests) goes without.
func (w *Writer) armDeadline() {
	if w.writeTimeout > 0 {
		_ = w.rc.SetWriteDeadline(time.Now().Add(w.writeTimeout))
	}
}

// Start sends the status line 200 and the headers and flushes them, so that
// the client sees the stream open before the first event. Calling it again,
// or after an event, does nothing.
func (w *Writer) Start() error {
	if w.err != nil || w.started {
		return w.err
	}
	w.begin()
	return w.flush()
}

// begin sends the status line and headers once.
func (w *Writer) begin() {
	if !w.started {
		w.started = true
		w.w.WriteHeader(http.StatusOK)
	}
}

// Event writes one event and flushes it. The "id:" line is written only when
// id is not empty and the "event:" line only when name is not empty; CR and
// LF are removed from both (and NUL from id). data goes on one "data:" line:
// when it contains a line break it is compacted if it is JSON, and otherwise
// split into one "data:" line per line.
func (w *Writer) Event(id, name string, data []byte) error {
	if err := w.Queue(id, name, data); err != nil {
		return err
	}
	return w.flush()
}

// Queue writes one event as Event does but leaves it in the response's
// buffer until the next Flush (or until the buffer fills), so that events
// that are ready together reach the client in one write.
func (w *Writer) Queue(id, name string, data []byte) error {
	if w.err != nil {
		return w.err
	}
	b := w.buf[:0]
	if id = clean(id, "\r\n\x00"); id != "" {
		b = append(b, "id: "...)
		b = append(b, id...)
		b = append(b, '\n')
	}
	if name = clean(name, "\r\n"); name != "" {
		b = append(b, "event: "...)
		b = append(b, name...)
		b = append(b, '\n')
	}
	b = appendData(b, data)
	b = append(b, '\n')
	w.keep(b)
	return w.writeFrame(b)
}

// Flush sends the status line and headers if they have not gone yet, and
// everything queued.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	w.begin()
	return w.flush()
}

// Comment writes ": text" and a blank line, and flushes. Each line of a
// multi-line text becomes its own comment line.
func (w *Writer) Comment(text string) error {
	if w.err != nil {
		return w.err
	}
	b := w.buf[:0]
	for _, line := range splitLines([]byte(text)) {
		b = append(b, ": "...)
		b = append(b, line...)
		b = append(b, '\n')
	}
	b = append(b, '\n')
	w.keep(b)
	return w.write(b)
}

// keep retains b as the frame buffer unless it grew large (a big values
// event), so that an idle stream does not pin its largest frame.
func (w *Writer) keep(b []byte) {
	if cap(b) <= maxKeptBuffer {
		w.buf = b
	} else {
		w.buf = nil
	}
}

func (w *Writer) write(frame []byte) error {
	if err := w.writeFrame(frame); err != nil {
		return err
	}
	return w.flush()
}

// writeFrame writes frame to the response without flushing it.
func (w *Writer) writeFrame(frame []byte) error {
	w.begin()
	w.armDeadline()
	if _, err := w.w.Write(frame); err != nil {
		w.err = err
		return err
	}
	return nil
}

// flush pushes buffered bytes to the client. A writer that cannot flush is
// tolerated: its bytes go out when its buffer fills or the handler returns.
func (w *Writer) flush() error {
	w.armDeadline()
	if err := w.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		w.err = err
		return err
	}
	return nil
}

// appendData appends the data line(s) of an event to b.
func appendData(b, data []byte) []byte {
	if bytes.IndexAny(data, "\r\n") < 0 {
		b = append(b, "data: "...)
		b = append(b, data...)
		return append(b, '\n')
	}
	if json.Valid(data) {
		// Line breaks in valid JSON are insignificant whitespace: inside
		// strings they are escaped.
		buf := bytes.NewBuffer(append(b, "data: "...))
		_ = json.Compact(buf, data)
		return append(buf.Bytes(), '\n')
	}
	for _, line := range splitLines(data) {
		b = append(b, "data: "...)
		b = append(b, line...)
		b = append(b, '\n')
	}
	return b
}

// splitLines splits s at CRLF, CR and LF, the line breaks of SSE.
func splitLines(s []byte) [][]byte {
	var lines [][]byte
	for {
		i := bytes.IndexAny(s, "\r\n")
		if i < 0 {
			return append(lines, s)
		}
		lines = append(lines, s[:i])
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			i++
		}
		s = s[i+1:]
	}
}

// clean removes the bytes of cut (ASCII) from s, leaving every other byte,
// valid UTF-8 or not, as it was.
func clean(s, cut string) string {
	if !strings.ContainsAny(s, cut) {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(cut, s[i]) < 0 {
			b = append(b, s[i])
		}
	}
	return string(b)
}

// PumpOptions tune Pump.
type PumpOptions struct {
	// Heartbeat is the idle time after which a ": heartbeat" comment is
	// sent. Zero means DefaultHeartbeat; negative disables heartbeats.
	Heartbeat time.Duration
	// Filter reports whether an event with this name is sent; nil sends all.
	Filter func(name string) bool
	// WithIDs sends each event's Seq as its SSE id (resumable streams).
	WithIDs bool
}

// Source is what Pump reads: a subscription to an event log.
type Source interface {
	// Next waits for the next event; see events.Subscription.Next.
	Next(ctx context.Context) (events.Event, error)
	// TryNext returns the next event only if it is available now.
	TryNext() (events.Event, bool, error)
}

// maxUnflushed bounds how many ready events Pump writes before it flushes
// even though more are ready, so that a fast producer cannot hold a
// client's events back.
const maxUnflushed = 32

// Pump copies events from src to w until src reports io.EOF (Pump returns
// nil), ctx ends (ctx.Err()), or writing or reading fails (that error).
// Events that are ready together are written in one flush; Pump flushes
// (the headers too, the first time) before each wait, so a client sees
// everything that exists as soon as it exists, and a stream with nothing to
// send yet still opens at once. src.Next must return when its context ends:
// Pump passes it a context that also expires when a heartbeat is due.
func Pump(ctx context.Context, w *Writer, src Source, opts PumpOptions) error {
	defer metrics.SSEClientConnected()()
	hb := opts.Heartbeat
	if hb == 0 {
		hb = DefaultHeartbeat
	}
	lastWrite := time.Now()
	waitCtx, cancel := ctx, context.CancelFunc(func() {})
	if hb > 0 {
		waitCtx, cancel = heartbeatContext(ctx, lastWrite.Add(hb))
	}
	defer func() { cancel() }() // cancel changes with every heartbeat period
	unflushed := 0
	for {
		ev, ok, err := src.TryNext()
		wait := !ok && err == nil
		if wait || ok && unflushed >= maxUnflushed {
			if err := w.Flush(); err != nil {
				return err
			}
			unflushed = 0
			if wait {
				ev, err = src.Next(waitCtx)
			}
		}
		switch {
		case err == nil:
			if opts.Filter != nil && !opts.Filter(ev.Name) {
				continue
			}
			id := ""
			if opts.WithIDs {
				id = ev.ID()
			}
			if err := w.Queue(id, ev.Name, ev.Data); err != nil {
				return err
			}
			unflushed++
			lastWrite = time.Now()
		case errors.Is(err, io.EOF):
			return w.Flush()
		case ctx.Err() != nil:
			return ctx.Err()
		case hb > 0 && waitCtx.Err() != nil && errors.Is(err, context.DeadlineExceeded):
			// The wait ended because a heartbeat may be due.
			cancel()
			if now := time.Now(); now.Sub(lastWrite) >= hb {
				if err := w.Comment("heartbeat"); err != nil {
					return err
				}
				lastWrite = now
			}
			waitCtx, cancel = heartbeatContext(ctx, lastWrite.Add(hb))
		default:
			w.Flush() // what was queued still goes out; the error is the read's
			return err
		}
	}
}

// heartbeatContext bounds one wait of Pump by the time the next heartbeat
// is due.
func heartbeatContext(parent context.Context, due time.Time) (context.Context, context.CancelFunc) {
	return context.WithDeadline(parent, due)
}
