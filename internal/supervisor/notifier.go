package supervisor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/asynctasks"
	"agentserver/internal/errdefs"
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
}

// NewNotifier returns a notifier; Bind connects it to the services.
func NewNotifier(log *slog.Logger) *Notifier {
	ctx, cancel := context.WithCancel(context.Background())
	return &Notifier{log: log, now: func() time.Time { return time.Now().UTC() }, ctx: ctx, cancel: cancel}
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
	conf, _ := c.Config["configurable"].(map[string]any)
	assistant, _ := conf["assistant_id"].(string)
	s.notifier.start(supThread, assistant, task, s.transports[task.AgentName], s.cfg.NotifyOnCompletion)
}

func (n *Notifier) start(supThread uuid.UUID, assistant string, task Task, tr asynctasks.Transport, notify bool) {
	if n.ctx.Err() != nil {
		return
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		info, err := tr.Wait(n.ctx, task.ThreadID, task.RunID)
		if err != nil {
			if n.ctx.Err() == nil {
				n.log.Warn("watch async task", "task_id", task.TaskID, "run_id", task.RunID, "err", err)
			}
			return
		}
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
	current := func(values map[string]any) (Task, bool) {
		cur, ok := trackedTask(values, task.TaskID)
		// A record already final (e.g. cancelled by the supervisor) keeps
		// its status; so does a task that moved on to a newer run.
		return cur, ok && cur.RunID == task.RunID && cur.Status != info.Status && !asynctasks.Terminal(cur.Status)
	}
	if notify {
		st, err := th.GetState(n.ctx, supThread, nil)
		if err != nil {
			return err
		}
		cur, ok := current(st.Values)
		if !ok {
			return nil
		}
		cur.Status, cur.LastUpdatedAt, cur.LastCheckedAt = info.Status, stamp, stamp
		input := update(cur)
		input["messages"] = []any{map[string]any{"role": "user", "content": n.completionMessage(cur, tr, info)}}
		_, err = rs.Create(n.ctx, runs.CreateParams{ThreadID: &supThread, Assistant: assistant, Input: input, MultitaskStrategy: runs.StrategyEnqueue})
		return err
	}
	for attempt := 0; attempt < 20; attempt++ {
		_, err := th.UpdateStateWith(n.ctx, supThread, Channel, func(values map[string]any) (map[string]any, error) {
			cur, ok := current(values)
			if !ok {
				return nil, nil
			}
			cur.Status, cur.LastUpdatedAt, cur.LastCheckedAt = info.Status, stamp, stamp
			return update(cur), nil
		})
		if !errors.Is(err, errdefs.ErrConflict) {
			return err
		}
		// The supervisor is running: apply once its runs have ended.
		if err := n.waitIdle(rs, supThread); err != nil {
			return err
		}
	}
	return fmt.Errorf("supervisor thread %s stayed busy", supThread)
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
