package events

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"
)

var (
	// ErrNoLog reports that a run has neither a log in memory nor persisted
	// events to replay.
	ErrNoLog = errors.New("no event log for run")
	// ErrClosed reports a call to Subscription.Next after Subscription.Close.
	ErrClosed = errors.New("subscription closed")
)

// Event is one stream event of a run.
type Event struct {
	// Seq numbers the events of a run: 1-based, strictly increasing.
	Seq int64
	// Name is the SSE event name: "metadata", "values", "updates",
	// "messages", "custom", "error", "end", "values|ns:1", …
	Name string
	// Data is the payload: compact one-line JSON.
	Data json.RawMessage
}

// ID returns Seq in decimal, the event's SSE id.
func (e Event) ID() string { return strconv.FormatInt(e.Seq, 10) }

// Log is the event log of one run. It is safe for concurrent use: one
// producer appends while any number of subscribers read.
type Log struct {
	runID  uuid.UUID
	broker *Broker

	mu        sync.Mutex
	events    []Event // events[i].Seq strictly increases; elements never change
	resumable bool
	persist   bool          // resumable and the broker has a store
	closed    bool          //
	gen       uint64        // incremented by every Close, to tell closes apart
	wake      chan struct{} // non-nil while a subscriber waits; closed on Append and Close
	dirty     bool          // registered (or being registered) in broker.dirty
	flushed   int           // events[:flushed] are persisted

	subs atomic.Int32 // open subscriptions
}

// NewDetachedLog returns a log of run runID that no broker owns: nothing
// of it is persisted or retained once its subscribers let go. It mirrors
// the stream of a run executing in another process.
func NewDetachedLog(runID uuid.UUID) *Log {
	return &Log{runID: runID}
}

// Watched reports whether anyone can still read events appended now: the
// log is resumable (persisted for replay) or has an open subscription.
// Producers may skip building events for an unwatched log.
func (l *Log) Watched() bool {
	return l.subs.Load() > 0 || l.Resumable()
}

// RunID returns the run the log belongs to.
func (l *Log) RunID() uuid.UUID { return l.runID }

// Resumable reports whether the log's events are persisted for replay.
func (l *Log) Resumable() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.resumable
}

// Append adds an event with the next Seq, wakes the subscribers and returns
// the event. It never blocks on subscribers or storage. Append takes
// ownership of data: the caller must not modify it afterwards. Empty data
// becomes null, JSON spanning several lines is compacted, and data that is
// not JSON is stored as a JSON string of its bytes. On a closed log Append
// does nothing and returns the zero Event.
func (l *Log) Append(name string, data json.RawMessage) Event {
	return l.AppendAt(0, name, data)
}

// AppendAt appends as Append does, numbering the event seq instead of the
// next number, so that a log can carry events numbered by another sequence
// (a thread stream connection carries the thread's numbers). seq must be
// larger than the last event's; 0 means the next number.
func (l *Log) AppendAt(seq int64, name string, data json.RawMessage) Event {
	data = normalizeData(data)
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return Event{}
	}
	last := int64(0)
	if n := len(l.events); n > 0 {
		last = l.events[n-1].Seq
	}
	if seq <= last {
		seq = last + 1
	}
	ev := Event{Seq: seq, Name: name, Data: data}
	l.events = append(l.events, ev)
	l.wakeLocked()
	mark := l.persist && !l.dirty
	if mark {
		l.dirty = true
	}
	l.mu.Unlock()
	if mark {
		l.broker.markDirty(l, false)
	}
	return ev
}

// Close marks the end of the run: subscribers receive the remaining events
// and then io.EOF, and the broker persists the log promptly and starts its
// retention clock. Close is idempotent.
func (l *Log) Close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	l.gen++
	gen, resumable := l.gen, l.resumable
	l.wakeLocked()
	flush := l.persist && l.flushed < len(l.events)
	if flush {
		l.dirty = true
	}
	l.mu.Unlock()
	if l.broker != nil {
		l.broker.logClosed(l, gen, resumable, flush)
	}
}

// Closed reports whether Close has been called.
func (l *Log) Closed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

// LastSeq returns the Seq of the newest event, or 0 when there is none.
func (l *Log) LastSeq() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.events); n > 0 {
		return l.events[n-1].Seq
	}
	return 0
}

// Subscribe returns a subscription to the events with Seq > after: after
// -1 or 0 reads from the start, LastSeq() only new events.
func (l *Log) Subscribe(after int64) *Subscription {
	l.mu.Lock()
	pos := sort.Search(len(l.events), func(i int) bool { return l.events[i].Seq > after })
	l.mu.Unlock()
	l.subs.Add(1)
	return &Subscription{log: l, pos: pos, done: make(chan struct{})}
}

func (l *Log) wakeLocked() {
	if l.wake != nil {
		close(l.wake)
		l.wake = nil
	}
}

// reopenLocked turns a closed log back into a live one (a run executed
// again) and upgrades it to resumable when asked. It reports whether the log
// now has events to persist.
func (l *Log) reopenLocked(resumable bool, hasStore bool) (dirty bool) {
	l.closed = false
	if resumable && !l.resumable {
		l.resumable = true
		l.persist = hasStore
	}
	if l.persist && l.flushed < len(l.events) && !l.dirty {
		l.dirty = true
		return true
	}
	return false
}

// normalizeData enforces the Event.Data invariant.
func normalizeData(data json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(data)) == 0 {
		return json.RawMessage("null")
	}
	if !json.Valid(data) {
		s, _ := json.Marshal(string(data)) // strings always marshal
		return s
	}
	if bytes.ContainsAny(data, "\r\n") {
		var buf bytes.Buffer
		buf.Grow(len(data))
		_ = json.Compact(&buf, data) // data is valid
		return buf.Bytes()
	}
	return data
}

// Subscription reads the events of one run in order. Next must not be
// called concurrently with itself; Close may be called from any goroutine.
type Subscription struct {
	log    *Log    // nil for a replay of persisted events
	replay []Event // the persisted events, when log is nil
	pos    int     // next index into log.events or replay

	done    chan struct{}
	once    sync.Once
	onClose func()
}

// OnClose registers f to run when the subscription is closed (once; set
// it before handing the subscription out).
func (s *Subscription) OnClose(f func()) { s.onClose = f }

// Next returns the next event. It blocks until one is appended and returns
// io.EOF once the log is closed and every event has been returned, ctx.Err()
// when ctx ends first, and ErrClosed after Close. An event that is already
// available is returned even when ctx has ended.
func (s *Subscription) Next(ctx context.Context) (Event, error) {
	return Await(ctx, s.done, s.take)
}

// Await is the waiting loop of a cursor over appended events: it calls
// take until take returns an event (ok) or an error, waiting between
// calls for the channel take returned to close. It returns ctx.Err() when
// ctx ends first and ErrClosed once done is closed.
func Await[T any](ctx context.Context, done <-chan struct{}, take func() (T, bool, chan struct{}, error)) (T, error) {
	for {
		ev, ok, wake, err := take()
		if ok || err != nil {
			return ev, err
		}
		select {
		case <-wake:
		case <-ctx.Done():
			var zero T
			return zero, ctx.Err()
		case <-done:
			var zero T
			return zero, ErrClosed
		}
	}
}

// TryNext returns the next event if one is available now (ok), io.EOF or
// ErrClosed as Next does, and otherwise ok false without waiting.
func (s *Subscription) TryNext() (ev Event, ok bool, err error) {
	ev, ok, _, err = s.take()
	return ev, ok, err
}

// take returns the next available event, or the error that ends the
// subscription, or a channel closed when the next event is appended.
func (s *Subscription) take() (ev Event, ok bool, wake chan struct{}, err error) {
	select {
	case <-s.done:
		return Event{}, false, nil, ErrClosed
	default:
	}
	l := s.log
	if l == nil {
		if s.pos < len(s.replay) {
			s.pos++
			return s.replay[s.pos-1], true, nil, nil
		}
		return Event{}, false, nil, io.EOF
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if s.pos < len(l.events) {
		s.pos++
		return l.events[s.pos-1], true, nil, nil
	}
	if l.closed {
		return Event{}, false, nil, io.EOF
	}
	if l.wake == nil {
		l.wake = make(chan struct{})
	}
	return Event{}, false, l.wake, nil
}

// Close releases the subscription and wakes a Next blocked on it. It is
// idempotent.
func (s *Subscription) Close() {
	s.once.Do(func() {
		close(s.done)
		if s.log != nil {
			s.log.subs.Add(-1)
		}
		if s.onClose != nil {
			s.onClose()
		}
	})
}
