package eventlog

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Entry is what a Log holds: a value that carries the Seq the log gave it.
type Entry interface {
	// LogSeq returns the entry's sequence number.
	LogSeq() int64
	// LogSize returns the bytes the entry holds, for Options.KeepBytes.
	LogSize() int
}

// Options shape a Log. Zero values: no bounds, nothing persisted, gaps
// skipped, time.Now.
type Options struct {
	// Keep and KeepBytes bound the entries kept in memory (0: no bound):
	// the oldest are dropped beyond either.
	Keep      int
	KeepBytes int
	// Persist keeps every entry until Saved covers it, and makes Append
	// report when the log needs a save (see Persist).
	Persist bool
	// ReportGaps makes a cursor whose next entries were dropped get
	// ErrBehind instead of continuing with the oldest kept entry.
	ReportGaps bool
	// Clock tells when the last cursor closed, for IdleFor.
	Clock func() time.Time
}

// Log is an append-only sequence of entries. It is safe for concurrent
// use: producers append while any number of cursors read.
type Log[E Entry] struct {
	opts Options

	mu      sync.Mutex
	entries []E   // the kept entries, Seq strictly increasing
	base    int64 // entries dropped so far: entries[i] is entry base+i
	last    int64 // the Seq of the newest entry, or New's start
	bytes   int   // LogSize of the kept entries (only with KeepBytes)
	saved   int64 // entries with Seq <= saved are persisted
	dirty   bool  // has entries after saved that no save has taken
	closed  bool
	gen     uint64        // incremented by every Close
	wake    chan struct{} // non-nil while a cursor waits; closed on Append and Close
	idle    time.Time     // when the log was made or its last cursor closed

	cursors atomic.Int32 // open cursors
}

// New returns a log holding saved, entries already persisted in Seq order
// (nil for none), whose next entry is numbered after them, or after start
// when there are none.
func New[E Entry](start int64, saved []E, opts Options) *Log[E] {
	l := &Log[E]{opts: opts, entries: saved, last: start}
	if n := len(saved); n > 0 {
		l.last = saved[n-1].LogSeq()
	}
	l.saved = l.last
	if opts.KeepBytes > 0 {
		for i := range saved {
			l.bytes += saved[i].LogSize()
		}
	}
	l.idle = l.now()
	return l
}

func (l *Log[E]) now() time.Time {
	if l.opts.Clock != nil {
		return l.opts.Clock()
	}
	return time.Now()
}

// Append numbers the entry build returns with max(seq, last+1), keeps it,
// wakes the cursors and returns it; build receives the number. On a closed
// log Append does nothing and returns the zero E. needSave reports that a
// persisted log has entries no save has taken, for the first time since
// the last TakeUnsaved.
func (l *Log[E]) Append(seq int64, build func(seq int64) E) (e E, needSave bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return e, false
	}
	seq = max(seq, l.last+1)
	e = build(seq)
	l.entries = append(l.entries, e)
	l.last = seq
	if l.opts.KeepBytes > 0 {
		l.bytes += e.LogSize()
	}
	if l.opts.Keep > 0 || l.opts.KeepBytes > 0 {
		l.trimLocked()
	}
	l.wakeLocked()
	if l.opts.Persist && !l.dirty {
		l.dirty = true
		needSave = true
	}
	return e, needSave
}

// trimLocked drops the oldest entries beyond the bounds, never one that
// is not saved yet when the log persists.
func (l *Log[E]) trimLocked() {
	drop := 0
	for drop < len(l.entries) && l.overLocked(len(l.entries)-drop) {
		if l.opts.Persist && l.entries[drop].LogSeq() > l.saved {
			break
		}
		if l.opts.KeepBytes > 0 {
			l.bytes -= l.entries[drop].LogSize()
		}
		drop++
	}
	if drop > 0 {
		clear(l.entries[:drop])
		l.entries = l.entries[drop:]
		l.base += int64(drop)
	}
}

func (l *Log[E]) overLocked(n int) bool {
	return l.opts.Keep > 0 && n > l.opts.Keep || l.opts.KeepBytes > 0 && l.bytes > l.opts.KeepBytes
}

func (l *Log[E]) wakeLocked() {
	if l.wake != nil {
		close(l.wake)
		l.wake = nil
	}
}

// LastSeq returns the Seq of the newest entry (New's start when there is
// none).
func (l *Log[E]) LastSeq() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}

// Oldest returns the Seq of the oldest kept entry, or LastSeq()+1 when
// none is kept.
func (l *Log[E]) Oldest() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.oldestLocked()
}

func (l *Log[E]) oldestLocked() int64 {
	if len(l.entries) > 0 {
		return l.entries[0].LogSeq()
	}
	return l.last + 1
}

// Len returns the number of entries kept.
func (l *Log[E]) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}

// Close ends the log: cursors get the remaining entries, then io.EOF.
// It returns the close's generation, and false when the log was already
// closed.
func (l *Log[E]) Close() (gen uint64, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return l.gen, false
	}
	l.closed = true
	l.gen++
	l.wakeLocked()
	return l.gen, true
}

// Reopen lets a closed log grow again.
func (l *Log[E]) Reopen() {
	l.mu.Lock()
	l.closed = false
	l.mu.Unlock()
}

// Closed reports whether the log is closed, and the generation of its
// latest Close.
func (l *Log[E]) Closed() (closed bool, gen uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed, l.gen
}

// Persist makes the log persist its entries from now on (its entries not
// yet saved included). It reports whether there are entries to save that
// no save has taken, and marks them as needing one.
func (l *Log[E]) Persist() (needSave bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.opts.Persist = true
	return l.needSaveLocked()
}

// NeedSave reports, for a persisted log, whether it has entries that are
// not saved, and marks them as needing a save (TakeUnsaved returns them).
func (l *Log[E]) NeedSave() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.needSaveLocked()
}

func (l *Log[E]) needSaveLocked() bool {
	if !l.opts.Persist || l.last <= l.saved {
		return false
	}
	l.dirty = true
	return true
}

// Unsaved reports whether a persisted log has entries not saved yet
// (taken by a save in flight included).
func (l *Log[E]) Unsaved() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.opts.Persist && l.last > l.saved
}

// TakeUnsaved returns the entries that need a save (none unless Append,
// Persist, NeedSave or SaveFailed said so since the last TakeUnsaved),
// oldest first. The slice shares the log's memory: its elements never
// change, and they stay kept until Saved covers them. One save at a time
// per log: call Saved or SaveFailed before taking again.
func (l *Log[E]) TakeUnsaved() []E {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.dirty {
		return nil
	}
	l.dirty = false
	i := sort.Search(len(l.entries), func(i int) bool { return l.entries[i].LogSeq() > l.saved })
	n := len(l.entries)
	return l.entries[i:n:n]
}

// Saved records that the entries up to Seq seq are persisted; the bounds
// may then drop them.
func (l *Log[E]) Saved(seq int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.saved = max(l.saved, seq)
	if l.opts.Keep > 0 || l.opts.KeepBytes > 0 {
		l.trimLocked()
	}
}

// SaveFailed puts entries a save took back to be taken again. It reports
// whether they were not already marked as needing a save.
func (l *Log[E]) SaveFailed() (needSave bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	needSave = !l.dirty
	l.dirty = true
	return needSave
}

// Cursors returns the number of open cursors.
func (l *Log[E]) Cursors() int { return int(l.cursors.Load()) }

// IdleFor returns how long the log has had no cursor at now: 0 while it
// has one, otherwise the time since its last cursor closed (or since New).
func (l *Log[E]) IdleFor(now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cursors.Load() > 0 {
		return 0
	}
	return now.Sub(l.idle)
}
