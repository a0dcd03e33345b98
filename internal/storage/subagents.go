package storage

import (
	"fmt"
	"time"

	"github.com/google/uuid"
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

// Subagent records live in the bucket subagents on bbolt and in the table
// subagents on PostgreSQL (migrations/0005_subagents_table.sql), where a
// write transaction's read locks the row as a point read of kv does.
const (
	pgPutSubagentSQL = `INSERT INTO subagents (run_id, tool_call_id, thread_id, status, started_at, ended_at, v)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (run_id, tool_call_id) DO UPDATE SET thread_id = excluded.thread_id, status = excluded.status,
			started_at = excluded.started_at, ended_at = excluded.ended_at, v = excluded.v`
	pgGetSubagentSQL          = `SELECT v FROM subagents WHERE run_id = $1 AND tool_call_id = $2`
	pgGetSubagentForUpdateSQL = pgGetSubagentSQL + ` FOR UPDATE`
	pgRunSubagentsSQL         = `SELECT v FROM subagents WHERE run_id = $1 ORDER BY tool_call_id`
	// pgLiveSubagentsSQL locks the pending and running executions but for
	// those whose parent run a replica other than $1 is running.
	pgLiveSubagentsSQL = `SELECT s.v FROM subagents s WHERE s.status IN ('pending', 'running')
		AND NOT EXISTS (SELECT 1 FROM run_queue q WHERE q.run_id = s.run_id AND q.status = 'running' AND q.owner <> $1)
		ORDER BY s.run_id, s.tool_call_id FOR UPDATE OF s`
)

// PutSubagent stores a subagent execution record.
func (t *Tx) PutSubagent(e SubagentExecution) error {
	raw, err := encode(e)
	if err != nil {
		return err
	}
	if p, ok := t.kv.(*pgTxn); ok {
		var started *time.Time
		if !e.StartedAt.IsZero() {
			started = &e.StartedAt
		}
		return p.queue(pgPutSubagentSQL, pgUUID(e.ParentRunID), []byte(e.ToolCallID), pgUUID(e.ThreadID), e.Status, started, e.EndedAt, raw)
	}
	return t.bucket(bucketSubagents).Put(subagentKey(e.ParentRunID, e.ToolCallID), raw)
}

// GetSubagent returns one execution record, or ErrNotFound.
func (t *Tx) GetSubagent(run uuid.UUID, toolCall string) (SubagentExecution, error) {
	var e SubagentExecution
	var raw []byte
	if p, ok := t.kv.(*pgTxn); ok {
		sql := pgGetSubagentSQL
		if !p.readOnly {
			sql = pgGetSubagentForUpdateSQL
		}
		vals, err := p.values(sql, pgUUID(run), []byte(toolCall))
		if err != nil {
			return e, err
		}
		if len(vals) > 0 {
			raw = vals[0]
		}
	} else {
		raw = t.bucket(bucketSubagents).Get(subagentKey(run, toolCall))
	}
	if raw == nil {
		return e, fmt.Errorf("subagent %s of run %s: %w", toolCall, run, ErrNotFound)
	}
	err := decode(raw, &e)
	return e, err
}

// RunSubagents lists the executions of a parent run.
func (t *Tx) RunSubagents(run uuid.UUID) ([]SubagentExecution, error) {
	var out []SubagentExecution
	add := func(v []byte) error {
		var e SubagentExecution
		if err := decode(v, &e); err != nil {
			return err
		}
		out = append(out, e)
		return nil
	}
	if p, ok := t.kv.(*pgTxn); ok {
		vals, err := p.values(pgRunSubagentsSQL, pgUUID(run))
		if err != nil {
			return nil, err
		}
		for _, v := range vals {
			if err := add(v); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	if err := scanPrefix(t.bucket(bucketSubagents), run[:], func(_, v []byte) error { return add(v) }); err != nil {
		return nil, err
	}
	return out, nil
}

// deleteRunSubagents removes the execution records of a parent run.
func (t *Tx) deleteRunSubagents(run uuid.UUID) error {
	if p, ok := t.kv.(*pgTxn); ok {
		return p.deleteOwned(subagentsByRun, run)
	}
	return deletePrefix(t.bucket(bucketSubagents), run[:])
}

// InterruptLiveSubagents marks every pending or running execution as
// interrupted (called at start-up: a crash cut them off), and returns how
// many it marked. On a shared database (replicas) it leaves alone the
// executions whose parent run another replica is running: that replica
// executes them still. replica is the calling server's id.
func (t *Tx) InterruptLiveSubagents(now time.Time, replica string) (int, error) {
	var live []SubagentExecution
	collect := func(v []byte) error {
		var e SubagentExecution
		if err := decode(v, &e); err != nil {
			return err
		}
		if e.Status == "pending" || e.Status == "running" {
			live = append(live, e)
		}
		return nil
	}
	if p, ok := t.kv.(*pgTxn); ok {
		vals, err := p.values(pgLiveSubagentsSQL, replica)
		if err != nil {
			return 0, err
		}
		for _, v := range vals {
			if err := collect(v); err != nil {
				return 0, err
			}
		}
	} else if err := t.bucket(bucketSubagents).ForEach(func(_, v []byte) error { return collect(v) }); err != nil {
		return 0, err
	}
	for _, e := range live {
		e.Status, e.Error, e.EndedAt = "interrupted", "interrupted by a server restart", &now
		if err := t.PutSubagent(e); err != nil {
			return 0, err
		}
	}
	return len(live), nil
}

// subagentsByRun deletes a parent run's subagent records on PostgreSQL.
var subagentsByRun = newOwnerTable("subagents", "run_id")
