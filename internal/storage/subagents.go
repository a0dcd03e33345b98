package storage

import (
	"bytes"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
)

// SubagentExecution is the durable record of one synchronous subagent (a
// task tool call): enough for a parent run retried after a crash to know
// what finished and what was cut off.
type SubagentExecution struct {
	ParentRunID uuid.UUID `json:"parent_run_id"`
	ThreadID    uuid.UUID `json:"thread_id"`
	ToolCallID  string    `json:"tool_call_id"`
	Type        string    `json:"subagent_type"`
	Description string    `json:"description"`
	// Status is pending, running, completed, failed, cancelled, timed_out
	// or interrupted (cut off by a restart or by its lead run stopping).
	Status     string         `json:"status"`
	StopReason string         `json:"stop_reason,omitempty"`
	Result     string         `json:"result,omitempty"`
	Error      string         `json:"error,omitempty"`
	Model      string         `json:"model,omitempty"`
	Usage      map[string]any `json:"usage,omitempty"`
	// Steps are the subagent's messages (AI messages and tool results).
	Steps     []map[string]any `json:"steps,omitempty"`
	StartedAt time.Time        `json:"started_at"`
	EndedAt   *time.Time       `json:"ended_at,omitempty"`
}

func subagentKey(run uuid.UUID, toolCall string) []byte {
	k := make([]byte, 16, 16+len(toolCall))
	copy(k, run[:])
	return append(k, toolCall...)
}

// PutSubagent stores a subagent execution record.
func (t *Tx) PutSubagent(e SubagentExecution) error {
	raw, err := encode(e)
	if err != nil {
		return err
	}
	return t.bucket(bucketSubagents).Put(subagentKey(e.ParentRunID, e.ToolCallID), raw)
}

// GetSubagent returns one execution record, or ErrNotFound.
func (t *Tx) GetSubagent(run uuid.UUID, toolCall string) (SubagentExecution, error) {
	var e SubagentExecution
	raw := t.bucket(bucketSubagents).Get(subagentKey(run, toolCall))
	if raw == nil {
		return e, fmt.Errorf("subagent %s of run %s: %w", toolCall, run, ErrNotFound)
	}
	err := decode(raw, &e)
	return e, err
}

// RunSubagents lists the executions of a parent run.
func (t *Tx) RunSubagents(run uuid.UUID) ([]SubagentExecution, error) {
	var out []SubagentExecution
	c := t.bucket(bucketSubagents).Cursor()
	for k, v := c.Seek(run[:]); k != nil && bytes.HasPrefix(k, run[:]); k, v = c.Next() {
		var e SubagentExecution
		if err := decode(v, &e); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// InterruptLiveSubagents marks every pending or running execution as
// interrupted (called at start-up: a crash cut them off), and returns how
// many it marked. On a shared database (replicas) it leaves alone the
// executions whose parent run another replica is running: that replica
// executes them still. replica is the calling server's id.
func (t *Tx) InterruptLiveSubagents(now time.Time, replica string) (int, error) {
	b := t.bucket(bucketSubagents)
	type live struct {
		key []byte
		e   SubagentExecution
	}
	var found []live
	var parents []pgtype.UUID
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		var e SubagentExecution
		if err := decode(v, &e); err != nil {
			return 0, err
		}
		if e.Status != "pending" && e.Status != "running" {
			continue
		}
		found = append(found, live{append([]byte(nil), k...), e})
		parents = append(parents, pgUUID(e.ParentRunID))
	}
	elsewhere := map[uuid.UUID]bool{}
	if p, err := t.shared(); err == nil && len(found) > 0 {
		ids, err := p.ids(pgRunningElsewhereSQL, parents, replica)
		if err != nil {
			return 0, err
		}
		for _, id := range ids {
			elsewhere[id] = true
		}
	}
	n := 0
	for _, l := range found {
		if elsewhere[l.e.ParentRunID] {
			continue
		}
		l.e.Status, l.e.Error, l.e.EndedAt = "interrupted", "interrupted by a server restart", &now
		raw, err := encode(l.e)
		if err != nil {
			return 0, err
		}
		if err := b.Put(l.key, raw); err != nil {
			return 0, err
		}
		n++
	}
	return n, nil
}

// pgRunningElsewhereSQL selects, among runs $1, those running on a replica
// other than $2.
const pgRunningElsewhereSQL = `SELECT run_id FROM run_queue WHERE run_id = ANY($1::uuid[]) AND status = 'running' AND owner <> $2`
