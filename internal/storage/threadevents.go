package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// ThreadEvent is one persisted event of a thread's protocol stream: its
// per-thread Seq (1-based, strictly increasing), when it was published and
// the encoded event.
type ThreadEvent struct {
	Seq   int64
	At    time.Time
	Event json.RawMessage
}

type threadEventValue struct {
	At    int64           `json:"at"`
	Event json.RawMessage `json:"event"`
}

// AppendThreadEvents stores evs as events of thread threadID in one durable
// write. Rewriting a Seq overwrites it, so a retried append is safe.
func (db *DB) AppendThreadEvents(ctx context.Context, threadID uuid.UUID, evs []ThreadEvent) error {
	return db.appendSeqEvents(ctx, threadEventLog, threadID, len(evs), "thread event", func(i int) (int64, time.Time, any) {
		return evs[i].Seq, evs[i].At, threadEventValue{At: evs[i].At.UnixMilli(), Event: evs[i].Event}
	})
}

// LoadThreadEvents returns, in Seq order, the stored events of a thread
// whose Seq is greater than after.
func (db *DB) LoadThreadEvents(ctx context.Context, threadID uuid.UUID, after int64) ([]ThreadEvent, error) {
	var out []ThreadEvent
	err := db.View(ctx, func(tx *Tx) error {
		out = nil
		return tx.seqLog(threadEventLog).scan(threadID, after, func(seq int64, v []byte) error {
			ev, err := decodeThreadEvent(seq, v)
			if err != nil {
				return err
			}
			out = append(out, ev)
			return nil
		})
	})
	return out, err
}

// LastThreadEventSeq returns the Seq of a thread's newest stored event, 0
// when it has none.
func (db *DB) LastThreadEventSeq(ctx context.Context, threadID uuid.UUID) (int64, error) {
	return Read(ctx, db, func(tx *Tx) (int64, error) { return tx.seqLog(threadEventLog).last(threadID) })
}

func decodeThreadEvent(seq int64, v []byte) (ThreadEvent, error) {
	var tv threadEventValue
	if err := decode(v, &tv); err != nil {
		return ThreadEvent{}, fmt.Errorf("load thread events: %w", err)
	}
	return ThreadEvent{Seq: seq, At: time.UnixMilli(tv.At), Event: tv.Event}, nil
}

// pgDeleteThreadEventsBeforeSQL deletes the thread events published
// before $1 and counts them.
const pgDeleteThreadEventsBeforeSQL = `WITH gone AS (DELETE FROM thread_events WHERE at < $1 RETURNING 1) SELECT count(*) FROM gone`

// DeleteThreadEventsBefore removes every stored thread event published
// before cutoff and reports how many it removed. On PostgreSQL it is one
// statement (thread_events has the publication time as a column); on
// bbolt, where a write transaction holds up every other write, the stale
// keys are found in a read first: events of one thread are in publication
// order, so the scan stops at each thread's first newer event.
func (db *DB) DeleteThreadEventsBefore(ctx context.Context, cutoff time.Time) (int, error) {
	if db.Shared() {
		var n []int
		err := db.Update(ctx, func(tx *Tx) error {
			var err error
			n, err = pgCollect[int](tx.kv.(*pgTxn), pgDeleteThreadEventsBeforeSQL, cutoff)
			return err
		})
		if err != nil || len(n) == 0 {
			return 0, err
		}
		return n[0], nil
	}
	var stale [][]byte
	err := db.View(ctx, func(tx *Tx) error {
		stale = nil
		c := tx.bucket(bucketThreadEvents).Cursor()
		for k, v := c.First(); k != nil; {
			if len(k) != 24 {
				return fmt.Errorf("load thread events: malformed key of %d bytes", len(k))
			}
			ev, err := decodeThreadEvent(0, v)
			if err != nil {
				return err
			}
			if ev.At.Before(cutoff) {
				stale = append(stale, bytes.Clone(k))
				k, v = c.Next()
				continue
			}
			next := prefixEnd(k[:16])
			if next == nil {
				break
			}
			k, v = c.Seek(next)
		}
		return nil
	})
	if err != nil || len(stale) == 0 {
		return 0, err
	}
	err = db.Update(ctx, func(tx *Tx) error {
		b := tx.bucket(bucketThreadEvents)
		for _, k := range stale {
			if err := b.Delete(k); err != nil {
				return fmt.Errorf("delete thread event: %w", err)
			}
		}
		return nil
	})
	return len(stale), err
}
