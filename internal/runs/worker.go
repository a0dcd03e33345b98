package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"

	"agentserver/internal/channels"
	"agentserver/internal/errdefs"
	"agentserver/internal/events"
	"agentserver/internal/graph"
	"agentserver/internal/jsonx"
	"agentserver/internal/metrics"
	"agentserver/internal/storage"
	"agentserver/internal/threads"
)

// cancelCause is the cause of a run context cancelled on purpose.
type cancelCause struct{ action string }

func (c *cancelCause) Error() string { return "run cancelled (" + c.action + ")" }

// errShutdown is the cause of run contexts cancelled by Shutdown.
var errShutdown = errors.New("server shutting down")

// timeoutCause is the cause of a run context cancelled because the run
// exceeded Options.Timeout. It matches context.DeadlineExceeded.
type timeoutCause struct{ after time.Duration }

func (c *timeoutCause) Error() string {
	return fmt.Sprintf("run exceeded its timeout of %s", c.after)
}

func (c *timeoutCause) Is(target error) bool { return target == context.DeadlineExceeded }

// execute runs one run to its end. It is called by the scheduler on a
// worker; release hands the worker slot and the thread back to the
// scheduler (it may be called early, when the run is abandoned, and runs
// once).
func (s *Service) execute(queued storage.Run, started bool, release func()) {
	defer release()
	ctx, cancel := context.WithCancelCause(withRun(s.ctx, queued))
	defer cancel(nil)
	s.mu.Lock()
	lr := s.live[queued.RunID]
	if lr == nil {
		// Settled while it waited for a worker (cancelled or rolled back).
		s.mu.Unlock()
		return
	}
	lr.cancel, lr.here, lr.since = cancel, true, time.Now()
	requested := lr.action
	plan := lr.takePlan()
	credentials := lr.credentials
	s.mu.Unlock()
	if requested != "" {
		cancel(&cancelCause{requested})
	}

	run, ok := queued, started // started: the creation already marked it running
	switch {
	case !started:
		run, plan, ok = s.markRunning(queued.RunID, s.planStart(queued))
	case plan == nil:
		plan = s.commitStart(run)
	}
	if !ok {
		return
	}
	if run.Attempt == 1 && run.StartedAt != nil {
		metrics.RunFirstStarted(run.StartedAt.Sub(later(run.CreatedAt, run.NotBefore)))
	}
	ctx, span := startRunSpan(ctx, run)
	defer span.End()
	ctx = s.withRunCaller(ctx, run, credentials)
	log := s.broker.Open(run.RunID, run.Kwargs.Resumable)
	sink := newRunSink(s, run, log)
	sink.span = span
	sink.streamed = lr.streamed
	if s.observed(run.ThreadID) {
		s.observer.RunStarted(run)
	}
	if s.opts.Timeout > 0 {
		timer := time.AfterFunc(s.opts.Timeout, func() { cancel(&timeoutCause{s.opts.Timeout}) })
		defer timer.Stop()
	}
	// Registered after cancel(nil) is deferred, so it is stopped first: a
	// run that returns on its own is never abandoned.
	unwatch := context.AfterFunc(ctx, func() { s.superviseStop(ctx, run, sink, release) })
	defer unwatch()
	if run.Attempt > 1 || log.LastSeq() == 0 {
		// A retry (or a run whose log was lost with the process) announces
		// its attempt; a first attempt announced itself at creation.
		log.Append("metadata", metadataEvent(run.RunID, run.ThreadID, run.Attempt))
	}

	var res graph.Result
	runner, err := s.runner(run.GraphID)
	if err == nil {
		sink.repair, _ = runner.(graph.CancelRepairer)
		var in graph.Input
		if plan != nil {
			in = plan.in // its start is written: it continues from there
		} else {
			in, err = s.input(ctx, run)
		}
		if err == nil {
			res, err = runner.Run(ctx, in, sink)
		}
	}
	s.finish(ctx, run, sink, res, err)
}

// runner returns what runs the current definition of a graph.
func (s *Service) runner(graphID string) (graph.Runner, error) {
	if def, ok := s.graphs.Get(graphID); ok {
		if r := def.Runner(s.exec); r != nil {
			return r, nil
		}
	}
	return nil, fmt.Errorf("graph %q is not served by this server", graphID)
}

// markRunning moves a pending run to running and counts the attempt, and
// writes plan (when not nil) in the same commit. It returns false when the
// run is no longer pending (cancelled or deleted while queued), and the
// plan only when it was written.
func (s *Service) markRunning(id uuid.UUID, plan *startPlan) (storage.Run, *startPlan, bool) {
	var run storage.Run
	wrote := false
	err := s.db.Update(context.Background(), func(tx *storage.Tx) error {
		wrote = false
		r, err := tx.GetRun(id)
		if err != nil {
			return err
		}
		if r.Status != storage.RunPending {
			return fmt.Errorf("run %s is %s: %w", id, r.Status, errdefs.ErrConflict)
		}
		markStarted(&r, s.now(), s.opts.ReplicaID)
		run = r
		if err := tx.PutRun(r); err != nil || plan == nil {
			return err
		}
		wrote, err = plan.write(tx, false)
		return err
	})
	if err != nil {
		if !errors.Is(err, errdefs.ErrNotFound) && !errors.Is(err, errdefs.ErrConflict) {
			s.log.Error("start run", "run_id", id, "err", err)
		}
		return run, nil, false
	}
	if !wrote {
		plan = nil
	}
	return run, plan, true
}

// markStarted moves a run record to running for a new start on replica:
// one more attempt, and a fresh fencing token.
func markStarted(r *storage.Run, now time.Time, replica string) {
	r.Status, r.UpdatedAt, r.StartedAt = storage.RunRunning, now, &now
	r.Attempt++
	r.Token, r.Owner, r.CancelAction = storage.NewRunToken(), replica, ""
}

// input builds the executor input: a retry continues from the run's own last
// checkpoint; otherwise the run starts from the requested checkpoint (a
// fork) or the thread's newest one.
func (s *Service) input(ctx context.Context, run storage.Run) (graph.Input, error) {
	in := s.inputOf(run)
	if run.Stateless && !run.Restarted {
		// Its thread was made with it: there is no checkpoint to read.
		return in, nil
	}
	err := s.db.View(ctx, func(tx *storage.Tx) error { return startingPoint(tx, run, &in) })
	return in, err
}

// inputOf is the executor input of a run, without the checkpoint it
// starts from.
func (s *Service) inputOf(run storage.Run) graph.Input {
	kw := run.Kwargs
	in := graph.Input{
		RunID: run.RunID, ThreadID: run.ThreadID, Values: kw.Input, Command: kw.Command,
		InterruptBefore: kw.InterruptBefore, InterruptAfter: kw.InterruptAfter,
		Config: kw.Config, Context: kw.Context,
		Metadata:    map[string]any{"graph_id": run.GraphID, "assistant_id": run.AssistantID.String()},
		Checkpoints: s.threads.Checkpoints(),
	}
	for k, v := range run.Metadata {
		if _, taken := in.Metadata[k]; !taken {
			in.Metadata[k] = v
		}
	}
	return in
}

// startingPoint reads the checkpoint a run starts from into in.From: its
// own last one for a restarted run (a retry), else the requested one (a
// fork) or the thread's newest (none: From stays nil).
func startingPoint(tx *storage.Tx, run storage.Run, in *graph.Input) error {
	if run.Restarted {
		own, err := tx.ListCheckpoints(run.ThreadID, nil, 1, func(cp storage.Checkpoint) bool { return cp.RunID != nil && *cp.RunID == run.RunID })
		if err == nil && len(own) == 1 {
			from := threads.ExecutorCheckpoint(own[0])
			in.From, in.Retry = &from, true
			return nil
		}
	}
	var from storage.Checkpoint
	var err error
	if id := run.Kwargs.CheckpointID; id != "" {
		cid, perr := uuid.Parse(id)
		if perr != nil {
			return fmt.Errorf("checkpoint_id %q: %w", id, errdefs.ErrInvalid)
		}
		from, err = tx.GetCheckpoint(run.ThreadID, cid)
		in.Addressed = true
	} else {
		from, err = tx.LatestCheckpoint(run.ThreadID)
		if errors.Is(err, errdefs.ErrNotFound) {
			return nil
		}
	}
	if err != nil {
		return err
	}
	executed := threads.ExecutorCheckpoint(from)
	in.From = &executed
	return nil
}

// finish records how the run ended, settles its thread and tells everyone.
func (s *Service) finish(ctx context.Context, run storage.Run, sink *runSink, res graph.Result, runErr error) {
	if !sink.claimEnd() {
		// The engine ended the run when it did not stop in time; what the
		// run did since is dropped.
		sink.checkpoints.drain()
		if err := sink.checkpoints.settled(); err != nil {
			s.log.Error("write intermediate checkpoints", "run_id", run.RunID, "thread_id", run.ThreadID, "err", err)
		}
		return
	}
	unwritten := sink.handedOver()
	if sink.final != nil {
		unwritten = append(unwritten, *sink.final)
	}
	cause := context.Cause(ctx)
	// Encoded here, outside the transaction; the final checkpoint is the
	// last one. A temporary run's end writes no checkpoint (its thread goes
	// with it), so its checkpoints are encoded only for the paths that keep
	// them: a requeue at shutdown, a retry after a lost executor.
	var encoded, encodedFinal []storage.EncodedCheckpoint
	if !run.Temporary || errors.Is(cause, errShutdown) || errors.Is(runErr, graph.ErrExecutorLost) {
		var err error
		encoded, err = sink.checkpoints.encode(unwritten)
		if err != nil && runErr == nil {
			runErr = fmt.Errorf("encode checkpoints: %w", err)
		}
		if sink.final != nil && len(encoded) > 0 {
			encoded, encodedFinal = encoded[:len(encoded)-1], encoded[len(encoded)-1:]
		}
	}
	if errors.Is(cause, errLeaseLost) {
		s.dropTakenOver(run, sink)
		return
	}
	if runErr != nil && errors.Is(cause, errShutdown) {
		s.requeueOnShutdown(run, encoded)
		if err := sink.checkpoints.settled(); err != nil && !errors.Is(err, storage.ErrClosed) {
			s.log.Error("write intermediate checkpoints", "run_id", run.RunID, "thread_id", run.ThreadID, "err", err)
		}
		return
	}
	if cause == nil && errors.Is(runErr, graph.ErrExecutorLost) {
		if run.Attempt < MaxAttempts && s.retryLost(run, encoded, runErr) {
			if err := sink.checkpoints.settled(); err != nil {
				s.log.Error("write intermediate checkpoints", "run_id", run.RunID, "thread_id", run.ThreadID, "err", err)
			}
			return
		}
		if run.Attempt >= MaxAttempts {
			runErr = &attemptsExhausted{err: runErr, attempts: run.Attempt}
		}
	}
	e := s.endingOf(run.RunID, cause, runErr)
	e.checkpoints, e.final, e.finalCheckpoint = encoded, encodedFinal, sink.final
	if runErr != nil && e.status == storage.RunError {
		s.log.WarnContext(ctx, "run failed", "run_id", run.RunID, "thread_id", run.ThreadID, "err", runErr)
	}
	if res.Values != nil && e.status == storage.RunSuccess {
		e.values = res.Values
		if ints := pendingInterrupts(sink.final); len(ints) > 0 {
			// As on LangGraph Platform, the final values of a paused run
			// carry what it waits for.
			e.values = jsonx.Merge(e.values, map[string]any{"__interrupt__": ints})
		}
	}
	s.endRun(run, sink, e)
}

// ending is how a run ends and what its last commit writes.
type ending struct {
	status   string
	rollback bool
	// errName and errText describe an error or a timeout.
	errName, errText string
	// checkpoints are the intermediate checkpoints still unwritten; final
	// is the encoded last checkpoint (not written when the run failed),
	// finalCheckpoint the same, decoded.
	checkpoints, final []storage.EncodedCheckpoint
	finalCheckpoint    *storage.Checkpoint
	// values are the run's final values when it succeeded.
	values map[string]any
	// repair is the graph's cancel repair (nil: none).
	repair graph.CancelRepairer
}

// endingOf maps how a run stopped (its context's cause and the executor's
// error) to its end status. A cancelled run is rolled back when a rollback
// was requested, even after an interrupt (the context keeps the first
// cause only).
func (s *Service) endingOf(runID uuid.UUID, cause, runErr error) ending {
	var cc *cancelCause
	var tc *timeoutCause
	switch {
	case runErr == nil:
		return ending{status: storage.RunSuccess}
	case errors.As(cause, &tc):
		return ending{status: storage.RunTimeout, errName: "TimeoutError", errText: tc.Error()}
	case errors.As(cause, &cc):
		return ending{status: storage.RunInterrupted, rollback: cc.action == ActionRollback || s.requestedAction(runID) == ActionRollback}
	}
	return ending{status: storage.RunError, errName: errorName(runErr), errText: runErr.Error()}
}

// endRun commits a run's end and tells its stream, its thread's stream, its
// waiters and its webhook.
func (s *Service) endRun(run storage.Run, sink *runSink, e ending) {
	now := s.now()
	run.UpdatedAt, run.EndedAt = now, &now
	run.Status, run.ErrorName, run.Error = e.status, e.errName, e.errText
	if extra := sink.outcomeMetadata(); len(extra) > 0 {
		run.Metadata = jsonx.Merge(run.Metadata, extra)
		if u, ok := extra["usage"].(map[string]any); ok {
			run.Usage = u
		}
	}
	if e.errName != "" {
		sink.emitRaw("error", map[string]any{"error": run.ErrorName, "message": run.Error})
	}
	if run.StartedAt != nil {
		metrics.RunEnded(run.Status, now.Sub(*run.StartedAt))
	}
	endRunSpan(sink.span, run)
	e.repair = sink.repair
	values, fenced, err := s.commitEnd(run, e)
	if err != nil {
		s.log.Error("finish run", "run_id", run.RunID, "thread_id", run.ThreadID, "err", err)
	}
	if err := sink.checkpoints.settled(); err != nil {
		// The run's state is whole (its last checkpoint holds all of it);
		// only some of its intermediate history is missing.
		s.log.Error("write intermediate checkpoints", "run_id", run.RunID, "thread_id", run.ThreadID, "err", err)
	}
	if e.values != nil {
		values = e.values
	}
	sink.emitRaw("end", nil)
	done, _ := json.Marshal(map[string]any{"run_id": run.RunID.String(), "status": run.Status})
	if s.observed(run.ThreadID) {
		s.observer.RunEnded(run, pendingInterrupts(e.finalCheckpoint))
	}
	s.watchers.publish(run.ThreadID, "run_done", done)
	s.settle(run, values)
	// Only the replica that committed the end sends the webhook: an end
	// that did not commit (fenced, or failed) is another's to announce.
	if hook := run.Kwargs.Webhook; hook != "" && !e.rollback && !fenced && err == nil {
		s.sendWebhook(hook, run, values)
	}
}

// commitEnd writes a run's end in one transaction: its last checkpoints,
// its record (or, for a rollback, the deletion of both) and its thread's
// status. It returns the thread's values. Nothing is written when the run
// no longer owns its thread (fenced): its thread was deleted, or the
// engine already ended it.
func (s *Service) commitEnd(run storage.Run, e ending) (values map[string]any, fenced bool, err error) {
	// What the fencing check and the thread's deletion or settling read
	// is read with the other writes of the group commit, in one round trip.
	reads := func(tx *storage.Tx) {
		if run.Temporary {
			tx.PrefetchThreadDeletion(run.ThreadID, run.RunID)
		} else {
			tx.PrefetchThreadRuns(run.ThreadID, run.RunID)
		}
	}
	err = s.db.UpdateReading(context.Background(), reads, func(tx *storage.Tx) error {
		values, fenced = nil, false
		if !tx.RunHeldBy(run.RunID, run.Token) {
			fenced = true
			return nil
		}
		if run.Temporary {
			// The thread goes with its runs and checkpoints: nothing to write.
			if e.finalCheckpoint != nil {
				values = e.finalCheckpoint.Values
			}
			if err := tx.DeleteThread(run.ThreadID); err != nil && !errors.Is(err, errdefs.ErrNotFound) {
				return err
			}
			return nil
		}
		if err := s.writeEnd(tx, run, e); err != nil {
			return err
		}
		// A checkpoint that cannot be read does not keep the run from
		// ending: the thread then settles as if it had none.
		latest, _ := latestCheckpoint(tx, run.ThreadID, e.finalCheckpoint)
		paused := false
		if latest != nil {
			values, paused = latest.Values, len(latest.Next) > 0
		}
		return s.settleThread(tx, run.ThreadID, run, paused)
	})
	return values, fenced, err
}

// writeEnd stores a run's last checkpoints and its end status, or deletes
// the run and its checkpoints when it is rolled back.
func (s *Service) writeEnd(tx *storage.Tx, run storage.Run, e ending) error {
	if e.rollback {
		if err := tx.DeleteRunCheckpoints(run.ThreadID, run.RunID); err != nil {
			return err
		}
		return tx.DeleteRun(run.RunID)
	}
	if err := putEncoded(tx, e.checkpoints); err != nil {
		return err
	}
	if run.Status == storage.RunInterrupted || run.Status == storage.RunTimeout {
		if err := s.repairCancelled(tx, run, e.repair); err != nil {
			return err
		}
	}
	if run.Status != storage.RunError {
		if err := putEncoded(tx, e.final); err != nil {
			return err
		}
	}
	return tx.PutRun(run)
}

// stopGrace is how long a cancelled or timed-out run may take to stop
// before the engine ends it without waiting (Options.StopGrace).
const stopGrace = 10 * time.Second

// superviseStop runs when a run's context is cancelled. A run cancelled on
// purpose (cancel, a multitask strategy, its timeout) that has not stopped
// after Options.StopGrace is abandoned: a node that ignores its context
// does not hold its thread and its worker forever.
func (s *Service) superviseStop(ctx context.Context, run storage.Run, sink *runSink, release func()) {
	cause := context.Cause(ctx)
	var cc *cancelCause
	var tc *timeoutCause
	if !errors.As(cause, &cc) && !errors.As(cause, &tc) {
		return // shutdown (the run is requeued) or the run's own return
	}
	time.AfterFunc(s.opts.StopGrace, func() { s.abandon(run, sink, cause, release) })
}

// abandon ends a run whose goroutine did not stop in time: its end is
// committed as if it had stopped (with the checkpoints it handed over so
// far), its thread and worker slot go to the next run, and whatever the
// goroutine does later is dropped (its commits are fenced).
func (s *Service) abandon(run storage.Run, sink *runSink, cause error, release func()) {
	if !sink.claimEnd() {
		return // it stopped in time
	}
	s.log.Warn("run did not stop in time; ending it without waiting", "run_id", run.RunID, "thread_id", run.ThreadID, "cause", cause, "grace", s.opts.StopGrace)
	encoded, err := sink.checkpoints.encode(sink.handedOver())
	if err != nil {
		s.log.Error("encode checkpoints", "run_id", run.RunID, "err", err)
		encoded = nil
	}
	e := s.endingOf(run.RunID, cause, cause)
	e.checkpoints = encoded
	s.endRun(run, sink, e)
	release()
}

// repairCancelled writes, after a cancelled run's last checkpoint, the
// closing checkpoint its graph asks for (graph.CancelRepairer: an agent's
// unanswered tool calls get error results), so that the thread does not
// end half-way through a step.
func (s *Service) repairCancelled(tx *storage.Tx, run storage.Run, repair graph.CancelRepairer) error {
	if repair == nil {
		return nil
	}
	cp, err := tx.LatestCheckpoint(run.ThreadID)
	if err != nil {
		return nil
	}
	writes := repair.CancelWrites(cp.Values)
	if len(writes) == 0 {
		return nil
	}
	values, err := s.exec.Reducers.Apply(cp.Values, writes)
	if err != nil {
		return err
	}
	step, _ := cp.Metadata["step"].(float64)
	parent := cp.CheckpointID
	closing := storage.Checkpoint{
		ThreadID: run.ThreadID, CheckpointID: graph.NewCheckpointID(), ParentID: &parent, CreatedAt: s.now(), Values: values,
		Metadata: map[string]any{"source": "update", "step": step + 1, "writes": map[string]any{"__cancel__": writes}, "parents": map[string]any{}, "run_id": run.RunID.String()},
		Next:     []string{}, Tasks: []storage.CheckpointTask{}, RunID: &run.RunID,
	}
	return tx.PutCheckpoint(closing)
}

// requeueOnShutdown puts a run stopped by shutdown back to pending so the
// next start resumes it without spending an attempt. The intermediate
// checkpoints no background commit had taken are written with it, so that
// a graceful stop loses no step.
func (s *Service) requeueOnShutdown(run storage.Run, unwritten []storage.EncodedCheckpoint) {
	err := s.db.Update(context.Background(), func(tx *storage.Tx) error {
		if !tx.RunHeldBy(run.RunID, run.Token) {
			return nil // its thread was deleted meanwhile, or it was taken over
		}
		if err := putEncoded(tx, unwritten); err != nil {
			return err
		}
		r, err := tx.GetRun(run.RunID)
		if err != nil {
			return err
		}
		r.Status, r.UpdatedAt = storage.RunPending, s.now()
		r.Attempt--
		r.Restarted = true
		r.Token, r.Owner, r.CancelAction = 0, "", ""
		return tx.PutRun(r)
	})
	if err != nil && !errors.Is(err, storage.ErrClosed) {
		s.log.Error("requeue run at shutdown", "run_id", run.RunID, "err", err)
		return
	}
	metrics.RunRequeued()
}

// retryLost puts a run whose executor died under it (graph.ErrExecutorLost)
// back at the head of its thread's queue, as a crash of the server would:
// its next start continues from its last checkpoint with attempt+1. The
// checkpoints no background commit had taken are written with it, so the
// retry loses no step the run acknowledged. It returns false, writing
// nothing, when the run no longer holds its thread or a cancellation was
// requested meanwhile: the run then ends as it is.
func (s *Service) retryLost(run storage.Run, unwritten []storage.EncodedCheckpoint, cause error) bool {
	var requeued storage.Run
	err := s.db.Update(context.Background(), func(tx *storage.Tx) error {
		if !tx.RunHeldBy(run.RunID, run.Token) {
			return errNotRetried
		}
		r, err := tx.GetRun(run.RunID)
		if err != nil {
			return err
		}
		if r.CancelAction != "" {
			return errNotRetried
		}
		if err := putEncoded(tx, unwritten); err != nil {
			return err
		}
		r.Status, r.UpdatedAt, r.Restarted = storage.RunPending, s.now(), true
		r.Token, r.Owner = 0, ""
		requeued = r
		return tx.PutRun(r)
	})
	if err != nil {
		if !errors.Is(err, errNotRetried) {
			s.log.Error("requeue run after its executor died", "run_id", run.RunID, "err", err)
		}
		return false
	}
	s.log.Warn("run's executor died; retrying the run from its last checkpoint", "run_id", run.RunID, "thread_id", run.ThreadID,
		"attempt", run.Attempt, "err", cause)
	metrics.RunRetried()
	s.sched.retry(requeued)
	return true
}

// errNotRetried ends retryLost's transaction without writing.
var errNotRetried = errors.New("run not retried")

// attemptsExhausted is the error of a run whose executor died under it on
// its last attempt.
type attemptsExhausted struct {
	err      error
	attempts int
}

func (e *attemptsExhausted) Error() string {
	return fmt.Sprintf("%v; the run was started %d times and is not retried again", e.err, e.attempts)
}

// ErrorName is the name the run records, as for runs stopped by restarts.
func (e *attemptsExhausted) ErrorName() string { return "RunAttemptsExhausted" }

func (e *attemptsExhausted) Unwrap() error { return e.err }

// later returns the later of two times.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// settleThread sets a thread's status after one of its runs ended: busy
// while other runs are pending or running; otherwise error when the run
// failed, interrupted when it paused with work left (paused: the thread's
// newest checkpoint has nodes to run), else idle.
func (s *Service) settleThread(tx *storage.Tx, threadID uuid.UUID, ended storage.Run, paused bool) error {
	th, err := tx.GetThread(threadID)
	if errors.Is(err, errdefs.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	active, err := tx.ActiveThreadRuns(threadID)
	if err != nil {
		return err
	}
	others := slices.DeleteFunc(active, func(r storage.Run) bool { return r.RunID == ended.RunID })
	th.Error = nil
	switch {
	case len(others) > 0:
		th.Status = threads.StatusBusy
	case ended.Status == storage.RunError || ended.Status == storage.RunTimeout:
		th.Status = threads.StatusError
		th.Error = ended.Error
	case ended.Status == storage.RunSuccess && paused:
		th.Status = threads.StatusInterrupted
	default:
		th.Status = threads.StatusIdle
	}
	now := s.now()
	th.UpdatedAt, th.StateUpdatedAt = now, now
	return tx.PutThread(th)
}

// pendingInterrupts lists the interrupts a paused checkpoint waits on.
func pendingInterrupts(cp *storage.Checkpoint) []any {
	if cp == nil || len(cp.Next) == 0 {
		return nil
	}
	var out []any
	for _, t := range cp.Tasks {
		out = append(out, t.Interrupts...)
	}
	return out
}

// latestCheckpoint returns a thread's newest checkpoint, or nil when it has
// none. known is a checkpoint the caller holds: when it is the newest, it is
// returned as it is instead of being read back and decoded.
func latestCheckpoint(tx *storage.Tx, threadID uuid.UUID, known *storage.Checkpoint) (*storage.Checkpoint, error) {
	id, err := tx.LatestCheckpointID(threadID)
	if errors.Is(err, errdefs.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if known != nil && known.CheckpointID == id {
		return known, nil
	}
	cp, err := tx.GetCheckpoint(threadID, id)
	if err != nil {
		return nil, err
	}
	return &cp, nil
}

func errorName(err error) string {
	var named interface{ ErrorName() string }
	switch {
	case errors.As(err, &named):
		return named.ErrorName()
	case errors.Is(err, graph.ErrRecursionLimit):
		return "GraphRecursionError"
	case errors.Is(err, channels.ErrInvalidUpdate), errors.Is(err, errdefs.ErrInvalid):
		return "InvalidUpdateError"
	case errors.Is(err, context.DeadlineExceeded):
		return "TimeoutError"
	}
	return "GraphError"
}

// runSink turns executor output into checkpoints and stream events.
type runSink struct {
	s     *Service
	run   storage.Run
	span  trace.Span // the run's span (nil: not traced)
	log   *events.Log
	modes map[string]bool
	// final is the last checkpoint, written with the run's end.
	final *storage.Checkpoint
	// pending holds the checkpoints the executor made before the first
	// node (the input checkpoint and the __start__ step) until the next
	// write, so that a run whose start was not written with its start
	// (a temporary run) pays no commit for them (a crash before that write
	// loses nothing: the retry applies the input again); and those handed
	// over with the run's end (CheckpointAtEnd), which its last commit
	// writes.
	pending []storage.Checkpoint
	legacy  map[string]map[string]any // legacy "messages" mode: accumulated message per id
	// streamed is set when the creating request streams the run.
	streamed bool
	// repair is the cancel repair of the run's graph (nil: none).
	repair graph.CancelRepairer
	// ownEvents is set when the executor streams the "events" mode itself
	// (OwnEvents): they are not derived from messages and updates then.
	ownEvents atomic.Bool

	mu    sync.Mutex // guards usage, notes and pending
	usage *usageTotals
	notes map[string]any

	// checkpoints commits the intermediate checkpoints in the background.
	checkpoints checkpointWriter

	// ended is set by whoever ends the run: its own finish, or abandon.
	ended atomic.Bool
}

// claimEnd reports whether the caller is the one to end the run: the first
// of the run's finish and abandon to call it.
func (k *runSink) claimEnd() bool {
	return k.ended.CompareAndSwap(false, true)
}

// usageTotals accumulates a run's token usage.
type usageTotals struct {
	Input, Output, Total, Calls int
	// Subagent counts the tokens of synchronous subagents (included in
	// the totals above).
	Subagent int
	ByModel  map[string]map[string]int
}

func (u *usageTotals) add(r graph.Usage) {
	u.Input += r.InputTokens
	u.Output += r.OutputTokens
	u.Total += r.TotalTokens
	u.Calls++
	if r.Subagent {
		u.Subagent += r.TotalTokens
	}
	m := u.ByModel[r.Model]
	if m == nil {
		m = map[string]int{}
		u.ByModel[r.Model] = m
	}
	m["input_tokens"] += r.InputTokens
	m["output_tokens"] += r.OutputTokens
	m["total_tokens"] += r.TotalTokens
	m["calls"]++
}

func (u *usageTotals) asMap() map[string]any {
	by := map[string]any{}
	for k, v := range u.ByModel {
		by[k] = v
	}
	return map[string]any{"input_tokens": u.Input, "output_tokens": u.Output, "total_tokens": u.Total, "calls": u.Calls, "subagent_tokens": u.Subagent, "by_model": by}
}

// Usage adds a model call's tokens to the run's totals.
func (k *runSink) Usage(u graph.Usage) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.usage == nil {
		k.usage = &usageTotals{ByModel: map[string]map[string]int{}}
	}
	k.usage.add(u)
}

// Note records an outcome fact of the run (stored in its metadata).
func (k *runSink) Note(key string, value any) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.notes == nil {
		k.notes = map[string]any{}
	}
	k.notes[key] = value
}

// outcomeMetadata is what the run's metadata gains when it ends: token usage
// and notes such as the stop reason.
func (k *runSink) outcomeMetadata() map[string]any {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := map[string]any{}
	for key, v := range k.notes {
		out[key] = v
	}
	if k.usage != nil {
		out["usage"] = k.usage.asMap()
	}
	return out
}

func newRunSink(s *Service, run storage.Run, log *events.Log) *runSink {
	modes := map[string]bool{}
	for _, m := range run.Kwargs.StreamModes {
		modes[m] = true
	}
	return &runSink{s: s, run: run, log: log, modes: modes, legacy: map[string]map[string]any{}, checkpoints: checkpointWriter{db: s.db, run: run.RunID, token: run.Token}}
}

// Checkpoint hands intermediate checkpoints to the background writer; the final one is kept
// and written in the same transaction as the run's end.
func (k *runSink) Checkpoint(ctx context.Context, executed graph.Checkpoint, final bool) error {
	cp := threads.StoredCheckpoint(executed)
	if final {
		c := cp
		k.final = &c
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if beforeFirstNode(cp) {
		k.pending = append(k.pending, cp)
		return nil
	}
	k.checkpoints.add(append(k.pending, cp)...)
	k.pending = nil
	return nil
}

// CheckpointAtEnd keeps an intermediate checkpoint handed over once the
// executor is done, to be written with the run's end (graph.EndWriter).
func (k *runSink) CheckpointAtEnd(executed graph.Checkpoint) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.pending = append(k.pending, threads.StoredCheckpoint(executed))
}

// beforeFirstNode reports whether a checkpoint is one a run writes before
// its first node runs: an input checkpoint, or a step whose writes are the
// input's (__start__).
func beforeFirstNode(cp storage.Checkpoint) bool {
	writes, _ := cp.Metadata["writes"].(map[string]any)
	_, ok := writes[graph.Start]
	return ok || cp.Metadata["source"] == "input"
}

// handedOver stops background commits and returns, in order, every
// intermediate checkpoint the run handed over that no commit has taken.
// Safe while the executor still runs (abandon).
func (k *runSink) handedOver() []storage.Checkpoint {
	k.mu.Lock()
	defer k.mu.Unlock()
	rest := append(k.checkpoints.drain(), k.pending...)
	k.pending = nil
	return rest
}

// OwnEvents tells the sink that the executor streams the "events" mode
// itself (graph.EventsDeriver).
func (k *runSink) OwnEvents() { k.ownEvents.Store(true) }

// Wants maps executor modes to the stream modes the run was created with.
// Nothing is built for a run nobody can read: not streamed by its creator,
// not resumable, and without subscribers or thread stream clients (a later
// join only sees events from the moment it joins).
func (k *runSink) Wants(mode string) bool {
	return k.ownWants(mode) || observedModes[mode] && k.s.observed(k.run.ThreadID)
}

// ownWants is Wants for the run's own streams (its log and the thread
// join stream), without the thread observer.
func (k *runSink) ownWants(mode string) bool {
	if !k.streamed && !k.log.Watched() && !k.s.watchers.has(k.run.ThreadID) {
		return false
	}
	if mode == graph.SubgraphsMode {
		return k.run.Kwargs.Subgraphs
	}
	if mode == "messages" {
		return k.modes["messages-tuple"] || k.modes["messages"] || k.modes["events"]
	}
	if mode == "updates" && k.modes["events"] {
		return true
	}
	return k.modes[mode]
}

// Emit passes a payload to the thread observer and appends it to the
// run's event log under its wire name when the run asked for it.
func (k *runSink) Emit(mode string, payload any) {
	if k.s.observed(k.run.ThreadID) {
		k.s.observer.RunEvent(k.run, mode, payload)
	}
	base, nested, _ := strings.Cut(mode, "|")
	if !k.ownWants(base) || nested != "" && !k.ownWants(graph.SubgraphsMode) {
		return
	}
	switch mode {
	case "messages":
		if k.modes["messages-tuple"] {
			k.emitRaw("messages", payload)
		}
		if k.modes["messages"] {
			k.emitLegacyMessage(payload)
		}
		if k.modes["events"] && !k.ownEvents.Load() {
			k.emitRaw("events", streamEvent("on_chat_model_stream", payload))
		}
		return
	case "updates":
		if k.modes["events"] && !k.ownEvents.Load() {
			k.emitRaw("events", map[string]any{"event": "on_chain_stream", "name": "LangGraph", "run_id": k.run.RunID.String(), "tags": []any{}, "metadata": map[string]any{}, "data": map[string]any{"chunk": payload}})
		}
		if !k.modes["updates"] {
			return
		}
	}
	k.emitRaw(mode, payload)
}

// emitLegacyMessage derives the legacy messages/* events from a
// messages-tuple payload: metadata once per message id, then the message so
// far (partial for chunks, complete for whole messages).
func (k *runSink) emitLegacyMessage(payload any) {
	pair, ok := payload.([]any)
	if !ok || len(pair) != 2 {
		return
	}
	msg, _ := pair[0].(map[string]any)
	id, _ := msg["id"].(string)
	acc, seen := k.legacy[id]
	if !seen {
		k.emitRaw("messages/metadata", map[string]any{id: map[string]any{"metadata": pair[1]}})
		acc = map[string]any{}
		for kk, v := range msg {
			acc[kk] = v
		}
		k.legacy[id] = acc
	} else if c, ok := msg["content"].(string); ok {
		prev, _ := acc["content"].(string)
		acc["content"] = prev + c
	}
	if t, _ := msg["type"].(string); t == "AIMessageChunk" {
		k.emitRaw("messages/partial", []any{acc})
		return
	}
	k.emitRaw("messages/complete", []any{acc})
}

func streamEvent(name string, payload any) map[string]any {
	data := map[string]any{}
	var meta any = map[string]any{}
	if pair, ok := payload.([]any); ok && len(pair) == 2 {
		data["chunk"] = pair[0]
		meta = pair[1]
	}
	return map[string]any{"event": name, "name": "model", "tags": []any{}, "metadata": meta, "data": data, "parent_ids": []any{}}
}

func (k *runSink) emitRaw(name string, payload any) {
	raw, err := json.Marshal(payload)
	if err != nil {
		raw, _ = json.Marshal(map[string]any{"error": "EncodeError", "message": err.Error()})
		name = "error"
	}
	k.log.Append(name, raw)
	k.s.watchers.publish(k.run.ThreadID, name, raw)
}
