package storage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"unsafe"

	"github.com/google/uuid"
)

// EncodedCheckpoint is a checkpoint serialized ahead of its transaction
// (CheckpointEncoder), so that the encoding work stays out of the single
// writer goroutine.
type EncodedCheckpoint struct {
	ThreadID, CheckpointID uuid.UUID
	CheckpointNS           string
	raw                    []byte
}

// PutEncodedCheckpoint stores a checkpoint encoded by a CheckpointEncoder.
func (t *Tx) PutEncodedCheckpoint(e EncodedCheckpoint) error {
	if e.CheckpointNS != "" {
		return t.putNested(e.ThreadID, e.CheckpointNS, e.CheckpointID, e.raw)
	}
	return t.bucket(bucketCheckpoints).Put(pairKey(e.ThreadID, e.CheckpointID), e.raw)
}

// CheckpointEncoder serializes the successive checkpoints of one run. A
// run's checkpoints repeat most of their values: each holds the whole
// message list, which grows by a message or two per step. The encoder keeps
// the encoding of every object it met as an element of a top-level list
// channel (a message, a todo) and reuses it while the same object is still
// in the state, so a step costs the encoding of what it added rather than
// of the whole conversation. The output decodes to exactly what
// json.Marshal of the checkpoint decodes to.
//
// This relies on the executor's rule that state values are never modified
// in place: a changed message is a new map (channels.AddMessages replaces
// it). An encoder belongs to one run and is not safe for concurrent use; it
// holds the objects it memoized until it is dropped.
type CheckpointEncoder struct {
	memo map[unsafe.Pointer][]byte
	buf  bytes.Buffer
}

// Encode serializes cp.
func (e *CheckpointEncoder) Encode(cp Checkpoint) (EncodedCheckpoint, error) {
	if e.memo == nil {
		e.memo = map[unsafe.Pointer][]byte{}
	}
	rest := cp
	rest.Values = nil // encoded below
	outer, err := json.Marshal(rest)
	if err != nil {
		return EncodedCheckpoint{}, fmt.Errorf("encode checkpoint: %w", err)
	}
	// outer is {"thread_id":…,"values":null,"metadata":…}; the first
	// occurrence is the field itself, since only strings (which escape
	// their quotes) come before it. The values go in its place.
	at := bytes.Index(outer, nullValuesField)
	if at < 0 {
		return EncodedCheckpoint{}, fmt.Errorf("encode checkpoint: no values field in %.80s", outer)
	}
	b := &e.buf
	b.Reset()
	b.Write(outer[:at+len(valuesKey)])
	if err := e.values(cp.Values); err != nil {
		return EncodedCheckpoint{}, fmt.Errorf("encode checkpoint: %w", err)
	}
	b.Write(outer[at+len(nullValuesField):])
	return EncodedCheckpoint{ThreadID: cp.ThreadID, CheckpointID: cp.CheckpointID, CheckpointNS: cp.CheckpointNS, raw: slices.Clone(b.Bytes())}, nil
}

var (
	valuesKey       = []byte(`"values":`)
	nullValuesField = []byte(`"values":null`)
)

// values writes the values object: keys sorted as encoding/json sorts them,
// list channels element by element through the memo.
func (e *CheckpointEncoder) values(values map[string]any) error {
	b := &e.buf
	if values == nil {
		b.WriteString("null")
		return nil
	}
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, err := json.Marshal(k)
		if err != nil {
			return err
		}
		b.Write(kb)
		b.WriteByte(':')
		if err := e.channel(values[k]); err != nil {
			return err
		}
	}
	b.WriteByte('}')
	return nil
}

func (e *CheckpointEncoder) channel(v any) error {
	b := &e.buf
	list, ok := v.([]any)
	if !ok {
		raw, err := json.Marshal(v)
		if err != nil {
			return err
		}
		b.Write(raw)
		return nil
	}
	b.WriteByte('[')
	for i, el := range list {
		if i > 0 {
			b.WriteByte(',')
		}
		raw, err := e.element(el)
		if err != nil {
			return err
		}
		b.Write(raw)
	}
	b.WriteByte(']')
	return nil
}

// element encodes one list element, memoized when it is an object.
func (e *CheckpointEncoder) element(el any) ([]byte, error) {
	m, ok := el.(map[string]any)
	if !ok || m == nil {
		return json.Marshal(el)
	}
	key := reflect.ValueOf(m).UnsafePointer()
	if raw, ok := e.memo[key]; ok {
		return raw, nil
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	e.memo[key] = raw
	return raw, nil
}
