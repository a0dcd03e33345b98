package storage

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// maxIndexedValueLen bounds the encoded size of a metadata value that gets a
// secondary-index entry. Longer values are matched by scanning instead.
const maxIndexedValueLen = 256

func idKey(id uuid.UUID) []byte {
	k := make([]byte, 16)
	copy(k, id[:])
	return k
}

func pairKey(a, b uuid.UUID) []byte {
	k := make([]byte, 32)
	copy(k, a[:])
	copy(k[16:], b[:])
	return k
}

func putTime(dst []byte, t time.Time) {
	binary.BigEndian.PutUint64(dst, uint64(t.UnixNano()))
}

// timeIDKey encodes prefix | t (8 bytes) | id (16 bytes).
func timeIDKey(prefix []byte, t time.Time, id uuid.UUID) []byte {
	k := make([]byte, len(prefix)+24)
	copy(k, prefix)
	putTime(k[len(prefix):], t)
	copy(k[len(prefix)+8:], id[:])
	return k
}

// splitTimeID decodes the 24-byte suffix written by timeIDKey.
func splitTimeID(k []byte) (time.Time, uuid.UUID) {
	s := k[len(k)-24:]
	var id uuid.UUID
	copy(id[:], s[8:])
	return time.Unix(0, int64(binary.BigEndian.Uint64(s[:8]))).UTC(), id
}

func encode(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode record: %w", err)
	}
	return b, nil
}

// decode unmarshals a value read from the database. json.Unmarshal copies, so the
// result never aliases the memory map.
func decode(raw []byte, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("decode record: %w", err)
	}
	return nil
}

// indexedValue returns the index encoding of a metadata value, or false when
// the value is not indexed (objects, arrays, long strings, keys that cannot be
// framed). Writers and readers both call it, so a value is looked up in the
// index exactly when it would have been written there.
func indexedValue(key string, v any) ([]byte, bool) {
	if key == "" || len(key) > maxIndexedValueLen || bytes.IndexByte([]byte(key), 0) >= 0 {
		return nil, false
	}
	switch v.(type) {
	case string, float64, bool, nil, json.Number:
	default:
		return nil, false
	}
	b, err := json.Marshal(v)
	if err != nil || len(b) > maxIndexedValueLen || bytes.IndexByte(b, 0) >= 0 {
		return nil, false
	}
	k := make([]byte, 0, len(key)+len(b)+2)
	k = append(k, key...)
	k = append(k, 0)
	k = append(k, b...)
	k = append(k, 0)
	return k, true
}
