package supervisor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/asynctasks"
	"agentserver/internal/errdefs"
	"agentserver/internal/lifecycle"
	"agentserver/internal/metrics"
	"agentserver/internal/runs"
	"agentserver/internal/storage"
	"agentserver/internal/threads"
	"agentserver/internal/tools"
)

// resultBrief bounds the result text quoted in a completion message.
const resultBrief = 500

// Notifier pushes task completions into supervisor threads: it waits on
// each started run (a completion channel in-process, a join over HTTP) and,
// when the run ends, writes the task's new status into the supervisor
// thread's async_tasks channel — or, with notify_on_completion, queues a
// supervisor run whose input carries the status and a short message.
//
// It owns one goroutine per watched run; Close cancels and waits for them.
// Watches do not survive a restart: after one, statuses are refreshed by
// check_async_task and list_async_tasks as usual.
type Notifier struct {
	log *slog.Logger
	now func() time.Time

	mu      sync.RWMutex
	threads *threads.Service
	runs    *runs.Service

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	batchMu sync.Mutex
	// batches holds, per supervisor thread with a writer running, the
	// completions that writer has yet to apply.
	batches map[uuid.UUID][]delivery

	cbMu sync.Mutex
	// callbacks maps the task threads of JavaScript supervisors to the
	// supervisor threads they report to (RunCreated).
	callbacks map[uuid.UUID]uuid.UUID
	// lookupStored is set by FollowStoredCallbacks.
	lookupStored atomic.Bool
}

// NewNotifier returns a notifier that logs to log and stamps completions
// with clock (nil: the wall clock, in UTC); Bind connects it to the
// services.
func NewNotifier(log *slog.Logger, clock func() time.Time) *Notifier {
	ctx, cancel := context.WithCancel(context.Background())
	return &Notifier{log: log, now: lifecycle.ClockOr(clock), ctx: ctx, cancel: cancel}
}

// Bind connects the notifier to the server's services.
func (n *Notifier) Bind(th *threads.Service, rs *runs.Service) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.threads, n.runs = th, rs
}

// Close stops every watch and waits for them.
func (n *Notifier) Close() {
	n.cancel()
	n.wg.Wait()
}

// watch starts following a task's current run for the supervisor thread
// the tool call came from.
func (s *Supervisor) watch(c tools.Call, task Task) {
	if s.notifier == nil {
		return
	}
	supThread, err := uuid.Parse(c.ThreadID)
	if err != nil {
		return
	}
	s.notifier.start(supThread, configurable(c.Config, "assistant_id"), task, s.transports[task.AgentName], s.cfg.NotifyOnCompletion)
}

// configurable is the string key of a run config's configurable ("" when
// absent).
func configurable(config map[string]any, key string) string {
	conf, _ := config["configurable"].(map[string]any)
	v, _ := conf[key].(string)
	return v
}

func (n *Notifier) start(supThread uuid.UUID, assistant string, task Task, tr asynctasks.Transport, notify bool) {
	if n.ctx.Err() != nil {
		return
	}
	n.wg.Add(1)
	followed := metrics.AsyncTaskFollowed()
	go func() {
		defer n.wg.Done()
		info, err := tr.Wait(n.ctx, task.ThreadID, task.RunID)
		if err != nil {
			followed("") // not ended, or not learned (shutdown)
			if n.ctx.Err() == nil {
				n.log.Warn("watch async task", "task_id", task.TaskID, "run_id", task.RunID, "err", err)
			}
			return
		}
		followed(info.Status)
		if err := n.deliver(supThread, assistant, task, tr, info, notify); err != nil && n.ctx.Err() == nil {
			n.log.Warn("deliver async task completion", "thread_id", supThread, "task_id", task.TaskID, "err", err)
		}
	}()
}

// deliver records a finished run in the supervisor thread, unless the task
// has moved on to another run (an update) in the meantime.
func (n *Notifier) deliver(supThread uuid.UUID, assistant string, task Task, tr asynctasks.Transport, info asynctasks.RunInfo, notify bool) error {
	n.mu.RLock()
	th, rs := n.threads, n.runs
	n.mu.RUnlock()
	if th == nil || rs == nil {
		return errors.New("notifier is not bound")
	}
	stamp := n.now().Format("2006-01-02T15:04:05Z")
	if notify {
		// The record is written when the tool step that started the run
		// ends, which a quick task can beat: read it once the
		// supervisor's runs are over (the notification run would queue
		// behind them anyway).
		if err := n.waitIdle(rs, supThread); err != nil {
			return err
		}
		st, err := th.GetState(n.ctx, supThread, nil)
		if err != nil {
			return err
		}
		cur, ok := stillCurrent(st.Values, task, info.Status)
		if !ok {
			return nil
		}
		cur.Status, cur.LastUpdatedAt, cur.LastCheckedAt = info.Status, stamp, stamp
		input := update(cur)
		input["messages"] = []any{map[string]any{"role": "user", "content": n.completionMessage(cur, tr, info)}}
		_, err = rs.Create(n.ctx, runs.CreateParams{ThreadID: &supThread, Assistant: assistant, Input: input, MultitaskStrategy: runs.StrategyEnqueue})
		return err
	}
	n.enqueue(supThread, delivery{task: task, info: info, stamp: stamp})
	return nil
}

// stillCurrent returns the tracked record of task when a finished run with
// status should update it: the task is still on that run, and its record
// is not already final (e.g. cancelled by the supervisor).
func stillCurrent(values map[string]any, task Task, status string) (Task, bool) {
	cur, ok := trackedTask(values, task.TaskID)
	return cur, ok && cur.RunID == task.RunID && cur.Status != status && !asynctasks.Terminal(cur.Status)
}

// delivery is one finished run waiting to be written to its supervisor.
type delivery struct {
	task  Task
	info  asynctasks.RunInfo
	stamp string
}

// enqueue adds a delivery to its supervisor thread's batch and starts the
// thread's writer if none runs: all completions that arrive while a write
// is in progress go out together in the next one, so a thousand tasks
// finishing at once cost a handful of checkpoints, not a thousand.
func (n *Notifier) enqueue(thread uuid.UUID, d delivery) {
	n.batchMu.Lock()
	if n.batches == nil {
		n.batches = map[uuid.UUID][]delivery{}
	}
	_, running := n.batches[thread]
	n.batches[thread] = append(n.batches[thread], d)
	n.batchMu.Unlock()
	if running {
		return
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		n.writeBatches(thread)
	}()
}

// writeBatches applies the thread's queued deliveries until none is left.
func (n *Notifier) writeBatches(thread uuid.UUID) {
	for {
		n.batchMu.Lock()
		batch := n.batches[thread]
		if len(batch) == 0 {
			delete(n.batches, thread)
			n.batchMu.Unlock()
			return
		}
		n.batches[thread] = batch[:0:0]
		n.batchMu.Unlock()
		err := n.apply(thread, batch)
		switch {
		case err == nil || n.ctx.Err() != nil:
		case errors.Is(err, errdefs.ErrNotFound):
			// The supervisor thread is gone (deleted, or the temporary
			// thread of a stateless run): nobody is left to tell.
			n.log.Debug("async task completions for a deleted thread", "thread_id", thread, "count", len(batch))
		default:
			n.log.Warn("deliver async task completions", "thread_id", thread, "count", len(batch), "err", err)
		}
	}
}

// apply writes a batch of completions in one state update, skipping tasks
// that moved on to another run or already hold a final status.
func (n *Notifier) apply(thread uuid.UUID, batch []delivery) error {
	n.mu.RLock()
	th, rs := n.threads, n.runs
	n.mu.RUnlock()
	for attempt := 0; attempt < 20; attempt++ {
		_, err := th.UpdateStateWith(n.ctx, thread, Channel, func(values map[string]any) (map[string]any, error) {
			var changed []Task
			for _, d := range batch {
				cur, ok := stillCurrent(values, d.task, d.info.Status)
				if !ok {
					continue
				}
				cur.Status, cur.LastUpdatedAt, cur.LastCheckedAt = d.info.Status, d.stamp, d.stamp
				changed = append(changed, cur)
			}
			if len(changed) == 0 {
				return nil, nil
			}
			return update(changed...), nil
		})
		if !errors.Is(err, errdefs.ErrConflict) {
			return err
		}
		// The supervisor is running: apply once its runs have ended.
		if err := n.waitIdle(rs, thread); err != nil {
			return err
		}
	}
	return fmt.Errorf("supervisor thread %s stayed busy", thread)
}

// waitIdle blocks until the thread's pending and running runs have ended.
func (n *Notifier) waitIdle(rs *runs.Service, thread uuid.UUID) error {
	active, _, err := rs.Search(n.ctx, storage.RunQuery{ThreadID: &thread, Active: true})
	if err != nil {
		return err
	}
	for _, r := range active {
		if done := rs.Done(r.RunID); done != nil {
			select {
			case <-done:
			case <-n.ctx.Done():
				return n.ctx.Err()
			}
		}
	}
	return nil
}

// completionMessage is the short message a notify run starts with.
func (n *Notifier) completionMessage(t Task, tr asynctasks.Transport, info asynctasks.RunInfo) string {
	msg := fmt.Sprintf("[async task update] task_id: %s  agent: %s  status: %s", t.TaskID, t.AgentName, info.Status)
	switch info.Status {
	case asynctasks.StatusSuccess:
		if content, err := tr.LastMessage(n.ctx, t.ThreadID); err == nil && content != nil {
			brief := fmt.Sprint(content)
			if s, ok := content.(string); ok {
				brief = s
			}
			if len(brief) > resultBrief {
				brief = brief[:resultBrief] + "…"
			}
			msg += "\nresult: " + brief
		}
	case asynctasks.StatusError:
		msg += "\nerror: " + info.Error
	}
	return msg
}
