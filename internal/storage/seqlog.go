package storage

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Event logs: the stored stream events of runs (run_events) and of
// threads (thread_events) are logs of one owner (a run, a thread) each,
// numbered by a positive seq. On bbolt each log is a bucket keyed
// owner(16) | seq(8, big endian); on PostgreSQL a table of its own keyed
// (owner, seq) (migrations/0004_event_tables.sql), whose rows a thread's
// or a run's deletion removes with one statement.

// seqLogKind names one of the two event logs: its bbolt bucket and the
// statements of its PostgreSQL table.
type seqLogKind struct {
	bucket []byte
	// timed logs' tables have an "at" column (the event's publication
	// time): their puts carry it.
	timed                               bool
	putSQL, scanSQL, lastSQL, ownersSQL string
	// table deletes the events of owners (pgownerdeletes.go).
	table *ownerTable
}

// newSeqLogKind builds the statements of the log kept in table, whose
// owner column is owner.
func newSeqLogKind(bucket []byte, table, owner string, timed bool) seqLogKind {
	put := `INSERT INTO ` + table + ` (` + owner + `, seq, v)
		SELECT $1, e.seq, e.v FROM unnest($2::bigint[], $3::bytea[]) AS e(seq, v)
		ON CONFLICT (` + owner + `, seq) DO UPDATE SET v = excluded.v`
	if timed {
		put = `INSERT INTO ` + table + ` (` + owner + `, seq, at, v)
		SELECT $1, e.seq, e.at, e.v FROM unnest($2::bigint[], $3::bytea[], $4::timestamptz[]) AS e(seq, v, at)
		ON CONFLICT (` + owner + `, seq) DO UPDATE SET at = excluded.at, v = excluded.v`
	}
	return seqLogKind{
		bucket:    bucket,
		timed:     timed,
		putSQL:    put,
		scanSQL:   `SELECT seq, v FROM ` + table + ` WHERE ` + owner + ` = $1 AND seq > $2 ORDER BY seq`,
		lastSQL:   `SELECT coalesce(max(seq), 0) FROM ` + table + ` WHERE ` + owner + ` = $1`,
		table:     newOwnerTable(table, owner),
		ownersSQL: `SELECT DISTINCT ` + owner + ` FROM ` + table + ` ORDER BY 1`,
	}
}

var (
	runEventLog    = newSeqLogKind(bucketRunEvents, "run_events", "run_id", false)
	threadEventLog = newSeqLogKind(bucketThreadEvents, "thread_events", "thread_id", true)
)

// seqEvent is one event to store: its seq, its publication time (used by
// timed logs) and its encoded value.
type seqEvent struct {
	seq int64
	at  time.Time
	v   []byte
}

// seqLog is one event log inside a transaction.
type seqLog interface {
	// put stores evs as events of owner, overwriting a stored seq.
	put(owner uuid.UUID, evs []seqEvent) error
	// scan calls fn, in seq order, for every event of owner after seq
	// after, stopping at fn's first error.
	scan(owner uuid.UUID, after int64, fn func(seq int64, v []byte) error) error
	// last returns the highest seq of owner, 0 when it has none.
	last(owner uuid.UUID) (int64, error)
	// deleteOwner removes every event of owner.
	deleteOwner(owner uuid.UUID) error
	// owners calls fn for every owner with events, in id order.
	owners(fn func(uuid.UUID) error) error
}

// seqLog returns the transaction's view of an event log.
func (t *Tx) seqLog(kind seqLogKind) seqLog {
	if p, ok := t.kv.(*pgTxn); ok {
		return &pgSeqLog{t: p, kind: kind}
	}
	return &kvSeqLog{b: t.bucket(kind.bucket)}
}

// kvSeqLog is an event log in a bucket keyed owner | seq (seqEventKey).
type kvSeqLog struct{ b kvBucket }

// seqEventKey encodes owner(16) | seq(8, big endian).
func seqEventKey(owner uuid.UUID, seq int64) []byte {
	k := make([]byte, 24)
	copy(k, owner[:])
	binary.BigEndian.PutUint64(k[16:], uint64(seq))
	return k
}

func (l *kvSeqLog) put(owner uuid.UUID, evs []seqEvent) error {
	for _, e := range evs {
		if err := l.b.Put(seqEventKey(owner, e.seq), e.v); err != nil {
			return err
		}
	}
	return nil
}

func (l *kvSeqLog) scan(owner uuid.UUID, after int64, fn func(seq int64, v []byte) error) error {
	c := l.b.Cursor()
	for k, v := c.Seek(seqEventKey(owner, max(after+1, 1))); k != nil && bytes.HasPrefix(k, owner[:]); k, v = c.Next() {
		if len(k) != 24 {
			return fmt.Errorf("malformed event key of %d bytes", len(k))
		}
		if err := fn(int64(binary.BigEndian.Uint64(k[16:])), v); err != nil {
			return err
		}
	}
	return nil
}

func (l *kvSeqLog) last(owner uuid.UUID) (int64, error) {
	c := l.b.Cursor()
	k, _ := c.Seek(prefixEnd(owner[:]))
	if k == nil {
		k, _ = c.Last()
	} else {
		k, _ = c.Prev()
	}
	if k != nil && bytes.HasPrefix(k, owner[:]) && len(k) == 24 {
		return int64(binary.BigEndian.Uint64(k[16:])), nil
	}
	return 0, nil
}

func (l *kvSeqLog) deleteOwner(owner uuid.UUID) error {
	return deletePrefix(l.b, owner[:])
}

func (l *kvSeqLog) owners(fn func(uuid.UUID) error) error {
	c := l.b.Cursor()
	for k, _ := c.First(); k != nil; {
		if len(k) < 16 {
			return fmt.Errorf("malformed event key of %d bytes", len(k))
		}
		id := uuid.UUID(k[:16])
		if err := fn(id); err != nil {
			return err
		}
		next := prefixEnd(id[:])
		if next == nil {
			return nil
		}
		k, _ = c.Seek(next)
	}
	return nil
}

// pgSeqLog is an event log in a table (owner, seq, [at,] v). Writes join
// the transaction's pipelined batch; reads send it first.
type pgSeqLog struct {
	t    *pgTxn
	kind seqLogKind
}

func (l *pgSeqLog) put(owner uuid.UUID, evs []seqEvent) error {
	seqs := make([]int64, len(evs))
	vals := make([][]byte, len(evs))
	for i, e := range evs {
		seqs[i], vals[i] = e.seq, e.v
	}
	if !l.kind.timed {
		return l.t.queue(l.kind.putSQL, pgUUID(owner), seqs, vals)
	}
	ats := make([]time.Time, len(evs))
	for i, e := range evs {
		ats[i] = e.at
	}
	return l.t.queue(l.kind.putSQL, pgUUID(owner), seqs, vals, ats)
}

func (l *pgSeqLog) scan(owner uuid.UUID, after int64, fn func(seq int64, v []byte) error) error {
	return l.t.query(l.kind.scanSQL, []any{pgUUID(owner), after}, func(rows pgx.Rows) error {
		var seq int64
		var v []byte
		_, err := pgx.ForEachRow(rows, []any{&seq, &v}, func() error { return fn(seq, v) })
		return err
	})
}

func (l *pgSeqLog) last(owner uuid.UUID) (int64, error) {
	seqs, err := pgCollect[int64](l.t, l.kind.lastSQL, pgUUID(owner))
	if err != nil || len(seqs) == 0 {
		return 0, err
	}
	return seqs[0], nil
}

func (l *pgSeqLog) deleteOwner(owner uuid.UUID) error {
	return l.t.deleteOwned(l.kind.table, owner)
}

func (l *pgSeqLog) owners(fn func(uuid.UUID) error) error {
	ids, err := l.t.ids(l.kind.ownersSQL)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := fn(id); err != nil {
			return err
		}
	}
	return nil
}
