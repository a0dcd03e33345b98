package storage

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"agentserver/internal/errdefs"
	"agentserver/internal/testutil/poll"
)

// largeValue is a store value whose encoding is about size bytes.
func largeValue(size int, mark string) map[string]any {
	chunks := make([]any, size/1024+1)
	for i := range chunks {
		chunks[i] = mark + strings.Repeat("x", 1000)
	}
	return map[string]any{"chunks": chunks}
}

// putStaged puts an item as the store service does: the value encoded,
// staged when large, then the item stored in its own transaction.
func putStaged(t *testing.T, db *DB, it StoreItem) {
	t.Helper()
	prepared, err := PrepareStoreItem(it)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.StageStoreValue(context.Background(), &prepared); err != nil {
		t.Fatal(err)
	}
	mustUpdate(t, db, func(tx *Tx) error { return tx.PutStoreItem(prepared) })
}

// countKeys returns the number of keys of a bucket.
func countKeys(t *testing.T, db *DB, bucket []byte) int {
	t.Helper()
	n := 0
	err := db.View(context.Background(), func(tx *Tx) error {
		return tx.bucket(bucket).ForEach(func(_, _ []byte) error { n++; return nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSmallWriteDoesNotShareCommitWithLargeStoreValue holds the writer,
// queues a large store put and then a small write, and releases the
// writer: the small write must commit before the large item exists (its
// transaction does not see it), in a commit that carries a few chunks of
// the value at most. Before, the large put was one write queued ahead of
// the small one, so both shared a commit that wrote the whole value.
func TestSmallWriteDoesNotShareCommitWithLargeStoreValue(t *testing.T) {
	forEachBackend(t, testSmallWriteDoesNotShareCommitWithLargeStoreValue)
}

func testSmallWriteDoesNotShareCommitWithLargeStoreValue(t *testing.T, db *DB) {
	ctx := context.Background()
	release, held := make(chan struct{}), make(chan struct{})
	gate := make(chan error, 1)
	go func() {
		gate <- db.Update(ctx, func(tx *Tx) error {
			select {
			case <-held:
			default:
				close(held)
			}
			<-release
			return nil
		})
	}()
	<-held
	large := StoreItem{Namespace: []string{"n"}, Key: "large", Value: largeValue(4<<20, "v1"), UpdatedAt: time.Now().UTC()}
	putDone := make(chan error, 1)
	go func() {
		prepared, err := PrepareStoreItem(large)
		if err == nil {
			err = db.StageStoreValue(ctx, &prepared)
		}
		if err == nil {
			err = db.Update(ctx, func(tx *Tx) error { return tx.PutStoreItem(prepared) })
		}
		putDone <- err
	}()
	poll.Eventually(t, 10*time.Second, "the large put to queue its writes", func() bool {
		return len(db.writes)+len(db.bulk) > 0
	})
	sawLarge := true
	small := make(chan error, 1)
	go func() {
		small <- db.Update(ctx, func(tx *Tx) error {
			_, err := tx.GetStoreItem([]string{"n"}, "large", time.Now())
			sawLarge = err == nil
			return tx.PutThread(newThread(map[string]any{"small": true}, "idle"))
		})
	}()
	poll.Eventually(t, 10*time.Second, "the small write to queue", func() bool { return len(db.writes) > 0 })
	close(release)
	if err := <-small; err != nil {
		t.Fatal(err)
	}
	if sawLarge {
		t.Fatal("the small write shared a commit with the whole large value")
	}
	if err := <-gate; err != nil {
		t.Fatal(err)
	}
	if err := <-putDone; err != nil {
		t.Fatal(err)
	}
	got, err := getItem(t, db, []string{"n"}, "large", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Value, roundTrip(t, large.Value)) {
		t.Fatal("the large value read back differs")
	}
}

// roundTrip is v as it reads back from JSON.
func roundTrip(t *testing.T, v map[string]any) map[string]any {
	t.Helper()
	raw, err := encode(v)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := decode(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestLargeStoreValueLifecycle puts, reads, searches, refreshes, replaces,
// deletes and expires items with staged values: each reads back whole, and
// no chunk outlives the item that held it.
func TestLargeStoreValueLifecycle(t *testing.T) { forEachBackend(t, testLargeStoreValueLifecycle) }

func testLargeStoreValueLifecycle(t *testing.T, db *DB) {
	ns := []string{"docs"}
	ttl := 60.0
	first := StoreItem{Namespace: ns, Key: "a", Value: largeValue(1<<20, "first"), UpdatedAt: storeAt(0), TTLMinutes: &ttl, ExpiresAt: ptrTime(storeAt(60))}
	putStaged(t, db, first)
	chunks := countKeys(t, db, bucketStoreBlobs)
	if chunks < 4 || countKeys(t, db, bucketStoreStaged) != 0 {
		t.Fatalf("%d chunks, %d staged entries after a put of 1 MiB", chunks, countKeys(t, db, bucketStoreStaged))
	}
	got, err := getItem(t, db, ns, "a", storeAt(1))
	if err != nil || !reflect.DeepEqual(got.Value, roundTrip(t, first.Value)) {
		t.Fatalf("read back: %v", err)
	}
	err = db.View(context.Background(), func(tx *Tx) error {
		found, err := tx.SearchStoreItems(StoreSearch{Prefix: ns, Now: storeAt(1)})
		if err == nil && (len(found) != 1 || !reflect.DeepEqual(found[0].Value, got.Value)) {
			err = errors.New("search does not return the value")
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	// A refresh moves the deadline and keeps the chunks.
	mustUpdate(t, db, func(tx *Tx) error { return tx.RefreshStoreItem(ns, "a", storeAt(30)) })
	got, err = getItem(t, db, ns, "a", storeAt(80))
	if err != nil || !got.ExpiresAt.Equal(storeAt(90)) || !reflect.DeepEqual(got.Value, roundTrip(t, first.Value)) {
		t.Fatalf("after a refresh: %v %v", got.ExpiresAt, err)
	}
	if n := countKeys(t, db, bucketStoreBlobs); n != chunks {
		t.Fatalf("%d chunks after a refresh, want %d", n, chunks)
	}
	checkExpiryIndex(t, db)

	// A large replacement replaces the chunks; a small one removes them.
	second := StoreItem{Namespace: ns, Key: "a", Value: largeValue(1<<20, "second"), UpdatedAt: storeAt(31)}
	putStaged(t, db, second)
	if n := countKeys(t, db, bucketStoreBlobs); n != chunks {
		t.Fatalf("%d chunks after a large replacement, want %d", n, chunks)
	}
	got, err = getItem(t, db, ns, "a", storeAt(32))
	if err != nil || !reflect.DeepEqual(got.Value, roundTrip(t, second.Value)) || !got.CreatedAt.Equal(storeAt(0)) {
		t.Fatalf("after a large replacement: %v %v", got.CreatedAt, err)
	}
	putStaged(t, db, StoreItem{Namespace: ns, Key: "a", Value: map[string]any{"small": true}, UpdatedAt: storeAt(33)})
	if n := countKeys(t, db, bucketStoreBlobs); n != 0 {
		t.Fatalf("%d chunks after a small replacement", n)
	}

	// Deleting and expiring an item delete its chunks.
	putStaged(t, db, StoreItem{Namespace: ns, Key: "b", Value: largeValue(1<<20, "b"), UpdatedAt: storeAt(34)})
	mustUpdate(t, db, func(tx *Tx) error { return tx.DeleteStoreItem(ns, "b") })
	putStaged(t, db, StoreItem{Namespace: ns, Key: "c", Value: largeValue(1<<20, "c"), UpdatedAt: storeAt(35), ExpiresAt: ptrTime(storeAt(36))})
	mustUpdate(t, db, func(tx *Tx) error {
		n, err := tx.DeleteExpiredStoreItems(storeAt(40), 0)
		if err == nil && n != 1 {
			err = errors.New("the expired item was not deleted")
		}
		return err
	})
	if n := countKeys(t, db, bucketStoreBlobs); n != 0 {
		t.Fatalf("%d chunks after a delete and an expiry", n)
	}
	checkExpiryIndex(t, db)
}

// TestStagedStoreValueCleanup covers values staged for puts that did not
// store their item: a failed put drops its value at once, and the sweep
// deletes one a crash left once it is older than StagedStoreValueGrace,
// never a value an item holds.
func TestStagedStoreValueCleanup(t *testing.T) { forEachBackend(t, testStagedStoreValueCleanup) }

func testStagedStoreValueCleanup(t *testing.T, db *DB) {
	ctx := context.Background()
	stage := func(key string) StoreItem {
		prepared, err := PrepareStoreItem(StoreItem{Namespace: []string{"n"}, Key: key, Value: largeValue(600<<10, key), UpdatedAt: time.Now().UTC()})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.StageStoreValue(ctx, &prepared); err != nil {
			t.Fatal(err)
		}
		return prepared
	}
	failed := stage("failed")
	if err := db.DropStagedStoreValue(failed); err != nil {
		t.Fatal(err)
	}
	if n := countKeys(t, db, bucketStoreBlobs); n != 0 {
		t.Fatalf("%d chunks after a drop", n)
	}

	kept := stage("kept")
	mustUpdate(t, db, func(tx *Tx) error { return tx.PutStoreItem(kept) })
	if err := db.DropStagedStoreValue(kept); err != nil {
		t.Fatal(err)
	}
	keptChunks := countKeys(t, db, bucketStoreBlobs)
	if keptChunks == 0 {
		t.Fatal("dropping a value its item holds deleted it")
	}

	stage("crashed")
	sweep := func(now time.Time) int {
		var n int
		mustUpdate(t, db, func(tx *Tx) error {
			var err error
			n, err = tx.DeleteStaleStoreValues(now, 0)
			return err
		})
		return n
	}
	if n := sweep(time.Now()); n != 0 {
		t.Fatalf("the sweep deleted %d fresh staged values", n)
	}
	if n := sweep(time.Now().Add(StagedStoreValueGrace + time.Minute)); n != 1 {
		t.Fatalf("the sweep deleted %d stale staged values, want 1", n)
	}
	if n := countKeys(t, db, bucketStoreBlobs); n != keptChunks {
		t.Fatalf("%d chunks after the sweep, want the %d the kept item holds", n, keptChunks)
	}
	if _, err := getItem(t, db, []string{"n"}, "kept", time.Now()); err != nil {
		t.Fatal(err)
	}

	// An item whose staged value was swept before it was stored is refused.
	late := stage("late")
	sweep(time.Now().Add(StagedStoreValueGrace + time.Minute))
	err := db.Update(ctx, func(tx *Tx) error { return tx.PutStoreItem(late) })
	if !errors.Is(err, errdefs.ErrConflict) {
		t.Fatalf("put of a swept value: %v, want ErrConflict", err)
	}
}

// TestStoreItemHeadIsReadWithoutItsValue checks that the dates and the
// staged-value reference of an item are read from the fields before its
// value (the value is not even scanned), and that items written value
// first by earlier builds still read whole.
func TestStoreItemHeadIsReadWithoutItsValue(t *testing.T) {
	it := StoreItem{Namespace: []string{"n"}, Key: "k", Value: map[string]any{"v": 1.0}, CreatedAt: storeAt(0), UpdatedAt: storeAt(1), ExpiresAt: ptrTime(storeAt(2))}
	raw, err := encodeStoreItem(it)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(raw), `"value":{"v":1}}`) {
		t.Fatalf("the value is not last: %s", raw)
	}
	// Damage the value: the head must still read.
	damaged := strings.Replace(string(raw), `"value":{"v":1}}`, `"value":{"v":!!!`, 1)
	head, err := readStoreItemHead([]byte(damaged))
	if err != nil || !head.CreatedAt.Equal(storeAt(0)) || !head.ExpiresAt.Equal(storeAt(2)) {
		t.Fatalf("head of a record with a damaged value: %+v, %v", head, err)
	}
	legacy := `{"value":{"v":1},"namespace":["n"],"key":"k","created_at":"2026-01-02T03:04:05Z","updated_at":"2026-01-02T03:05:05Z","expires_at":"2026-01-02T03:06:05Z"}`
	head, err = readStoreItemHead([]byte(legacy))
	if err != nil || !head.CreatedAt.Equal(storeAt(0)) || !head.ExpiresAt.Equal(storeAt(2)) {
		t.Fatalf("head of a value-first record: %+v, %v", head, err)
	}
}
