package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// StoredEvent is one persisted stream event of a run: the SSE event name and
// its JSON payload, numbered by Seq (1-based, strictly increasing per run).
type StoredEvent struct {
	Seq  int64
	Name string
	Data json.RawMessage
}

// runEventValue is the JSON stored under a run_events key; Seq lives in the key.
type runEventValue struct {
	Event string          `json:"event"`
	Data  json.RawMessage `json:"data"`
}

// AppendRunEvents stores evs as events of run runID in one durable write.
// Every Seq must be at least 1; an event whose Seq is already stored is
// overwritten, so retrying a failed append is safe. Concurrent calls share a
// group commit.
func (db *DB) AppendRunEvents(ctx context.Context, runID uuid.UUID, evs []StoredEvent) error {
	return db.appendSeqEvents(ctx, runEventLog, runID, len(evs), "run event", func(i int) (int64, time.Time, any) {
		data := evs[i].Data
		if len(data) == 0 {
			data = json.RawMessage("null")
		}
		return evs[i].Seq, time.Time{}, runEventValue{Event: evs[i].Name, Data: data}
	})
}

// appendSeqEvents stores n events of owner id (a run or a thread) in one
// durable write; event(i) gives the i-th one's Seq, publication time and
// the value to store. Values are encoded outside the transaction: Update
// may run fn more than once, and the transaction stays short.
func (db *DB) appendSeqEvents(ctx context.Context, log seqLogKind, id uuid.UUID, n int, what string, event func(i int) (int64, time.Time, any)) error {
	if n == 0 {
		return nil
	}
	evs := make([]seqEvent, n)
	for i := range n {
		seq, at, value := event(i)
		if seq < 1 {
			return fmt.Errorf("append %ss: seq %d is not positive", what, seq)
		}
		v, err := encode(value)
		if err != nil {
			return fmt.Errorf("append %ss: seq %d: %w", what, seq, err)
		}
		evs[i] = seqEvent{seq: seq, at: at, v: v}
	}
	return db.Update(ctx, func(tx *Tx) error {
		if err := tx.seqLog(log).put(id, evs); err != nil {
			return fmt.Errorf("put %s: %w", what, err)
		}
		return nil
	})
}

// LoadRunEvents returns the stored events of run runID whose Seq is greater
// than after, in Seq order. A negative after means from the start. A run
// without stored events yields an empty slice and no error.
func (db *DB) LoadRunEvents(ctx context.Context, runID uuid.UUID, after int64) ([]StoredEvent, error) {
	return Read(ctx, db, func(tx *Tx) ([]StoredEvent, error) { return tx.LoadRunEvents(runID, after) })
}

// LoadRunEvents is DB.LoadRunEvents inside a transaction.
func (t *Tx) LoadRunEvents(runID uuid.UUID, after int64) ([]StoredEvent, error) {
	var out []StoredEvent
	err := t.seqLog(runEventLog).scan(runID, after, func(seq int64, v []byte) error {
		var rv runEventValue
		if err := decode(v, &rv); err != nil {
			return err
		}
		out = append(out, StoredEvent{Seq: seq, Name: rv.Event, Data: rv.Data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load run events: %w", err)
	}
	return out, nil
}

// DeleteRunEvents removes every stored event of the given runs in one
// durable write. Runs without stored events are skipped.
func (db *DB) DeleteRunEvents(ctx context.Context, runIDs []uuid.UUID) error {
	if len(runIDs) == 0 {
		return nil
	}
	return db.Update(ctx, func(tx *Tx) error {
		for _, id := range runIDs {
			if err := tx.DeleteRunEvents(id); err != nil {
				return err
			}
		}
		return nil
	})
}

// DeleteRunEvents removes every stored event of run runID. Run deletion calls
// it in the same transaction that deletes the run record.
func (t *Tx) DeleteRunEvents(runID uuid.UUID) error {
	if err := t.seqLog(runEventLog).deleteOwner(runID); err != nil {
		return fmt.Errorf("delete run events: %w", err)
	}
	return nil
}

// RunsWithEvents lists the runs that have stored events, in id order. It
// visits one key per run, not every event.
func (db *DB) RunsWithEvents(ctx context.Context) ([]uuid.UUID, error) {
	var out []uuid.UUID
	err := db.View(ctx, func(tx *Tx) error {
		out = out[:0]
		if err := tx.seqLog(runEventLog).owners(func(id uuid.UUID) error {
			out = append(out, id)
			return nil
		}); err != nil {
			return fmt.Errorf("list runs with events: %w", err)
		}
		return nil
	})
	return out, err
}
