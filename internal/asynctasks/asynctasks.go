// Package asynctasks reaches the servers that host async subagents. A
// Transport starts a subagent run on a fresh thread, sends follow-ups,
// reads run status and results, cancels, and waits for completion. Two
// implementations share one contract: Local calls this server's thread and
// run services directly (no HTTP, no socket), HTTP speaks the LangGraph
// Platform API to any server (this one or another) through the generated
// client, and A2A drives one A2A agent (task = context, run = A2A task).
//
// Invariants:
//   - The task id is the remote thread id (for A2A, the context id).
//   - A run whose graph paused for human input is reported as "interrupted"
//     with its interrupt payloads, not as a finished "success".
//   - Transports never poll: Wait blocks on the run's completion (a channel
//     in-process, a join request over HTTP, an event stream over A2A).
package asynctasks

import (
	"context"
	"errors"
)

// Run statuses as reported to the supervisor. Besides the server's run
// statuses, "interrupted" also covers a run that finished paused on an
// interrupt (waiting for a human).
const (
	StatusPending     = "pending"
	StatusRunning     = "running"
	StatusSuccess     = "success"
	StatusError       = "error"
	StatusTimeout     = "timeout"
	StatusInterrupted = "interrupted"
	StatusCancelled   = "cancelled"
)

// Terminal reports whether a status no longer changes by itself.
func Terminal(status string) bool {
	switch status {
	case StatusSuccess, StatusError, StatusTimeout, StatusInterrupted, StatusCancelled:
		return true
	}
	return false
}

// RunInfo is a subagent run's state.
type RunInfo struct {
	Status string
	// Error is the run's error text when Status is error.
	Error string
	// Interrupts are the pending interrupts when the graph paused.
	Interrupts []any
}

// ErrUnavailable wraps failures to reach a remote server.
var ErrUnavailable = errors.New("subagent server unavailable")

// Transport reaches the server hosting a subagent graph.
type Transport interface {
	// Start creates a thread and a run of graphID whose input is one user
	// message, and returns their ids.
	Start(ctx context.Context, graphID, message string) (threadID, runID string, err error)
	// Update starts a new run on the thread with the message, interrupting
	// the current one (multitask_strategy=interrupt).
	Update(ctx context.Context, threadID, graphID, message string) (runID string, err error)
	// Run returns the state of a run.
	Run(ctx context.Context, threadID, runID string) (RunInfo, error)
	// LastMessage returns the content of the thread's last message (nil when
	// it has none).
	LastMessage(ctx context.Context, threadID string) (any, error)
	// Cancel interrupts a run without waiting for it.
	Cancel(ctx context.Context, threadID, runID string) error
	// Wait blocks until the run has ended and returns its final state.
	Wait(ctx context.Context, threadID, runID string) (RunInfo, error)
}

// userInput is the run input carrying one user message.
func userInput(message string) map[string]any {
	return map[string]any{"messages": []any{map[string]any{"role": "user", "content": message}}}
}

// lastContent returns the content of the last message of values.
func lastContent(values map[string]any) any {
	msgs, _ := values["messages"].([]any)
	if len(msgs) == 0 {
		return nil
	}
	if m, ok := msgs[len(msgs)-1].(map[string]any); ok {
		return m["content"]
	}
	return msgs[len(msgs)-1]
}

// paused turns a successful run whose thread waits on interrupts into an
// interrupted one (deepagents reports such a task as plain "success" or
// gives no payload; we say what it waits for).
func paused(info RunInfo, interrupts []any) RunInfo {
	if info.Status == StatusSuccess && len(interrupts) > 0 {
		info.Status = StatusInterrupted
		info.Interrupts = interrupts
	}
	return info
}
