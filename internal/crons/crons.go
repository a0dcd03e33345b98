package crons

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/assistants"
	"agentserver/internal/authz"
	"agentserver/internal/errdefs"
	"agentserver/internal/jsonx"
	"agentserver/internal/lifecycle"
	"agentserver/internal/runs"
	"agentserver/internal/storage"
)

// What a stateless cron does with the thread of a run once it ends.
const (
	OnCompletedDelete = "delete"
	OnCompletedKeep   = "keep"
)

// fireBatch bounds the crons one wake-up fires before it looks again.
const fireBatch = 256

// fireWorkers is how many firings of a batch are in flight at once.
const fireWorkers = 32

// retryDelay is how long the scheduler waits before it tries again a
// firing that failed on storage.
const retryDelay = time.Second

// Options configure the service.
type Options struct {
	// Now is the clock (tests move a fake one); nil is the wall clock.
	Now func() time.Time
	// Seconds accepts schedules with a leading seconds field.
	Seconds bool
	// MaxPerOwner bounds the crons one owner may have (0: no bound).
	// Without per-user authentication every client is the same owner.
	MaxPerOwner int
	// Authorizer decides for the users crons fire for (the server's, as
	// for their requests); nil fires every cron unrestricted.
	Authorizer authz.Authorizer
	Log        *slog.Logger
}

// Service creates, changes and fires crons.
type Service struct {
	db         *storage.DB
	runs       *runs.Service
	assistants *assistants.Service
	opts       Options
	wake       chan struct{}
}

// New builds the service. Run must be started for crons to fire.
func New(db *storage.DB, rs *runs.Service, as *assistants.Service, opts Options) *Service {
	opts.Now = lifecycle.ClockOr(opts.Now)
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Service{db: db, runs: rs, assistants: as, opts: opts, wake: make(chan struct{}, 1)}
}

// Spec describes a cron to create.
type Spec struct {
	// ThreadID binds the cron to a thread; nil makes it stateless.
	ThreadID *uuid.UUID
	Schedule string
	Timezone string
	EndTime  *time.Time
	// Enabled is true when nil.
	Enabled        *bool
	OnRunCompleted string
	Metadata       map[string]any
	// Payload is the run body as the client sent it; Run is what it means.
	Payload map[string]any
	Run     runs.CreateParams
}

// Create checks and stores a cron and returns it.
func (s *Service) Create(ctx context.Context, sp Spec) (storage.Cron, error) {
	sched, err := ParseSchedule(sp.Schedule, sp.Timezone, s.opts.Seconds)
	if err != nil {
		return storage.Cron{}, err
	}
	if err := checkOnCompleted(sp.OnRunCompleted); err != nil {
		return storage.Cron{}, err
	}
	if err := s.runs.CheckWebhook(sp.Run.Webhook); err != nil {
		return storage.Cron{}, err
	}
	asst, err := s.assistants.Get(ctx, sp.Run.Assistant)
	if err != nil {
		return storage.Cron{}, err
	}
	params, err := encodeParams(sp.Run)
	if err != nil {
		return storage.Cron{}, err
	}
	metadata, restrict, err := creation(ctx, sp, asst.AssistantID.String())
	if err != nil {
		return storage.Cron{}, err
	}
	onThread, err := threadRestriction(ctx, sp.ThreadID)
	if err != nil {
		return storage.Cron{}, err
	}
	now := s.opts.Now()
	c := storage.Cron{
		CronID: uuid.Must(uuid.NewV7()), AssistantID: asst.AssistantID, ThreadID: sp.ThreadID,
		Schedule: sp.Schedule, Timezone: sp.Timezone, EndTime: sp.EndTime, Enabled: sp.Enabled == nil || *sp.Enabled,
		OnRunCompleted: sp.OnRunCompleted, Payload: sp.Payload, Params: params, Metadata: metadata,
		CreatedAt: now, UpdatedAt: now, User: creator(ctx),
	}
	if c.ThreadID == nil && c.OnRunCompleted == "" {
		c.OnRunCompleted = OnCompletedDelete
	}
	c.NextRunDate = nextRun(sched, c.EndTime, now)
	err = s.db.Update(ctx, func(tx *storage.Tx) error {
		if c.ThreadID != nil {
			if _, err := tx.GetThreadWhere(*c.ThreadID, onThread); err != nil {
				return err
			}
		}
		if max := s.opts.MaxPerOwner; max > 0 && ownedCrons(tx, restrict) >= max {
			return fmt.Errorf("at most %d crons may exist; delete one first: %w", max, errdefs.ErrLimit)
		}
		return tx.PutCron(c)
	})
	if err != nil {
		return storage.Cron{}, err
	}
	s.poke()
	return c, nil
}

// Get returns a cron, or an error wrapping errdefs.ErrNotFound.
func (s *Service) Get(ctx context.Context, id uuid.UUID) (storage.Cron, error) {
	restrict, err := scope(ctx, authz.Read, map[string]any{"cron_id": id.String()})
	if err != nil {
		return storage.Cron{}, err
	}
	c, err := storage.Read(ctx, s.db, func(tx *storage.Tx) (storage.Cron, error) { return tx.GetCronWhere(id, restrict) })
	return c, err
}

// Patch is a change to a cron; nil fields stay as they are.
type Patch struct {
	Schedule *string
	Timezone *string
	// EndTimeSet applies EndTime, which nil clears.
	EndTimeSet     bool
	EndTime        *time.Time
	Enabled        *bool
	OnRunCompleted *string
	// Metadata is merged into the cron's metadata and its payload's.
	Metadata map[string]any
	// Payload holds run fields that replace those of the payload.
	Payload map[string]any
}

// Rebuild turns a whole run payload into run parameters; the HTTP layer
// gives its own, so that a changed payload is checked as a new one is.
type Rebuild func(payload map[string]any) (runs.CreateParams, error)

// Update applies a patch and returns the cron as it is now. The next
// firing is computed again from now when the schedule, the time zone, the
// end time or enabled changed.
func (s *Service) Update(ctx context.Context, id uuid.UUID, p Patch, rebuild Rebuild) (storage.Cron, error) {
	restrict, err := scope(ctx, authz.Update, map[string]any{"cron_id": id.String(), "metadata": p.Metadata})
	if err != nil {
		return storage.Cron{}, err
	}
	if hook, ok := p.Payload["webhook"].(string); ok {
		if err := s.runs.CheckWebhook(hook); err != nil {
			return storage.Cron{}, err
		}
	}
	var out storage.Cron
	err = s.db.Update(ctx, func(tx *storage.Tx) error {
		c, err := tx.GetCronWhere(id, restrict)
		if err != nil {
			return err
		}
		if out, err = s.patched(c, p, rebuild); err != nil {
			return err
		}
		if len(restrict) > 0 && !jsonx.Contains(out.Metadata, restrict) {
			return fmt.Errorf("metadata would take cron %s out of the caller's reach: %w", id, errdefs.ErrForbidden)
		}
		return tx.PutCron(out)
	})
	if err != nil {
		return storage.Cron{}, err
	}
	s.poke()
	return out, nil
}

// patched returns c with p applied, checked.
func (s *Service) patched(c storage.Cron, p Patch, rebuild Rebuild) (storage.Cron, error) {
	reschedule := p.Schedule != nil || p.Timezone != nil || p.EndTimeSet || p.Enabled != nil
	setIf(&c.Schedule, p.Schedule)
	setIf(&c.Timezone, p.Timezone)
	setIf(&c.Enabled, p.Enabled)
	if p.EndTimeSet {
		c.EndTime = p.EndTime
	}
	if p.OnRunCompleted != nil {
		if err := checkOnCompleted(*p.OnRunCompleted); err != nil {
			return c, err
		}
		c.OnRunCompleted = *p.OnRunCompleted
	}
	sched, err := ParseSchedule(c.Schedule, c.Timezone, s.opts.Seconds)
	if err != nil {
		return c, err
	}
	if len(p.Metadata) > 0 || len(p.Payload) > 0 {
		c.Metadata = jsonx.Merge(c.Metadata, p.Metadata)
		payload := jsonx.Merge(c.Payload, p.Payload)
		if len(p.Metadata) > 0 {
			payload["metadata"] = jsonx.Merge(mapOf(payload["metadata"]), p.Metadata)
		}
		params, err := rebuild(payload)
		if err != nil {
			return c, err
		}
		if c.Params, err = encodeParams(params); err != nil {
			return c, err
		}
		c.Payload = payload
	}
	now := s.opts.Now()
	if reschedule {
		c.NextRunDate = nextRun(sched, c.EndTime, now)
	}
	c.UpdatedAt = now
	return c, nil
}

// Delete removes a cron; its runs stay.
func (s *Service) Delete(ctx context.Context, id uuid.UUID) error {
	restrict, err := scope(ctx, authz.Delete, map[string]any{"cron_id": id.String()})
	if err != nil {
		return err
	}
	err = s.db.Update(ctx, func(tx *storage.Tx) error {
		if _, err := tx.GetCronWhere(id, restrict); err != nil {
			return err
		}
		return tx.DeleteCron(id)
	})
	if err == nil {
		s.poke()
	}
	return err
}

// Search returns the crons matching q and their number.
func (s *Service) Search(ctx context.Context, q storage.CronQuery) ([]storage.Cron, int, error) {
	value := map[string]any{"metadata": q.Metadata}
	if q.ThreadID != nil {
		value["thread_id"] = q.ThreadID.String()
	}
	if q.AssistantID != nil {
		value["assistant_id"] = q.AssistantID.String()
	}
	restrict, err := scope(ctx, authz.Search, value)
	if err != nil {
		return nil, 0, err
	}
	q.Restrict = restrict
	var out []storage.Cron
	var total int
	err = s.db.View(ctx, func(tx *storage.Tx) error {
		var err error
		out, total, err = tx.SearchCrons(q, jsonx.Contains)
		return err
	})
	return out, total, err
}

// poke wakes the scheduler to look at the next due date again.
func (s *Service) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// nextRun is the first firing after now, or nil when there is none before
// the end time.
func nextRun(sched Schedule, end *time.Time, now time.Time) *time.Time {
	next, ok := sched.Next(now)
	if !ok || (end != nil && next.After(*end)) {
		return nil
	}
	return &next
}

func checkOnCompleted(v string) error {
	switch v {
	case "", OnCompletedDelete, OnCompletedKeep:
		return nil
	}
	return fmt.Errorf("on_run_completed must be %q or %q: %w", OnCompletedDelete, OnCompletedKeep, errdefs.ErrInvalid)
}

func encodeParams(p runs.CreateParams) ([]byte, error) {
	raw, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encode cron run: %w", errors.Join(err, errdefs.ErrInvalid))
	}
	return raw, nil
}

func setIf[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

func mapOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func nonNil(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}
