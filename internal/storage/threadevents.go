package storage

import (
	"bytes"
	"context"
	"encoding/binary"
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

// threadEventKey encodes thread_id(16) | seq(8, big endian), the layout
// of run event keys.
func threadEventKey(threadID uuid.UUID, seq int64) []byte {
	return runEventKey(threadID, seq)
}

// AppendThreadEvents stores evs as events of thread threadID in one durable
// write. Rewriting a Seq overwrites it, so a retried append is safe.
func (db *DB) AppendThreadEvents(ctx context.Context, threadID uuid.UUID, evs []ThreadEvent) error {
	return db.appendSeqEvents(ctx, bucketThreadEvents, threadID, len(evs), "thread event", func(i int) (int64, any) {
		return evs[i].Seq, threadEventValue{At: evs[i].At.UnixMilli(), Event: evs[i].Event}
	})
}

// LoadThreadEvents returns, in Seq order, the stored events of a thread
// whose Seq is greater than after.
func (db *DB) LoadThreadEvents(ctx context.Context, threadID uuid.UUID, after int64) ([]ThreadEvent, error) {
	var out []ThreadEvent
	err := db.View(ctx, func(tx *Tx) error {
		out = nil
		c := tx.bucket(bucketThreadEvents).Cursor()
		for k, v := c.Seek(threadEventKey(threadID, max(after+1, 1))); k != nil && bytes.HasPrefix(k, threadID[:]); k, v = c.Next() {
			ev, err := decodeThreadEvent(k, v)
			if err != nil {
				return err
			}
			out = append(out, ev)
		}
		return nil
	})
	return out, err
}

// LastThreadEventSeq returns the Seq of a thread's newest stored event, 0
// when it has none.
func (db *DB) LastThreadEventSeq(ctx context.Context, threadID uuid.UUID) (int64, error) {
	var seq int64
	err := db.View(ctx, func(tx *Tx) error {
		c := tx.bucket(bucketThreadEvents).Cursor()
		k, _ := c.Seek(prefixEnd(threadID[:]))
		if k == nil {
			k, _ = c.Last()
		} else {
			k, _ = c.Prev()
		}
		if k != nil && bytes.HasPrefix(k, threadID[:]) && len(k) == 24 {
			seq = int64(binary.BigEndian.Uint64(k[16:]))
		}
		return nil
	})
	return seq, err
}

func decodeThreadEvent(k, v []byte) (ThreadEvent, error) {
	if len(k) != 24 {
		return ThreadEvent{}, fmt.Errorf("load thread events: malformed key of %d bytes", len(k))
	}
	var tv threadEventValue
	if err := decode(v, &tv); err != nil {
		return ThreadEvent{}, fmt.Errorf("load thread events: %w", err)
	}
	return ThreadEvent{Seq: int64(binary.BigEndian.Uint64(k[16:])), At: time.UnixMilli(tv.At), Event: tv.Event}, nil
}

// DeleteThreadEventsBefore removes every stored thread event published
// before cutoff and reports how many it removed. Events of one thread are
// in publication order, so it stops at each thread's first newer event.
func (db *DB) DeleteThreadEventsBefore(ctx context.Context, cutoff time.Time) (int, error) {
	var stale [][]byte
	err := db.View(ctx, func(tx *Tx) error {
		stale = nil
		c := tx.bucket(bucketThreadEvents).Cursor()
		for k, v := c.First(); k != nil; {
			ev, err := decodeThreadEvent(k, v)
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
