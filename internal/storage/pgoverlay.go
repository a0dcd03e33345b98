package storage

import "bytes"

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
