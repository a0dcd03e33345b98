package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
)

func mkEvents(from, to int64) []StoredEvent {
	var out []StoredEvent
	for s := from; s <= to; s++ {
		out = append(out, StoredEvent{Seq: s, Name: "values", Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, s))})
	}
	return out
}

func seqs(evs []StoredEvent) []int64 {
	var out []int64
	for _, e := range evs {
		out = append(out, e.Seq)
	}
	return out
}

func TestRunEventsAppendLoad(t *testing.T) { forEachBackend(t, testRunEventsAppendLoad) }

func testRunEventsAppendLoad(t *testing.T, db *DB) {
	ctx := context.Background()
	a, b := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	// Seqs past 255 and 65535 check the big-endian ordering.
	if err := db.AppendRunEvents(ctx, a, mkEvents(1, 300)); err != nil {
		t.Fatal(err)
	}
	if err := db.AppendRunEvents(ctx, a, nil); err != nil { // empty append is a no-op
		t.Fatal(err)
	}
	if err := db.AppendRunEvents(ctx, a, []StoredEvent{{Seq: 70000, Name: "end"}}); err != nil {
		t.Fatal(err)
	}
	if err := db.AppendRunEvents(ctx, b, mkEvents(1, 3)); err != nil {
		t.Fatal(err)
	}

	all, err := db.LoadRunEvents(context.Background(), a, -1)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 301 || all[0].Seq != 1 || all[299].Seq != 300 || all[300].Seq != 70000 {
		t.Fatalf("loaded %d events, seqs %v…", len(all), seqs(all)[:3])
	}
	if all[5].Name != "values" || string(all[5].Data) != `{"n":6}` {
		t.Fatalf("event 6 = %+v", all[5])
	}
	if all[300].Name != "end" || string(all[300].Data) != "null" {
		t.Fatalf("nil data not stored as null: %+v", all[300])
	}
	for _, after := range []int64{0, 1, 150, 299, 300, 69999, 70000, 1 << 40} {
		got, err := db.LoadRunEvents(context.Background(), a, after)
		if err != nil {
			t.Fatal(err)
		}
		var want []int64
		for _, s := range seqs(all) {
			if s > after {
				want = append(want, s)
			}
		}
		if !slices.Equal(seqs(got), want) {
			t.Fatalf("after %d: got %d events, want %d", after, len(got), len(want))
		}
	}
	gotB, err := db.LoadRunEvents(context.Background(), b, 0)
	if err != nil || !slices.Equal(seqs(gotB), []int64{1, 2, 3}) {
		t.Fatalf("run b: %v %v", seqs(gotB), err)
	}
	none, err := db.LoadRunEvents(context.Background(), uuid.Must(uuid.NewV7()), 0)
	if err != nil || len(none) != 0 {
		t.Fatalf("unknown run: %v %v", none, err)
	}

	// Overwrite is idempotent.
	if err := db.AppendRunEvents(ctx, b, mkEvents(2, 3)); err != nil {
		t.Fatal(err)
	}
	if gotB, _ = db.LoadRunEvents(context.Background(), b, 0); len(gotB) != 3 {
		t.Fatalf("after retry: %d events", len(gotB))
	}

	ids, err := db.RunsWithEvents(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []uuid.UUID{a, b}
	slices.SortFunc(want, func(x, y uuid.UUID) int { return slices.Compare(x[:], y[:]) })
	if !slices.Equal(ids, want) {
		t.Fatalf("RunsWithEvents = %v, want %v", ids, want)
	}
}

func TestRunEventsRejectsBadInput(t *testing.T) { forEachBackend(t, testRunEventsRejectsBadInput) }

func testRunEventsRejectsBadInput(t *testing.T, db *DB) {
	ctx := context.Background()
	id := uuid.Must(uuid.NewV7())
	if err := db.AppendRunEvents(ctx, id, []StoredEvent{{Seq: 0, Name: "x", Data: json.RawMessage("1")}}); err == nil {
		t.Fatal("seq 0 accepted")
	}
	if err := db.AppendRunEvents(ctx, id, []StoredEvent{{Seq: 1, Name: "x", Data: json.RawMessage("{")}}); err == nil {
		t.Fatal("invalid JSON accepted")
	}
	if got, _ := db.LoadRunEvents(context.Background(), id, 0); len(got) != 0 {
		t.Fatalf("rejected append stored %d events", len(got))
	}
}

func TestRunEventsDelete(t *testing.T) { forEachBackend(t, testRunEventsDelete) }

func testRunEventsDelete(t *testing.T, db *DB) {
	ctx := context.Background()
	var ids []uuid.UUID
	for i := 0; i < 4; i++ {
		id := uuid.Must(uuid.NewV7())
		ids = append(ids, id)
		if err := db.AppendRunEvents(ctx, id, mkEvents(1, 50)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.DeleteRunEvents(ctx, []uuid.UUID{ids[0], ids[2], uuid.Must(uuid.NewV7())}); err != nil {
		t.Fatal(err)
	}
	// Tx.DeleteRunEvents composes with other writes of one transaction.
	if err := db.Update(ctx, func(tx *Tx) error { return tx.DeleteRunEvents(ids[3]) }); err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		got, err := db.LoadRunEvents(context.Background(), id, 0)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[int]int{1: 50}[i]; len(got) != want {
			t.Fatalf("run %d: %d events left, want %d", i, len(got), want)
		}
	}
	left, err := db.RunsWithEvents(context.Background())
	if err != nil || !slices.Equal(left, ids[1:2]) {
		t.Fatalf("RunsWithEvents = %v %v", left, err)
	}
}

func TestOwnerDeletesKeepTheirOrder(t *testing.T) { forEachBackend(t, testOwnerDeletesKeepTheirOrder) }

// testOwnerDeletesKeepTheirOrder deletes two runs' events and subagent
// records in one transaction, then writes to one of them again: the
// deletes (gathered per table on PostgreSQL) apply before the writes that
// follow them, and remove every owner named.
func testOwnerDeletesKeepTheirOrder(t *testing.T, db *DB) {
	ctx := context.Background()
	a, b := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	now := time.Now().UTC()
	for _, id := range []uuid.UUID{a, b} {
		if err := db.AppendRunEvents(ctx, id, mkEvents(1, 5)); err != nil {
			t.Fatal(err)
		}
		if err := db.Update(ctx, func(tx *Tx) error {
			return tx.PutSubagent(SubagentExecution{ParentRunID: id, ThreadID: id, ToolCallID: "old", Status: "running", StartedAt: now})
		}); err != nil {
			t.Fatal(err)
		}
	}
	// check runs inside transactions, on the writer's goroutine: it
	// returns what is wrong instead of failing the test there.
	check := func(tx *Tx, when string) error {
		for id, want := range map[uuid.UUID]int{a: 1, b: 0} {
			evs, err := tx.LoadRunEvents(id, 0)
			if err != nil || len(evs) != want {
				return fmt.Errorf("%s: run events %v %v, want %d", when, seqs(evs), err, want)
			}
			subs, err := tx.RunSubagents(id)
			if err != nil || len(subs) != want || (want == 1 && subs[0].ToolCallID != "new") {
				return fmt.Errorf("%s: subagents %+v %v, want %d (new)", when, subs, err, want)
			}
		}
		return nil
	}
	if err := db.Update(ctx, func(tx *Tx) error {
		for _, id := range []uuid.UUID{a, b} {
			if err := tx.DeleteRunEvents(id); err != nil {
				return err
			}
			if err := tx.deleteRunSubagents(id); err != nil {
				return err
			}
		}
		raw, err := json.Marshal(map[string]any{"event": "values", "data": map[string]int{"n": 9}})
		if err != nil {
			return err
		}
		if err := tx.seqLog(runEventLog).put(a, []seqEvent{{seq: 1, at: now, v: raw}}); err != nil {
			return err
		}
		if err := tx.PutSubagent(SubagentExecution{ParentRunID: a, ThreadID: a, ToolCallID: "new", Status: "running", StartedAt: now}); err != nil {
			return err
		}
		return check(tx, "inside the transaction")
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.View(ctx, func(tx *Tx) error { return check(tx, "after commit") }); err != nil {
		t.Fatal(err)
	}
}
