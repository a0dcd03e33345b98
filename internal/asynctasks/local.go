package asynctasks

import (
	"context"
	"fmt"
	"sync"

	"github.com/google/uuid"

	"agentserver/internal/authz"
	"agentserver/internal/runs"
	"agentserver/internal/storage"
	"agentserver/internal/threads"
)

// Local is the in-process transport: it calls the same thread and run
// services the HTTP handlers call, as the user the calling run acts for
// (authz.ActAsRunCaller): a user's supervisor starts, reads and cancels
// tasks that user owns, and no others. It is created before those services
// exist (agent graphs are compiled first) and bound to them with Bind.
type Local struct {
	mu      sync.RWMutex
	threads *threads.Service
	runs    *runs.Service
}

var _ Transport = (*Local)(nil)

// Bind connects the transport to the server's services.
func (l *Local) Bind(th *threads.Service, rs *runs.Service) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.threads, l.runs = th, rs
}

func (l *Local) services() (*threads.Service, *runs.Service, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.threads == nil || l.runs == nil {
		return nil, nil, fmt.Errorf("%w: the in-process transport is not bound to the server yet", ErrUnavailable)
	}
	return l.threads, l.runs, nil
}

// target returns the bound services and the parsed ids of a run.
func (l *Local) target(threadID, runID string) (*threads.Service, *runs.Service, uuid.UUID, uuid.UUID, error) {
	th, rs, err := l.services()
	if err != nil {
		return nil, nil, uuid.Nil, uuid.Nil, err
	}
	tid, rid, err := parseIDs(threadID, runID)
	return th, rs, tid, rid, err
}

func parseIDs(threadID, runID string) (uuid.UUID, uuid.UUID, error) {
	tid, err := uuid.Parse(threadID)
	if err != nil {
		return tid, uuid.Nil, fmt.Errorf("thread id %q: %w", threadID, err)
	}
	if runID == "" {
		return tid, uuid.Nil, nil
	}
	rid, err := uuid.Parse(runID)
	if err != nil {
		return tid, rid, fmt.Errorf("run id %q: %w", runID, err)
	}
	return tid, rid, nil
}

// Start creates a thread and a run on it, in one write; the thread's
// metadata names the parent of ctx (WithParent).
func (l *Local) Start(ctx context.Context, graphID, message string) (string, string, error) {
	ctx = authz.ActAsRunCaller(ctx)
	_, rs, err := l.services()
	if err != nil {
		return "", "", err
	}
	tid := uuid.Must(uuid.NewV7())
	// The run's metadata becomes the new thread's (if_not_exists=create).
	r, err := rs.Create(ctx, runs.CreateParams{ThreadID: &tid, IfNotExists: "create", Assistant: graphID, Input: userInput(message), Metadata: parentMetadata(ctx)})
	if err != nil {
		return "", "", err
	}
	return tid.String(), r.RunID.String(), nil
}

// Update starts a new run that interrupts the current one.
func (l *Local) Update(ctx context.Context, threadID, graphID, message string) (string, error) {
	ctx = authz.ActAsRunCaller(ctx)
	_, rs, err := l.services()
	if err != nil {
		return "", err
	}
	tid, _, err := parseIDs(threadID, "")
	if err != nil {
		return "", err
	}
	r, err := rs.Create(ctx, runs.CreateParams{ThreadID: &tid, Assistant: graphID, Input: userInput(message), MultitaskStrategy: runs.StrategyInterrupt})
	if err != nil {
		return "", err
	}
	return r.RunID.String(), nil
}

// Run reads a run's status, and the thread's interrupts when it paused.
func (l *Local) Run(ctx context.Context, threadID, runID string) (RunInfo, error) {
	ctx = authz.ActAsRunCaller(ctx)
	th, rs, tid, rid, err := l.target(threadID, runID)
	if err != nil {
		return RunInfo{}, err
	}
	r, err := rs.Get(ctx, &tid, rid)
	if err != nil {
		return RunInfo{}, err
	}
	return l.info(ctx, th, r)
}

func (l *Local) info(ctx context.Context, th *threads.Service, r storage.Run) (RunInfo, error) {
	info := RunInfo{Status: r.Status, Error: r.Error}
	if r.Status != storage.RunSuccess {
		return info, nil
	}
	st, err := th.GetState(ctx, r.ThreadID, nil)
	if err != nil {
		return info, nil // the status stands; the interrupts are a bonus
	}
	return paused(info, st.Interrupts), nil
}

// LastMessage returns the content of the thread's last message.
func (l *Local) LastMessage(ctx context.Context, threadID string) (any, error) {
	ctx = authz.ActAsRunCaller(ctx)
	th, _, err := l.services()
	if err != nil {
		return nil, err
	}
	tid, _, err := parseIDs(threadID, "")
	if err != nil {
		return nil, err
	}
	st, err := th.GetState(ctx, tid, nil)
	if err != nil {
		return nil, err
	}
	return lastContent(st.Values), nil
}

// Cancel interrupts a run.
func (l *Local) Cancel(ctx context.Context, threadID, runID string) error {
	ctx = authz.ActAsRunCaller(ctx)
	_, rs, tid, rid, err := l.target(threadID, runID)
	if err != nil {
		return err
	}
	return rs.Cancel(ctx, &tid, rid, runs.ActionInterrupt, false)
}

// Wait blocks on the run's completion channel; nothing is polled.
func (l *Local) Wait(ctx context.Context, threadID, runID string) (RunInfo, error) {
	ctx = authz.ActAsRunCaller(ctx)
	th, rs, tid, rid, err := l.target(threadID, runID)
	if err != nil {
		return RunInfo{}, err
	}
	r, _, err := rs.Wait(ctx, &tid, rid)
	if err != nil {
		return RunInfo{}, err
	}
	return l.info(ctx, th, r)
}
