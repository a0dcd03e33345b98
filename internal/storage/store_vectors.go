package storage

import (
	"encoding/binary"
	"fmt"
	"math"
)

// PutStoreVectors sets the embedding vectors of the item at namespace and
// key (one per embedded field text), replacing any it had; no vectors
// removes them. All vectors have the same length.
func (t *Tx) PutStoreVectors(namespace []string, key string, vecs [][]float32) error {
	k, err := storeItemKey(namespace, key)
	if err != nil {
		return err
	}
	b := t.bucket(bucketStoreVectors)
	if len(vecs) == 0 {
		return b.Delete(k)
	}
	raw, err := encodeVectors(vecs)
	if err != nil {
		return err
	}
	return b.Put(k, raw)
}

// storeVectors returns the vectors of the item stored under item key k,
// nil when it has none.
func (t *Tx) storeVectors(k []byte) ([][]float32, error) {
	raw := t.bucket(bucketStoreVectors).Get(k)
	if raw == nil {
		return nil, nil
	}
	return decodeVectors(raw)
}

// encodeVectors writes count(4) | dims(4) | count×dims float32, all little
// endian.
func encodeVectors(vecs [][]float32) ([]byte, error) {
	dims := len(vecs[0])
	out := make([]byte, 8, 8+4*dims*len(vecs))
	binary.LittleEndian.PutUint32(out, uint32(len(vecs)))
	binary.LittleEndian.PutUint32(out[4:], uint32(dims))
	for _, v := range vecs {
		if len(v) != dims {
			return nil, fmt.Errorf("store vectors of lengths %d and %d: %w", dims, len(v), ErrInvalidVectors)
		}
		for _, x := range v {
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(x))
		}
	}
	return out, nil
}

func decodeVectors(raw []byte) ([][]float32, error) {
	if len(raw) < 8 {
		return nil, fmt.Errorf("store vectors: %d bytes: %w", len(raw), ErrInvalidVectors)
	}
	n, dims := int(binary.LittleEndian.Uint32(raw)), int(binary.LittleEndian.Uint32(raw[4:]))
	body := raw[8:]
	if len(body) != 4*n*dims {
		return nil, fmt.Errorf("store vectors: %d bytes for %d×%d: %w", len(body), n, dims, ErrInvalidVectors)
	}
	out := make([][]float32, n)
	for i := range out {
		v := make([]float32, dims)
		for j := range v {
			v[j] = math.Float32frombits(binary.LittleEndian.Uint32(body[4*(i*dims+j):]))
		}
		out[i] = v
	}
	return out, nil
}

// CheckStoreVectors verifies that every vector record belongs to a stored
// item and decodes. Tests call it.
func (t *Tx) CheckStoreVectors() error {
	items := t.bucket(bucketStoreItems)
	return t.bucket(bucketStoreVectors).ForEach(func(k, v []byte) error {
		if items.Get(k) == nil {
			return fmt.Errorf("store vectors %q have no item", k)
		}
		_, err := decodeVectors(v)
		return err
	})
}

// CountStoreVectors returns how many items have vectors.
func (t *Tx) CountStoreVectors() int {
	return t.countKeys(bucketStoreVectors)
}

// StoreVectors returns the vectors of the item at namespace and key, nil
// when it has none.
func (t *Tx) StoreVectors(namespace []string, key string) ([][]float32, error) {
	k, err := storeItemKey(namespace, key)
	if err != nil {
		return nil, err
	}
	return t.storeVectors(k)
}

// ForEachStoreVectors calls fn with the namespace, key and vectors of every
// item that has vectors, in key order, and stops at fn's first error.
func (t *Tx) ForEachStoreVectors(fn func(namespace []string, key string, vecs [][]float32) error) error {
	return t.bucket(bucketStoreVectors).ForEach(func(k, v []byte) error {
		ns, ok := splitStoreItemKey(k)
		if !ok {
			return fmt.Errorf("store vectors key %q: %w", k, ErrInvalidVectors)
		}
		vecs, err := decodeVectors(v)
		if err != nil {
			return err
		}
		return fn(decodeStoreNamespace(ns), string(k[len(ns)+1:]), vecs)
	})
}
