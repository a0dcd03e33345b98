package runs

import (
	"context"

	"github.com/google/uuid"

	"agentserver/internal/graph"
	"agentserver/internal/storage"
)

// ThreadObserver receives, as they happen, the events of every run of the
// threads it observes: the thread-centric stream (protocol v2) is one. Its
// methods are called from run goroutines and must not block; a payload
// passed to RunEvent may be changed after the call returns, so it must be
// encoded (or copied) before.
type ThreadObserver interface {
	// Observes reports whether a thread's events are wanted now.
	Observes(threadID uuid.UUID) bool
	// RunStarted tells that a run of the thread began executing.
	RunStarted(run storage.Run)
	// RunEvent passes one event of a run under its stream name
	// ("values", "messages", "updates|tools:<id>", ...).
	RunEvent(run storage.Run, name string, payload any)
	// RunEnded tells how a run ended: its status, its error text and the
	// interrupts its thread now waits on.
	RunEnded(run storage.Run, interrupts []any)
	// ChildRunCreated tells that a run of an observed thread created a
	// run on another thread (an async subagent's), before that run can
	// start.
	ChildRunCreated(parent, child storage.Run)
}

// CreationObserver is told of every run this server creates, once it is
// stored and before it can have ended (Done and Wait follow it); its
// method must not block.
type CreationObserver interface {
	RunCreated(run storage.Run)
}

// parentRunKey marks the context of a run's execution with the run.
type parentRunKey struct{}

// withRun returns ctx marked as the execution context of run.
func withRun(ctx context.Context, run storage.Run) context.Context {
	return context.WithValue(ctx, parentRunKey{}, run)
}

// noteChildRun tells the observer about a run created from inside another
// run (by a tool such as start_async_task) on an observed thread.
func (s *Service) noteChildRun(ctx context.Context, child storage.Run) {
	parent, ok := ctx.Value(parentRunKey{}).(storage.Run)
	if !ok || parent.ThreadID == child.ThreadID || !s.observed(parent.ThreadID) {
		return
	}
	s.observer.ChildRunCreated(parent, child)
}

// observedModes are the stream modes built for an observed thread even
// when the run itself did not ask for them.
var observedModes = map[string]bool{
	"values": true, "updates": true, "messages": true, graph.ToolsMode: true,
	"checkpoints": true, "tasks": true, "custom": true, graph.SubgraphsMode: true,
}

// observed reports whether the thread observer wants a thread's events.
func (s *Service) observed(threadID uuid.UUID) bool {
	return s.observer != nil && s.observer.Observes(threadID)
}
