package storage

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"testing"
)

func kvKey(i int) []byte {
	k := make([]byte, 4)
	binary.BigEndian.PutUint32(k, uint32(i))
	return k
}

// putKV writes keys 0, 2, 4, … 2(n-1) into the (empty) subagents bucket of a fresh database,
// with the key's number as value (key 0 has an empty value).
func putKV(t *testing.T, db *DB, n int) {
	t.Helper()
	err := db.be.update(func(kv kvTx) error {
		b := kv.bucket(bucketSubagents)
		for i := 0; i < n; i++ {
			v := []byte(fmt.Sprint(2 * i))
			if i == 0 {
				v = nil
			}
			if err := b.Put(kvKey(2*i), v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func walk(c kvCursor, k []byte, step func() ([]byte, []byte)) []int {
	var out []int
	for ; k != nil; k, _ = step() {
		if len(k) == 4 {
			out = append(out, int(binary.BigEndian.Uint32(k)))
		}
	}
	return out
}

// The seam's cursors walk every key in order both ways across pages, seek
// to the first key at or after a bound, and a present empty value is not
// nil.
func TestKVCursorWalksBothWays(t *testing.T) { forEachBackend(t, testKVCursorWalksBothWays) }

func testKVCursorWalksBothWays(t *testing.T, db *DB) {
	const n = 300 // several pages of the largest size
	putKV(t, db, n)
	err := db.be.view(context.Background(), func(kv kvTx) error {
		b := kv.bucket(bucketSubagents)
		if v := b.Get(kvKey(0)); v == nil || len(v) != 0 {
			return fmt.Errorf("empty value = %#v, want non-nil empty", v)
		}
		if v := b.Get(kvKey(1)); v != nil {
			return fmt.Errorf("absent key = %q, want nil", v)
		}
		c := b.Cursor()
		k, _ := c.First()
		if got := walk(c, k, c.Next); len(got) != n || got[0] != 0 || got[n-1] != 2*(n-1) {
			return fmt.Errorf("forward walk: %d keys from %v", len(got), got[:min(3, len(got))])
		}
		k, _ = c.Last()
		if got := walk(c, k, c.Prev); len(got) != n || got[0] != 2*(n-1) || got[n-1] != 0 {
			return fmt.Errorf("backward walk: %d keys", len(got))
		}
		k, v := c.Seek(kvKey(101))
		if !bytes.Equal(k, kvKey(102)) || string(v) != "102" {
			return fmt.Errorf("seek 101 = %x %q, want key 102", k, v)
		}
		for range 3 {
			c.Next()
		}
		if k, _ := c.Prev(); !bytes.Equal(k, kvKey(106)) {
			return fmt.Errorf("prev after turning = %x, want 106", k)
		}
		if k, _ := c.Seek(kvKey(2 * n)); k != nil {
			return fmt.Errorf("seek past the end = %x, want nil", k)
		}
		return kv.failure()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A transaction reads its own writes, and a cursor continues correctly
// after the bucket changed under it.
func TestKVReadsOwnWrites(t *testing.T) { forEachBackend(t, testKVReadsOwnWrites) }

func testKVReadsOwnWrites(t *testing.T, db *DB) {
	putKV(t, db, 10)
	err := db.be.update(func(kv kvTx) error {
		b := kv.bucket(bucketSubagents)
		if err := b.Put(kvKey(3), []byte("3")); err != nil {
			return err
		}
		if v := b.Get(kvKey(3)); string(v) != "3" {
			return fmt.Errorf("own write = %q", v)
		}
		c := b.Cursor()
		c.Seek(kvKey(4))
		if err := c.Delete(); err != nil {
			return err
		}
		k, _ := c.Seek(kvKey(3))
		if got := walk(c, k, c.Next); fmt.Sprint(got) != "[3 6 8 10 12 14 16 18]" {
			return fmt.Errorf("after delete: %v", got)
		}
		return kv.failure()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// deletePrefix removes exactly the keys with the prefix, also when the
// prefix has no successor (all 0xff).
func TestKVDeletePrefix(t *testing.T) { forEachBackend(t, testKVDeletePrefix) }

func testKVDeletePrefix(t *testing.T, db *DB) {
	keys := []string{"a", "ab", "abc", "ac", "b", "\xff", "\xff\xff", "\xff\xff\x00"}
	err := db.be.update(func(kv kvTx) error {
		b := kv.bucket(bucketSubagents)
		for _, k := range keys {
			if err := b.Put([]byte(k), nil); err != nil {
				return err
			}
		}
		if err := deletePrefix(b, []byte("ab")); err != nil {
			return err
		}
		return deletePrefix(b, []byte("\xff\xff"))
	})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	err = db.be.view(context.Background(), func(kv kvTx) error {
		return kv.bucket(bucketSubagents).ForEach(func(k, _ []byte) error {
			left = append(left, string(k))
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "ac", "b", "\xff"}; fmt.Sprintf("%q", left) != fmt.Sprintf("%q", want) {
		t.Fatalf("left %q, want %q", left, want)
	}
}

// Reads in a write transaction see its own puts, deletes and range
// deletes in any order, before and after they reach the server (a cursor
// sends them), and keys the transaction never touched read as stored.
func TestKVReadsThroughPendingWrites(t *testing.T) {
	forEachBackend(t, testKVReadsThroughPendingWrites)
}

func testKVReadsThroughPendingWrites(t *testing.T, db *DB) {
	putKV(t, db, 10) // keys 0, 2, …, 18
	get := func(b kvBucket, i int) string {
		v := b.Get(kvKey(i))
		if v == nil {
			return "-"
		}
		return string(v)
	}
	err := db.be.update(func(kv kvTx) error {
		b := kv.bucket(bucketSubagents)
		steps := []struct {
			do   func() error
			key  int
			want string
		}{
			{nil, 4, "4"}, // stored, read from the server
			{func() error { return b.Put(kvKey(4), []byte("four")) }, 4, "four"},
			{func() error { return b.Put(kvKey(5), []byte("five")) }, 5, "five"},
			{func() error { return b.Delete(kvKey(6)) }, 6, "-"},
			{func() error { return deleteKeys(b, kvKey(4), kvKey(9)) }, 5, "-"},
			{nil, 8, "-"},   // stored, never read, inside the pending range
			{nil, 10, "10"}, // stored, outside it
			{func() error { return b.Put(kvKey(7), []byte("seven")) }, 7, "seven"},
			{func() error { _, _ = b.Cursor().First(); return nil }, 8, "-"}, // the writes are sent
			{nil, 7, "seven"},
			{nil, 12, "12"},
			{func() error { return deleteKeys(b, kvKey(12), nil) }, 18, "-"},
			{nil, 2, "2"},
		}
		for i, st := range steps {
			if st.do != nil {
				if err := st.do(); err != nil {
					return err
				}
			}
			if got := get(b, st.key); got != st.want {
				return fmt.Errorf("step %d: key %d = %q, want %q", i, st.key, got, st.want)
			}
		}
		return kv.failure()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// deleteKeys deletes the keys in [from, to) (to nil: to the end), at once
// where the backend can.
func deleteKeys(b kvBucket, from, to []byte) error {
	if rd, ok := b.(rangeDeleter); ok {
		return rd.deleteRange(from, to)
	}
	c := b.Cursor()
	for k, _ := c.Seek(from); k != nil && (to == nil || bytes.Compare(k, to) < 0); k, _ = c.Seek(from) {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}
