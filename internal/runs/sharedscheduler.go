package runs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/metrics"
	"agentserver/internal/storage"
)

// The engine on a shared (PostgreSQL) database, where several replicas
// execute the runs of one queue. See doc.go, "Replicas".

// safetyPoll is how often an idle replica looks at the queue without being
// woken, in case a notice was lost.
const safetyPoll = 2 * time.Second

// takeoverBatch bounds the lapsed runs one replica takes over per round.
const takeoverBatch = 256

// errLeaseLost is the cause of the context of a run this replica no
// longer holds: its lease lapsed and another replica took it over.
var errLeaseLost = errors.New("the run's lease lapsed and another replica took it over")

// sharedState is the replica's view of the other replicas: notices of runs
// that ended or started elsewhere, and who waits for them.
type sharedState struct {
	s *Service

	mu sync.Mutex
	// ended and changed hold channels closed at the next notice that a run
	// ended (ended) or that it ended or started (changed).
	ended, changed map[uuid.UUID]chan struct{}
}

func newSharedState(s *Service) *sharedState {
	return &sharedState{s: s, ended: map[uuid.UUID]chan struct{}{}, changed: map[uuid.UUID]chan struct{}{}}
}

// next returns the channel of a run in m, creating it.
func (st *sharedState) next(m map[uuid.UUID]chan struct{}, id uuid.UUID) <-chan struct{} {
	st.mu.Lock()
	defer st.mu.Unlock()
	ch := m[id]
	if ch == nil {
		ch = make(chan struct{})
		m[id] = ch
	}
	return ch
}

func (st *sharedState) fire(m map[uuid.UUID]chan struct{}, id uuid.UUID) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if ch := m[id]; ch != nil {
		close(ch)
		delete(m, id)
	}
}

// fireAll wakes every waiter: each looks at the database again (Done,
// relayRun), and waits anew for a run that has not ended.
func (st *sharedState) fireAll() {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, m := range []map[uuid.UUID]chan struct{}{st.ended, st.changed} {
		for id, ch := range m {
			close(ch)
			delete(m, id)
		}
	}
}

// notice handles what another replica (or this one) committed.
func (st *sharedState) notice(n storage.Notice) {
	s := st.s
	sched := s.sched.(*sharedScheduler)
	if n.Resync {
		st.fireAll()
		sched.pending.Store(true)
		sched.wake()
		return
	}
	for _, id := range n.Ended {
		st.fire(st.ended, id)
		st.fire(st.changed, id)
		if !n.Local {
			s.endedElsewhere(id)
		}
	}
	for _, id := range n.Started {
		st.fire(st.changed, id)
		if !n.Local {
			// Created here, started elsewhere: this replica's waiters
			// now wait for the other's notice.
			s.releaseLive(id, true)
		}
	}
	if !n.Local {
		for id, action := range n.Cancel {
			s.cancelLive(id, action)
		}
	}
	if n.Wake {
		sched.pending.Store(true)
	}
	if n.Wake || len(n.Ended) > 0 && sched.pending.Load() {
		sched.wake()
	}
}

// endedElsewhere follows a run that another replica ended or deleted: a
// run this replica executes stops (its writes are fenced), and waiters of
// a run it created but did not execute are woken.
func (s *Service) endedElsewhere(id uuid.UUID) {
	s.mu.Lock()
	lr := s.live[id]
	s.mu.Unlock()
	if lr == nil {
		return
	}
	if lr.cancel != nil {
		s.cancelLive(id, ActionInterrupt)
		return
	}
	s.releaseLive(id, true)
}

// releaseLive drops the in-memory side of a run without an outcome: its
// local waiters wake (and read the run from the database) and its local
// stream closes. With onlyElsewhere, a run this process executes is left
// alone.
func (s *Service) releaseLive(id uuid.UUID, onlyElsewhere bool) {
	s.mu.Lock()
	lr := s.live[id]
	if lr == nil || onlyElsewhere && lr.here {
		s.mu.Unlock()
		return
	}
	delete(s.live, id)
	s.mu.Unlock()
	close(lr.done)
	if l, ok := s.broker.Get(id); ok && !l.Closed() {
		l.Close()
	}
}

// dropTakenOver follows a run this replica executed until another replica
// took it over: nothing it did is written (its commits are fenced), and
// local waiters now wait for the other replica's end.
func (s *Service) dropTakenOver(run storage.Run, sink *runSink) {
	sink.checkpoints.drain()
	_ = sink.checkpoints.settled()
	s.log.Warn("run taken over by another replica; dropping this replica's attempt", "run_id", run.RunID, "thread_id", run.ThreadID, "attempt", run.Attempt)
	s.releaseLive(run.RunID, false)
}

// remoteDone returns a channel closed when a run that is not live here
// ends, or nil when it has ended (or does not exist).
func (s *Service) remoteDone(id uuid.UUID) <-chan struct{} {
	ch := s.shared.next(s.shared.ended, id)
	active, err := storage.Read(s.ctx, s.db, func(tx *storage.Tx) (bool, error) { return tx.RunIsActive(id), nil })
	if err != nil || !active {
		s.shared.fire(s.shared.ended, id)
		return nil
	}
	return ch
}

// startShared registers the replica, hands back the runs a previous
// process of this replica left running, and starts listening.
func (s *Service) startShared(ctx context.Context) error {
	s.db.OnNotice(s.shared.notice)
	if err := s.db.Heartbeat(s.opts.ReplicaID, s.opts.AdvertiseURL); err != nil {
		return fmt.Errorf("register replica: %w", err)
	}
	retried, err := s.requeueStopped(ctx, func(tx *storage.Tx) ([]uuid.UUID, error) {
		if err := s.failUnreadable(tx, s.now()); err != nil {
			return nil, err
		}
		return tx.OwnedRuns(s.opts.ReplicaID)
	})
	if err != nil {
		return err
	}
	for range retried {
		metrics.RunRetried()
	}
	s.sched.start()
	return nil
}

// failUnreadable fails the active runs whose records this build cannot
// read, and settles their threads.
func (s *Service) failUnreadable(tx *storage.Tx, now time.Time) error {
	failed, err := tx.FailUnreadableActiveRuns(now)
	if err != nil {
		return err
	}
	for _, r := range failed {
		s.log.Warn("run record could not be read; the run was failed", "run_id", r.RunID, "thread_id", r.ThreadID, "err", r.Error)
		if err := s.settleThread(tx, r.ThreadID, r, false); err != nil {
			return err
		}
	}
	return nil
}

// requeueStopped puts running runs that stopped without ending (their
// replica died or restarted) back in the queue, in one transaction: a
// run whose cancellation was requested ends interrupted (or is erased by a
// rollback), one that used every attempt ends in error, the others become
// pending and continue from their last checkpoint with attempt+1. pick
// lists the runs. It returns how many runs were requeued.
func (s *Service) requeueStopped(ctx context.Context, pick func(tx *storage.Tx) ([]uuid.UUID, error)) (int, error) {
	var ended []storage.Run
	requeued := 0
	err := s.db.Update(ctx, func(tx *storage.Tx) error {
		ended, requeued = nil, 0
		ids, err := pick(tx)
		if err != nil {
			return err
		}
		now := s.now()
		for _, id := range ids {
			r, err := tx.GetRun(id)
			if err != nil || r.Status != storage.RunRunning {
				continue
			}
			gone, err := s.requeueRun(tx, &r, now)
			if err != nil {
				return err
			}
			if gone {
				ended = append(ended, r)
			} else {
				requeued++
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	for _, r := range ended {
		s.log.Warn("run stopped with its replica and was not retried", "run_id", r.RunID, "thread_id", r.ThreadID, "status", r.Status, "attempts", r.Attempt)
	}
	return requeued, nil
}

// requeueRun puts one running run that lost its process back to pending,
// or ends it (ended true) when it was being cancelled or used every
// attempt. It writes in tx.
func (s *Service) requeueRun(tx *storage.Tx, r *storage.Run, now time.Time) (ended bool, err error) {
	r.UpdatedAt = now
	switch {
	case r.CancelAction == ActionRollback:
		r.Status = storage.RunInterrupted
		if err := tx.DeleteRunCheckpoints(r.ThreadID, r.RunID); err != nil {
			return true, err
		}
		if err := tx.DeleteRun(r.RunID); err != nil {
			return true, err
		}
		return true, s.settleThread(tx, r.ThreadID, *r, false)
	case r.CancelAction != "":
		r.Status, r.EndedAt = storage.RunInterrupted, &now
	case r.Attempt >= MaxAttempts:
		r.Status, r.EndedAt = storage.RunError, &now
		r.ErrorName, r.Error = "RunAttemptsExhausted", fmt.Sprintf("run was interrupted %d times (server restarts) and is not retried again", r.Attempt)
	default:
		r.Status, r.Restarted = storage.RunPending, true
		r.Token, r.Owner = 0, ""
		return false, tx.PutRun(*r)
	}
	if err := tx.PutRun(*r); err != nil {
		return true, err
	}
	if r.Temporary {
		if err := tx.DeleteThread(r.ThreadID); err != nil && !errors.Is(err, storage.ErrNotFound) {
			return true, err
		}
		return true, nil
	}
	return true, s.settleThread(tx, r.ThreadID, *r, false)
}

// sharedScheduler starts runs of the shared queue on this replica: runs
// created here start at once when a worker is free (claim); the others are
// claimed from the queue table when a notice says there is work, when a
// worker frees up, when a delayed run becomes due, and every safetyPoll.
// It also renews the leases of the runs this replica executes and takes
// over the runs of replicas whose leases lapsed.
type sharedScheduler struct {
	s     *Service
	slots chan struct{}
	kick  chan struct{} // capacity 1

	// pending is set when the queue may hold pending runs; a run ending
	// elsewhere wakes the loop only then.
	pending atomic.Bool
	// queued is the number of pending runs the last look found.
	queued atomic.Int64

	mu      sync.Mutex
	started bool
	stopped bool
}

func newSharedScheduler(s *Service, workers int) *sharedScheduler {
	q := &sharedScheduler{s: s, slots: make(chan struct{}, workers), kick: make(chan struct{}, 1)}
	q.pending.Store(true)
	return q
}

// wake makes the loop look at the queue soon.
func (q *sharedScheduler) wake() {
	select {
	case q.kick <- struct{}{}:
	default:
	}
}

func (q *sharedScheduler) enqueue(storage.Run) {
	q.pending.Store(true)
	q.wake()
}

// retry wakes the loop: the run is pending in the shared queue, which
// starts a thread's runs in creation order.
func (q *sharedScheduler) retry(r storage.Run) { q.enqueue(r) }

func (q *sharedScheduler) forget(uuid.UUID, uuid.UUID) {}

func (q *sharedScheduler) claim(uuid.UUID) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.started || q.stopped {
		return false
	}
	select {
	case q.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

func (q *sharedScheduler) release(uuid.UUID) {
	<-q.slots
	q.wake()
}

func (q *sharedScheduler) releaser() func() {
	return sync.OnceFunc(func() { q.release(uuid.Nil) })
}

func (q *sharedScheduler) startClaimed(r storage.Run) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.stopped {
		return false
	}
	q.s.spawnRun(r, q.releaser())
	return true
}

func (q *sharedScheduler) start() {
	q.mu.Lock()
	q.started = true
	q.s.wg.Add(1)
	q.mu.Unlock()
	go q.loop()
}

func (q *sharedScheduler) stop() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.stopped = true
}

func (q *sharedScheduler) stats() metrics.QueueStats {
	busy := len(q.slots)
	return metrics.QueueStats{Running: busy, WorkersMax: cap(q.slots), WorkersActive: busy, Pending: int(q.queued.Load())}
}

// loop claims runs and keeps leases until shutdown.
func (q *sharedScheduler) loop() {
	defer q.s.wg.Done()
	lease := q.s.db.Lease()
	keep := time.NewTicker(lease / 3)
	defer keep.Stop()
	// Waiters for runs of other replicas learn of their ends from notices;
	// every safetyPoll they look again, so that one whose notice was lost
	// (not sent after its commit, or dropped) does not wait forever.
	recheck := time.NewTicker(safetyPoll)
	defer recheck.Stop()
	timer := time.NewTimer(0)
	defer timer.Stop()
	// lapse fires when the earliest lease another replica holds lapses:
	// its runs are taken over then, not at the next keep tick.
	lapse := time.NewTimer(lease)
	defer lapse.Stop()
	for {
		wait := safetyPoll
		if due, ok := q.claimRound(); ok {
			wait = min(wait, max(time.Until(due), time.Millisecond))
		}
		timer.Reset(wait)
		select {
		case <-q.s.ctx.Done():
			return
		case <-q.kick:
		case <-timer.C:
			q.pending.Store(true)
		case <-keep.C:
			q.keepLeases()
			q.takeOver()
			q.watchLapse(lapse)
		case <-lapse.C:
			q.takeOver()
			q.watchLapse(lapse)
		case <-recheck.C:
			q.s.shared.fireAll()
		}
	}
}

// claimRound claims as many runs as there are free workers and starts
// them. It returns when the next delayed run becomes due, if any.
func (q *sharedScheduler) claimRound() (nextDue time.Time, delayed bool) {
	if !q.pending.Load() {
		return time.Time{}, false
	}
	q.mu.Lock()
	stopped := q.stopped
	q.mu.Unlock()
	if stopped {
		return time.Time{}, false
	}
	free := 0
reserve:
	for free < cap(q.slots) {
		select {
		case q.slots <- struct{}{}:
			free++
		default:
			break reserve
		}
	}
	claimed := q.claimRuns(free)
	for range free - len(claimed) {
		<-q.slots
	}
	for _, r := range claimed {
		q.s.startHere(r, q.releaser())
	}
	if free > 0 && len(claimed) == free {
		q.wake() // more may be waiting
	}
	n, due, err := q.s.db.QueueState()
	if err != nil {
		q.s.log.Warn("read the run queue", "err", err)
		return time.Time{}, false
	}
	q.queued.Store(int64(n))
	q.pending.Store(n > 0)
	return due, !due.IsZero()
}

// claimRuns marks up to n claimable runs as running on this replica.
func (q *sharedScheduler) claimRuns(n int) []storage.Run {
	if n == 0 {
		return nil
	}
	s := q.s
	var claimed []storage.Run
	err := s.db.Update(s.ctx, func(tx *storage.Tx) error {
		claimed = claimed[:0]
		ids, err := tx.ClaimableRuns(s.opts.ReplicaID, n)
		if err != nil {
			return err
		}
		now := s.now()
		salvaged := false
		for _, id := range ids {
			r, err := tx.GetRun(id)
			if err != nil && !salvaged {
				// A record this build cannot read fails, readably, as at
				// a single server's start, instead of blocking the queue.
				salvaged = true
				if err := s.failUnreadable(tx, now); err != nil {
					return err
				}
				continue
			}
			if err != nil || r.Status != storage.RunPending {
				continue
			}
			markStarted(&r, now, s.opts.ReplicaID)
			if err := tx.PutRun(r); err != nil {
				return err
			}
			claimed = append(claimed, r)
		}
		return nil
	})
	if err != nil {
		if s.ctx.Err() == nil {
			s.log.Warn("claim runs", "err", err)
		}
		return nil
	}
	return claimed
}

// startHere executes a run this replica claimed from the queue.
func (s *Service) startHere(r storage.Run, release func()) {
	s.mu.Lock()
	lr := s.live[r.RunID]
	if lr == nil {
		lr = &liveRun{done: make(chan struct{})}
		s.live[r.RunID] = lr
	}
	lr.here = true
	lr.streamed = lr.streamed || r.Joined
	s.mu.Unlock()
	s.broker.Open(r.RunID, r.Kwargs.Resumable)
	s.spawnRun(r, release)
}

// keepLeases renews the leases of the runs this replica executes and
// stops those it no longer holds (another replica took them over while
// this one could not renew, or was frozen). A run it holds in the queue
// but no longer executes (its end did not commit) is not renewed: its
// lease lapses and it is taken over, instead of staying running for ever.
func (q *sharedScheduler) keepLeases() {
	s := q.s
	if err := s.db.Heartbeat(s.opts.ReplicaID, s.opts.AdvertiseURL); err != nil {
		s.log.Warn("replica heartbeat", "err", err)
	}
	began := time.Now()
	var executing []uuid.UUID
	s.mu.Lock()
	for id, lr := range s.live {
		if lr.here {
			executing = append(executing, id)
		}
	}
	s.mu.Unlock()
	held, err := s.db.RenewLeases(s.opts.ReplicaID, executing)
	if err != nil {
		s.log.Warn("renew run leases", "err", err)
		return
	}
	holds := make(map[uuid.UUID]bool, len(held))
	for _, id := range held {
		holds[id] = true
	}
	var lost []uuid.UUID
	s.mu.Lock()
	for id, lr := range s.live {
		// A run started after the renewal began may be missing from it.
		if lr.cancel != nil && !holds[id] && lr.since.Before(began) {
			lost = append(lost, id)
		}
	}
	s.mu.Unlock()
	for _, id := range lost {
		s.mu.Lock()
		lr := s.live[id]
		s.mu.Unlock()
		if lr == nil || lr.cancel == nil {
			continue
		}
		// Ended meanwhile (its commit preceded the renewal) or taken over:
		// either way its context may go; an ended run no longer reads it.
		lr.cancel(errLeaseLost)
	}
}

// lapseMargin is how long after a lease's end its run is taken over, so
// that the database's clock has passed it too.
const lapseMargin = 20 * time.Millisecond

// watchLapse sets t to fire when the earliest lease of another replica
// lapses (or after a lease, when there is none).
func (q *sharedScheduler) watchLapse(t *time.Timer) {
	wait := q.s.db.Lease()
	if at, ok, err := q.s.db.NextLapse(q.s.opts.ReplicaID); err == nil && ok {
		wait = max(time.Until(at)+lapseMargin, 100*time.Millisecond)
	}
	t.Reset(wait) // since Go 1.23 a Reset timer delivers no stale tick
}

// takeOver requeues the runs whose leases lapsed (their replica died).
func (q *sharedScheduler) takeOver() {
	s := q.s
	n, err := s.requeueStopped(s.ctx, func(tx *storage.Tx) ([]uuid.UUID, error) { return tx.ExpiredRuns(takeoverBatch) })
	if err != nil {
		if s.ctx.Err() == nil {
			s.log.Warn("take over lapsed runs", "err", err)
		}
		return
	}
	for range n {
		metrics.RunRetried()
	}
	if n > 0 {
		s.log.Info("took over runs of a replica whose leases lapsed", "runs", n)
		q.pending.Store(true)
		q.wake()
	}
}
