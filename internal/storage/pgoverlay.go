package storage

import (
	"bytes"
	"strings"

	"github.com/jackc/pgx/v5"
)

// The net point writes of a batch: one statement upserts every key put,
// one deletes every key deleted, after the batch's range deletes.
const (
	pgPutManySQL = `INSERT INTO kv (bucket, k, v) SELECT * FROM unnest($1::text[], $2::bytea[], $3::bytea[])
		ON CONFLICT (bucket, k) DO UPDATE SET v = excluded.v`
	pgDeleteManySQL = `DELETE FROM kv WHERE (bucket, k) IN (SELECT * FROM unnest($1::text[], $2::bytea[]))`
	// pgDeleteRangesSQL deletes every key in each range [lo, hi).
	pgDeleteRangesSQL = `DELETE FROM kv USING unnest($1::text[], $2::bytea[], $3::bytea[]) AS r(b, lo, hi)
		WHERE kv.bucket = r.b AND kv.k >= r.lo AND kv.k < r.hi`
)

// pgOverlay is what a PostgreSQL transaction knows of its keys without
// asking the server: the values it wrote (puts and deletes still queued or
// already sent) and those it read. A Get it can answer costs no round trip,
// and a Get it cannot answer goes to the server without first sending the
// queued writes, since none of them touches that key (pending range
// deletes are kept to tell). Cursors still send the queued writes first.
type pgOverlay struct {
	known map[string]knownValue
	// ranges are the range deletes queued since the last flush, per
	// bucket: a key in one of them that known does not hold is absent.
	ranges []pendingRange
	// dirty holds the keys (as in known) written since the last flush.
	dirty map[string]struct{}
	// complete lists the prefetched ranges every key of which is in
	// known (see pgprefetch.go).
	complete []completeRange
}

// knownValue is a key's value in the transaction; absent keys have
// present false.
type knownValue struct {
	v       []byte
	present bool
}

type pendingRange struct {
	bucket   string
	from, to []byte // to nil: to the end of the bucket
}

func overlayKey(bucket string, k []byte) string {
	return bucket + "\x00" + string(k)
}

// get answers for a key when the transaction knows it (ok).
func (o *pgOverlay) get(bucket string, k []byte) (v []byte, ok bool) {
	if kv, hit := o.known[overlayKey(bucket, k)]; hit {
		if !kv.present {
			return nil, true
		}
		return kv.v, true
	}
	for _, r := range o.ranges {
		if r.bucket == bucket && bytes.Compare(k, r.from) >= 0 && (r.to == nil || bytes.Compare(k, r.to) < 0) {
			return nil, true
		}
	}
	return nil, false
}

// set records a key's value in the transaction (v nil: absent).
func (o *pgOverlay) set(bucket string, k, v []byte) {
	if o.known == nil {
		o.known = map[string]knownValue{}
	}
	o.known[overlayKey(bucket, k)] = knownValue{v: v, present: v != nil}
}

// write records a put (v not nil) or a delete to send with the next batch.
func (o *pgOverlay) write(bucket string, k, v []byte) {
	o.set(bucket, k, v)
	if o.dirty == nil {
		o.dirty = map[string]struct{}{}
	}
	o.dirty[overlayKey(bucket, k)] = struct{}{}
}

// writeDirty queues on b the bounded range deletes since the last flush,
// in one statement, then the net effect of the point writes: each key's
// final value, whatever puts and deletes led to it. The point writes come
// after every range delete (those to a bucket's end are queued when made),
// which is correct since a key a range delete removed that was put again
// is dirty, present. writeDirty must be followed by flushed.
func (o *pgOverlay) writeDirty(b *pgx.Batch) {
	var rb []string
	var rlo, rhi [][]byte
	for _, r := range o.ranges {
		if r.to != nil {
			rb, rlo, rhi = append(rb, r.bucket), append(rlo, r.from), append(rhi, r.to)
		}
	}
	if len(rb) > 0 {
		b.Queue(pgDeleteRangesSQL, rb, rlo, rhi)
	}
	if len(o.dirty) == 0 {
		return
	}
	var putB, putK, putV, delB, delK = []string{}, [][]byte{}, [][]byte{}, []string{}, [][]byte{}
	for key := range o.dirty {
		bucket, k, _ := cutOverlayKey(key)
		if kv := o.known[key]; kv.present {
			putB, putK, putV = append(putB, bucket), append(putK, k), append(putV, kv.v)
		} else {
			delB, delK = append(delB, bucket), append(delK, k)
		}
	}
	clear(o.dirty)
	if len(putB) > 0 {
		b.Queue(pgPutManySQL, putB, putK, putV)
	}
	if len(delB) > 0 {
		b.Queue(pgDeleteManySQL, delB, delK)
	}
}

// cutOverlayKey splits an overlay key into its bucket and key.
func cutOverlayKey(key string) (bucket string, k []byte, ok bool) {
	i := strings.IndexByte(key, 0)
	if i < 0 {
		return "", nil, false
	}
	return key[:i], []byte(key[i+1:]), true
}

// deleteRange records a range delete: every known key in it is now
// absent, and so is every other key until the delete is sent.
func (o *pgOverlay) deleteRange(bucket string, from, to []byte) {
	prefix := bucket + "\x00"
	for key, kv := range o.known {
		if !kv.present || len(key) < len(prefix) || key[:len(prefix)] != prefix {
			continue
		}
		k := []byte(key[len(prefix):])
		if bytes.Compare(k, from) >= 0 && (to == nil || bytes.Compare(k, to) < 0) {
			o.known[key] = knownValue{}
		}
	}
	o.ranges = append(o.ranges, pendingRange{bucket: bucket, from: from, to: to})
}

// flushed forgets the range deletes once the server has applied them.
func (o *pgOverlay) flushed() {
	o.ranges = o.ranges[:0]
}
