package threads

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/channels"
	"agentserver/internal/errdefs"
	"agentserver/internal/storage"
	"agentserver/internal/testutil/fakeclock"
	"agentserver/internal/testutil/testdb"
)

func newTestService(t *testing.T) (*Service, *fakeclock.Clock, *storage.DB) {
	t.Helper()
	return newTestServiceWith(t, Options{})
}

// newTestServiceWith is newTestService with options.
func newTestServiceWith(t *testing.T, opts Options) (*Service, *fakeclock.Clock, *storage.DB) {
	t.Helper()
	db := testdb.Open(t)
	c := fakeclock.New(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	s := New(db, channels.NewRegistry(), opts)
	s.now = c.Now
	return s, c, db
}

// threeCheckpoints is a creation that writes three checkpoints.
func threeCheckpoints() []Superstep {
	var steps []Superstep
	for _, v := range []string{"a", "b", "c"} {
		steps = append(steps, Superstep{Updates: []SuperstepUpdate{{Values: map[string]any{"v": v}, AsNode: "n"}}})
	}
	return steps
}

func mustCreate(t *testing.T, s *Service, ttl any, steps []Superstep) uuid.UUID {
	t.Helper()
	p, err := ParseTTL(ttl)
	if err != nil {
		t.Fatal(err)
	}
	th, err := s.Create(context.Background(), CreateParams{TTL: p, Supersteps: steps})
	if err != nil {
		t.Fatal(err)
	}
	return th.ThreadID
}

func checkpointCount(t *testing.T, s *Service, id uuid.UUID) int {
	t.Helper()
	h, err := s.History(context.Background(), id, HistoryQuery{})
	if err != nil {
		t.Fatal(err)
	}
	return len(h)
}

func exists(s *Service, id uuid.UUID) bool {
	_, err := s.Get(context.Background(), id)
	return err == nil
}

// setRun stores a run of a thread with a status, as the run engine does.
func setRun(t *testing.T, db *storage.DB, runID, threadID uuid.UUID, status string) {
	t.Helper()
	if err := db.Update(context.Background(), func(tx *storage.Tx) error {
		return tx.PutRun(storage.Run{RunID: runID, ThreadID: threadID, Status: status})
	}); err != nil {
		t.Fatal(err)
	}
}

// The sweeper deletes expired delete-threads, prunes expired keep_latest
// threads to their newest checkpoint, and leaves alone threads that have
// not expired, have no TTL, or have a pending or running run.
func TestSweepExpiredThreads(t *testing.T) {
	s, c, db := newTestService(t)
	ctx := context.Background()
	gone := mustCreate(t, s, 1.0, threeCheckpoints())
	kept := mustCreate(t, s, map[string]any{"ttl": 1.0, "strategy": "keep_latest"}, threeCheckpoints())
	young := mustCreate(t, s, 10.0, nil)
	forever := mustCreate(t, s, nil, nil)
	busy := mustCreate(t, s, 1.0, nil)
	run := uuid.Must(uuid.NewV7())
	setRun(t, db, run, busy, storage.RunPending)

	c.Advance(59 * time.Second)
	if n, err := s.SweepExpired(ctx); err != nil || n != 0 {
		t.Fatalf("sweep before any deadline: %d, %v", n, err)
	}
	c.Advance(time.Second)
	if n, err := s.SweepExpired(ctx); err != nil || n != 2 {
		t.Fatalf("sweep at the deadline: %d, %v; want 2", n, err)
	}
	if exists(s, gone) {
		t.Error("an expired delete-thread survived")
	}
	if !exists(s, kept) || checkpointCount(t, s, kept) != 1 {
		t.Errorf("keep_latest thread: exists %v, checkpoints %d; want it with 1", exists(s, kept), checkpointCount(t, s, kept))
	}
	if st, _ := s.GetState(ctx, kept, nil); st.Values["v"] != "c" {
		t.Errorf("keep_latest kept %v, want the newest state", st.Values)
	}
	for name, id := range map[string]uuid.UUID{"young": young, "forever": forever, "busy": busy} {
		if !exists(s, id) {
			t.Errorf("the %s thread was swept", name)
		}
	}
	// Once its run has ended, the busy thread goes at the next sweep.
	setRun(t, db, run, busy, storage.RunSuccess)
	if n, err := s.SweepExpired(ctx); err != nil || n != 1 || exists(s, busy) {
		t.Fatalf("sweep after the run ended: %d, %v, still there %v", n, err, exists(s, busy))
	}
	// keep_latest restarted the thread's clock: it is pruned again one
	// ttl after the last prune, not at every sweep.
	if n, _ := s.SweepExpired(ctx); n != 0 {
		t.Fatalf("a pruned keep_latest thread was pruned again at once (%d)", n)
	}
	if err := db.View(context.Background(), func(tx *storage.Tx) error { return tx.CheckThreadExpiryIndex() }); err != nil {
		t.Fatal(err)
	}
}

// Expiry counts from the thread's last update, not from its creation.
func TestThreadTTLCountsFromLastUpdate(t *testing.T) {
	s, c, _ := newTestService(t)
	ctx := context.Background()
	id := mustCreate(t, s, 1.0, nil)
	c.Advance(50 * time.Second)
	if _, err := s.Patch(ctx, id, map[string]any{"touched": true}, nil); err != nil {
		t.Fatal(err)
	}
	c.Advance(40 * time.Second) // 90 s after creation, 40 s after the update
	if n, _ := s.SweepExpired(ctx); n != 0 || !exists(s, id) {
		t.Fatal("the thread expired counting from its creation")
	}
	c.Advance(20 * time.Second) // 60 s after the update
	if n, _ := s.SweepExpired(ctx); n != 1 || exists(s, id) {
		t.Fatal("the thread outlived its ttl after its last update")
	}
}

// The deployment's default TTL is given to threads created without one.
func TestDefaultThreadTTL(t *testing.T) {
	s, c, _ := newTestServiceWith(t, Options{TTL: TTLConfig{Strategy: storage.TTLKeepLatest, DefaultTTL: 2}})
	id := mustCreate(t, s, nil, threeCheckpoints())
	own := mustCreate(t, s, 100.0, threeCheckpoints())
	th, _ := s.Get(context.Background(), id)
	if th.TTL["ttl"] != 2.0 || th.TTL["strategy"] != storage.TTLKeepLatest {
		t.Fatalf("default ttl = %v", th.TTL)
	}
	c.Advance(2 * time.Minute)
	if n, err := s.SweepExpired(context.Background()); err != nil || n != 1 {
		t.Fatalf("sweep: %d, %v", n, err)
	}
	if checkpointCount(t, s, id) != 1 || checkpointCount(t, s, own) != 3 {
		t.Fatalf("checkpoints: default-ttl thread %d (want 1), own-ttl thread %d (want 3)", checkpointCount(t, s, id), checkpointCount(t, s, own))
	}
}

// Prune acts on idle threads only and counts what it pruned; the delete
// hook hears of each deleted thread.
func TestPruneThreads(t *testing.T) {
	var deleted []string
	s, _, db := newTestServiceWith(t, Options{Deleted: func(_ context.Context, graph string, values map[string]any) {
		deleted = append(deleted, graph+":"+values["v"].(string))
	}})
	ctx := context.Background()
	idle := mustCreate(t, s, nil, threeCheckpoints())
	busy := mustCreate(t, s, nil, threeCheckpoints())
	setRun(t, db, uuid.Must(uuid.NewV7()), busy, storage.RunRunning)
	missing := uuid.Must(uuid.NewV7())

	n, err := s.Prune(ctx, []uuid.UUID{idle, busy, missing, idle}, storage.TTLKeepLatest)
	if err != nil || n != 1 {
		t.Fatalf("keep_latest prune: %d, %v; want 1", n, err)
	}
	if checkpointCount(t, s, idle) != 1 || checkpointCount(t, s, busy) != 3 {
		t.Fatalf("checkpoints after keep_latest: idle %d, busy %d", checkpointCount(t, s, idle), checkpointCount(t, s, busy))
	}
	n, err = s.Prune(ctx, []uuid.UUID{idle, busy, missing}, storage.TTLDelete)
	if err != nil || n != 1 || exists(s, idle) || !exists(s, busy) {
		t.Fatalf("delete prune: %d, %v; idle exists %v, busy exists %v", n, err, exists(s, idle), exists(s, busy))
	}
	if len(deleted) != 1 || deleted[0] != ":c" {
		t.Fatalf("delete hook heard %v", deleted)
	}
	if _, err := s.Prune(ctx, []uuid.UUID{busy}, "sometimes"); !errors.Is(err, errdefs.ErrInvalid) {
		t.Fatalf("unknown strategy: %v", err)
	}
}

func TestParseTTL(t *testing.T) {
	good := map[string]struct {
		in   any
		want map[string]any
	}{
		"minutes":     {5.0, map[string]any{"ttl": 5.0, "strategy": "delete"}},
		"object":      {map[string]any{"ttl": 2.5}, map[string]any{"ttl": 2.5, "strategy": "delete"}},
		"keep_latest": {map[string]any{"ttl": 1.0, "strategy": "keep_latest"}, map[string]any{"ttl": 1.0, "strategy": "keep_latest"}},
		"none":        {nil, nil},
	}
	for name, tc := range good {
		got, err := ParseTTL(tc.in)
		if err != nil || len(got) != len(tc.want) || got["ttl"] != tc.want["ttl"] || got["strategy"] != tc.want["strategy"] {
			t.Errorf("%s: %v, %v; want %v", name, got, err, tc.want)
		}
	}
	for name, in := range map[string]any{
		"zero":             0.0,
		"negative":         -1.0,
		"string":           "5",
		"object without":   map[string]any{"strategy": "delete"},
		"unknown strategy": map[string]any{"ttl": 1.0, "strategy": "archive"},
		"too long":         1e12,
	} {
		if _, err := ParseTTL(in); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("%s: %v, want invalid", name, err)
		}
	}
}

// PatchStateMetadata merges into the newest checkpoint's metadata without
// adding a checkpoint or changing values.
func TestPatchStateMetadata(t *testing.T) {
	s, _, _ := newTestService(t)
	ctx := context.Background()
	id := mustCreate(t, s, nil, threeCheckpoints())
	if err := s.PatchStateMetadata(ctx, id, map[string]any{"reviewed": true}); err != nil {
		t.Fatal(err)
	}
	st, err := s.GetState(ctx, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Metadata["reviewed"] != true || st.Metadata["source"] != "update" || st.Values["v"] != "c" {
		t.Fatalf("state after patch: metadata %v, values %v", st.Metadata, st.Values)
	}
	if n := checkpointCount(t, s, id); n != 3 {
		t.Fatalf("%d checkpoints after a metadata patch, want 3", n)
	}
	empty := mustCreate(t, s, nil, nil)
	if err := s.PatchStateMetadata(ctx, empty, map[string]any{"x": 1}); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("thread without state: %v", err)
	}
}

// A sweep handles at most the sweep limit of threads, earliest deadline
// first; the rest wait for the next sweep.
func TestSweepLimit(t *testing.T) {
	s, c, _ := newTestServiceWith(t, Options{TTL: TTLConfig{SweepLimit: 2}})
	var ids []uuid.UUID
	for range 3 {
		ids = append(ids, mustCreate(t, s, 1.0, nil))
		c.Advance(time.Second)
	}
	c.Advance(time.Minute)
	if n, err := s.SweepExpired(context.Background()); err != nil || n != 2 {
		t.Fatalf("first sweep: %d, %v; want 2", n, err)
	}
	if exists(s, ids[0]) || exists(s, ids[1]) || !exists(s, ids[2]) {
		t.Fatal("the sweep did not take the earliest deadlines first")
	}
	if n, _ := s.SweepExpired(context.Background()); n != 1 || exists(s, ids[2]) {
		t.Fatalf("second sweep: %d", n)
	}
}
