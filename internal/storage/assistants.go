package storage

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/jsonx"
)

// Assistant is the stored form of an assistant: a graph with its
// configuration. The same type is stored for the current record (bucket
// assistants) and for each version (bucket assistant_versions); in a version
// record CreatedAt and UpdatedAt are the time the version was written.
type Assistant struct {
	AssistantID uuid.UUID      `json:"assistant_id"`
	GraphID     string         `json:"graph_id"`
	Config      map[string]any `json:"config"`
	Context     map[string]any `json:"context"`
	CreatedAt   time.Time      `json:"created_at"`
	UpdatedAt   time.Time      `json:"updated_at"`
	Metadata    map[string]any `json:"metadata"`
	Version     int            `json:"version"`
	Name        string         `json:"name"`
	Description *string        `json:"description"`
}

// versionKey encodes assistant_id(16) | version(4, big endian).
func versionKey(id uuid.UUID, version int) ([]byte, error) {
	if version < 1 || version > math.MaxUint32 {
		return nil, fmt.Errorf("assistant %s: version %d out of range", id, version)
	}
	k := make([]byte, 20)
	copy(k, id[:])
	binary.BigEndian.PutUint32(k[16:], uint32(version))
	return k, nil
}

// GetAssistant returns the current record of an assistant, or ErrNotFound.
func (t *Tx) GetAssistant(id uuid.UUID) (Assistant, error) {
	var a Assistant
	raw := t.bucket(bucketAssistants).Get(id[:])
	if raw == nil {
		return a, fmt.Errorf("assistant %s: %w", id, ErrNotFound)
	}
	err := decode(raw, &a)
	return a, err
}

// AssistantExists reports whether an assistant with id exists.
func (t *Tx) AssistantExists(id uuid.UUID) bool {
	return t.bucket(bucketAssistants).Get(id[:]) != nil
}

// PutAssistant creates or replaces the current record of an assistant. It
// does not touch the assistant's versions.
func (t *Tx) PutAssistant(a Assistant) error {
	raw, err := encode(a)
	if err != nil {
		return err
	}
	return t.bucket(bucketAssistants).Put(idKey(a.AssistantID), raw)
}

// PutAssistantVersion stores version a.Version of an assistant. Versions are
// immutable: writing a version that already exists returns ErrConflict.
func (t *Tx) PutAssistantVersion(a Assistant) error {
	k, err := versionKey(a.AssistantID, a.Version)
	if err != nil {
		return err
	}
	b := t.bucket(bucketAssistantVersions)
	if b.Get(k) != nil {
		return fmt.Errorf("assistant %s version %d already exists: %w", a.AssistantID, a.Version, ErrConflict)
	}
	raw, err := encode(a)
	if err != nil {
		return err
	}
	return b.Put(k, raw)
}

// GetAssistantVersion returns one version of an assistant, or ErrNotFound.
func (t *Tx) GetAssistantVersion(id uuid.UUID, version int) (Assistant, error) {
	var a Assistant
	k, err := versionKey(id, version)
	if err != nil {
		return a, fmt.Errorf("assistant %s version %d: %w", id, version, ErrNotFound)
	}
	raw := t.bucket(bucketAssistantVersions).Get(k)
	if raw == nil {
		return a, fmt.Errorf("assistant %s version %d: %w", id, version, ErrNotFound)
	}
	err = decode(raw, &a)
	return a, err
}

// MaxAssistantVersion returns the highest stored version of an assistant,
// or 0 when it has none.
func (t *Tx) MaxAssistantVersion(id uuid.UUID) int {
	k, _ := seekLastWithPrefix(t.bucket(bucketAssistantVersions).Cursor(), id[:])
	if len(k) != 20 {
		return 0
	}
	return int(binary.BigEndian.Uint32(k[16:]))
}

// ListAssistantVersions returns the versions of an assistant newest first
// whose metadata contains metadata (nil matches all), skipping offset and
// returning at most limit (limit <= 0: no limit), together with the number of
// matching versions. An assistant without versions yields an empty list.
func (t *Tx) ListAssistantVersions(id uuid.UUID, metadata map[string]any, limit, offset int) ([]Assistant, int, error) {
	c := t.bucket(bucketAssistantVersions).Cursor()
	var out []Assistant
	total := 0
	for k, v := seekLastWithPrefix(c, id[:]); k != nil && bytes.HasPrefix(k, id[:]); k, v = c.Prev() {
		var a Assistant
		if err := decode(v, &a); err != nil {
			return nil, 0, err
		}
		if len(metadata) > 0 && !jsonx.Contains(a.Metadata, metadata) {
			continue
		}
		total++
		if total <= offset || (limit > 0 && len(out) >= limit) {
			continue
		}
		out = append(out, a)
	}
	return out, total, nil
}

// DeleteAssistant removes an assistant's current record and every version.
// It returns ErrNotFound if there is no such assistant.
func (t *Tx) DeleteAssistant(id uuid.UUID) error {
	b := t.bucket(bucketAssistants)
	if b.Get(id[:]) == nil {
		return fmt.Errorf("assistant %s: %w", id, ErrNotFound)
	}
	if err := b.Delete(id[:]); err != nil {
		return err
	}
	return deletePrefix(t.bucket(bucketAssistantVersions), id[:])
}

// ListAssistants returns the current record of every assistant in id order.
// The set is small (one per graph plus those clients create), so callers
// filter and sort in memory.
func (t *Tx) ListAssistants() ([]Assistant, error) {
	var out []Assistant
	err := t.bucket(bucketAssistants).ForEach(func(_, v []byte) error {
		var a Assistant
		if err := decode(v, &a); err != nil {
			return err
		}
		out = append(out, a)
		return nil
	})
	return out, err
}

// AssistantQuery selects assistants for SearchAssistants. Zero fields do
// not filter.
type AssistantQuery struct {
	GraphID string
	// Name matches a case-insensitive substring of the name.
	Name string
	// Metadata must be contained in the assistant's metadata.
	Metadata map[string]any
	// Restrict is the caller's authorisation filter, a containment
	// document over metadata ANDed with the rest (nil: none).
	Restrict map[string]any
	// Shared admits, despite Restrict, the assistants it reports true for
	// (the system assistants every caller may read).
	Shared func(Assistant) bool
}

// visible reports whether a passes q's authorisation filter.
func (q AssistantQuery) visible(a Assistant) bool {
	return len(q.Restrict) == 0 || jsonx.Contains(a.Metadata, q.Restrict) || (q.Shared != nil && q.Shared(a))
}

func (q AssistantQuery) matches(a Assistant) bool {
	switch {
	case q.GraphID != "" && a.GraphID != q.GraphID:
		return false
	case q.Name != "" && !strings.Contains(strings.ToLower(a.Name), strings.ToLower(q.Name)):
		return false
	case len(q.Metadata) > 0 && !jsonx.Contains(a.Metadata, q.Metadata):
		return false
	}
	return q.visible(a)
}

// SearchAssistants returns the current record of every assistant that
// matches q, in id order; the caller's filter is applied here, inside the
// query, so that counts and pages cut from the result are the caller's.
func (t *Tx) SearchAssistants(q AssistantQuery) ([]Assistant, error) {
	out := []Assistant{}
	err := t.bucket(bucketAssistants).ForEach(func(_, v []byte) error {
		var a Assistant
		if err := decode(v, &a); err != nil {
			return err
		}
		if q.matches(a) {
			out = append(out, a)
		}
		return nil
	})
	return out, err
}

// GetAssistantWhere returns the current record of an assistant when it
// passes the authorisation filter of q (Restrict, Shared; the other fields
// are ignored), else ErrNotFound, exactly as for one that does not exist.
func (t *Tx) GetAssistantWhere(id uuid.UUID, q AssistantQuery) (Assistant, error) {
	a, err := t.GetAssistant(id)
	if err == nil && !q.visible(a) {
		return Assistant{}, fmt.Errorf("assistant %s: %w", id, ErrNotFound)
	}
	return a, err
}

// Matches reports whether a passes q's authorisation filter.
func (q AssistantQuery) Matches(a Assistant) bool { return q.visible(a) }
