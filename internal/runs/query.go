package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"agentserver/internal/authz"
	"agentserver/internal/errdefs"
	"agentserver/internal/events"
	"agentserver/internal/jsonx"
	"agentserver/internal/storage"
	"agentserver/internal/threads"
)

// streamModes are the stream modes a run may be created with.
var streamModes = []string{"values", "messages", "messages-tuple", "updates", "events", "debug", "custom", "tasks", "checkpoints", "tools"}

// normalizeModes checks requested stream modes; none means ["values"].
func normalizeModes(modes []string) ([]string, error) {
	if len(modes) == 0 {
		return []string{"values"}, nil
	}
	out := make([]string, 0, len(modes))
	for _, m := range modes {
		ok := false
		for _, known := range streamModes {
			ok = ok || m == known
		}
		if !ok {
			return nil, fmt.Errorf("unknown stream_mode %q (known: %s): %w", m, strings.Join(streamModes, ", "), errdefs.ErrInvalid)
		}
		out = append(out, m)
	}
	return out, nil
}

// CheckStreamModes reports an ErrInvalid error naming the first mode that is
// not a stream mode a run can be created with (joins filter by these).
func CheckStreamModes(modes []string) error {
	if len(modes) == 0 {
		return nil
	}
	_, err := normalizeModes(modes)
	return err
}

func runNotFound(id uuid.UUID) error {
	return fmt.Errorf("run %s: %w", id, errdefs.ErrNotFound)
}

// restriction asks the caller of ctx for action on the thread of a run
// (runs are authorised through their thread) and returns the metadata
// containment that thread must satisfy (nil: any).
func restriction(ctx context.Context, action string, threadID *uuid.UUID) (map[string]any, error) {
	value := map[string]any{}
	if threadID != nil {
		value["thread_id"] = threadID.String()
	}
	return threads.Restriction(ctx, action, value)
}

// runVisible fails with the run's ErrNotFound when its thread does not
// satisfy restrict, as when the run does not exist.
func runVisible(tx *storage.Tx, r storage.Run, restrict map[string]any) error {
	if len(restrict) == 0 {
		return nil
	}
	if _, err := tx.GetThreadWhere(r.ThreadID, restrict); err != nil {
		return runNotFound(r.RunID)
	}
	return nil
}

// Get returns a run. With threadID set, a run of another thread is not found.
func (s *Service) Get(ctx context.Context, threadID *uuid.UUID, runID uuid.UUID) (storage.Run, error) {
	return s.getAs(ctx, authz.Read, threadID, runID)
}

// getAs is Get for a caller acting on the run's thread with action.
func (s *Service) getAs(ctx context.Context, action string, threadID *uuid.UUID, runID uuid.UUID) (storage.Run, error) {
	restrict, err := restriction(ctx, action, threadID)
	if err != nil {
		return storage.Run{}, err
	}
	var run storage.Run
	err = s.db.View(ctx, func(tx *storage.Tx) error {
		if threadID != nil {
			if _, err := tx.GetThreadWhere(*threadID, restrict); err != nil {
				return err
			}
		}
		r, err := tx.GetRun(runID)
		if err != nil {
			return err
		}
		if threadID != nil && r.ThreadID != *threadID {
			return runNotFound(runID)
		}
		if err := runVisible(tx, r, restrict); err != nil {
			return err
		}
		run = r
		return nil
	})
	// A temporary run is deleted with its thread when it ends, as on
	// LangGraph Platform: from then on it is not found, although waiters
	// that joined it before still get its outcome (Wait).
	return run, err
}

// List returns the runs of a thread, newest first.
func (s *Service) List(ctx context.Context, threadID uuid.UUID, status string, limit, offset int) ([]storage.Run, int, error) {
	tid := threadID
	return s.Search(ctx, storage.RunQuery{ThreadID: &tid, Status: status, Limit: limit, Offset: offset})
}

// Search returns runs matching q, newest first, and their number.
func (s *Service) Search(ctx context.Context, q storage.RunQuery) ([]storage.Run, int, error) {
	action := authz.Search
	if q.ThreadID != nil {
		action = authz.Read
	}
	restrict, err := restriction(ctx, action, q.ThreadID)
	if err != nil {
		return nil, 0, err
	}
	q.Restrict = restrict
	var out []storage.Run
	var total int
	err = s.db.View(ctx, func(tx *storage.Tx) error {
		if q.ThreadID != nil {
			if _, err := tx.GetThreadWhere(*q.ThreadID, restrict); err != nil {
				return err
			}
		}
		var err error
		out, total, err = tx.SearchRuns(q, jsonx.Contains)
		return err
	})
	return out, total, err
}

// Delete removes a finished run. An active run must be cancelled first.
func (s *Service) Delete(ctx context.Context, threadID *uuid.UUID, runID uuid.UUID) error {
	restrict, err := restriction(ctx, authz.Delete, threadID)
	if err != nil {
		return err
	}
	return s.db.Update(ctx, func(tx *storage.Tx) error {
		r, err := tx.GetRun(runID)
		if err != nil {
			return err
		}
		if threadID != nil && r.ThreadID != *threadID {
			return runNotFound(runID)
		}
		if err := runVisible(tx, r, restrict); err != nil {
			return err
		}
		if storage.RunActive(r.Status) {
			return fmt.Errorf("run %s is %s; cancel it before deleting it: %w", runID, r.Status, errdefs.ErrConflict)
		}
		tx.AfterCommit(func() { s.forgetOutcome(runID) })
		return tx.DeleteRun(runID)
	})
}

func (s *Service) forgetOutcome(runID uuid.UUID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.results, runID) // its id stays in order until pruned
}

// Cancel stops a run. A pending run ends at once (rollback deletes it); a
// running run's context is cancelled with the action as cause. Cancelling a
// finished run changes nothing. With wait, Cancel returns once the run ended.
func (s *Service) Cancel(ctx context.Context, threadID *uuid.UUID, runID uuid.UUID, action string, wait bool) error {
	done, err := s.cancelRuns(ctx, threadID, action, func(*storage.Tx) ([]uuid.UUID, error) { return []uuid.UUID{runID}, nil })
	if err != nil {
		return err
	}
	if wait && len(done) == 1 {
		select {
		case <-done[0]:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// cancelRuns cancels the runs pick lists, in one transaction (nothing is
// cancelled when one is unknown, or of another thread when threadID is
// set), then ends the pending ones and cancels the running ones. It
// returns the channels that close when the running ones have ended.
func (s *Service) cancelRuns(ctx context.Context, threadID *uuid.UUID, action string, pick func(*storage.Tx) ([]uuid.UUID, error)) ([]<-chan struct{}, error) {
	action, err := cancelAction(action)
	if err != nil {
		return nil, err
	}
	restrict, err := restriction(ctx, authz.Update, threadID)
	if err != nil {
		return nil, err
	}
	var c cancellation
	err = s.db.Update(ctx, func(tx *storage.Tx) error {
		c = cancellation{action: action, restrict: restrict}
		ids, err := pick(tx)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if err := c.add(s, tx, threadID, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s.applyCancellation(c), nil
}

func cancelAction(action string) (string, error) {
	switch action {
	case "":
		return ActionInterrupt, nil
	case ActionInterrupt, ActionRollback:
		return action, nil
	}
	return "", fmt.Errorf("action must be interrupt or rollback, got %q: %w", action, errdefs.ErrInvalid)
}

// cancellation collects, in one transaction, the runs a cancel request
// stops: pending runs it ended in storage, running runs whose context is
// to be cancelled once it has committed.
type cancellation struct {
	action string
	// restrict is the caller's filter on the runs' threads.
	restrict map[string]any
	settled  []storage.Run
	running  []uuid.UUID
}

// add cancels one run in tx. With threadID set, a run of another thread is
// not found.
func (c *cancellation) add(s *Service, tx *storage.Tx, threadID *uuid.UUID, runID uuid.UUID) error {
	r, err := tx.GetRun(runID)
	if err != nil {
		return err
	}
	if threadID != nil && r.ThreadID != *threadID {
		return runNotFound(runID)
	}
	if err := runVisible(tx, r, c.restrict); err != nil {
		return err
	}
	switch r.Status {
	case storage.RunRunning:
		c.running = append(c.running, runID)
		return requestCancel(tx, r, c.action)
	case storage.RunPending:
	default:
		return nil // finished: nothing to do
	}
	r.UpdatedAt = s.now()
	r.Status = storage.RunInterrupted
	if c.action == ActionRollback {
		err = tx.DeleteRun(runID)
	} else {
		err = tx.PutRun(r)
	}
	if err != nil {
		return err
	}
	c.settled = append(c.settled, r)
	if r.Temporary {
		return tx.DeleteThread(r.ThreadID)
	}
	return s.settleThread(tx, r.ThreadID, r, false) // not a success: paused is not consulted
}

// applyCancellation follows a committed cancellation: pending runs get
// their end, running ones have their context cancelled. It returns the
// channels that close when the running ones have ended.
func (s *Service) applyCancellation(c cancellation) []<-chan struct{} {
	for _, r := range c.settled {
		s.endPending(r, c.action == ActionRollback)
	}
	var done []<-chan struct{}
	for _, id := range c.running {
		ch := s.cancelLive(id, c.action)
		if ch == nil {
			ch = s.Done(id) // running on another replica
		}
		if ch != nil {
			done = append(done, ch)
		}
	}
	return done
}

// endPending finishes a run that never started: its stream ends, thread
// watchers and waiters hear of it, and its webhook fires (not when the run
// was erased: rolled back, or deleted with its thread).
func (s *Service) endPending(r storage.Run, erased bool) {
	s.sched.forget(r.ThreadID, r.RunID)
	end := json.RawMessage("null")
	if l, ok := s.broker.Get(r.RunID); ok && !l.Closed() {
		l.Append("end", end)
	}
	s.watchers.publish(r.ThreadID, "end", end)
	done, _ := json.Marshal(map[string]any{"run_id": r.RunID.String(), "status": r.Status})
	s.watchers.publish(r.ThreadID, "run_done", done)
	s.settle(r, nil)
	if hook := r.Kwargs.Webhook; hook != "" && !erased {
		s.sendWebhook(hook, r, nil)
	}
}

// DeleteThread deletes a thread with its checkpoints and its runs in one
// transaction, then stops the runs it had: pending ones end at once,
// running ones have their context cancelled and, whatever they do next,
// write nothing (their commits are fenced), so the thread, its runs and its
// checkpoints stay deleted. Their streams and waiters get their end, as
// interrupted; no webhook is sent for them.
func (s *Service) DeleteThread(ctx context.Context, threadID uuid.UUID) error {
	restrict, err := restriction(ctx, authz.Delete, &threadID)
	if err != nil {
		return err
	}
	var active []storage.Run
	err = s.db.Update(ctx, func(tx *storage.Tx) error {
		if _, err := tx.GetThreadWhere(threadID, restrict); err != nil {
			return err
		}
		var err error
		if active, err = tx.ActiveThreadRuns(threadID); err != nil {
			return err
		}
		return tx.DeleteThread(threadID)
	})
	if err != nil {
		return err
	}
	for _, r := range active {
		if r.Status == storage.RunRunning {
			s.cancelLive(r.RunID, ActionInterrupt)
			continue
		}
		r.Status, r.UpdatedAt = storage.RunInterrupted, s.now()
		s.endPending(r, true)
	}
	return nil
}

// cancelLive cancels a running run's context and returns the channel that
// closes when it has ended (nil when the run is not live here).
func (s *Service) cancelLive(runID uuid.UUID, action string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	lr := s.live[runID]
	if lr == nil {
		return nil
	}
	if lr.action == "" || action == ActionRollback {
		lr.action = action
	}
	if lr.cancel != nil {
		lr.cancel(&cancelCause{lr.action})
	}
	return lr.done
}

// requestedAction is the strongest cancel action requested for a live run
// ("" when none).
func (s *Service) requestedAction(runID uuid.UUID) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if lr := s.live[runID]; lr != nil {
		return lr.action
	}
	return ""
}

// CancelMany cancels the given runs of a thread, or every run with a status
// (pending, running, or all), in one transaction: when one of runIDs is
// unknown (or of another thread), nothing is cancelled.
func (s *Service) CancelMany(ctx context.Context, threadID *uuid.UUID, runIDs []uuid.UUID, status, action string) error {
	_, err := s.cancelRuns(ctx, threadID, action, func(tx *storage.Tx) ([]uuid.UUID, error) {
		if len(runIDs) > 0 {
			return runIDs, nil
		}
		return activeRunIDs(tx, threadID, status)
	})
	return err
}

// activeRunIDs lists the pending and running runs with a status (pending,
// running, or all), of one thread when threadID is set.
func activeRunIDs(tx *storage.Tx, threadID *uuid.UUID, status string) ([]uuid.UUID, error) {
	active, err := tx.ActiveRuns()
	if err != nil {
		return nil, err
	}
	var ids []uuid.UUID
	for _, r := range active {
		if (status == "all" || status == r.Status) && (threadID == nil || *threadID == r.ThreadID) {
			ids = append(ids, r.RunID)
		}
	}
	return ids, nil
}

// Wait blocks until a run has ended and returns it with its final values.
// A run executing on another replica is waited for through the database's
// notices.
func (s *Service) Wait(ctx context.Context, threadID *uuid.UUID, runID uuid.UUID) (storage.Run, map[string]any, error) {
	restrict, err := restriction(ctx, authz.Read, threadID)
	if err != nil {
		return storage.Run{}, nil, err
	}
	if len(restrict) > 0 && !s.waitable(ctx, threadID, runID, restrict) {
		return storage.Run{}, nil, runNotFound(runID)
	}
	for done := s.Done(runID); done != nil; done = s.Done(runID) {
		select {
		case <-done:
		case <-ctx.Done():
			return storage.Run{}, nil, ctx.Err()
		}
	}
	if o := s.outcomeOf(runID); o != nil {
		if threadID != nil && o.run.ThreadID != *threadID {
			return storage.Run{}, nil, runNotFound(runID)
		}
		return o.run, o.values, nil
	}
	run, err := s.Get(ctx, threadID, runID)
	if err != nil {
		return run, nil, err
	}
	values, err := s.finalValues(ctx, run)
	return run, values, err
}

// waitable reports whether a restricted caller may wait for a run: its
// thread satisfies restrict or, for a run whose temporary thread is gone,
// its own metadata (which carries its thread's owner fields) does.
func (s *Service) waitable(ctx context.Context, threadID *uuid.UUID, runID uuid.UUID, restrict map[string]any) bool {
	if o := s.outcomeOf(runID); o != nil {
		return jsonx.Contains(o.run.Metadata, restrict)
	}
	_, err := s.Get(ctx, threadID, runID)
	return err == nil
}

// finalValues reads the values a run ended with, for a run whose outcome
// this process does not hold (it ran on another replica, or long ago): its
// own newest checkpoint (later runs may have moved the thread on), else
// the thread's; a run that paused gets its interrupts, as at its end.
func (s *Service) finalValues(ctx context.Context, run storage.Run) (map[string]any, error) {
	var values map[string]any
	err := s.db.View(ctx, func(tx *storage.Tx) error {
		own, err := tx.ListCheckpoints(run.ThreadID, nil, 1, func(cp storage.Checkpoint) bool { return cp.RunID != nil && *cp.RunID == run.RunID })
		if err == nil && len(own) == 1 {
			values = own[0].Values
			if ints := pendingInterrupts(&own[0]); len(ints) > 0 && run.Status == storage.RunSuccess {
				values = jsonx.Merge(values, map[string]any{"__interrupt__": ints})
			}
			return nil
		}
		if cp, err := tx.LatestCheckpoint(run.ThreadID); err == nil {
			values = cp.Values
		}
		return nil
	})
	return values, err
}

// Done returns a channel closed when the run ends, or nil when it has ended.
// On a shared database the channel of a run live on another replica may
// also close when this one lost track of it (a missed notice): call Done
// again to tell.
func (s *Service) Done(runID uuid.UUID) <-chan struct{} {
	s.mu.Lock()
	lr := s.live[runID]
	s.mu.Unlock()
	if lr != nil {
		return lr.done
	}
	if s.shared != nil && s.outcomeOf(runID) == nil {
		return s.remoteDone(runID)
	}
	return nil
}

func (s *Service) outcomeOf(runID uuid.UUID) *outcome {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.results[runID]
}

// Subscribe returns the run's stream events after lastEventID ("" means only
// new events, "-1" from the start). On a shared database, a run that is
// pending or executes on another replica is followed there, unless the
// request comes from another replica (WithPeer).
func (s *Service) Subscribe(ctx context.Context, run storage.Run, lastEventID string) (*events.Subscription, error) {
	runID := run.RunID
	after, err := parseEventID(lastEventID)
	if err != nil {
		return nil, err
	}
	if s.shared != nil && !fromPeer(ctx) && storage.RunActive(run.Status) && !s.executesHere(runID) {
		return s.subscribeRemote(run, after), nil
	}
	if after == onlyNew {
		if l, ok := s.broker.Get(runID); ok {
			return l.Subscribe(l.LastSeq()), nil
		}
		after = 1 << 62 // nothing retained: an empty stream that ends
	}
	sub, err := s.broker.Subscribe(ctx, runID, after)
	if errors.Is(err, events.ErrNoLog) {
		return nil, nil
	}
	return sub, err
}

const onlyNew = -2

func parseEventID(id string) (int64, error) {
	id = strings.TrimSpace(id)
	if id == "" {
		return onlyNew, nil
	}
	var n int64
	if _, err := fmt.Sscan(id, &n); err != nil || n < -1 {
		return 0, fmt.Errorf("Last-Event-ID %q is not an event id: %w", id, errdefs.ErrInvalid)
	}
	if n < 0 {
		return 0, nil
	}
	return n, nil
}
