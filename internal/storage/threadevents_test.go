package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
)

// A thread's events: appended, read after a Seq, the last Seq, the
// retention sweep by publication time, and removal with the thread.
func TestThreadEvents(t *testing.T) { forEachBackend(t, testThreadEvents) }

func testThreadEvents(t *testing.T, db *DB) {
	ctx := context.Background()
	a, b := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	mk := func(from, to int64) []ThreadEvent {
		var out []ThreadEvent
		for s := from; s <= to; s++ {
			out = append(out, ThreadEvent{Seq: s, At: base.Add(time.Duration(s) * time.Minute), Event: json.RawMessage(fmt.Sprintf(`{"n":%d}`, s))})
		}
		return out
	}
	if err := db.AppendThreadEvents(ctx, a, mk(1, 300)); err != nil {
		t.Fatal(err)
	}
	if err := db.AppendThreadEvents(ctx, b, mk(1, 2)); err != nil {
		t.Fatal(err)
	}
	if err := db.Update(ctx, func(tx *Tx) error {
		return tx.PutThread(Thread{ThreadID: b, CreatedAt: base, UpdatedAt: base, Status: "idle", Metadata: map[string]any{}})
	}); err != nil {
		t.Fatal(err)
	}
	got, err := db.LoadThreadEvents(ctx, a, 257)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 43 || got[0].Seq != 258 || string(got[0].Event) != `{"n":258}` || !got[0].At.Equal(base.Add(258*time.Minute)) {
		t.Fatalf("events of a after 257: %d, first %+v", len(got), got[0])
	}
	if last, err := db.LastThreadEventSeq(ctx, a); err != nil || last != 300 {
		t.Fatalf("last seq of a: %d %v, want 300", last, err)
	}
	if last, err := db.LastThreadEventSeq(ctx, uuid.New()); err != nil || last != 0 {
		t.Fatalf("last seq of a thread without events: %d %v, want 0", last, err)
	}
	// Published before base+10m: a's seqs 1-9, b's 1-2.
	n, err := db.DeleteThreadEventsBefore(ctx, base.Add(10*time.Minute))
	if err != nil || n != 11 {
		t.Fatalf("the sweep removed %d (%v), want 11", n, err)
	}
	if rest, _ := db.LoadThreadEvents(ctx, a, 0); len(rest) != 291 || rest[0].Seq != 10 {
		t.Fatalf("after the sweep a has %d events from %d, want 291 from 10", len(rest), rest[0].Seq)
	}
	if err := db.AppendThreadEvents(ctx, b, mk(3, 4)); err != nil {
		t.Fatal(err)
	}
	if err := db.Update(ctx, func(tx *Tx) error { return tx.DeleteThread(b) }); err != nil {
		t.Fatal(err)
	}
	if rest, err := db.LoadThreadEvents(ctx, b, 0); err != nil || len(rest) != 0 {
		t.Fatalf("a deleted thread's events: %d %v, want none", len(rest), err)
	}
}

// A schema whose events are still rows of kv (migration 3, as the previous
// release left it) is upgraded in place: the events move to their tables,
// readable as before, and kv keeps none of them.
func TestPostgresUpgradeMovesEventsToTables(t *testing.T) {
	run, thread := uuid.New(), uuid.New()
	at := time.UnixMilli(time.Now().UnixMilli())
	url, pool := schemaBefore(t, 4,
		kvRow{"run_events", seqEventKey(run, 1), runEventValue{Event: "metadata", Data: json.RawMessage(`{"run_id":"x"}`)}},
		kvRow{"run_events", seqEventKey(run, 300), runEventValue{Event: "end", Data: json.RawMessage(`null`)}},
		kvRow{"thread_events", seqEventKey(thread, 7), threadEventValue{At: at.UnixMilli(), Event: json.RawMessage(`{"e":"nul \u0000"}`)}})
	ctx := context.Background()
	db, err := OpenPostgres(url, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	evs, err := db.LoadRunEvents(ctx, run, 0)
	if err != nil || len(evs) != 2 || evs[0].Seq != 1 || evs[0].Name != "metadata" || evs[1].Seq != 300 || evs[1].Name != "end" {
		t.Fatalf("the run's events after the upgrade: %+v %v", evs, err)
	}
	tevs, err := db.LoadThreadEvents(ctx, thread, 0)
	if err != nil || len(tevs) != 1 || tevs[0].Seq != 7 || !tevs[0].At.Equal(at) || string(tevs[0].Event) != `{"e":"nul \u0000"}` {
		t.Fatalf("the thread's events after the upgrade: %+v %v", tevs, err)
	}
	if n, err := db.DeleteThreadEventsBefore(ctx, at.Add(time.Millisecond)); err != nil || n != 1 {
		t.Fatalf("the sweep after the upgrade removed %d (%v), want the moved event", n, err)
	}
	var left int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM kv WHERE bucket IN ('run_events', 'thread_events')`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("kv keeps %d event rows (%v), want none", left, err)
	}
}
