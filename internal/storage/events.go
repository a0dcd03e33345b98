package storage

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"

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

// runEventKey encodes run_id(16) | seq(8, big endian).
func runEventKey(runID uuid.UUID, seq int64) []byte {
	k := make([]byte, 24)
	copy(k, runID[:])
	binary.BigEndian.PutUint64(k[16:], uint64(seq))
	return k
}

// AppendRunEvents stores evs as events of run runID in one durable write.
// Every Seq must be at least 1; an event whose Seq is already stored is
// overwritten, so retrying a failed append is safe. Concurrent calls share a
// group commit.
func (db *DB) AppendRunEvents(ctx context.Context, runID uuid.UUID, evs []StoredEvent) error {
	return db.appendSeqEvents(ctx, bucketRunEvents, runID, len(evs), "run event", func(i int) (int64, any) {
		data := evs[i].Data
		if len(data) == 0 {
			data = json.RawMessage("null")
		}
		return evs[i].Seq, runEventValue{Event: evs[i].Name, Data: data}
	})
}

// appendSeqEvents stores n events of owner id (a run or a thread) under
// id | seq keys in one durable write; event(i) gives the i-th one's Seq
// and the value to store. Values are encoded outside the transaction:
// Update may run fn more than once, and the transaction stays short.
func (db *DB) appendSeqEvents(ctx context.Context, bucket []byte, id uuid.UUID, n int, what string, event func(i int) (int64, any)) error {
	if n == 0 {
		return nil
	}
	keys := make([][]byte, n)
	vals := make([][]byte, n)
	for i := range n {
		seq, value := event(i)
		if seq < 1 {
			return fmt.Errorf("append %ss: seq %d is not positive", what, seq)
		}
		v, err := encode(value)
		if err != nil {
			return fmt.Errorf("append %ss: seq %d: %w", what, seq, err)
		}
		keys[i], vals[i] = runEventKey(id, seq), v
	}
	return db.putAll(ctx, bucket, keys, vals, what)
}

// putAll puts every key with its value into a bucket in one durable write.
func (db *DB) putAll(ctx context.Context, bucket []byte, keys, vals [][]byte, what string) error {
	return db.Update(ctx, func(tx *Tx) error {
		b := tx.bucket(bucket)
		for i := range keys {
			if err := b.Put(keys[i], vals[i]); err != nil {
				return fmt.Errorf("put %s: %w", what, err)
			}
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
	c := t.bucket(bucketRunEvents).Cursor()
	prefix := runID[:]
	start := after + 1
	if start < 1 {
		start = 1
	}
	for k, v := c.Seek(runEventKey(runID, start)); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if len(k) != 24 {
			return nil, fmt.Errorf("load run events: malformed key of %d bytes", len(k))
		}
		var rv runEventValue
		if err := decode(v, &rv); err != nil {
			return nil, fmt.Errorf("load run events: %w", err)
		}
		out = append(out, StoredEvent{Seq: int64(binary.BigEndian.Uint64(k[16:])), Name: rv.Event, Data: rv.Data})
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
	if err := deletePrefix(t.bucket(bucketRunEvents), runID[:]); err != nil {
		return fmt.Errorf("delete run events: %w", err)
	}
	return nil
}

// RunsWithEvents lists the runs that have stored events, in id order. It
// visits one key per run, not every event.
func (db *DB) RunsWithEvents(ctx context.Context) ([]uuid.UUID, error) {
	var out []uuid.UUID
	err := db.View(ctx, func(tx *Tx) error {
		c := tx.bucket(bucketRunEvents).Cursor()
		for k, _ := c.First(); k != nil; {
			if len(k) < 16 {
				return fmt.Errorf("list runs with events: malformed key of %d bytes", len(k))
			}
			var id uuid.UUID
			copy(id[:], k[:16])
			out = append(out, id)
			next := prefixEnd(id[:])
			if next == nil {
				break
			}
			k, _ = c.Seek(next)
		}
		return nil
	})
	return out, err
}
