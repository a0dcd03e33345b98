package assistants

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/authz"
	"agentserver/internal/errdefs"
	"agentserver/internal/graphs"
	"agentserver/internal/jsonx"
	"agentserver/internal/lifecycle"
	"agentserver/internal/storage"
)

// NamespaceGraph is the UUID namespace of system assistant ids
// (LangGraph's NAMESPACE_GRAPH).
var NamespaceGraph = uuid.MustParse("6ba7b821-9dad-11d1-80b4-00c04fd430c8")

// Defaults and bounds of list requests.
const (
	DefaultLimit = 10
	MaxLimit     = 1000
	// DefaultName is the name of an assistant created without one.
	DefaultName = "Untitled"
)

// Assistant is an assistant or one of its versions as clients see it.
type Assistant = storage.Assistant

// SystemID returns the id of the system assistant of a graph. Runs name
// their assistant by graph id more often than not, so the ids are kept
// once computed (a name-based uuid is a SHA-1 each time).
func SystemID(graphID string) uuid.UUID {
	if id, ok := systemIDs.Load(graphID); ok {
		return id.(uuid.UUID)
	}
	id := uuid.NewSHA1(NamespaceGraph, []byte(graphID))
	if systemIDCount.Add(1) <= maxSystemIDs {
		systemIDs.Store(graphID, id)
	}
	return id
}

// The system ids computed so far, at most maxSystemIDs of them (graph ids
// are few; the bound keeps names that are no graph's from growing it).
var (
	systemIDs     sync.Map // graph id -> uuid.UUID
	systemIDCount atomic.Int64
)

const maxSystemIDs = 4096

// Service manages assistants and their versions.
type Service struct {
	db     *storage.DB
	graphs *graphs.Registry
	now    func() time.Time
}

// New returns an assistant service over db serving the graphs of reg.
func New(db *storage.DB, reg *graphs.Registry) *Service {
	return &Service{db: db, graphs: reg, now: lifecycle.WallClock}
}

// Resolve maps an assistant reference to an assistant id: a UUID is returned
// as is, the id of a served graph becomes its system assistant's id. Any
// other string is ErrNotFound. Resolve does not check that the assistant
// exists.
func (s *Service) Resolve(idOrName string) (uuid.UUID, error) {
	if id, err := uuid.Parse(idOrName); err == nil {
		return id, nil
	}
	if _, ok := s.graphs.Get(idOrName); ok {
		return SystemID(idOrName), nil
	}
	return uuid.Nil, notFound(idOrName)
}

func notFound(ref string) error {
	return fmt.Errorf("assistant %q: %w", ref, errdefs.ErrNotFound)
}

func graphNotFound(graphID string) error {
	return fmt.Errorf("graph %q: %w", graphID, errdefs.ErrNotFound)
}

// EnsureSystemAssistants creates the system assistant of every served graph
// that does not have one yet. Existing ones are left untouched.
func (s *Service) EnsureSystemAssistants(ctx context.Context) error {
	now := s.now()
	return s.db.Update(ctx, func(tx *storage.Tx) error {
		for _, g := range s.graphs.IDs() {
			id := SystemID(g)
			if tx.AssistantExists(id) {
				continue
			}
			a := Assistant{
				AssistantID: id, GraphID: g, Config: map[string]any{}, Context: map[string]any{},
				CreatedAt: now, UpdatedAt: now, Metadata: map[string]any{"created_by": "system"},
				Version: 1, Name: g,
			}
			if err := s.write(tx, a); err != nil {
				return fmt.Errorf("system assistant of graph %q: %w", g, err)
			}
		}
		return nil
	})
}

// write stores a new assistant: version 1 and the current record.
func (s *Service) write(tx *storage.Tx, a Assistant) error {
	if err := tx.PutAssistantVersion(a); err != nil {
		return err
	}
	return tx.PutAssistant(a)
}

// CreateParams are the inputs of Create.
type CreateParams struct {
	// GraphID names a served graph; required.
	GraphID string
	// AssistantID is the id to use; a random one when nil.
	AssistantID *uuid.UUID
	Config      map[string]any
	Context     map[string]any
	Metadata    map[string]any
	// IfExists is "raise" (default: ErrConflict) or "do_nothing" (return
	// the existing assistant unchanged).
	IfExists string
	// Name defaults to DefaultName.
	Name        string
	Description *string
}

// Create makes a new assistant at version 1.
func (s *Service) Create(ctx context.Context, p CreateParams) (Assistant, error) {
	if p.GraphID == "" {
		return Assistant{}, fmt.Errorf("graph_id is required: %w", errdefs.ErrInvalid)
	}
	switch p.IfExists {
	case "", "raise", "do_nothing":
	default:
		return Assistant{}, fmt.Errorf("if_exists must be raise or do_nothing, not %q: %w", p.IfExists, errdefs.ErrInvalid)
	}
	if _, ok := s.graphs.Get(p.GraphID); !ok {
		return Assistant{}, graphNotFound(p.GraphID)
	}
	id := uuid.New()
	if p.AssistantID != nil {
		id = *p.AssistantID
	}
	name := p.Name
	if name == "" {
		name = DefaultName
	}
	metadata, err := creationMetadata(ctx, p)
	if err != nil {
		return Assistant{}, err
	}
	// do_nothing hands back an existing assistant only to a caller who
	// may read it; another user's is a conflict, as any taken id.
	readable, err := accessTo(ctx, authz.Read, id.String())
	if err != nil {
		return Assistant{}, err
	}
	now := s.now()
	a := Assistant{
		AssistantID: id, GraphID: p.GraphID,
		Config: orEmpty(p.Config), Context: orEmpty(p.Context), Metadata: metadata,
		CreatedAt: now, UpdatedAt: now, Version: 1, Name: name, Description: cloneString(p.Description),
	}
	var out Assistant
	err = s.db.Update(ctx, func(tx *storage.Tx) error {
		if existing, err := tx.GetAssistant(id); err == nil {
			if p.IfExists == "do_nothing" && readable.Matches(existing) {
				out = existing
				return nil
			}
			return fmt.Errorf("assistant %s already exists: %w", id, errdefs.ErrConflict)
		} else if !errors.Is(err, storage.ErrNotFound) {
			return err
		}
		out = a
		return s.write(tx, a)
	})
	if err != nil {
		return Assistant{}, err
	}
	return out, nil
}

// Get returns the current record of an assistant, named by UUID or graph id.
func (s *Service) Get(ctx context.Context, ref string) (Assistant, error) {
	q, err := accessTo(ctx, authz.Read, ref)
	if err != nil {
		return Assistant{}, err
	}
	// One record: no snapshot to share between reads.
	out, err := storage.ReadLatest(ctx, s.db, func(tx *storage.Tx) (Assistant, error) { return s.getAs(tx, ref, q) })
	return out, err
}

// PatchParams are the inputs of Patch. Nil fields keep the current value.
type PatchParams struct {
	GraphID *string
	// Config and Context replace the current ones.
	Config  map[string]any
	Context map[string]any
	// Metadata is merged into the current metadata (its keys win).
	Metadata    map[string]any
	Name        *string
	Description *string
}

// Patch writes a new version (the highest so far plus one) made of the
// current record with p applied, makes it current and returns it.
func (s *Service) Patch(ctx context.Context, ref string, p PatchParams) (Assistant, error) {
	if p.GraphID != nil {
		if _, ok := s.graphs.Get(*p.GraphID); !ok {
			return Assistant{}, graphNotFound(*p.GraphID)
		}
	}
	q, err := access(ctx, authz.Update, map[string]any{"assistant_id": ref, "metadata": p.Metadata})
	if err != nil {
		return Assistant{}, err
	}
	now := s.now()
	var out Assistant
	err = s.db.Update(ctx, func(tx *storage.Tx) error {
		cur, err := s.getAs(tx, ref, q)
		if err != nil {
			return err
		}
		next := cur
		if p.GraphID != nil {
			next.GraphID = *p.GraphID
		}
		if p.Config != nil {
			next.Config = jsonx.CloneMap(p.Config)
		}
		if p.Context != nil {
			next.Context = jsonx.CloneMap(p.Context)
		}
		if p.Metadata != nil {
			next.Metadata = jsonx.Merge(cur.Metadata, jsonx.CloneMap(p.Metadata))
			if err := keepsOwner(ref, next.Metadata, q); err != nil {
				return err
			}
		}
		if p.Name != nil {
			next.Name = *p.Name
		}
		if p.Description != nil {
			next.Description = cloneString(p.Description)
		}
		next.Version = tx.MaxAssistantVersion(cur.AssistantID) + 1
		next.UpdatedAt = now
		version := next
		version.CreatedAt = now
		if err := tx.PutAssistantVersion(version); err != nil {
			return err
		}
		out = next
		return tx.PutAssistant(next)
	})
	if err != nil {
		return Assistant{}, err
	}
	return out, nil
}

// Delete removes an assistant and all its versions and returns its id.
func (s *Service) Delete(ctx context.Context, ref string) (uuid.UUID, error) {
	q, err := accessTo(ctx, authz.Delete, ref)
	if err != nil {
		return uuid.Nil, err
	}
	var id uuid.UUID
	err = s.db.Update(ctx, func(tx *storage.Tx) error {
		a, err := s.getAs(tx, ref, q)
		if err != nil {
			return err
		}
		id = a.AssistantID
		return tx.DeleteAssistant(id)
	})
	if err != nil {
		return uuid.Nil, err
	}
	return id, nil
}

// Query selects, orders and pages assistants. Zero fields do not filter.
type Query struct {
	GraphID string
	// Name matches a case-insensitive substring of the name.
	Name string
	// Metadata must be contained in the assistant's metadata (jsonb @>).
	Metadata map[string]any
	// SortBy is assistant_id, graph_id, name, created_at (default) or
	// updated_at.
	SortBy string
	// SortOrder is asc or desc (default).
	SortOrder string
	// Limit defaults to DefaultLimit and may not exceed MaxLimit.
	Limit  int
	Offset int
}

// Search returns one page of the assistants that match q, in q's order, and
// the number of matching assistants.
func (s *Service) Search(ctx context.Context, q Query) ([]Assistant, int, error) {
	less, err := sortFunc(q.SortBy, q.SortOrder)
	if err != nil {
		return nil, 0, err
	}
	limit, err := pageBounds(q.Limit, q.Offset)
	if err != nil {
		return nil, 0, err
	}
	matched, err := s.match(ctx, q)
	if err != nil {
		return nil, 0, err
	}
	sort.SliceStable(matched, func(i, j int) bool { return less(matched[i], matched[j]) })
	return pageOf(matched, q.Offset, limit), len(matched), nil
}

// Count returns how many assistants match q's filters; sorting and paging
// fields are ignored.
func (s *Service) Count(ctx context.Context, q Query) (int, error) {
	matched, err := s.match(ctx, q)
	return len(matched), err
}

func (s *Service) match(ctx context.Context, q Query) ([]Assistant, error) {
	sq, err := access(ctx, authz.Search, map[string]any{"graph_id": q.GraphID, "metadata": q.Metadata, "name": q.Name})
	if err != nil {
		return nil, err
	}
	sq.GraphID, sq.Name, sq.Metadata = q.GraphID, q.Name, q.Metadata
	return storage.Read(ctx, s.db, func(tx *storage.Tx) ([]Assistant, error) { return tx.SearchAssistants(sq) })
}

// sortFunc returns the order sortBy and order describe. Ties are broken by
// assistant id so that pages are stable.
func sortFunc(sortBy, order string) (func(a, b Assistant) bool, error) {
	var key func(a, b Assistant) int
	switch sortBy {
	case "", "created_at":
		key = func(a, b Assistant) int { return a.CreatedAt.Compare(b.CreatedAt) }
	case "updated_at":
		key = func(a, b Assistant) int { return a.UpdatedAt.Compare(b.UpdatedAt) }
	case "assistant_id":
		key = func(a, b Assistant) int { return 0 }
	case "graph_id":
		key = func(a, b Assistant) int { return strings.Compare(a.GraphID, b.GraphID) }
	case "name":
		key = func(a, b Assistant) int { return strings.Compare(a.Name, b.Name) }
	default:
		return nil, fmt.Errorf("sort_by must be one of assistant_id, graph_id, name, created_at, updated_at, not %q: %w", sortBy, errdefs.ErrInvalid)
	}
	var desc bool
	switch strings.ToLower(order) {
	case "", "desc":
		desc = true
	case "asc":
	default:
		return nil, fmt.Errorf("sort_order must be asc or desc, not %q: %w", order, errdefs.ErrInvalid)
	}
	return func(a, b Assistant) bool {
		c := key(a, b)
		if c == 0 {
			c = bytes.Compare(a.AssistantID[:], b.AssistantID[:])
		}
		if desc {
			return c > 0
		}
		return c < 0
	}, nil
}

// pageBounds validates limit and offset and returns the effective limit.
func pageBounds(limit, offset int) (int, error) {
	switch {
	case limit < 0 || limit > MaxLimit:
		return 0, fmt.Errorf("limit must be between 1 and %d, not %d: %w", MaxLimit, limit, errdefs.ErrInvalid)
	case offset < 0:
		return 0, fmt.Errorf("offset must not be negative, not %d: %w", offset, errdefs.ErrInvalid)
	case limit == 0:
		return DefaultLimit, nil
	}
	return limit, nil
}

// pageOf returns s[offset:offset+limit], clamped.
func pageOf[T any](s []T, offset, limit int) []T {
	if offset >= len(s) {
		return []T{}
	}
	s = s[offset:]
	if limit < len(s) {
		s = s[:limit]
	}
	return s
}

// Versions returns the versions of an assistant newest first whose metadata
// contains metadata, one page of them, and how many match.
func (s *Service) Versions(ctx context.Context, ref string, metadata map[string]any, limit, offset int) ([]Assistant, int, error) {
	limit, err := pageBounds(limit, offset)
	if err != nil {
		return nil, 0, err
	}
	q, err := accessTo(ctx, authz.Read, ref)
	if err != nil {
		return nil, 0, err
	}
	var out []Assistant
	var total int
	err = s.db.View(ctx, func(tx *storage.Tx) error {
		a, err := s.getAs(tx, ref, q)
		if err != nil {
			return err
		}
		out, total, err = tx.ListAssistantVersions(a.AssistantID, metadata, limit, offset)
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	if out == nil {
		out = []Assistant{}
	}
	return out, total, nil
}

// SetLatest makes a stored version the current one and returns the
// assistant as it now is.
func (s *Service) SetLatest(ctx context.Context, ref string, version int) (Assistant, error) {
	q, err := accessTo(ctx, authz.Update, ref)
	if err != nil {
		return Assistant{}, err
	}
	now := s.now()
	var out Assistant
	err = s.db.Update(ctx, func(tx *storage.Tx) error {
		cur, err := s.getAs(tx, ref, q)
		if err != nil {
			return err
		}
		v, err := tx.GetAssistantVersion(cur.AssistantID, version)
		if errors.Is(err, storage.ErrNotFound) {
			return fmt.Errorf("assistant %q version %d: %w", ref, version, errdefs.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if err := keepsOwner(ref, v.Metadata, q); err != nil {
			return err
		}
		v.CreatedAt = cur.CreatedAt
		v.UpdatedAt = now
		out = v
		return tx.PutAssistant(v)
	})
	if err != nil {
		return Assistant{}, err
	}
	return out, nil
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return jsonx.CloneMap(m)
}

func cloneString(p *string) *string {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
