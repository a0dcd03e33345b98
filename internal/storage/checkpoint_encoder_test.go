package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"
)

func encoderTestCheckpoint(thread uuid.UUID, values map[string]any) Checkpoint {
	parent := uuid.Must(uuid.NewV7())
	run := uuid.Must(uuid.NewV7())
	return Checkpoint{
		ThreadID: thread, CheckpointID: uuid.Must(uuid.NewV7()), ParentID: &parent, RunID: &run,
		CreatedAt: time.Now().UTC(), Values: values,
		// Metadata with its own "values": null must not confuse the encoder.
		Metadata: map[string]any{"source": "loop", "step": float64(3), "writes": map[string]any{"values": nil}},
		Next:     []string{"tools"}, Tasks: []CheckpointTask{{ID: "t", Name: "tools", Interrupts: []any{}}},
	}
}

// The encoder's output is byte for byte what json.Marshal writes, for the
// first checkpoint and for later ones that reuse memoized messages.
func TestCheckpointEncoderMatchesJSONMarshal(t *testing.T) {
	thread := uuid.Must(uuid.NewV7())
	m1 := map[string]any{"type": "human", "id": "1", "content": "hi <there> & \u2028", "additional_kwargs": map[string]any{}}
	m2 := map[string]any{"type": "ai", "id": "2", "content": []any{map[string]any{"type": "text", "text": "ok"}}, "tool_calls": []any{}}
	cases := []map[string]any{
		nil,
		{},
		{"messages": []any{m1}, "todos": []any{"a", float64(1), nil, true}, "count": float64(2), "nested": map[string]any{"values": nil}},
		{"messages": []any{m1, m2}, "todos": []any{}, "async_tasks": map[string]any{"x": map[string]any{"status": "running"}}},
		{"messages": []any{m2, map[string]any{"type": "tool", "id": "3", "content": "done"}}, "": "empty key"},
	}
	var enc CheckpointEncoder
	for i, values := range cases {
		cp := encoderTestCheckpoint(thread, values)
		got, err := enc.Encode(cp)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(cp)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.raw, want) {
			t.Fatalf("case %d:\n got %s\nwant %s", i, got.raw, want)
		}
	}
	if len(enc.memo) != 3 {
		t.Fatalf("memo holds %d objects, want the 3 distinct messages", len(enc.memo))
	}
}

// An encoded checkpoint reads back as the checkpoint.
func TestPutEncodedCheckpointRoundTrip(t *testing.T) {
	forEachBackend(t, testPutEncodedCheckpointRoundTrip)
}

func testPutEncodedCheckpointRoundTrip(t *testing.T, db *DB) {
	thread := uuid.Must(uuid.NewV7())
	cp := encoderTestCheckpoint(thread, map[string]any{"messages": []any{map[string]any{"type": "human", "id": "1", "content": "x"}}})
	var enc CheckpointEncoder
	e, err := enc.Encode(cp)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(context.Background(), func(tx *Tx) error { return tx.PutEncodedCheckpoint(e) }); err != nil {
		t.Fatal(err)
	}
	var got Checkpoint
	var latest uuid.UUID
	err = db.View(context.Background(), func(tx *Tx) error {
		var err error
		if got, err = tx.GetCheckpoint(thread, cp.CheckpointID); err != nil {
			return err
		}
		latest, err = tx.LatestCheckpointID(thread)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := cp
	want.CreatedAt = want.CreatedAt.Round(0)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("read back %+v, want %+v", got, want)
	}
	if latest != cp.CheckpointID {
		t.Fatalf("latest id %s, want %s", latest, cp.CheckpointID)
	}
}

// A write submitted after another commits after it: the later one sees the
// earlier one's effects, however the writer batches them.
func TestSubmitCommitsInQueueOrder(t *testing.T) { forEachBackend(t, testSubmitCommitsInQueueOrder) }

func testSubmitCommitsInQueueOrder(t *testing.T, db *DB) {
	for i := 0; i < 50; i++ {
		th := newThread(nil, "idle")
		first, err := db.Submit(context.Background(), func(tx *Tx) error { return tx.PutThread(th) })
		if err != nil {
			t.Fatal(err)
		}
		sawFirst := false
		err = db.Update(context.Background(), func(tx *Tx) error {
			_, err := tx.GetThread(th.ThreadID)
			sawFirst = err == nil
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := first.Wait(); err != nil {
			t.Fatal(err)
		}
		if !sawFirst {
			t.Fatalf("round %d: a write queued later did not see the earlier one", i)
		}
	}
}
