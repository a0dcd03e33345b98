// Package runs owns the life of a run: creation with the multitask
// (double-texting) strategies, the durable queue, the worker pool that
// executes graphs, cancellation, joins and waits, stream events, webhooks,
// and recovery after a crash.
//
// # Lifecycle
//
//	pending ──start──▶ running ──▶ success | error | interrupted | timeout
//	   │                  │
//	   └─cancel/interrupt─┴──▶ interrupted (rollback: the run and its checkpoints are deleted)
//
// A running run ends timeout when it runs longer than Options.Timeout.
//
// # Invariants
//
//   - Every run is a record in bbolt before its creation is acknowledged; a
//     pending or running run is listed in the runs_active index, so a
//     restart finds every run that still has work to do.
//   - At most one run per thread is running, and runs of a thread start in
//     creation order (FIFO); after_seconds holds a run back without
//     blocking the runs of other threads.
//   - A run's context is detached from the request that created it; it is
//     cancelled only by cancel, the interrupt/rollback strategies, an
//     on_disconnect=cancel client going away, or shutdown.
//   - Cancellation is a context cancel with a cause, so it reaches the
//     in-flight model request or tool at once.
//   - A thread is busy while it has a pending or running run; when its last
//     run ends it becomes error, interrupted (its last checkpoint has Next)
//     or idle.
//   - On start-up, runs found running were interrupted by a crash: each is
//     retried from its last checkpoint with attempt+1, and marked error once
//     it has used MaxAttempts. Pending runs stay queued.
//   - A run whose executor died under it (an error wrapping
//     graph.ErrExecutorLost: a graph worker killed or hung) follows the
//     same rules at once: its unwritten checkpoints are written, it is
//     pending again at the head of its thread's queue (retryLost), and it
//     ends in error (RunAttemptsExhausted) when that was its last attempt.
//   - Producers never wait for stream consumers: events go to the run's log
//     (package events), which subscribers read at their own pace.
//   - Fencing: every start of a run (its creation as running, a worker's
//     start, a replica's claim) gives it a fresh fencing token, kept in its
//     record and in runs_active. Every transaction that writes a run's
//     checkpoints or its end first checks, in that transaction, that the
//     run is still running under its token (storage.Tx.RunHeldBy), and
//     writes nothing otherwise; so a run ended by the engine, rolled back,
//     deleted with its thread, or taken over by another replica never
//     writes after its successor started.
//   - A run cancelled on purpose (cancel, a multitask strategy, its
//     timeout) that has not stopped after Options.StopGrace is ended by the
//     engine (abandon): its end is committed, its thread and worker slot go
//     to the next run, and what its goroutine does later is fenced. Exactly
//     one of the run's finish and abandon ends it (runSink.claimEnd).
//   - CreateGuarded stores a run in the same transaction as its guard's
//     writes (the cron scheduler's claim of a firing): both commit or
//     neither does.
//   - Deleting a thread (DeleteThread) deletes it with its runs first and
//     then stops them, without waiting.
//   - Every run that ends, pending or running, sends end and run_done and
//     wakes its waiters; its webhook fires unless it was erased (rolled
//     back, or deleted with its thread).
//   - A run's intermediate checkpoints are committed in the background, at
//     most one commit in flight per run (checkpointWriter); the run's last
//     commit is queued after it, so it lands after every earlier checkpoint
//     of the run. A crash can lose the newest intermediate checkpoints (the
//     retry resumes from an older one); a graceful shutdown writes them.
//   - The checkpoints a run writes before its first node (the input
//     checkpoint and the __start__ step; graph.Starter) are computed before
//     the transaction that marks it running and written in it (startPlan:
//     its creation, or markRunning), so its input is in the thread's state
//     from the moment it runs; the transaction writes them only while the
//     thread's newest checkpoint (or the named fork) is still their base
//     and the run's metadata is unchanged. Otherwise, and when a replica
//     claims a run from the shared queue, they are computed again at the
//     start and committed on their own, fenced by the run's token. A
//     temporary run, and a graph whose runner cannot tell them ahead, hand
//     them over with the first step instead.
//   - A temporary run's end deletes its thread with the checkpoints in the
//     same commit, so the checkpoints it still holds are not encoded; they
//     are for the two ends that keep them (a requeue at shutdown, a retry
//     after a lost graph worker).
//   - A run's record keeps the W3C traceparent of the request that created
//     it, so its execution span (package tracing) is that request's child
//     whenever, and after however many restarts, it runs.
//   - Thread stream events are numbered per thread; a thread keeps its
//     newest events while it has stream clients and for feedRetention after
//     the last one left, for Last-Event-ID reconnects. A connection is a
//     cursor into those kept events and holds none of its own.
//   - A ThreadObserver (the thread-centric stream) sees every event of the
//     runs of the threads it observes, whatever stream modes the run asked
//     for; the run's own log still gets only its modes. A run created from
//     inside another run (the context of a run's execution carries it) is
//     announced to the observer before it can start.
//
// # Replicas
//
// On a shared (PostgreSQL) database several processes execute the runs of
// one queue (sharedscheduler.go, remote.go):
//
//   - A run created on a replica with a free worker starts there in the
//     creating transaction; otherwise it waits in the shared queue
//     (storage's run_queue), and any replica with a free worker claims the
//     oldest due pending run of a thread with nothing running (FOR UPDATE
//     SKIP LOCKED). Replicas are woken by the database's notices (a run
//     became pending, a run ended), a timer for after_seconds, and a slow
//     safety poll (safetyPoll).
//   - A running run's lease is renewed by its replica every lease/3; a
//     replica that no longer finds a run among its renewed leases stops
//     it (errLeaseLost) and writes nothing of it. Every replica requeues,
//     every lease/3, the runs whose leases lapsed (requeueRun: attempt+1
//     from the last checkpoint; a run being cancelled ends instead; a run
//     out of attempts ends in error). A restarted replica (same data
//     directory, same id) requeues its own runs at start.
//   - A replica renews only the leases of the runs it executes: a run it
//     holds in the queue but no longer executes (its end did not commit)
//     lapses and is taken over instead of staying running for ever. A
//     replica frozen past its lease (SIGSTOP) finds, when it resumes, that
//     its runs were taken over: it stops them at its next renewal, and
//     what they commit meanwhile is fenced.
//   - A run's webhook is sent by whoever commits its end, and only then:
//     an end that was fenced or failed to commit sends none, so a run
//     taken over is announced once, by the replica that ended it.
//   - /ok?check_db=true (CheckDB) fails on a replica the database does not
//     count as live (its heartbeat is older than a lease).
//   - Cancellation is recorded in the run's record (CancelAction) and
//     announced; the executing replica cancels the run's context when it
//     hears it. Waits and joins of runs executing elsewhere wait for the
//     notice that the run ended, then read it from the database.
//   - Streams of runs executing elsewhere are relayed over HTTP from the
//     executing replica (PeerHeader marks those requests, which are never
//     relayed further); a thread stream relays the thread's events from
//     every other live replica while it has clients.
//   - A temporary (stateless) run is pinned to the replica that created it
//     while that replica lives: its outcome is kept only in that process.
package runs
