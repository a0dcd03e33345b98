package storage

import (
	"bytes"
	"context"
)

// The key-value seam: every record accessor of this package reads and writes
// through t.bucket(name), which returns a kvBucket of the backend the
// database was opened with. The method names and signatures are bbolt's:
// *bolt.Cursor is a kvCursor as it is, and *bolt.Bucket is a kvBucket but for
// Cursor's result type, which boltBucket adapts.

// kvBucket is one ordered key space. Keys are compared as unsigned bytes.
type kvBucket interface {
	// Get returns the value of k, or nil when absent. A present key with an
	// empty value yields a non-nil empty slice.
	Get(k []byte) []byte
	// Put sets k to v. k and v must stay unchanged until the transaction ends.
	Put(k, v []byte) error
	// Delete removes k; deleting an absent key is a no-op.
	Delete(k []byte) error
	// ForEach calls fn for every pair in key order, stopping at its first error.
	ForEach(fn func(k, v []byte) error) error
	// Cursor returns a cursor over the bucket, not yet positioned.
	Cursor() kvCursor
}

// kvCursor walks a bucket in key order. Every move returns the key and value
// it lands on, or a nil key when it runs off either end. After a write in the
// same transaction, reposition the cursor (Seek, First, Last) as bbolt asks.
type kvCursor interface {
	First() (k, v []byte)
	Last() (k, v []byte)
	Seek(seek []byte) (k, v []byte)
	Next() (k, v []byte)
	Prev() (k, v []byte)
	// Delete removes the pair the cursor is on.
	Delete() error
}

// rangeDeleter is a kvBucket that deletes every key in [from, to) at once
// (to nil: to the end); deletePrefix uses it where a backend has it, instead
// of one cursor step per key.
type rangeDeleter interface {
	deleteRange(from, to []byte) error
}

// knownPrefixScanner is a kvBucket that may answer a prefix scan without
// a cursor (PostgreSQL, from keys the transaction prefetched).
type knownPrefixScanner interface {
	scanKnownPrefix(prefix []byte, fn func(k, v []byte) error) (handled bool, err error)
}

// scanPrefix calls fn, in key order, for every pair of b whose key starts
// with prefix, stopping at fn's first error. fn must not write to b.
func scanPrefix(b kvBucket, prefix []byte, fn func(k, v []byte) error) error {
	if s, ok := b.(knownPrefixScanner); ok {
		if handled, err := s.scanKnownPrefix(prefix, fn); handled {
			return err
		}
	}
	c := b.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if err := fn(k, v); err != nil {
			return err
		}
	}
	return nil
}

// kvTx is one backend transaction.
type kvTx interface {
	bucket(name []byte) kvBucket
	// failure is the first error a read met (a read has no error result of
	// its own: it returns nil and the transaction fails with this error).
	failure() error
}

// backend is a storage engine under the seam.
type backend interface {
	// view runs fn in a read-only transaction that sees one snapshot.
	view(ctx context.Context, fn func(kvTx) error) error
	// update runs fn in a read-write transaction and commits it durably.
	update(fn func(kvTx) error) error
	// ping checks that the database answers.
	ping() error
	close() error
	// describe names the database in errors and logs (no secrets).
	describe() string
}
