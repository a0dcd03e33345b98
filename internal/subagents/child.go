package subagents

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/channels"
	"agentserver/internal/graph"
	"agentserver/internal/llm"
	"agentserver/internal/storage"
	"agentserver/internal/tools"
)

// childSink receives what a subagent produces: each AI message or tool
// result is a step, pushed to the parent's stream as it happens and kept
// for the execution record; usage is counted against the token budget.
type childSink struct {
	taskID, model string
	emit          func(any)
	budget        int
	cancel        context.CancelCauseFunc
	d             *Delegation
	runID         uuid.UUID
	toolCall      string
	// log appends steps to the execution record off the hot path.
	log *stepLog
	// fwd streams the subagent's own events to the lead's client under
	// the namespace tools:<tool call id> (stream_subgraphs); nil: none.
	fwd graph.Sink

	mu     sync.Mutex
	steps  []map[string]any
	usage  []graph.Usage
	totals struct{ in, out, total int }
	stop   string
}

func (k *childSink) Checkpoint(context.Context, graph.Checkpoint, bool) error { return nil }

// Wants asks only for node updates: they carry the subagent's messages.
func (k *childSink) Wants(mode string) bool {
	return mode == "updates" || (k.fwd != nil && k.fwd.Wants(mode))
}

// Emit turns node updates into task_running events, one per message.
func (k *childSink) Emit(mode string, payload any) {
	if k.fwd != nil && k.fwd.Wants(mode) {
		k.fwd.Emit(mode, payload)
	}
	if mode != "updates" {
		return
	}
	upd, _ := payload.(map[string]any)
	for _, nodeUpdate := range upd {
		values, _ := nodeUpdate.(map[string]any)
		msgs, err := channels.NormalizeMessages(values[channels.MessagesChannel])
		if values[channels.MessagesChannel] == nil || err != nil {
			continue
		}
		for _, m := range msgs {
			msg := m.(map[string]any)
			if msg["type"] == "remove" || msg["type"] == "human" {
				continue
			}
			k.mu.Lock()
			k.steps = append(k.steps, msg)
			index := len(k.steps)
			usage := k.summaryLocked()
			k.mu.Unlock()
			k.emit(map[string]any{"type": "task_running", "task_id": k.taskID, "message": msg, "message_index": index, "total_messages": index, "usage": usage, "model_name": k.model})
			k.log.add(msg)
		}
	}
}

// Usage counts a model call and enforces the token budget.
func (k *childSink) Usage(u graph.Usage) {
	k.mu.Lock()
	k.usage = append(k.usage, u)
	k.totals.in += u.InputTokens
	k.totals.out += u.OutputTokens
	k.totals.total += u.TotalTokens
	over := k.budget > 0 && k.totals.total >= k.budget
	k.mu.Unlock()
	if over {
		k.cancel(errTokenCap)
	}
}

// Note records the subagent's stop reason.
func (k *childSink) Note(key string, value any) {
	if key == "stop_reason" && value == "max_turns" {
		k.mu.Lock()
		k.stop = "turn_capped"
		k.mu.Unlock()
	}
}

func (k *childSink) stopReason() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.stop
}

func (k *childSink) summaryLocked() map[string]any {
	if len(k.usage) == 0 {
		return nil
	}
	return map[string]any{"input_tokens": k.totals.in, "output_tokens": k.totals.out, "total_tokens": k.totals.total}
}

func (k *childSink) usageSummary() map[string]any {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.summaryLocked()
}

func (k *childSink) lastText() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	for i := len(k.steps) - 1; i >= 0; i-- {
		if k.steps[i]["type"] == "ai" {
			return llm.MessageText(k.steps[i])
		}
	}
	return ""
}

// reportToParent adds the subagent's usage to the parent run's totals,
// once, marked as subagent tokens.
func (k *childSink) reportToParent(c tools.Call) {
	if c.ReportUsage == nil {
		return
	}
	k.mu.Lock()
	usage := append([]graph.Usage(nil), k.usage...)
	k.mu.Unlock()
	for _, u := range usage {
		u.Subagent = true
		c.ReportUsage(u)
	}
}

// stepLog appends a subagent's steps to its durable execution record
// without holding up the subagent or its events: one writer goroutine per
// execution, owned by execute. A step used to be a synchronous
// read-modify-write commit on the subagent's own path (with fsync, a few
// milliseconds, twice per turn, rewriting a record that grows with every
// step). The writer appends whatever steps arrived since its last write, at
// most once per stepWriteInterval, so a slow subagent's steps are durable
// at once and a fast one's in batches.
type stepLog struct {
	d        *Delegation
	runID    uuid.UUID
	toolCall string

	mu      sync.Mutex
	pending []map[string]any
	closed  bool
	wake    chan struct{} // capacity 1
	stop    chan struct{} // closed by close
	done    chan struct{} // closed when the writer returns
}

// stepWriteInterval is the least time between two step writes of one
// execution.
const stepWriteInterval = 200 * time.Millisecond

// startStepLog starts the writer of one execution; with no database it
// only drops steps.
func (d *Delegation) startStepLog(runID uuid.UUID, toolCall string) *stepLog {
	l := &stepLog{d: d, runID: runID, toolCall: toolCall, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	if d.env.DB == nil || runID == uuid.Nil {
		l.closed = true
		close(l.stop)
		close(l.done)
		return l
	}
	go l.run()
	return l
}

func (l *stepLog) add(msg map[string]any) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.pending = append(l.pending, msg)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default: // a write is already due
	}
}

func (l *stepLog) run() {
	defer close(l.done)
	pause := time.NewTimer(0)
	defer pause.Stop()
	for {
		select {
		case <-l.wake:
		case <-l.stop:
			return
		}
		l.mu.Lock()
		batch := l.pending
		l.pending = nil
		l.mu.Unlock()
		if len(batch) > 0 {
			l.d.appendSteps(l.runID, l.toolCall, batch)
		}
		pause.Reset(stepWriteInterval)
		select {
		case <-pause.C:
		case <-l.stop:
			return
		}
	}
}

// close stops the writer and waits for a write in flight. Steps not yet
// written are dropped: the terminal record that follows carries them all.
func (l *stepLog) close() {
	l.mu.Lock()
	if !l.closed {
		l.closed, l.pending = true, nil
		close(l.stop)
	}
	l.mu.Unlock()
	<-l.done
}

// appendSteps appends steps to the durable execution record.
func (d *Delegation) appendSteps(runID uuid.UUID, toolCall string, steps []map[string]any) {
	_ = d.env.DB.Update(context.Background(), func(tx *storage.Tx) error {
		e, err := tx.GetSubagent(runID, toolCall)
		if err != nil {
			return nil
		}
		e.Steps = append(e.Steps, steps...)
		return tx.PutSubagent(e)
	})
}

// Admission limits the subagents running at once in the process. Waiters
// are served first come, first served, and the wait does not count against
// a subagent's execution timeout (its clock starts once admitted).
type Admission struct {
	mu      sync.Mutex
	limit   int
	running int
	queue   []chan struct{}
}

// NewAdmission allows limit subagents to run at once.
func NewAdmission(limit int) *Admission {
	return &Admission{limit: max(limit, 1)}
}

// Acquire waits for a slot. onQueued is called once, with the position in
// line, when the caller has to wait.
func (a *Admission) Acquire(ctx context.Context, onQueued func(pos int)) (func(), error) {
	a.mu.Lock()
	if a.running < a.limit && len(a.queue) == 0 {
		a.running++
		a.mu.Unlock()
		return a.release, nil
	}
	ready := make(chan struct{})
	a.queue = append(a.queue, ready)
	pos := len(a.queue)
	a.mu.Unlock()
	if onQueued != nil {
		onQueued(pos)
	}
	select {
	case <-ready:
		return a.release, nil
	case <-ctx.Done():
		a.mu.Lock()
		for i, w := range a.queue {
			if w == ready {
				a.queue = append(a.queue[:i], a.queue[i+1:]...)
				a.mu.Unlock()
				return nil, context.Cause(ctx)
			}
		}
		a.mu.Unlock()
		// Admitted at the same moment: give the slot back.
		a.release()
		return nil, context.Cause(ctx)
	}
}

func (a *Admission) release() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.queue) > 0 {
		next := a.queue[0]
		a.queue = a.queue[1:]
		close(next) // the slot passes to the next in line
		return
	}
	a.running--
}

// RecoverInterrupted marks executions cut off by a crash as interrupted,
// but for those another replica than replica (the calling server) still
// runs.
func RecoverInterrupted(ctx context.Context, db *storage.DB, replica string) (int, error) {
	n := 0
	err := db.Update(ctx, func(tx *storage.Tx) error {
		var err error
		n, err = tx.InterruptLiveSubagents(time.Now().UTC(), replica)
		return err
	})
	return n, err
}
