package eventlog

import (
	"context"
	"errors"
	"io"
	"sort"
	"sync"
)

var (
	// ErrClosed reports a read on a Cursor after its Close.
	ErrClosed = errors.New("subscription closed")
	// ErrBehind reports, on a log with Options.ReportGaps, that entries
	// after the cursor were dropped: read them elsewhere, then call MoveTo.
	ErrBehind = errors.New("entries after the cursor are no longer kept")
)

// Cursor reads a log's entries in order, those its filter selects. Next,
// TryNext, Take and MoveTo must not be called concurrently with each other;
// Close may be called from any goroutine.
type Cursor[E Entry] struct {
	log   *Log[E]
	match func(*E) bool // nil: every entry
	next  int64         // index (counting dropped entries) of the next entry
	after int64         // the Seq the cursor stands at

	done    chan struct{}
	once    sync.Once
	onClose func()
}

// Subscribe returns a cursor at Seq after (the entries with a larger Seq
// come next; after is capped at LastSeq, so a cursor past the end reads
// the entries appended next). match selects the entries the cursor
// returns; nil selects all. It is called under the log's lock.
func (l *Log[E]) Subscribe(after int64, match func(*E) bool) *Cursor[E] {
	c := &Cursor[E]{log: l, match: match, done: make(chan struct{})}
	l.cursors.Add(1)
	l.mu.Lock()
	c.seekLocked(after)
	l.mu.Unlock()
	return c
}

// MoveTo moves the cursor to Seq after, as Subscribe places it.
func (c *Cursor[E]) MoveTo(after int64) {
	c.log.mu.Lock()
	c.seekLocked(after)
	c.log.mu.Unlock()
}

func (c *Cursor[E]) seekLocked(after int64) {
	l := c.log
	after = min(after, l.last)
	c.after = after
	if l.opts.ReportGaps && after+1 < l.oldestLocked() {
		c.next = l.base - 1 // behind
		return
	}
	c.next = l.base + int64(sort.Search(len(l.entries), func(i int) bool { return l.entries[i].LogSeq() > after }))
}

// After returns the Seq the cursor stands at: the entries it returns next
// come after it.
func (c *Cursor[E]) After() int64 { return c.after }

// Done returns a channel closed by Close.
func (c *Cursor[E]) Done() <-chan struct{} { return c.done }

// OnClose registers f to run when the cursor is closed (once; set it
// before handing the cursor out).
func (c *Cursor[E]) OnClose(f func()) { c.onClose = f }

// Next returns the next entry. It blocks until one is appended and returns
// io.EOF once the log is closed and every entry has been returned,
// ctx.Err() when ctx ends first, ErrClosed after Close, and ErrBehind as
// Take does. An entry already available is returned even when ctx has
// ended.
func (c *Cursor[E]) Next(ctx context.Context) (E, error) {
	return Await(ctx, c.done, c.Take)
}

// TryNext returns the next entry if one is available now (ok), the errors
// of Next, and otherwise ok false without waiting.
func (c *Cursor[E]) TryNext() (e E, ok bool, err error) {
	e, ok, _, err = c.Take()
	return e, ok, err
}

// Take returns the next entry the cursor selects if one is kept (ok);
// otherwise io.EOF on a closed log, ErrClosed after Close, ErrBehind when
// the log reports gaps and the cursor's next entries were dropped, or a
// channel that the next Append or Close closes.
func (c *Cursor[E]) Take() (e E, ok bool, wake <-chan struct{}, err error) {
	select {
	case <-c.done:
		return e, false, nil, ErrClosed
	default:
	}
	l := c.log
	l.mu.Lock()
	i := c.next - l.base
	if i < 0 {
		if l.opts.ReportGaps {
			l.mu.Unlock()
			return e, false, nil, ErrBehind
		}
		i = 0 // continue with the oldest kept
	}
	n, start := int64(len(l.entries)), i
	for ; i < n; i++ {
		if c.match == nil || c.match(&l.entries[i]) {
			e = l.entries[i]
			c.next = l.base + i + 1
			c.after = e.LogSeq()
			l.mu.Unlock()
			return e, true, nil, nil
		}
	}
	if start < n {
		c.after = l.entries[n-1].LogSeq() // past the entries the filter skipped
	}
	c.next = l.base + n
	if l.closed {
		l.mu.Unlock()
		return e, false, nil, io.EOF
	}
	if l.wake == nil {
		l.wake = make(chan struct{})
	}
	wake = l.wake
	l.mu.Unlock()
	return e, false, wake, nil
}

// Close releases the cursor and wakes a Next blocked on it. It is
// idempotent.
func (c *Cursor[E]) Close() {
	c.once.Do(func() {
		close(c.done)
		l := c.log
		l.mu.Lock()
		if l.cursors.Add(-1) == 0 {
			l.idle = l.now()
		}
		l.mu.Unlock()
		if c.onClose != nil {
			c.onClose()
		}
	})
}

// Await is the waiting loop of a cursor: it calls take until take returns
// an entry (ok) or an error, waiting between calls for the channel take
// returned to close. It returns ctx.Err() when ctx ends first and
// ErrClosed once done is closed.
func Await[T any](ctx context.Context, done <-chan struct{}, take func() (T, bool, <-chan struct{}, error)) (T, error) {
	for {
		v, ok, wake, err := take()
		if ok || err != nil {
			return v, err
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
