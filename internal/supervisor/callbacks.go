package supervisor

import (
	"errors"
	"fmt"
	"maps"

	"github.com/google/uuid"

	"agentserver/internal/asynctasks"
	"agentserver/internal/errdefs"
	"agentserver/internal/storage"
)

// JSChannel is the state channel where deepagents' JavaScript supervisors
// keep their async tasks (records with taskId, agentName, threadId, runId,
// status, createdAt, updatedAt).
const JSChannel = "asyncTasks"

// callbackKey is the input key deepagents' JavaScript start_async_task
// names the supervisor's thread with.
const callbackKey = "callbackThreadId"

// callbackMetadataKey is the task thread's metadata key that keeps the
// supervisor thread it reports to, so that the task's later runs report
// there whichever replica creates them, and after a restart.
const callbackMetadataKey = "callback_thread_id"

// RunCreated follows the runs that a deepagents JavaScript supervisor
// served here (a LangGraph.js graph) starts as async tasks on this server:
// their input names the supervisor's thread in callbackThreadId, and the
// later runs of the same task thread (update_async_task, whose input does
// not) are followed too. When such a run ends, its status is pushed into
// the supervisor thread's asyncTasks record of the task, as Notifier does
// for this server's own supervisors (runs.CreationObserver).
//
// Which task threads belong to which supervisor is kept in memory and in
// the task thread's metadata (callback_thread_id), written when the first
// run names it. With FollowStoredCallbacks, a run that names no
// supervisor and is not known in memory is looked up there (one thread
// read, off the creating request's path): a task updated on another
// replica, or after a restart, still reports.
func (n *Notifier) RunCreated(run storage.Run) {
	if n.ctx.Err() != nil {
		return
	}
	sup, named := callbackInput(run)
	if !named {
		var known bool
		if sup, known = n.remembered(run.ThreadID); !known && !n.lookupStored.Load() {
			return
		}
	}
	n.followInBackground(run, sup, named)
}

// followInBackground runs follow on its own goroutine. It is a function of
// its own so that only the runs followed are copied to the heap, not every
// run RunCreated sees.
func (n *Notifier) followInBackground(run storage.Run, sup uuid.UUID, named bool) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		err := n.follow(run, sup, named)
		if err != nil && n.ctx.Err() == nil && !errors.Is(err, errdefs.ErrNotFound) {
			n.log.Warn("deliver async task completion", "thread_id", sup, "task_id", run.ThreadID, "err", err)
		}
	}()
}

// FollowStoredCallbacks makes RunCreated look a run's supervisor up in its
// thread's metadata when memory does not have it (servers of JavaScript
// graphs: the runs that may be deepagents tasks).
func (n *Notifier) FollowStoredCallbacks() { n.lookupStored.Store(true) }

// follow finds the supervisor thread of a task's run (sup, or the task
// thread's metadata when sup is zero), records a newly named one, and
// pushes the run's end to it.
func (n *Notifier) follow(run storage.Run, sup uuid.UUID, named bool) error {
	n.mu.RLock()
	th := n.threads
	n.mu.RUnlock()
	if th == nil {
		return errors.New("notifier is not bound")
	}
	switch {
	case named:
		if n.remember(run.ThreadID, sup) {
			if _, err := th.Patch(n.ctx, run.ThreadID, map[string]any{callbackMetadataKey: sup.String()}, nil); err != nil {
				return fmt.Errorf("record the task's supervisor thread: %w", err)
			}
		}
	case sup == uuid.Nil:
		task, err := th.Get(n.ctx, run.ThreadID)
		if err != nil {
			return err
		}
		text, _ := task.Metadata[callbackMetadataKey].(string)
		if sup, err = uuid.Parse(text); err != nil {
			return nil // not a task of a JavaScript supervisor
		}
		n.remember(run.ThreadID, sup)
	}
	return n.pushJS(sup, run)
}

// callbackInput returns the supervisor thread a run's input names.
func callbackInput(run storage.Run) (uuid.UUID, bool) {
	in, _ := run.Kwargs.Input.(map[string]any)
	text, _ := in[callbackKey].(string)
	sup, err := uuid.Parse(text)
	if err != nil || sup == run.ThreadID {
		return uuid.Nil, false
	}
	return sup, true
}

// remember records that task reports to sup and says whether that is new.
func (n *Notifier) remember(task, sup uuid.UUID) bool {
	n.cbMu.Lock()
	defer n.cbMu.Unlock()
	if n.callbacks == nil {
		n.callbacks = map[uuid.UUID]uuid.UUID{}
	}
	if n.callbacks[task] == sup {
		return false
	}
	n.callbacks[task] = sup
	return true
}

// remembered returns the supervisor thread task reports to, if known here.
func (n *Notifier) remembered(task uuid.UUID) (uuid.UUID, bool) {
	n.cbMu.Lock()
	defer n.cbMu.Unlock()
	sup, ok := n.callbacks[task]
	return sup, ok
}

// pushJS waits for a task's run to end and writes its status into the
// supervisor thread's record of the task, once the supervisor's own runs
// have ended, unless the record has moved on (another run) or is final.
func (n *Notifier) pushJS(sup uuid.UUID, run storage.Run) error {
	n.mu.RLock()
	th, rs := n.threads, n.runs
	n.mu.RUnlock()
	if th == nil || rs == nil {
		return errors.New("notifier is not bound")
	}
	ended, _, err := rs.Wait(n.ctx, &run.ThreadID, run.RunID)
	if err != nil {
		return err
	}
	taskID, runID := run.ThreadID.String(), run.RunID.String()
	stamp := n.now().Format("2006-01-02T15:04:05.000Z")
	update := func(values map[string]any) (map[string]any, error) {
		tasks, _ := values[JSChannel].(map[string]any)
		rec, _ := tasks[taskID].(map[string]any)
		status, _ := rec["status"].(string)
		if rec == nil || rec["runId"] != runID || status == ended.Status || asynctasks.Terminal(status) {
			return nil, nil
		}
		next := maps.Clone(rec)
		next["status"], next["updatedAt"] = ended.Status, stamp
		return map[string]any{JSChannel: map[string]any{taskID: next}}, nil
	}
	for attempt := 0; attempt < 20; attempt++ {
		_, err := th.UpdateStateWith(n.ctx, sup, JSChannel, update)
		if !errors.Is(err, errdefs.ErrConflict) {
			return err
		}
		// The supervisor is running: apply once its runs have ended.
		if err := n.waitIdle(rs, sup); err != nil {
			return err
		}
	}
	return fmt.Errorf("supervisor thread %s stayed busy", sup)
}
