package storage

import (
	"bytes"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Prefetching (PostgreSQL): a transaction that knows which keys and key
// prefixes its next steps read asks for all of them in one round trip. The
// rows land in the transaction's overlay, which then answers the Gets, and
// a prefix read whole becomes a complete range of the overlay, which then
// answers a scan of that prefix (scanPrefix) without asking the server.
// Writes the transaction makes afterwards go through the overlay as
// always, so what it answers stays the transaction's state.

// bucketKey names a key (or a key prefix) of a bucket.
type bucketKey struct {
	bucket []byte
	k      []byte
}

// completeRange is a key range of a bucket, [from, to), every key of which
// the overlay knows.
type completeRange struct {
	bucket   string
	from, to []byte
}

// holds reports whether the range holds every key starting with prefix.
func (r *completeRange) holds(bucket string, prefix []byte) bool {
	if r.bucket != bucket || bytes.Compare(prefix, r.from) < 0 {
		return false
	}
	end := prefixEnd(prefix)
	return end != nil && bytes.Compare(end, r.to) <= 0
}

// PrefetchThreadDeletion reads in one round trip what a run's end that
// deletes its thread reads (RunHeldBy of the run, then DeleteThread): the
// run's active entry, the thread's record and the thread's crons and runs
// index entries. On bbolt, where reads are local, it does nothing.
func (t *Tx) PrefetchThreadDeletion(threadID, runID uuid.UUID) {
	t.prefetch([]bucketKey{{bucketRunsActive, runID[:]}, {bucketThreads, threadID[:]}},
		[]bucketKey{{bucketCronsByThread, threadID[:]}, {bucketRunsByThread, threadID[:]}})
}

// PrefetchThreadRuns reads in one round trip the thread's record, its runs
// index entries and the active entries of runIDs: what a run's creation on
// an existing thread reads before ActiveThreadRuns, and a run's end
// (RunHeldBy, then the thread's settling). On bbolt it does nothing.
func (t *Tx) PrefetchThreadRuns(threadID uuid.UUID, runIDs ...uuid.UUID) {
	keys := []bucketKey{{bucketThreads, threadID[:]}}
	for _, id := range runIDs {
		keys = append(keys, bucketKey{bucketRunsActive, id[:]})
	}
	t.prefetch(keys, []bucketKey{{bucketRunsByThread, threadID[:]}})
}

// prefetchKeys reads the keys ids of bucket in one round trip (PostgreSQL).
func (t *Tx) prefetchKeys(bucket []byte, ids []uuid.UUID) {
	if len(ids) < 2 {
		return // one Get costs the same round trip
	}
	keys := make([]bucketKey, len(ids))
	for i := range ids {
		keys[i] = bucketKey{bucket, ids[i][:]}
	}
	t.prefetch(keys, nil)
}

// prefetch reads keys and prefixes on PostgreSQL; elsewhere it does
// nothing.
func (t *Tx) prefetch(keys, prefixes []bucketKey) {
	if p, ok := t.kv.(*pgTxn); ok {
		p.prefetch(keys, prefixes)
	}
}

// prefetch reads keys and every key under prefixes into the overlay, in
// one round trip that leaves the queued writes queued; while the
// transaction gathers prefetches, it only notes them. Keys the overlay
// knows already, and prefixes it holds, are not asked for. A failure fails
// the transaction.
func (t *pgTxn) prefetch(keys, prefixes []bucketKey) {
	if t.err != nil {
		return
	}
	g := &t.gathered
	for _, bk := range keys {
		if _, known := t.overlay.get(string(bk.bucket), bk.k); !known {
			g.pb, g.pk = append(g.pb, string(bk.bucket)), append(g.pk, bk.k)
		}
	}
	for _, bk := range prefixes {
		end := prefixEnd(bk.k)
		if end == nil || t.overlay.holds(string(bk.bucket), bk.k) {
			continue // all 0xff (not prefetched), or known already
		}
		g.rb, g.rlo, g.rhi = append(g.rb, string(bk.bucket)), append(g.rlo, present(bk.k)), append(g.rhi, end)
	}
	if !t.gathering {
		t.sendPrefetches()
	}
}

// gatheredReads are the keys and ranges prefetches asked for, not yet
// sent.
type gatheredReads struct {
	pb       []string
	pk       [][]byte
	rb       []string
	rlo, rhi [][]byte
}

func (t *pgTxn) gatherPrefetches() { t.gathering = true }

// sendPrefetches reads what the prefetches since the last call asked for,
// in one round trip, and ends gathering.
func (t *pgTxn) sendPrefetches() {
	g := t.gathered
	t.gathered, t.gathering = gatheredReads{}, false
	if t.err != nil || len(g.pb) == 0 && len(g.rb) == 0 {
		return
	}
	ranges := make([]completeRange, len(g.rb))
	for i := range g.rb {
		ranges[i] = completeRange{bucket: g.rb[i], from: g.rlo[i], to: g.rhi[i]}
	}
	type row struct {
		bucket string
		k, v   []byte
	}
	var rows []row
	// The queued writes stay queued: the overlay knows every key they
	// touch and wins over the server's rows below.
	sql, args := prefetchQuery(g, !t.readOnly)
	err := t.read(sql, args, func(r pgx.Rows) error {
		for r.Next() {
			var x row
			if err := r.Scan(&x.bucket, &x.k, &x.v); err != nil {
				return err
			}
			rows = append(rows, x)
		}
		return r.Err()
	})
	if err != nil {
		return
	}
	for _, x := range rows {
		if _, known := t.overlay.get(x.bucket, x.k); !known {
			t.overlay.read(x.bucket, x.k, present(x.v))
		}
	}
	for i := range g.pb {
		if _, known := t.overlay.get(g.pb[i], g.pk[i]); !known {
			t.overlay.read(g.pb[i], g.pk[i], nil) // absent at the server
		}
	}
	t.overlay.complete = append(t.overlay.complete, ranges...)
}

// nonNil makes a nil slice empty (encoded as [] rather than null).
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// holds reports whether a prefetched range holds every key of bucket
// starting with prefix.
func (o *pgOverlay) holds(bucket string, prefix []byte) bool {
	for _, r := range o.complete {
		if r.holds(bucket, prefix) {
			return true
		}
	}
	return false
}

// scanKnownPrefix calls fn, in key order, for every key starting with
// prefix when a prefetched range holds them all (handled); otherwise it
// does nothing, and the caller reads the server.
func (b *pgBucket) scanKnownPrefix(prefix []byte, fn func(k, v []byte) error) (handled bool, err error) {
	o := &b.t.overlay
	if !o.holds(b.name, prefix) || b.t.err != nil {
		return false, nil
	}
	for _, p := range o.keysWithPrefix(b.name, prefix) {
		if err := fn(p.k, p.v); err != nil {
			return true, err
		}
	}
	return true, nil
}

// keysWithPrefix lists the present keys the overlay holds of a bucket that
// start with prefix, in order, with their values.
func (o *pgOverlay) keysWithPrefix(bucket string, prefix []byte) []kvPair {
	start := bucket + "\x00" + string(prefix)
	var out []kvPair
	for key, kv := range o.known {
		if kv.present && strings.HasPrefix(key, start) {
			out = append(out, kvPair{k: []byte(key[len(bucket)+1:]), v: kv.v})
		}
	}
	slices.SortFunc(out, func(a, b kvPair) int { return bytes.Compare(a.k, b.k) })
	return out
}
