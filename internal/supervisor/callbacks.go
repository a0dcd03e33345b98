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

// RunCreated follows the runs that a deepagents JavaScript supervisor
// served here (a LangGraph.js graph) starts as async tasks on this server:
// their input names the supervisor's thread in callbackThreadId, and the
// later runs of the same task thread (update_async_task) are followed too.
// When such a run ends, its status is pushed into the supervisor thread's
// asyncTasks record of the task, as Notifier does for this server's own
// supervisors (runs.CreationObserver). Which task threads belong to which
// supervisor is kept in memory: like the watches, it does not survive a
// restart.
func (n *Notifier) RunCreated(run storage.Run) {
	sup, ok := n.callbackOf(run)
	if !ok || n.ctx.Err() != nil {
		return
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := n.pushJS(sup, run); err != nil && n.ctx.Err() == nil && !errors.Is(err, errdefs.ErrNotFound) {
			n.log.Warn("deliver async task completion", "thread_id", sup, "task_id", run.ThreadID, "err", err)
		}
	}()
}

// callbackOf returns the supervisor thread a run reports to, if any.
func (n *Notifier) callbackOf(run storage.Run) (uuid.UUID, bool) {
	n.cbMu.Lock()
	defer n.cbMu.Unlock()
	in, _ := run.Kwargs.Input.(map[string]any)
	if text, ok := in[callbackKey].(string); ok {
		if sup, err := uuid.Parse(text); err == nil && sup != run.ThreadID {
			if n.callbacks == nil {
				n.callbacks = map[uuid.UUID]uuid.UUID{}
			}
			n.callbacks[run.ThreadID] = sup
			return sup, true
		}
	}
	sup, ok := n.callbacks[run.ThreadID]
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
