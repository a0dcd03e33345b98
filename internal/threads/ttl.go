package threads

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/authz"
	"agentserver/internal/errdefs"
	"agentserver/internal/jsonx"
	"agentserver/internal/storage"
)

// DefaultTTLSweepInterval is how often the sweeper looks for expired
// threads when langgraph.json does not say (LangGraph's default).
const DefaultTTLSweepInterval = 5 * time.Minute

// DefaultTTLSweepLimit bounds the threads one sweep handles when
// langgraph.json does not say (LangGraph's default).
const DefaultTTLSweepLimit = 1000

// sweepBatch bounds the threads one sweep transaction handles, so that a
// large backlog does not hold the writer for long.
const sweepBatch = 256

// maxTTLMinutes is the largest TTL a client may set (about 190 years).
const maxTTLMinutes = 1e8

// TTLConfig is the thread TTL policy of the deployment (checkpointer.ttl in
// langgraph.json).
type TTLConfig struct {
	// Strategy is applied to threads created without a ttl: storage.TTLDelete
	// (the default) or storage.TTLKeepLatest.
	Strategy string
	// DefaultTTL, in minutes, is given to threads created without a ttl;
	// 0 leaves them without one.
	DefaultTTL float64
	// SweepInterval is how often expired threads are looked for; 0 means
	// DefaultTTLSweepInterval.
	SweepInterval time.Duration
	// SweepLimit bounds the threads one sweep handles, earliest deadline
	// first; 0 means DefaultTTLSweepLimit.
	SweepLimit int
}

// DeleteHook is told about a thread (its graph and last values) after a
// TTL sweep or a prune deleted it.
type DeleteHook func(ctx context.Context, graphID string, values map[string]any)

// ParseTTL checks a client's thread ttl: minutes as a number (strategy
// delete), or an object {ttl, strategy?} with strategy delete or
// keep_latest. nil means none was given. The result is the stored form
// {ttl, strategy}.
func ParseTTL(v any) (map[string]any, error) {
	var minutes any
	strategy := storage.TTLDelete
	switch t := v.(type) {
	case nil:
		return nil, nil
	case float64:
		minutes = t
	case map[string]any:
		minutes = t["ttl"]
		if sv, ok := t["strategy"]; ok && sv != nil {
			s, ok := sv.(string)
			if !ok || (s != storage.TTLDelete && s != storage.TTLKeepLatest) {
				return nil, fmt.Errorf("ttl.strategy must be %q or %q: %w", storage.TTLDelete, storage.TTLKeepLatest, errdefs.ErrInvalid)
			}
			strategy = s
		}
	default:
		return nil, fmt.Errorf("ttl must be a number of minutes or an object {ttl, strategy}: %w", errdefs.ErrInvalid)
	}
	m, ok := minutes.(float64)
	if !ok || math.IsNaN(m) || m <= 0 || m > maxTTLMinutes {
		return nil, fmt.Errorf("ttl must be a positive number of minutes, at most %g: %w", float64(maxTTLMinutes), errdefs.ErrInvalid)
	}
	return map[string]any{"ttl": m, "strategy": strategy}, nil
}

// defaultTTL is the stored ttl of a thread created without one, or nil.
func (s *Service) defaultTTL() map[string]any {
	if s.ttl.DefaultTTL <= 0 {
		return nil
	}
	strategy := s.ttl.Strategy
	if strategy == "" {
		strategy = storage.TTLDelete
	}
	return map[string]any{"ttl": s.ttl.DefaultTTL, "strategy": strategy}
}

// RunSweeper applies the TTL of expired threads once at start and then
// every sweep interval until ctx is cancelled. The server runs it in a
// goroutine of its own and waits for it on shutdown.
func (s *Service) RunSweeper(ctx context.Context) {
	every := s.ttl.SweepInterval
	if every <= 0 {
		every = DefaultTTLSweepInterval
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if n, err := s.SweepExpired(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("thread ttl sweep failed", "err", err)
		} else if n > 0 {
			s.log.Debug("thread ttl sweep", "threads", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// SweepExpired applies its TTL strategy to the threads whose TTL has run
// out (their last update plus their ttl is not after now), at most the
// sweep limit of them, earliest deadline first, and returns how many it
// handled. A thread with a pending or running run is left for a later
// sweep.
func (s *Service) SweepExpired(ctx context.Context) (int, error) {
	now := s.now()
	limit := s.ttl.SweepLimit
	if limit <= 0 {
		limit = DefaultTTLSweepLimit
	}
	var ids []uuid.UUID
	if err := s.db.View(ctx, func(tx *storage.Tx) error {
		ids = tx.ExpiredThreads(now, limit)
		return nil
	}); err != nil {
		return 0, err
	}
	total := 0
	for len(ids) > 0 {
		batch := ids[:min(sweepBatch, len(ids))]
		ids = ids[len(batch):]
		n, err := s.prune(ctx, batch, "", func(th storage.Thread) bool {
			at, ok := th.ExpiresAt()
			return ok && !at.After(now)
		})
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// Prune applies strategy (storage.TTLDelete or storage.TTLKeepLatest) to
// the given threads now and returns how many it pruned. Unknown threads
// and threads with a pending or running run are skipped and not counted;
// a thread named twice counts once.
func (s *Service) Prune(ctx context.Context, ids []uuid.UUID, strategy string) (int, error) {
	if strategy != storage.TTLDelete && strategy != storage.TTLKeepLatest {
		return 0, fmt.Errorf("strategy must be %q or %q: %w", storage.TTLDelete, storage.TTLKeepLatest, errdefs.ErrInvalid)
	}
	seen := make(map[uuid.UUID]bool, len(ids))
	unique := make([]uuid.UUID, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			unique = append(unique, id)
		}
	}
	restrict, err := Restriction(ctx, authz.Delete, map[string]any{"thread_ids": unique})
	if err != nil {
		return 0, err
	}
	var mine func(storage.Thread) bool
	if len(restrict) > 0 {
		mine = func(th storage.Thread) bool { return jsonx.Contains(th.Metadata, restrict) }
	}
	return s.prune(ctx, unique, strategy, mine)
}

// deletedThread is what the delete hook hears of a pruned thread.
type deletedThread struct {
	graphID string
	values  map[string]any
}

// prune applies a strategy to each of ids that exists, is idle of runs and
// passes due (nil: all) in one transaction; an empty strategy means each
// thread's own. keep_latest moves the thread's updated_at to now, so that
// its next expiry is one ttl later.
func (s *Service) prune(ctx context.Context, ids []uuid.UUID, strategy string, due func(storage.Thread) bool) (int, error) {
	n := 0
	var gone []deletedThread
	err := s.db.Update(ctx, func(tx *storage.Tx) error {
		n, gone = 0, nil
		for _, id := range ids {
			th, err := tx.GetThread(id)
			if err != nil {
				continue // deleted meanwhile, or never existed
			}
			if due != nil && !due(th) {
				continue
			}
			busy, err := tx.ThreadBusy(id)
			if err != nil {
				return err
			}
			if busy {
				continue
			}
			how := strategy
			if how == "" {
				how = th.TTLStrategy()
			}
			d, err := s.pruneOne(tx, th, how)
			if err != nil {
				return err
			}
			if d != nil {
				gone = append(gone, *d)
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	for _, d := range gone {
		if s.deleted != nil {
			s.deleted(ctx, d.graphID, d.values)
		}
	}
	return n, nil
}

// pruneOne applies one strategy to one thread; it returns what the delete
// hook needs when it deleted the thread.
func (s *Service) pruneOne(tx *storage.Tx, th storage.Thread, strategy string) (*deletedThread, error) {
	if strategy == storage.TTLKeepLatest {
		if _, err := tx.KeepLatestCheckpoint(th.ThreadID); err != nil {
			return nil, err
		}
		th.UpdatedAt = s.now()
		return nil, tx.PutThread(th)
	}
	d := &deletedThread{}
	d.graphID, _ = th.Metadata["graph_id"].(string)
	if cp, err := tx.LatestCheckpoint(th.ThreadID); err == nil {
		d.values = cp.Values
	}
	return d, tx.DeleteThread(th.ThreadID)
}
