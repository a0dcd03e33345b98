package crons

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/jsonx"
	"agentserver/internal/runs"
	"agentserver/internal/storage"
)

// errNotDue tells that a firing was claimed by someone else, or the cron
// changed or went away, between reading it and claiming it.
var errNotDue = errors.New("cron firing is no longer due")

// Run fires due crons until ctx is cancelled. It sleeps on a timer until
// the next due date, or until a cron is created, changed or deleted. The
// server runs it in a goroutine of its own and waits for it on shutdown.
func (s *Service) Run(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		if _, err := s.FireDue(ctx); err != nil && ctx.Err() == nil {
			s.opts.Log.Warn("cron firing failed", "err", err)
		}
		timer.Reset(s.untilNext(ctx))
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		case <-timer.C:
		}
	}
}

// untilNext is how long to sleep before the next due date: a day at most
// (the timer is then simply set again), retryDelay when a due cron is
// still waiting because its firing failed.
func (s *Service) untilNext(ctx context.Context) time.Duration {
	var next time.Time
	var ok bool
	_ = s.db.View(ctx, func(tx *storage.Tx) error {
		next, ok = tx.NextCronDue()
		return nil
	})
	if !ok {
		return 24 * time.Hour
	}
	d := next.Sub(s.opts.Now())
	if d <= 0 {
		return retryDelay
	}
	return min(d, 24*time.Hour)
}

// FireDue fires every cron due at the clock's now and returns how many runs
// it created. A firing another caller claimed first is not counted.
func (s *Service) FireDue(ctx context.Context) (int, error) {
	now := s.opts.Now()
	fired := 0
	for {
		var ids []uuid.UUID
		if err := s.db.View(ctx, func(tx *storage.Tx) error {
			ids = tx.DueCrons(now, fireBatch)
			return nil
		}); err != nil {
			return fired, err
		}
		n, err := s.fireAll(ctx, ids, now)
		fired += n
		if err != nil || len(ids) < fireBatch {
			return fired, err
		}
	}
}

// fireAll fires ids, fireWorkers at a time: each firing is its own
// transaction, and firings in flight together share the database's group
// commit (one sync for many). It returns how many runs it made and the
// first storage error.
func (s *Service) fireAll(ctx context.Context, ids []uuid.UUID, now time.Time) (int, error) {
	var fired atomic.Int64
	var firstErr error
	var once sync.Once
	next := make(chan uuid.UUID)
	var wg sync.WaitGroup
	for range min(fireWorkers, len(ids)) {
		wg.Go(func() {
			for id := range next {
				ok, err := s.fire(ctx, id, now)
				if err != nil {
					once.Do(func() { firstErr = err })
				}
				if ok {
					fired.Add(1)
				}
			}
		})
	}
	for _, id := range ids {
		next <- id
	}
	close(next)
	wg.Wait()
	return int(fired.Load()), firstErr
}

// fire makes the run of one due firing, claiming the firing in the run's
// transaction. It reports whether a run was made; a firing that cannot make
// its run is skipped (logged) and reports false.
func (s *Service) fire(ctx context.Context, id uuid.UUID, now time.Time) (bool, error) {
	c, err := s.Get(ctx, id)
	if errors.Is(err, storage.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	p, err := runParams(c)
	if err == nil {
		var run storage.Run
		run, err = s.runs.CreateGuarded(s.asCreator(ctx, c), p, func(tx *storage.Tx) error { return s.claim(tx, c, now) })
		if err == nil {
			s.opts.Log.Debug("cron fired", "cron_id", id, "run_id", run.RunID, "thread_id", run.ThreadID)
			return true, nil
		}
	}
	if errors.Is(err, errNotDue) || ctx.Err() != nil {
		return false, nil
	}
	s.opts.Log.Warn("cron firing skipped: its run could not be created", "cron_id", id, "err", err)
	return false, s.skip(ctx, c, now)
}

// claim moves a due cron to its next firing, inside the transaction that
// stores the firing's run. It fails with errNotDue when the cron is no
// longer the one read (changed, deleted) or its firing was claimed.
func (s *Service) claim(tx *storage.Tx, read storage.Cron, now time.Time) error {
	c, err := tx.GetCron(read.CronID)
	if err != nil || !c.UpdatedAt.Equal(read.UpdatedAt) || !c.Enabled || c.NextRunDate == nil || c.NextRunDate.After(now) {
		return errNotDue
	}
	sched, err := parseStored(c.Schedule, c.Timezone)
	if err != nil {
		return fmt.Errorf("cron %s: %w", c.CronID, err)
	}
	c.NextRunDate = nextRun(sched, c.EndTime, now)
	return tx.PutCron(c)
}

// skip moves a due cron past a firing that made no run.
func (s *Service) skip(ctx context.Context, read storage.Cron, now time.Time) error {
	err := s.db.Update(ctx, func(tx *storage.Tx) error { return s.claim(tx, read, now) })
	if errors.Is(err, errNotDue) {
		return nil
	}
	return err
}

// runParams are the creation parameters of a firing's run.
func runParams(c storage.Cron) (runs.CreateParams, error) {
	var p runs.CreateParams
	if err := json.Unmarshal(c.Params, &p); err != nil {
		return p, fmt.Errorf("decode cron %s run: %w", c.CronID, err)
	}
	p.ThreadID = c.ThreadID
	if c.ThreadID == nil {
		p.OnCompletion = c.OnRunCompleted
	}
	p.Metadata = jsonx.Merge(p.Metadata, map[string]any{"cron_id": c.CronID.String()})
	p.Streamed = false
	return p, nil
}
