package runs

import (
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/metrics"
	"agentserver/internal/storage"
)

// runScheduler starts queued runs on workers: scheduler on an embedded
// database, sharedScheduler on a shared one.
type runScheduler interface {
	// enqueue hands over a run stored as pending.
	enqueue(r storage.Run)
	// retry hands back a run that stopped without ending (its executor
	// died) and is stored as pending again: it starts before the other
	// runs queued on its thread.
	retry(r storage.Run)
	// forget drops a pending run that will never start.
	forget(thread, run uuid.UUID)
	// claim reserves a worker (and, where the scheduler tracks threads,
	// the thread) for a run about to be created as running; release
	// gives the reservation back when the run did not start after all.
	claim(thread uuid.UUID) bool
	release(thread uuid.UUID)
	// startClaimed executes a run created as running under a claim; it
	// returns false when shutting down.
	startClaimed(r storage.Run) bool
	start()
	stop()
	stats() metrics.QueueStats
}

// scheduler keeps, per thread, the FIFO of runs waiting to start and starts
// the head of each queue when its thread is free, its after_seconds delay has
// passed and a worker slot is available. It holds no lock while a run
// executes and never polls: delays are timers, and a finished run dispatches
// its thread's next run.
type scheduler struct {
	s     *Service
	slots chan struct{}

	mu      sync.Mutex
	queues  map[uuid.UUID]*threadQueue
	started bool
	stopped bool
}

type threadQueue struct {
	running bool
	pending []storage.Run
	timer   *time.Timer
}

func newScheduler(s *Service, workers int) *scheduler {
	return &scheduler{s: s, slots: make(chan struct{}, workers), queues: map[uuid.UUID]*threadQueue{}}
}

// queueOf returns the queue of thread id, made on first use. The caller
// holds q.mu.
func (q *scheduler) queueOf(id uuid.UUID) *threadQueue {
	tq := q.queues[id]
	if tq == nil {
		tq = &threadQueue{}
		q.queues[id] = tq
	}
	return tq
}

// enqueue appends a pending run to its thread's queue.
func (q *scheduler) enqueue(r storage.Run) {
	q.mu.Lock()
	tq := q.queueOf(r.ThreadID)
	tq.pending = append(tq.pending, r)
	q.mu.Unlock()
	q.dispatch(r.ThreadID)
}

// retry puts a run back at the head of its thread's queue; it starts once
// its previous attempt has released the thread.
func (q *scheduler) retry(r storage.Run) {
	q.mu.Lock()
	tq := q.queueOf(r.ThreadID)
	tq.pending = append([]storage.Run{r}, tq.pending...)
	q.mu.Unlock()
	q.dispatch(r.ThreadID)
}

// forget drops a run that will never start (cancelled or rolled back while
// pending).
func (q *scheduler) forget(thread, run uuid.UUID) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if tq := q.queues[thread]; tq != nil {
		tq.pending = slices.DeleteFunc(tq.pending, func(r storage.Run) bool { return r.RunID == run })
		q.dropIfIdle(thread, tq)
	}
}

func (q *scheduler) dropIfIdle(thread uuid.UUID, tq *threadQueue) {
	if !tq.running && len(tq.pending) == 0 {
		if tq.timer != nil {
			tq.timer.Stop()
		}
		delete(q.queues, thread)
	}
}

// start lets queued runs execute.
func (q *scheduler) start() {
	q.mu.Lock()
	q.started = true
	threads := make([]uuid.UUID, 0, len(q.queues))
	for id := range q.queues {
		threads = append(threads, id)
	}
	q.mu.Unlock()
	for _, id := range threads {
		q.dispatch(id)
	}
}

// stop prevents any further run from starting.
func (q *scheduler) stop() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.stopped = true
	for _, tq := range q.queues {
		if tq.timer != nil {
			tq.timer.Stop()
		}
	}
}

// dispatch starts the head of a thread's queue if it may start now.
func (q *scheduler) dispatch(thread uuid.UUID) {
	q.mu.Lock()
	defer q.mu.Unlock()
	tq := q.queues[thread]
	if !q.started || q.stopped || tq == nil || tq.running || len(tq.pending) == 0 {
		return
	}
	head := tq.pending[0]
	if wait := time.Until(head.NotBefore); wait > 0 {
		if tq.timer == nil {
			tq.timer = time.AfterFunc(wait, func() {
				q.mu.Lock()
				if t := q.queues[thread]; t != nil {
					t.timer = nil
				}
				q.mu.Unlock()
				q.dispatch(thread)
			})
		}
		return
	}
	tq.pending = tq.pending[1:]
	tq.running = true
	q.s.wg.Add(1)
	go q.work(head)
}

// work waits for a worker slot, executes the run, and hands the thread to
// its next run.
func (q *scheduler) work(r storage.Run) {
	defer q.s.wg.Done()
	select {
	case q.slots <- struct{}{}:
		q.s.execute(r, false, q.releaser(r.ThreadID))
	case <-q.s.ctx.Done():
		q.done(r.ThreadID)
	}
}

// releaser returns the function that gives back a started run's worker
// slot and thread, once.
func (q *scheduler) releaser(thread uuid.UUID) func() {
	return sync.OnceFunc(func() {
		<-q.slots
		q.done(thread)
	})
}

// claim reserves a worker slot and a thread for a run about to be created
// and started in one commit. It succeeds only when the thread has nothing
// running or queued and a slot is free at once; release must follow when
// the run is not started after all.
func (q *scheduler) claim(thread uuid.UUID) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.started || q.stopped {
		return false
	}
	if tq := q.queues[thread]; tq != nil && (tq.running || len(tq.pending) > 0) {
		return false
	}
	select {
	case q.slots <- struct{}{}:
	default:
		return false
	}
	q.queues[thread] = &threadQueue{running: true}
	return true
}

// release gives back a claim whose run did not start.
func (q *scheduler) release(thread uuid.UUID) {
	<-q.slots
	q.done(thread)
}

// startClaimed executes a run created as running under a claim.
func (q *scheduler) startClaimed(r storage.Run) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.stopped {
		return false
	}
	q.s.spawnRun(r, q.releaser(r.ThreadID))
	return true
}

// spawnRun executes a run marked running on a goroutine of its own that
// Shutdown waits for. Schedulers call it under the lock their stop takes,
// so that no run starts unseen once Shutdown waits.
func (s *Service) spawnRun(r storage.Run, release func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.execute(r, true, release)
	}()
}

// done marks a thread's run as finished and starts its next one.
func (q *scheduler) done(thread uuid.UUID) {
	q.mu.Lock()
	if tq := q.queues[thread]; tq != nil {
		tq.running = false
		q.dropIfIdle(thread, tq)
	}
	q.mu.Unlock()
	q.dispatch(thread)
}

// stats counts the runs waiting to start (queued, or dispatched and waiting
// for a worker slot), the runs holding a slot, and the slots.
func (q *scheduler) stats() metrics.QueueStats {
	q.mu.Lock()
	defer q.mu.Unlock()
	busy := len(q.slots)
	st := metrics.QueueStats{Running: busy, WorkersMax: cap(q.slots), WorkersActive: busy}
	dispatched := 0
	for _, tq := range q.queues {
		st.Pending += len(tq.pending)
		if tq.running {
			dispatched++
		}
	}
	st.Pending += max(dispatched-busy, 0)
	return st
}
