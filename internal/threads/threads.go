package threads

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/authz"
	"agentserver/internal/channels"
	"agentserver/internal/errdefs"
	"agentserver/internal/graph"
	"agentserver/internal/jsonx"
	"agentserver/internal/lifecycle"
	"agentserver/internal/storage"
)

// Thread statuses.
const (
	StatusIdle        = "idle"
	StatusBusy        = "busy"
	StatusInterrupted = "interrupted"
	StatusError       = "error"
)

// Service manages threads, their checkpoints and their state.
type Service struct {
	db       *storage.DB
	reducers *channels.Registry
	now      func() time.Time
	ttl      TTLConfig
	log      *slog.Logger
	deleted  DeleteHook
	updaters StateUpdaters
}

// Options are what a thread service is built with beside its database and
// reducers; every field may be left zero.
type Options struct {
	// TTL is the deployment's thread TTL policy.
	TTL TTLConfig
	// Log receives the sweeper's failures (nil: discarded).
	Log *slog.Logger
	// Deleted is told of threads a TTL sweep or a prune deleted.
	Deleted DeleteHook
	// Clock tells the time (nil: the wall clock, in UTC).
	Clock func() time.Time
	// StateUpdaters names the graphs that apply state updates themselves
	// (JavaScript graphs, whose channels live in their worker); nil: none.
	StateUpdaters StateUpdaters
}

// New returns a thread service over db whose state updates use reducers.
func New(db *storage.DB, reducers *channels.Registry, opts Options) *Service {
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{db: db, reducers: reducers, now: lifecycle.ClockOr(opts.Clock),
		ttl: opts.TTL, log: log, deleted: opts.Deleted, updaters: opts.StateUpdaters}
}

// Thread is a thread as clients see it: the stored record plus the values
// and interrupts of its newest checkpoint.
type Thread struct {
	storage.Thread
	Values     map[string]any
	Interrupts map[string]any
}

// CreateParams are the inputs of Create.
type CreateParams struct {
	ThreadID   *uuid.UUID
	Metadata   map[string]any
	IfExists   string // "raise" (default) or "do_nothing"
	TTL        map[string]any
	Supersteps []Superstep
}

// Superstep is one bulk update applied at creation, written as one checkpoint.
type Superstep struct {
	Updates []SuperstepUpdate
}

// SuperstepUpdate is one node's write within a superstep.
type SuperstepUpdate struct {
	Values  any
	Command map[string]any
	AsNode  string
}

// Create makes a new idle thread.
func (s *Service) Create(ctx context.Context, p CreateParams) (Thread, error) {
	id := uuid.Must(uuid.NewV7())
	if p.ThreadID != nil {
		id = *p.ThreadID
	}
	metadata, restrict, err := creationMetadata(ctx, id, p.Metadata)
	if err != nil {
		return Thread{}, err
	}
	now := s.now()
	th := storage.Thread{
		ThreadID: id, CreatedAt: now, UpdatedAt: now, StateUpdatedAt: now,
		Metadata: metadata, Status: StatusIdle, TTL: p.TTL,
	}
	if th.TTL == nil {
		th.TTL = s.defaultTTL()
	}
	if th.Metadata == nil {
		th.Metadata = map[string]any{}
	}
	var out Thread
	err = s.db.Update(ctx, func(tx *storage.Tx) error {
		if tx.ThreadExists(id) {
			// Another user's thread is never returned: it conflicts.
			if p.IfExists == "do_nothing" && checkVisible(tx, id, restrict) == nil {
				var err error
				out, err = s.load(tx, id)
				return err
			}
			return fmt.Errorf("thread %s already exists: %w", id, errdefs.ErrConflict)
		}
		if err := tx.PutThread(th); err != nil {
			return err
		}
		out = Thread{Thread: th, Values: map[string]any{}, Interrupts: map[string]any{}}
		var parent *storage.Checkpoint
		for i, step := range p.Supersteps {
			cp, err := s.applySuperstep(tx, th.ThreadID, parent, step, i)
			if err != nil {
				return err
			}
			parent = &cp
		}
		if parent != nil {
			out.Values, out.Interrupts = parent.Values, interruptsOf(*parent)
		}
		return nil
	})
	return out, err
}

func (s *Service) applySuperstep(tx *storage.Tx, threadID uuid.UUID, parent *storage.Checkpoint, step Superstep, index int) (storage.Checkpoint, error) {
	var values map[string]any
	if parent != nil {
		values = parent.Values
	}
	writes := map[string]any{}
	var next []graph.Task
	for _, u := range step.Updates {
		update := u.Values
		if u.Command != nil {
			if _, ok := u.Command["resume"]; ok {
				return storage.Checkpoint{}, fmt.Errorf("superstep %d: command.resume needs a run, not a thread update: %w", index, errdefs.ErrInvalid)
			}
			if cu, ok := u.Command["update"]; ok {
				update = cu
			}
			targets, err := graph.ParseGoto(u.Command["goto"])
			if err != nil {
				return storage.Checkpoint{}, fmt.Errorf("superstep %d: %w: %w", index, errdefs.ErrInvalid, err)
			}
			next = append(next, targets...)
		}
		var err error
		values, err = s.applyValues(values, update)
		if err != nil {
			return storage.Checkpoint{}, fmt.Errorf("superstep %d: %w", index, err)
		}
		writes[asNodeOr(u.AsNode)] = update
	}
	source := "update"
	if index == 0 && parent == nil {
		source = "input"
	}
	cp := s.newCheckpoint(threadID, parent, values, map[string]any{"source": source, "writes": writes})
	var tasks []graph.CheckpointTask
	cp.Next, tasks = graph.CheckpointTasks(next)
	cp.Tasks = StoredTasks(tasks)
	return cp, tx.PutCheckpoint(cp)
}

func asNodeOr(n string) string {
	if n == "" {
		return "__input__"
	}
	return n
}

// applyValues folds an update (an object, a list of objects, or null) into
// values through the channel reducers.
func (s *Service) applyValues(values map[string]any, update any) (map[string]any, error) {
	switch u := update.(type) {
	case nil:
		if values == nil {
			return map[string]any{}, nil
		}
		return values, nil
	case map[string]any:
		return s.reducers.Apply(values, u)
	case []any:
		for i, e := range u {
			m, ok := e.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("values[%d] must be an object: %w", i, errdefs.ErrInvalid)
			}
			var err error
			if values, err = s.reducers.Apply(values, m); err != nil {
				return nil, invalid(err)
			}
		}
		return values, nil
	default:
		return nil, fmt.Errorf("values must be an object, a list of objects or null: %w", errdefs.ErrInvalid)
	}
}

func invalid(err error) error {
	if errors.Is(err, channels.ErrInvalidUpdate) {
		return fmt.Errorf("%w: %w", errdefs.ErrInvalid, err)
	}
	return err
}

// newCheckpoint builds the next checkpoint after parent (nil for the first).
func (s *Service) newCheckpoint(threadID uuid.UUID, parent *storage.Checkpoint, values map[string]any, meta map[string]any) storage.Checkpoint {
	step := -1
	parents := map[string]any{}
	var parentID *uuid.UUID
	if parent != nil {
		if ps, ok := parent.Metadata["step"].(float64); ok {
			step = int(ps)
		} else if ps, ok := parent.Metadata["step"].(int); ok {
			step = ps
		}
		pid := parent.CheckpointID
		parentID = &pid
	}
	m := jsonx.Merge(meta, map[string]any{"step": float64(step + 1), "parents": parents})
	if values == nil {
		values = map[string]any{}
	}
	return storage.Checkpoint{
		ThreadID: threadID, CheckpointID: graph.NewCheckpointID(), ParentID: parentID,
		CreatedAt: s.now(), Values: values, Metadata: m, Next: []string{}, Tasks: []storage.CheckpointTask{},
	}
}

// load reads a thread with the values and interrupts of its newest
// checkpoint; a thread not satisfying restrict is not found.
func (s *Service) load(tx *storage.Tx, id uuid.UUID, restrict ...map[string]any) (Thread, error) {
	var r map[string]any
	if len(restrict) > 0 {
		r = restrict[0]
	}
	th, err := tx.GetThreadWhere(id, r)
	if err != nil {
		return Thread{}, err
	}
	return s.withState(tx, th), nil
}

func (s *Service) withState(tx *storage.Tx, th storage.Thread) Thread {
	out := Thread{Thread: th, Values: map[string]any{}, Interrupts: map[string]any{}}
	if cp, err := tx.LatestCheckpoint(th.ThreadID); err == nil {
		out.Values = cp.Values
		out.Interrupts = interruptsOf(cp)
	}
	return out
}

func interruptsOf(cp storage.Checkpoint) map[string]any {
	out := map[string]any{}
	for _, t := range cp.Tasks {
		if len(t.Interrupts) > 0 {
			out[t.ID] = t.Interrupts
		}
	}
	return out
}

// Get returns one thread.
func (s *Service) Get(ctx context.Context, id uuid.UUID) (Thread, error) {
	restrict, err := visible(ctx, authz.Read, id)
	if err != nil {
		return Thread{}, err
	}
	out, err := storage.Read(ctx, s.db, func(tx *storage.Tx) (Thread, error) { return s.load(tx, id, restrict) })
	return out, err
}

// Patch merges metadata into a thread (and replaces its TTL when given).
func (s *Service) Patch(ctx context.Context, id uuid.UUID, metadata map[string]any, ttl map[string]any) (Thread, error) {
	restrict, err := Restriction(ctx, authz.Update, map[string]any{"thread_id": id.String(), "metadata": metadata})
	if err != nil {
		return Thread{}, err
	}
	var out Thread
	err = s.db.Update(ctx, func(tx *storage.Tx) error {
		th, err := tx.GetThreadWhere(id, restrict)
		if err != nil {
			return err
		}
		th.Metadata = jsonx.Merge(th.Metadata, metadata)
		if !jsonx.Contains(th.Metadata, restrict) {
			return fmt.Errorf("metadata would take thread %s out of the caller's reach: %w", id, errdefs.ErrForbidden)
		}
		if ttl != nil {
			th.TTL = ttl
		}
		th.UpdatedAt = s.now()
		if err := tx.PutThread(th); err != nil {
			return err
		}
		out = s.withState(tx, th)
		return nil
	})
	return out, err
}

// Delete removes a thread with its runs and checkpoints.
func (s *Service) Delete(ctx context.Context, id uuid.UUID) error {
	return s.db.Update(ctx, func(tx *storage.Tx) error { return tx.DeleteThread(id) })
}

// Search returns a page of matching threads and the total number of matches.
func (s *Service) Search(ctx context.Context, q storage.ThreadQuery) ([]Thread, int, error) {
	restrict, err := Restriction(ctx, authz.Search, map[string]any{"metadata": q.Metadata, "status": q.Status})
	if err != nil {
		return nil, 0, err
	}
	q.Restrict = restrict
	var out []Thread
	var total int
	err = s.db.View(ctx, func(tx *storage.Tx) error {
		page, n, err := tx.SearchThreads(q)
		if err != nil {
			return err
		}
		total = n
		out = make([]Thread, 0, len(page))
		for _, th := range page {
			out = append(out, s.withState(tx, th))
		}
		return nil
	})
	return out, total, err
}

// Count returns how many threads match q.
func (s *Service) Count(ctx context.Context, q storage.ThreadQuery) (int, error) {
	restrict, err := Restriction(ctx, authz.Search, map[string]any{"metadata": q.Metadata, "status": q.Status})
	if err != nil {
		return 0, err
	}
	q.CountOnly, q.Restrict = true, restrict
	var total int
	err = s.db.View(ctx, func(tx *storage.Tx) error {
		var err error
		_, total, err = tx.SearchThreads(q)
		return err
	})
	return total, err
}

// Copy makes a new idle thread with the same metadata and every checkpoint
// (its nested graphs' included).
func (s *Service) Copy(ctx context.Context, id uuid.UUID) (Thread, error) {
	newID := uuid.Must(uuid.NewV7())
	restrict, err := visible(ctx, authz.Read, id)
	if err != nil {
		return Thread{}, err
	}
	var out Thread
	err = s.db.Update(ctx, func(tx *storage.Tx) error {
		src, err := tx.GetThreadWhere(id, restrict)
		if err != nil {
			return err
		}
		metadata, _, err := creationMetadata(ctx, newID, src.Metadata)
		if err != nil {
			return err
		}
		now := s.now()
		th := storage.Thread{
			ThreadID: newID, CreatedAt: now, UpdatedAt: now, StateUpdatedAt: now,
			Metadata: metadata, Status: StatusIdle, Config: src.Config, TTL: src.TTL,
		}
		if err := tx.PutThread(th); err != nil {
			return err
		}
		cps, err := tx.ListCheckpoints(id, nil, 0, nil)
		if err != nil {
			return err
		}
		nested, err := tx.AllNestedCheckpoints(id)
		if err != nil {
			return err
		}
		for _, cp := range append(cps, nested...) {
			cp.ThreadID = newID
			if err := tx.PutCheckpoint(cp); err != nil {
				return err
			}
		}
		out, err = s.load(tx, newID)
		return err
	})
	return out, err
}

// SetStatus records a thread's status (used by the run engine).
func (s *Service) SetStatus(ctx context.Context, id uuid.UUID, status string) error {
	return s.db.Update(ctx, func(tx *storage.Tx) error {
		th, err := tx.GetThread(id)
		if err != nil {
			return err
		}
		th.Status = status
		th.UpdatedAt = s.now()
		return tx.PutThread(th)
	})
}
