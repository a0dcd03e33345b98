package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"sync/atomic"

	"github.com/google/uuid"

	"agentserver/internal/eventlog"
)

var (
	// ErrNoLog reports that a run has neither a log in memory nor persisted
	// events to replay.
	ErrNoLog = errors.New("no event log for run")
	// ErrClosed reports a call to Subscription.Next after Subscription.Close.
	ErrClosed = eventlog.ErrClosed
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

// LogSeq implements eventlog.Entry.
func (e Event) LogSeq() int64 { return e.Seq }

// LogSize implements eventlog.Entry.
func (e Event) LogSize() int { return len(e.Data) }

// Log is the event log of one run: an eventlog.Log of its events, owned by
// a Broker that persists and retires it. It is safe for concurrent use: one
// producer appends while any number of subscribers read.
type Log struct {
	runID     uuid.UUID
	broker    *Broker // nil for a detached log
	log       *eventlog.Log[Event]
	resumable atomic.Bool // only ever turns true
}

// Subscription reads the events of one run in order: a cursor into its
// log. Next must not be called concurrently with itself; Close may be
// called from any goroutine.
type Subscription = eventlog.Cursor[Event]

// NewDetachedLog returns a log of run runID that no broker owns: nothing
// of it is persisted or retained once its subscribers let go. It mirrors
// the stream of a run executing in another process.
func NewDetachedLog(runID uuid.UUID) *Log {
	return &Log{runID: runID, log: eventlog.New[Event](0, nil, eventlog.Options{})}
}

// Watched reports whether anyone can still read events appended now: the
// log is resumable (persisted for replay) or has an open subscription.
// Producers may skip building events for an unwatched log.
func (l *Log) Watched() bool {
	return l.log.Cursors() > 0 || l.resumable.Load()
}

// RunID returns the run the log belongs to.
func (l *Log) RunID() uuid.UUID { return l.runID }

// Resumable reports whether the log's events are persisted for replay.
func (l *Log) Resumable() bool { return l.resumable.Load() }

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
	ev, needSave := l.log.Append(seq, func(seq int64) Event { return Event{Seq: seq, Name: name, Data: data} })
	if needSave {
		l.broker.markDirty(l, false)
	}
	return ev
}

// Close marks the end of the run: subscribers receive the remaining events
// and then io.EOF, and the broker persists the log promptly and starts its
// retention clock. Close is idempotent.
func (l *Log) Close() {
	gen, ok := l.log.Close()
	if !ok {
		return
	}
	flush := l.log.NeedSave()
	if l.broker != nil {
		l.broker.logClosed(l, gen, l.resumable.Load(), flush)
	}
}

// Closed reports whether Close has been called.
func (l *Log) Closed() bool {
	closed, _ := l.log.Closed()
	return closed
}

// LastSeq returns the Seq of the newest event, or 0 when there is none.
func (l *Log) LastSeq() int64 { return l.log.LastSeq() }

// Subscribe returns a subscription to the events with Seq > after: after
// -1 or 0 reads from the start, LastSeq() only new events.
func (l *Log) Subscribe(after int64) *Subscription {
	return l.log.Subscribe(after, nil)
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
