package storage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// UnreadableRunError is the ErrorName of a run whose stored record could not
// be decoded at start-up and was failed instead of being run.
const UnreadableRunError = "RunRecordUnreadable"

// FailUnreadableActiveRuns finds the pending and running runs whose records
// cannot be decoded (written by a build that accepted input nested deeper
// than the JSON decoder reads back), and rewrites each as an error run made
// of the top-level fields that can still be read: its input, config and
// metadata are dropped. It returns the rewritten runs, so that the caller
// can settle their threads. Readable runs are left alone.
func (t *Tx) FailUnreadableActiveRuns(now time.Time) ([]Run, error) {
	runs := t.bucket(bucketRuns)
	type broken struct {
		id  uuid.UUID
		raw []byte
		err error
	}
	var found []broken
	c := t.bucket(bucketRunsActive).Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		raw := runs.Get(k)
		if raw == nil || len(k) != 16 {
			continue
		}
		var r Run
		if err := decode(raw, &r); err != nil {
			found = append(found, broken{id: uuid.UUID(k), raw: bytes.Clone(raw), err: err})
		}
	}
	out := make([]Run, 0, len(found))
	for _, b := range found {
		r := salvageRun(b.id, b.raw)
		r.Status, r.UpdatedAt, r.EndedAt = RunError, now, &now
		r.ErrorName = UnreadableRunError
		r.Error = fmt.Sprintf("the stored run could not be read back (%v); it was not started", b.err)
		if err := t.PutRun(r); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// salvageRun rebuilds what it can of a run from a record that does not
// decode: the top-level fields whose values are scalars (ids, times,
// status, attempt). Objects and arrays are skipped token by token, which
// needs no nesting limit.
func salvageRun(id uuid.UUID, raw []byte) Run {
	fields := topLevelScalars(raw)
	var r Run
	if b, err := json.Marshal(fields); err == nil {
		_ = json.Unmarshal(b, &r) // a field of the wrong type stays zero
	}
	r.RunID = id
	if r.Metadata == nil {
		r.Metadata = map[string]any{}
	}
	return r
}

// topLevelScalars returns the top-level fields of a JSON object whose
// values are not objects or arrays, reading as far as the data allows.
func topLevelScalars(raw []byte) map[string]any {
	out := map[string]any{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return out
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return out
		}
		val, err := dec.Token()
		if err != nil {
			return out
		}
		if _, nested := val.(json.Delim); nested {
			if skipNested(dec) != nil {
				return out
			}
			continue
		}
		if name, ok := key.(string); ok {
			out[name] = val
		}
	}
	return out
}

// skipNested consumes tokens until the object or array just opened closes.
func skipNested(dec *json.Decoder) error {
	for depth := 1; depth > 0; {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	return nil
}
