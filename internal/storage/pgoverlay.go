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
	// pgInsertManySQL writes the keys the transaction read as absent: a
	// key another transaction inserted meanwhile is a unique violation
	// (on the primary key, isKeyTaken) that fails the transaction, and the writer tries
	// it again, when it reads the key as present.
	pgInsertManySQL = `INSERT INTO kv (bucket, k, v) SELECT * FROM unnest($1::text[], $2::bytea[], $3::bytea[])`
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
// present false. serverAbsent is set when the transaction read the key as
// absent from the server and has not written it there since: a put of it
// is then an insert that must not find a row (pgInsertManySQL), since a
// transaction that decided on the key's absence (a thread created with
// if_exists "raise", a version not yet taken) must not overwrite a row
// another replica inserted meanwhile. A read of an absent key locks
// nothing, so this check is what keeps such decisions sound without a
// lock on the whole table.
type knownValue struct {
	v            []byte
	present      bool
	serverAbsent bool
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

// read records a key's value as the server answered it (v nil: absent).
func (o *pgOverlay) read(bucket string, k, v []byte) {
	if o.known == nil {
		o.known = map[string]knownValue{}
	}
	o.known[overlayKey(bucket, k)] = knownValue{v: v, present: v != nil, serverAbsent: v == nil}
}

// write records a put (v not nil) or a delete to send with the next batch.
func (o *pgOverlay) write(bucket string, k, v []byte) {
	if o.known == nil {
		o.known = map[string]knownValue{}
	}
	key := overlayKey(bucket, k)
	o.known[key] = knownValue{v: v, present: v != nil, serverAbsent: o.known[key].serverAbsent}
	if o.dirty == nil {
		o.dirty = map[string]struct{}{}
	}
	o.dirty[overlayKey(bucket, k)] = struct{}{}
}

// writeDirty queues on b, per relation, the bounded range deletes since
// the last flush in one statement, then the net effect of the point writes: each key's
// final value, whatever puts and deletes led to it. The point writes come
// after every range delete (those to a bucket's end are queued when made),
// which is correct since a key a range delete removed that was put again
// is dirty, present. writeDirty must be followed by flushed.
func (o *pgOverlay) writeDirty(b *pgx.Batch) {
	writes := byRelation[relationWrites]{}
	for _, r := range o.ranges {
		if r.to != nil {
			writes.of(r.bucket).ranges.add(r.bucket, r.from, r.to)
		}
	}
	for key := range o.dirty {
		bucket, k, _ := cutOverlayKey(key)
		w := writes.of(bucket)
		switch kv := o.known[key]; {
		case kv.present && kv.serverAbsent:
			w.insert.add(bucket, k, kv.v)
			kv.serverAbsent = false // the row is the transaction's now
			o.known[key] = kv
		case kv.present:
			w.put.add(bucket, k, kv.v)
		default:
			w.del.add(bucket, k, nil)
		}
	}
	clear(o.dirty)
	for _, rel := range writes.sorted() {
		w := writes[rel]
		w.ranges.queue(b, rel, rel.deleteRangesSQL)
		w.put.queue(b, rel, rel.putManySQL)
		w.insert.queue(b, rel, rel.insertManySQL)
		w.del.queue(b, rel, rel.deleteManySQL)
	}
}

// relationWrites are the writes of one batch to one relation.
type relationWrites struct {
	ranges, put, insert, del pointWrites
}

// pointWrites are the columns of one multi-row statement of a batch: the
// buckets (for kv), the keys and the values (or, for range deletes, the
// ranges' ends; for deletes, nothing).
type pointWrites struct {
	buckets []string
	keys    [][]byte
	values  [][]byte
}

func (w *pointWrites) add(bucket string, k, v []byte) {
	w.buckets, w.keys = append(w.buckets, bucket), append(w.keys, k)
	if v != nil {
		w.values = append(w.values, v)
	}
}

// queue queues sql of rel with the rows on b, when there are any.
func (w *pointWrites) queue(b *pgx.Batch, rel *pgRelation, sql string) {
	if len(w.keys) == 0 {
		return
	}
	args := []any{w.keys}
	if w.values != nil {
		args = append(args, w.values)
	}
	b.Queue(sql, rel.args(w.buckets, args...)...)
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
