package storage

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/google/uuid"
)

// Run statuses.
const (
	RunPending     = "pending"
	RunRunning     = "running"
	RunSuccess     = "success"
	RunError       = "error"
	RunTimeout     = "timeout"
	RunInterrupted = "interrupted"
)

// RunActive reports whether a status is pending or running.
func RunActive(status string) bool {
	return status == RunPending || status == RunRunning
}

// RunOptions are what a run was created with. They are stored, and shown
// to clients, under the name LangGraph's run records give them: "kwargs".
type RunOptions struct {
	Input   any            `json:"input"`
	Command map[string]any `json:"command"`
	// Config is the assistant's config merged with the run's, with the
	// run's ids in config.configurable.
	Config  map[string]any `json:"config"`
	Context map[string]any `json:"context"`
	// StreamModes are the stream modes the run was created with.
	StreamModes     []string `json:"stream_mode"`
	Subgraphs       bool     `json:"subgraphs"`
	Resumable       bool     `json:"resumable"`
	InterruptBefore []string `json:"interrupt_before"`
	InterruptAfter  []string `json:"interrupt_after"`
	Webhook         string   `json:"webhook"`
	FeedbackKeys    []string `json:"feedback_keys"`
	Temporary       bool     `json:"temporary"`
	// CheckpointID is the checkpoint the run starts from ("" for the
	// thread's newest).
	CheckpointID string `json:"checkpoint_id,omitempty"`
}

// Map returns the options as clients see a run's kwargs: empty lists as
// [], a missing command and webhook as null, checkpoint_id only when set.
func (o RunOptions) Map() map[string]any {
	m := map[string]any{
		"input": o.Input, "command": nilIfEmpty(o.Command), "config": o.Config, "context": o.Context,
		"stream_mode": nonNil(o.StreamModes), "subgraphs": o.Subgraphs, "resumable": o.Resumable,
		"interrupt_before": nonNil(o.InterruptBefore), "interrupt_after": nonNil(o.InterruptAfter),
		"webhook": nil, "feedback_keys": nonNil(o.FeedbackKeys), "temporary": o.Temporary,
	}
	if o.Webhook != "" {
		m["webhook"] = o.Webhook
	}
	if o.CheckpointID != "" {
		m["checkpoint_id"] = o.CheckpointID
	}
	return m
}

func nilIfEmpty(m map[string]any) any {
	if len(m) == 0 {
		return nil
	}
	return m
}

// Run is the stored form of a run.
type Run struct {
	RunID             uuid.UUID      `json:"run_id"`
	ThreadID          uuid.UUID      `json:"thread_id"`
	AssistantID       uuid.UUID      `json:"assistant_id"`
	GraphID           string         `json:"graph_id"`
	CreatedAt         time.Time      `json:"created_at"`
	UpdatedAt         time.Time      `json:"updated_at"`
	Status            string         `json:"status"`
	Metadata          map[string]any `json:"metadata"`
	Kwargs            RunOptions     `json:"kwargs"`
	MultitaskStrategy string         `json:"multitask_strategy"`
	// Error is the failure text when Status is error or timeout.
	Error string `json:"error,omitempty"`
	// ErrorName is the error class reported to clients ("GraphError", …).
	ErrorName string `json:"error_name,omitempty"`
	// Attempt counts executions: 1 on the first start, +1 per crash retry.
	Attempt int `json:"attempt"`
	// NotBefore delays the start (after_seconds).
	NotBefore time.Time  `json:"not_before"`
	StartedAt *time.Time `json:"started_at,omitempty"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	// Temporary runs delete their thread when they end (stateless,
	// on_completion=delete).
	Temporary bool `json:"temporary,omitempty"`
	// Stateless runs are reported with the stateless Content-Location.
	Stateless bool `json:"stateless,omitempty"`
	// Usage holds token accounting of the run (model runs).
	Usage map[string]any `json:"usage,omitempty"`
	// Restarted is set when a run that had started was put back in the
	// queue (crash or shutdown): its next start continues from the last
	// checkpoint it wrote instead of applying its input again.
	Restarted bool `json:"restarted,omitempty"`
	// Traceparent is the W3C trace context of the request that created
	// the run; the worker's run span is its child.
	Traceparent string `json:"traceparent,omitempty"`
	// Token is the fencing token of the run's current start (0 while it
	// is pending): every write of a running run checks, in its
	// transaction, that the run still holds it (RunHeldBy).
	Token uint64 `json:"token,omitempty"`
	// Owner is the replica executing the run ("" while pending, and on a
	// single server).
	Owner string `json:"owner,omitempty"`
	// Pinned names the replica that must execute the run while it is
	// alive: a temporary run's outcome lives only in its creator's memory.
	Pinned string `json:"pinned,omitempty"`
	// Joined is set when a client joined the run's stream on another
	// replica while the run was pending: the replica that starts it builds
	// its events even if nobody subscribed there yet.
	Joined bool `json:"joined,omitempty"`
	// CancelAction is the cancellation requested for a running run
	// (interrupt or rollback), kept so that a replica taking the run over
	// ends it instead of retrying it.
	CancelAction string `json:"cancel_action,omitempty"`
	// ActsFor is the per-user caller that created the run, as
	// langgraph_auth_user shows it (nil: none, or the operator): what the
	// run starts in process on its behalf is authorised as that user's.
	// Clients cannot set it (unlike the run's config).
	ActsFor map[string]any `json:"acts_for,omitempty"`
}

// tokenBytes is the runs_active value of a run holding token (empty while
// pending).
func tokenBytes(token uint64) []byte {
	if token == 0 {
		return []byte{}
	}
	return binary.BigEndian.AppendUint64(nil, token)
}

// GetRun returns a run, or ErrNotFound.
func (t *Tx) GetRun(id uuid.UUID) (Run, error) {
	var r Run
	raw := t.bucket(bucketRuns).Get(id[:])
	if raw == nil {
		return r, fmt.Errorf("run %s: %w", id, ErrNotFound)
	}
	err := decode(raw, &r)
	return r, err
}

// PutRun creates or replaces a run and keeps its indexes in step.
func (t *Tx) PutRun(r Run) error {
	raw, err := encode(r)
	if err != nil {
		return err
	}
	// On bbolt, index entries are written only when they change: every
	// page a commit touches is written and synced. On PostgreSQL a read
	// costs a round trip while a write joins the transaction's batch, so
	// they are written blind. A run never moves to another thread.
	_, blind := t.kv.(*pgTxn)
	runs := t.bucket(bucketRuns)
	existed := !blind && runs.Get(r.RunID[:]) != nil
	if err := runs.Put(idKey(r.RunID), raw); err != nil {
		return err
	}
	if !existed {
		if err := t.bucket(bucketRunsByThread).Put(pairKey(r.ThreadID, r.RunID), nil); err != nil {
			return err
		}
	}
	if q, ok := t.kv.(runQueue); ok {
		if err := q.queueRun(r); err != nil {
			return err
		}
	}
	active := t.bucket(bucketRunsActive)
	if RunActive(r.Status) {
		token := tokenBytes(r.Token)
		if !blind {
			if cur := active.Get(r.RunID[:]); cur != nil && bytes.Equal(cur, token) {
				return nil
			}
		}
		return active.Put(idKey(r.RunID), token)
	}
	return active.Delete(r.RunID[:]) // a no-op, touching nothing, when absent
}

// NewRunToken returns a fresh fencing token for a run's start (never 0).
func NewRunToken() uint64 {
	return rand.Uint64() | 1
}

// RunIsActive reports whether a run is stored as pending or running.
func (t *Tx) RunIsActive(id uuid.UUID) bool {
	return t.bucket(bucketRunsActive).Get(id[:]) != nil
}

// RunHeldBy reports whether a run is stored as running under the fencing
// token of one start. A run that is not (it ended, was rolled back, its
// thread was deleted, or another replica took it over after its lease
// lapsed) no longer owns its thread: the run engine checks this in every
// transaction that writes a run's checkpoints or its end, so that a run that
// lost its thread writes nothing after its successor started. It costs one
// index lookup.
func (t *Tx) RunHeldBy(id uuid.UUID, token uint64) bool {
	v := t.bucket(bucketRunsActive).Get(id[:])
	return v != nil && bytes.Equal(v, tokenBytes(token))
}

// DeleteRun removes a run, its index entries and its stored stream events.
func (t *Tx) DeleteRun(id uuid.UUID) error {
	r, err := t.GetRun(id)
	if err != nil {
		return err
	}
	return t.deleteRunKeys(r.ThreadID, id)
}

// deleteRunKeys removes everything stored under a run's id, without reading
// the run record.
func (t *Tx) deleteRunKeys(threadID, id uuid.UUID) error {
	if q, ok := t.kv.(runQueue); ok {
		if err := q.dequeueRun(id); err != nil {
			return err
		}
	}
	if err := t.bucket(bucketRuns).Delete(id[:]); err != nil {
		return err
	}
	if err := t.bucket(bucketRunsByThread).Delete(pairKey(threadID, id)); err != nil {
		return err
	}
	if err := t.bucket(bucketRunsActive).Delete(id[:]); err != nil {
		return err
	}
	if err := t.deleteRunSubagents(id); err != nil {
		return err
	}
	return t.seqLog(runEventLog).deleteOwner(id)
}

// ThreadRuns returns the runs of a thread, oldest first (run ids are
// UUIDv7). keep filters (nil keeps all).
func (t *Tx) ThreadRuns(threadID uuid.UUID, keep func(Run) bool) ([]Run, error) {
	return t.threadRuns(threadID, keep)
}

// ActiveThreadRuns returns the pending and running runs of a thread, oldest
// first. Only those records are decoded: the others are skipped by the
// runs_active index, so a thread's long history costs one key lookup per
// run rather than one decode.
func (t *Tx) ActiveThreadRuns(threadID uuid.UUID) ([]Run, error) {
	ids, err := threadIndexIDs(t.bucket(bucketRunsByThread), threadID)
	if err != nil {
		return nil, err
	}
	// On PostgreSQL each lookup would be a round trip: they go together.
	t.prefetchKeys(bucketRunsActive, ids)
	active := t.bucket(bucketRunsActive)
	var act []uuid.UUID
	for _, id := range ids {
		if active.Get(id[:]) != nil {
			act = append(act, id)
		}
	}
	t.prefetchKeys(bucketRuns, act)
	runs := t.bucket(bucketRuns)
	var out []Run
	for _, id := range act {
		r, ok, err := runAt(runs, id[:])
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, r)
		}
	}
	return out, nil
}

// runAt decodes the run record at key of the runs bucket; ok is false
// when there is none.
func runAt(runs kvBucket, key []byte) (r Run, ok bool, err error) {
	raw := runs.Get(key)
	if raw == nil {
		return r, false, nil
	}
	return r, true, decode(raw, &r)
}

// threadRuns walks a thread's runs oldest first, keeping those keep (nil:
// all) accepts.
func (t *Tx) threadRuns(threadID uuid.UUID, keep func(Run) bool) ([]Run, error) {
	var out []Run
	runs := t.bucket(bucketRuns)
	err := scanPrefix(t.bucket(bucketRunsByThread), threadID[:], func(k, _ []byte) error {
		r, ok, err := runAt(runs, k[16:32])
		if ok && err == nil && (keep == nil || keep(r)) {
			out = append(out, r)
		}
		return err
	})
	return out, err
}

// ActiveRuns returns every pending or running run, oldest first.
func (t *Tx) ActiveRuns() ([]Run, error) {
	var out []Run
	runs := t.bucket(bucketRuns)
	c := t.bucket(bucketRunsActive).Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		r, ok, err := runAt(runs, k)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return bytes.Compare(out[i].RunID[:], out[j].RunID[:]) < 0 })
	return out, nil
}

// RunQuery selects runs for SearchRuns.
type RunQuery struct {
	ThreadID    *uuid.UUID
	AssistantID *uuid.UUID
	Status      string
	// Active keeps only pending and running runs.
	Active   bool
	Metadata map[string]any
	// Restrict is the caller's authorisation filter over run metadata
	// (which holds the metadata of the run's thread, owner included).
	Restrict map[string]any
	Limit    int
	Offset   int
}

// SearchRuns returns runs matching q, newest first, and their number.
func (t *Tx) SearchRuns(q RunQuery, matchMeta func(doc, filter any) bool) ([]Run, int, error) {
	var all []Run
	keep := func(r Run) bool {
		if q.AssistantID != nil && r.AssistantID != *q.AssistantID {
			return false
		}
		if q.Status != "" && r.Status != q.Status {
			return false
		}
		if q.Active && !RunActive(r.Status) {
			return false
		}
		if len(q.Metadata) > 0 && !matchMeta(r.Metadata, q.Metadata) {
			return false
		}
		if len(q.Restrict) > 0 && !matchMeta(r.Metadata, q.Restrict) {
			return false
		}
		return true
	}
	if q.ThreadID != nil {
		var err error
		if all, err = t.ThreadRuns(*q.ThreadID, keep); err != nil {
			return nil, 0, err
		}
	} else {
		c := t.bucket(bucketRuns).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			var r Run
			if err := decode(v, &r); err != nil {
				return nil, 0, err
			}
			if keep(r) {
				all = append(all, r)
			}
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return bytes.Compare(all[i].RunID[:], all[j].RunID[:]) > 0 })
	return pageOf(all, q.Offset, q.Limit), len(all), nil
}

// deleteThreadRuns removes every run of a thread with its index entries and
// stream events; run records are not decoded.
func (t *Tx) deleteThreadRuns(threadID uuid.UUID) error {
	ids, err := threadIndexIDs(t.bucket(bucketRunsByThread), threadID)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := t.deleteRunKeys(threadID, id); err != nil {
			return err
		}
	}
	return nil
}

// threadIndexIDs lists the ids of a thread's entries in an index keyed by
// thread id and id (runs_by_thread, crons_by_thread), in key order.
func threadIndexIDs(index kvBucket, threadID uuid.UUID) ([]uuid.UUID, error) {
	var ids []uuid.UUID
	err := scanPrefix(index, threadID[:], func(k, _ []byte) error {
		var id uuid.UUID
		copy(id[:], k[16:32])
		ids = append(ids, id)
		return nil
	})
	return ids, err
}
