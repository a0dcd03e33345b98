package events

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/eventlog"
	"agentserver/internal/retry"
)

const (
	// maxFlushBatch bounds the events of one Store.AppendEvents call, so that
	// a burst does not become one huge transaction.
	maxFlushBatch = 2048
	// maxParallelFlush bounds the logs written concurrently by one flush.
	maxParallelFlush = 16
	// deleteRetry is the pause before deleting persisted events again after
	// the store refused.
	deleteRetry = 30 * time.Second
)

// flushPolicy spaces the writes of a failing store: 100 ms doubling up to
// 5 s.
var flushPolicy = retry.Policy{Base: 100 * time.Millisecond, Max: 5 * time.Second}

// BrokerOptions tune a Broker. Zero values select the defaults.
type BrokerOptions struct {
	// Retention is how long a finished run's log stays available after it
	// closed: in memory or, for a resumable run, in the store. Afterwards its
	// persisted events are deleted. Default 10 minutes.
	Retention time.Duration
	// MemoryRetention is how long a closed log stays in memory (a resumable
	// one only once all its events are persisted; later subscribers replay
	// it from the store). Default 1 minute, at most Retention.
	MemoryRetention time.Duration
	// FlushInterval is the longest time appended events of a resumable log
	// wait before they are written to the store. Default 25ms.
	FlushInterval time.Duration
	// Log receives store failures (nil: discarded).
	Log *slog.Logger
}

// Broker owns the event logs of the runs of one process. It is safe for
// concurrent use; its persistence and retention work happens in Run.
type Broker struct {
	store Store // nil: nothing is persisted
	opts  BrokerOptions
	log   *slog.Logger

	wake    chan struct{} // capacity 1: "state changed" for Run
	flushMu sync.Mutex    // serializes flushes and deletions

	mu     sync.Mutex // taken before a Log's lock
	logs   map[uuid.UUID]*Log
	dirty  map[*Log]struct{} // logs with events not yet persisted
	urgent bool              // a log closed with unpersisted events
	memQ   []memEntry        // closed logs to drop from memory, by deadline
	delQ   []delEntry        // runs whose persisted events to delete, by deadline
	expiry map[uuid.UUID]uint64
	token  uint64
}

type memEntry struct {
	deadline time.Time
	log      *Log
	gen      uint64
}

type delEntry struct {
	deadline time.Time
	runID    uuid.UUID
	token    uint64 // valid while expiry[runID] == token
}

// NewBroker returns a broker that persists resumable logs to store; a nil
// store persists nothing. Call Run to start persistence and retention.
func NewBroker(store Store, opts BrokerOptions) *Broker {
	if opts.Retention <= 0 {
		opts.Retention = 10 * time.Minute
	}
	if opts.MemoryRetention <= 0 {
		opts.MemoryRetention = time.Minute
	}
	opts.MemoryRetention = min(opts.MemoryRetention, opts.Retention)
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = 25 * time.Millisecond
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Broker{
		store:  store,
		opts:   opts,
		log:    opts.Log,
		wake:   make(chan struct{}, 1),
		logs:   make(map[uuid.UUID]*Log),
		dirty:  make(map[*Log]struct{}),
		expiry: make(map[uuid.UUID]uint64),
	}
}

// Open returns the log of run runID, creating it if needed. A resumable run
// that has persisted events (it ran in an earlier process) continues after
// its last persisted Seq. Opening a closed log re-opens it (the run is
// executed again); resumable upgrades a log to resumable, never the reverse.
// Opening cancels a scheduled deletion of the run's events.
func (b *Broker) Open(runID uuid.UUID, resumable bool) *Log {
	if l := b.reopen(runID, resumable); l != nil {
		return l
	}
	var seed []Event
	if resumable && b.store != nil {
		var err error
		if seed, err = b.store.LoadEvents(context.Background(), runID, 0); err != nil {
			// The run starts a fresh sequence; a replay may then mix attempts.
			b.log.Error("load persisted run events", "run_id", runID, "err", err)
			seed = nil
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if l, ok := b.logs[runID]; ok { // a concurrent Open won
		b.reopenLocked(l, resumable)
		return l
	}
	l := &Log{
		runID:  runID,
		broker: b,
		log:    eventlog.New(0, seed, eventlog.Options{Persist: resumable && b.store != nil}),
	}
	l.resumable.Store(resumable)
	b.logs[runID] = l
	delete(b.expiry, runID)
	return l
}

func (b *Broker) reopen(runID uuid.UUID, resumable bool) *Log {
	b.mu.Lock()
	defer b.mu.Unlock()
	l, ok := b.logs[runID]
	if !ok {
		return nil
	}
	b.reopenLocked(l, resumable)
	return l
}

// reopenLocked turns a closed log back into a live one (a run executed
// again) and upgrades it to resumable when asked.
func (b *Broker) reopenLocked(l *Log, resumable bool) {
	delete(b.expiry, l.runID)
	l.log.Reopen()
	if resumable && l.resumable.CompareAndSwap(false, true) && b.store != nil {
		l.log.Persist()
	}
	if l.log.NeedSave() {
		b.dirty[l] = struct{}{}
		b.kick()
	}
}

// Get returns the in-memory log of run runID.
func (b *Broker) Get(runID uuid.UUID) (*Log, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	l, ok := b.logs[runID]
	return l, ok
}

// Subscribe returns a subscription to the events of run runID with
// Seq > after. It reads the in-memory log when there is one; otherwise it
// replays the persisted events of a resumable run (then io.EOF). It returns
// ErrNoLog when neither exists — including when after is past the last
// persisted event.
func (b *Broker) Subscribe(ctx context.Context, runID uuid.UUID, after int64) (*Subscription, error) {
	if l, ok := b.Get(runID); ok {
		return l.Subscribe(after), nil
	}
	if b.store == nil {
		return nil, ErrNoLog
	}
	evs, err := b.store.LoadEvents(ctx, runID, after)
	if err != nil {
		return nil, fmt.Errorf("load events of run %s: %w", runID, err)
	}
	if len(evs) == 0 {
		if after < 1 {
			return nil, ErrNoLog
		}
		// Is event `after` itself stored? Then the replay is merely empty.
		last, err := b.store.LoadEvents(ctx, runID, after-1)
		if err != nil {
			return nil, fmt.Errorf("load events of run %s: %w", runID, err)
		}
		if len(last) == 0 {
			return nil, ErrNoLog
		}
	}
	replay := eventlog.New(0, evs, eventlog.Options{})
	replay.Close()
	return replay.Subscribe(-1, nil), nil
}

// Flush writes every unpersisted event of every resumable log to the store
// now. It returns the joined errors of the logs that failed; those stay
// dirty and are retried.
func (b *Broker) Flush(ctx context.Context) error {
	return b.flushAll(ctx)
}

// Run persists and expires logs until ctx is cancelled, then flushes once
// more and returns. Events reach the store at most FlushInterval after they
// were appended, or at once when their log closes. Call Run once.
func (b *Broker) Run(ctx context.Context) {
	b.adoptPersisted(ctx)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var flushDue time.Time // zero: no flush scheduled
	failures := 0          // flushes failed in a row
	for {
		now := time.Now()
		b.mu.Lock()
		hasDirty, urgent := len(b.dirty) > 0, b.urgent
		b.urgent = false
		evictDue := b.nextDeadlineLocked()
		b.mu.Unlock()

		if !hasDirty {
			flushDue = time.Time{}
		} else {
			if flushDue.IsZero() {
				flushDue = now.Add(b.opts.FlushInterval)
			}
			if urgent || !now.Before(flushDue) {
				if err := b.flushAll(ctx); err != nil {
					b.log.Error("persist run events", "err", err)
					flushDue = now.Add(flushPolicy.Delay(failures, 0))
					failures++
				} else {
					failures = 0
					flushDue = time.Time{}
				}
				continue
			}
		}
		if !evictDue.IsZero() && !now.Before(evictDue) {
			b.expire(ctx, now)
			continue
		}

		next := flushDue
		if !evictDue.IsZero() {
			// Expiry waits a little past the first deadline, so that one
			// wake-up retires every log due in that window instead of one
			// wake-up per log (thousands after a burst of runs).
			evictAt := evictDue.Add(expiryBatch)
			if next.IsZero() || evictAt.Before(next) {
				next = evictAt
			}
		}
		if !next.IsZero() {
			timer.Reset(next.Sub(now))
		}
		select {
		case <-ctx.Done():
			timer.Stop()
			if err := b.flushAll(context.WithoutCancel(ctx)); err != nil {
				b.log.Error("persist run events at shutdown", "err", err)
			}
			return
		case <-b.wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// expiryBatch is how long past its deadline a retained log may stay, so
// that expiry runs in batches.
const expiryBatch = time.Second

// kick tells Run that the state changed. It never blocks.
func (b *Broker) kick() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// markDirty registers l as having unpersisted events.
func (b *Broker) markDirty(l *Log, urgent bool) {
	b.mu.Lock()
	b.dirty[l] = struct{}{}
	if urgent {
		b.urgent = true
	}
	b.mu.Unlock()
	b.kick()
}

// logClosed starts the retention clock of l and asks for a prompt flush.
func (b *Broker) logClosed(l *Log, gen uint64, resumable, flush bool) {
	now := time.Now()
	b.mu.Lock()
	if b.logs[l.runID] == l {
		b.memQ = enqueue(b.memQ, memEntry{deadline: now.Add(b.opts.MemoryRetention), log: l, gen: gen},
			func(e memEntry) time.Time { return e.deadline })
		if resumable {
			b.scheduleDeleteLocked(l.runID, now.Add(b.opts.Retention))
		}
	}
	if flush {
		b.dirty[l] = struct{}{}
		b.urgent = true
	}
	b.mu.Unlock()
	b.kick()
}

func (b *Broker) scheduleDeleteLocked(runID uuid.UUID, at time.Time) {
	b.token++
	b.expiry[runID] = b.token
	b.delQ = enqueue(b.delQ, delEntry{deadline: at, runID: runID, token: b.token},
		func(e delEntry) time.Time { return e.deadline })
}

func (b *Broker) nextDeadlineLocked() time.Time {
	var t time.Time
	if len(b.memQ) > 0 {
		t = b.memQ[0].deadline
	}
	if len(b.delQ) > 0 && (t.IsZero() || b.delQ[0].deadline.Before(t)) {
		t = b.delQ[0].deadline
	}
	return t
}

// enqueue inserts e into q, which is sorted by deadline, after every entry
// with the same deadline.
func enqueue[E any](q []E, e E, deadline func(E) time.Time) []E {
	at := deadline(e)
	i := sort.Search(len(q), func(i int) bool { return deadline(q[i]).After(at) })
	return slices.Insert(q, i, e)
}

// adoptPersisted schedules the deletion of events persisted by an earlier
// process for runs that are not open.
func (b *Broker) adoptPersisted(ctx context.Context) {
	lister, ok := b.store.(Lister)
	if !ok {
		return
	}
	ids, err := lister.RunsWithEvents(ctx)
	if err != nil {
		b.log.Error("list persisted run events", "err", err)
		return
	}
	at := time.Now().Add(b.opts.Retention)
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, id := range ids {
		if _, open := b.logs[id]; open {
			continue
		}
		if _, scheduled := b.expiry[id]; scheduled {
			continue
		}
		b.scheduleDeleteLocked(id, at)
	}
}

// expire drops the logs whose memory retention ended and deletes the events
// of the runs whose retention ended.
func (b *Broker) expire(ctx context.Context, now time.Time) {
	// flushMu keeps a concurrent Flush from re-writing events being deleted.
	b.flushMu.Lock()
	defer b.flushMu.Unlock()
	var del []uuid.UUID
	b.mu.Lock()
	for len(b.memQ) > 0 && !b.memQ[0].deadline.After(now) {
		e := b.memQ[0]
		b.memQ[0] = memEntry{}
		b.memQ = b.memQ[1:]
		l := e.log
		if b.logs[l.runID] != l {
			continue
		}
		closed, gen := l.log.Closed()
		current := closed && gen == e.gen
		persisted := !l.log.Unsaved()
		resumable := l.resumable.Load()
		persist := resumable && b.store != nil
		switch {
		case !current:
		case !resumable || (persist && persisted):
			delete(b.logs, l.runID)
			delete(b.dirty, l)
		case persist:
			// Not yet persisted (the store is failing): look again later.
			e.deadline = now.Add(b.opts.MemoryRetention)
			b.memQ = enqueue(b.memQ, e, func(e memEntry) time.Time { return e.deadline })
		default:
			// Resumable without a store: memory is the only copy until Retention.
		}
	}
	for len(b.delQ) > 0 && !b.delQ[0].deadline.After(now) {
		e := b.delQ[0]
		b.delQ = b.delQ[1:]
		if b.expiry[e.runID] != e.token {
			continue
		}
		delete(b.expiry, e.runID)
		if l, ok := b.logs[e.runID]; ok {
			delete(b.logs, e.runID)
			delete(b.dirty, l)
		}
		del = append(del, e.runID)
	}
	b.mu.Unlock()
	if len(del) == 0 || b.store == nil {
		return
	}
	if err := b.store.DeleteEvents(ctx, del); err != nil {
		b.log.Error("delete expired run events", "runs", len(del), "err", err)
		b.mu.Lock()
		for _, id := range del {
			if _, open := b.logs[id]; !open {
				if _, scheduled := b.expiry[id]; !scheduled {
					b.scheduleDeleteLocked(id, now.Add(deleteRetry))
				}
			}
		}
		b.mu.Unlock()
	}
}

// flushAll writes the unpersisted events of every dirty log, the logs
// concurrently so that their writes share group commits.
func (b *Broker) flushAll(ctx context.Context) error {
	b.flushMu.Lock()
	defer b.flushMu.Unlock()
	b.mu.Lock()
	logs := make([]*Log, 0, len(b.dirty))
	for l := range b.dirty {
		logs = append(logs, l)
	}
	clear(b.dirty)
	b.mu.Unlock()
	if len(logs) == 0 || b.store == nil {
		return nil
	}
	if len(logs) == 1 {
		return b.flushLog(ctx, logs[0])
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		sem  = make(chan struct{}, maxParallelFlush)
	)
	for _, l := range logs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := b.flushLog(ctx, l); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// flushLog writes the unpersisted events of l. Only flushAll calls it, under
// flushMu, so flushes of one log never overlap.
func (b *Broker) flushLog(ctx context.Context, l *Log) error {
	pending := l.log.TakeUnsaved()
	for len(pending) > 0 {
		n := min(len(pending), maxFlushBatch)
		if err := b.store.AppendEvents(ctx, l.runID, pending[:n]); err != nil {
			if l.log.SaveFailed() {
				b.markDirty(l, false)
			}
			return fmt.Errorf("run %s: %w", l.runID, err)
		}
		l.log.Saved(pending[n-1].Seq)
		pending = pending[n:]
	}
	return nil
}
