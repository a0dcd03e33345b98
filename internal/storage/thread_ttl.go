package storage

import (
	"bytes"
	"math"
	"time"

	"github.com/google/uuid"
)

// Thread TTL strategies: what happens to a thread when its TTL runs out.
const (
	// TTLDelete removes the thread with its checkpoints and runs.
	TTLDelete = "delete"
	// TTLKeepLatest removes every checkpoint of the thread but the newest.
	TTLKeepLatest = "keep_latest"
)

// lastDeadline is the latest deadline the expiry index can encode (unix
// nanoseconds in an int64, in 2262); later deadlines are stored as it.
var lastDeadline = time.Unix(0, math.MaxInt64).UTC()

// TTLMinutes returns the thread's time-to-live in minutes, or false when
// it has none (no TTL, or a TTL that is not a positive number).
func (th Thread) TTLMinutes() (float64, bool) {
	m, ok := th.TTL["ttl"].(float64)
	if !ok || !(m > 0) {
		return 0, false
	}
	return m, true
}

// TTLStrategy returns the thread's TTL strategy; TTLDelete by default.
func (th Thread) TTLStrategy() string {
	if s, ok := th.TTL["strategy"].(string); ok && s != "" {
		return s
	}
	return TTLDelete
}

// ExpiresAt returns when the thread's TTL runs out: its last update plus its
// TTL. False means it never expires.
func (th Thread) ExpiresAt() (time.Time, bool) {
	m, ok := th.TTLMinutes()
	if !ok {
		return time.Time{}, false
	}
	if m >= float64(lastDeadline.Sub(th.UpdatedAt)/time.Minute) {
		return lastDeadline, true
	}
	return th.UpdatedAt.Add(time.Duration(m * float64(time.Minute))), true
}

// expiryIndexKey is the thread's threads_by_expiry key, or nil when it
// never expires.
func expiryIndexKey(th *Thread) []byte {
	at, ok := th.ExpiresAt()
	if !ok {
		return nil
	}
	return timeIDKey(nil, at, th.ThreadID)
}

// ExpiredThreads returns up to limit threads whose TTL ran out at or
// before now, the earliest deadline first.
func (t *Tx) ExpiredThreads(now time.Time, limit int) []uuid.UUID {
	var out []uuid.UUID
	end := timeIDKey(nil, now, uuid.Max)
	c := t.bucket(bucketThreadsByExpiry).Cursor()
	for k, _ := c.First(); k != nil && bytes.Compare(k, end) <= 0 && len(out) < limit; k, _ = c.Next() {
		if len(k) != 24 {
			continue
		}
		_, id := splitTimeID(k)
		out = append(out, id)
	}
	return out
}

// ThreadBusy reports whether a thread has a pending or running run.
func (t *Tx) ThreadBusy(id uuid.UUID) (bool, error) {
	active, err := t.ActiveThreadRuns(id)
	return len(active) > 0, err
}

// KeepLatestCheckpoint deletes every checkpoint of a thread but its newest
// (and, of its nested graphs' checkpoints, the newest of each namespace,
// from which a paused subgraph resumes) and returns how many it deleted.
func (t *Tx) KeepLatestCheckpoint(threadID uuid.UUID) (int, error) {
	b := t.bucket(bucketCheckpoints)
	last, _ := seekLastWithPrefix(b.Cursor(), threadID[:])
	if last == nil {
		return 0, nil
	}
	nested, err := t.keepLatestNested(threadID)
	if err != nil {
		return 0, err
	}
	last = append([]byte(nil), last...)
	n := nested
	c := b.Cursor()
	for k, _ := c.Seek(threadID[:]); k != nil && bytes.Compare(k, last) < 0; k, _ = c.Seek(threadID[:]) {
		if err := c.Delete(); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// backfillThreadExpiry indexes the deadline of every thread with a TTL; it
// runs once, when the threads_by_expiry bucket is created in a file that
// already holds threads.
func backfillThreadExpiry(threads, idx kvBucket) error {
	return threads.ForEach(func(_, v []byte) error {
		var th Thread
		if err := decode(v, &th); err != nil {
			return err
		}
		if k := expiryIndexKey(&th); k != nil {
			return idx.Put(k, nil)
		}
		return nil
	})
}

// CheckThreadExpiryIndex verifies that threads_by_expiry holds exactly one
// entry for every thread with a TTL, carrying its deadline, and nothing
// else. It reads both buckets in full; tests and offline checks call it.
func (t *Tx) CheckThreadExpiryIndex() error {
	want := map[string]bool{}
	err := t.bucket(bucketThreads).ForEach(func(_, v []byte) error {
		var th Thread
		if err := decode(v, &th); err != nil {
			return err
		}
		if k := expiryIndexKey(&th); k != nil {
			want[string(k)] = true
		}
		return nil
	})
	if err != nil {
		return err
	}
	return t.checkIndexHolds(bucketThreadsByExpiry, want)
}
