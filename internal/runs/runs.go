package runs

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/assistants"
	"agentserver/internal/authz"
	"agentserver/internal/channels"
	"agentserver/internal/errdefs"
	"agentserver/internal/events"
	"agentserver/internal/graph"
	"agentserver/internal/graphs"
	"agentserver/internal/jsonx"
	"agentserver/internal/lifecycle"
	"agentserver/internal/metrics"
	"agentserver/internal/storage"
	"agentserver/internal/threads"
	"agentserver/internal/tracing"
)

// MaxAttempts is how many times a run is started before a crash-interrupted
// run is marked error.
const MaxAttempts = 3

// Multitask strategies.
const (
	StrategyReject    = "reject"
	StrategyInterrupt = "interrupt"
	StrategyRollback  = "rollback"
	StrategyEnqueue   = "enqueue"
)

// DefaultStrategy is the multitask strategy when a request names none; it
// matches the current LangGraph Platform.
const DefaultStrategy = StrategyEnqueue

// Cancel actions.
const (
	ActionInterrupt = "interrupt"
	ActionRollback  = "rollback"
)

// Options configure the engine.
type Options struct {
	// Workers is the number of runs executed at once.
	Workers int
	// Retention is how long a finished run's result and events stay in memory.
	Retention time.Duration
	// Timeout ends a run that has been running this long with status
	// timeout (0: no limit). It applies to each attempt.
	Timeout time.Duration
	// StopGrace is how long a cancelled or timed-out run may take to stop
	// before the engine ends it without waiting and hands its thread to
	// the next run (0: 10 s).
	StopGrace time.Duration
	// WebhookClient sends webhooks; nil uses a client with a 10 s timeout
	// (that reaches public addresses only unless Webhooks.AllowPrivate).
	WebhookClient *http.Client
	// Webhooks says where webhooks may go; runs naming another place are
	// refused at creation.
	Webhooks WebhookPolicy
	// ReplicaID names this server among the replicas sharing a PostgreSQL
	// database (unused on an embedded one; default: a random id).
	ReplicaID string
	// AdvertiseURL is where the other replicas reach this one's API, to
	// stream the runs it executes.
	AdvertiseURL string
	// PeerAPIKey is the x-api-key sent to other replicas (the server's own).
	PeerAPIKey string
	// Authorizer decides for the users runs act for (the server's, as for
	// their requests): the async tasks a run of a user's starts in
	// process are authorised and owned as that user's (authz.RunCallerFrom).
	Authorizer authz.Authorizer
	// ThreadObserver is told of the events of the threads it observes
	// (nil: none).
	ThreadObserver ThreadObserver
	// CreationObserver is told of every run this server creates (nil:
	// none).
	CreationObserver CreationObserver
	// Clock tells the time (nil: the wall clock, in UTC).
	Clock func() time.Time
	Log   *slog.Logger
}

// Service is the run engine.
type Service struct {
	db         *storage.DB
	threads    *threads.Service
	assistants *assistants.Service
	graphs     *graphs.Registry
	broker     *events.Broker
	exec       *graph.Executor
	log        *slog.Logger
	opts       Options
	now        func() time.Time

	sched    runScheduler
	shared   *sharedState // nil on an embedded database
	watchers threadWatchers
	relays   threadRelays
	observer ThreadObserver // nil: none
	// creations is told of every created run (nil: none).
	creations CreationObserver

	mu      sync.Mutex
	live    map[uuid.UUID]*liveRun // runs with a goroutine, a cancel or waiters
	results map[uuid.UUID]*outcome // finished runs, kept for a while (see settle)
	order   []uuid.UUID            // results in settle order, oldest first

	ctx    context.Context // root of every run context
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup // workers and webhook senders
}

// liveRun is the in-memory side of a pending or running run.
type liveRun struct {
	done   chan struct{} // closed when the run ends
	cancel context.CancelCauseFunc
	action string // cancel action requested before the run started
	// streamed is set when the creating request streams the run, so its
	// events are built even before the client has subscribed.
	streamed bool
	// here is set when this process executes the run (or is about to);
	// since is when its execution began.
	here  bool
	since time.Time
	// plan is the start written with the run's creation, for its
	// execution to continue from.
	plan *startPlan
	// credentials are the creating request's (a per-user caller's), kept
	// in memory only, for remote transports that forward them.
	credentials http.Header
}

// outcome is how a run ended.
type outcome struct {
	run    storage.Run
	values map[string]any
	at     time.Time
}

// New builds the engine. Start must be called before runs execute.
func New(db *storage.DB, th *threads.Service, as *assistants.Service, reg *graphs.Registry, reducers *channels.Registry, broker *events.Broker, opts Options) *Service {
	if opts.Workers < 1 {
		opts.Workers = 1
	}
	if opts.Retention <= 0 {
		opts.Retention = 10 * time.Minute
	}
	if opts.StopGrace <= 0 {
		opts.StopGrace = stopGrace
	}
	if opts.WebhookClient == nil {
		opts.WebhookClient = &http.Client{Timeout: 10 * time.Second}
		if !opts.Webhooks.AllowPrivate {
			opts.WebhookClient.Transport = publicWebhookTransport()
		}
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	s := &Service{
		db: db, threads: th, assistants: as, graphs: reg, broker: broker,
		observer: opts.ThreadObserver, creations: opts.CreationObserver,
		exec: &graph.Executor{Reducers: reducers}, log: opts.Log, opts: opts,
		now:  lifecycle.ClockOr(opts.Clock),
		live: map[uuid.UUID]*liveRun{}, results: map[uuid.UUID]*outcome{},
	}
	s.ctx, s.cancel = context.WithCancelCause(context.Background())
	if db.Shared() {
		if s.opts.ReplicaID == "" {
			s.opts.ReplicaID = uuid.NewString()
		}
		s.shared = newSharedState(s)
		s.sched = newSharedScheduler(s, opts.Workers)
	} else {
		s.sched = newScheduler(s, opts.Workers)
	}
	return s
}

// CreateParams describe a run to create.
type CreateParams struct {
	// ThreadID is nil for a stateless run (a temporary thread is made).
	ThreadID  *uuid.UUID
	Assistant string
	// Input is ignored when Command is not empty.
	Input             any
	Command           map[string]any
	Metadata          map[string]any
	Config            map[string]any
	Context           map[string]any
	StreamModes       []string
	StreamSubgraphs   bool
	StreamResumable   bool
	InterruptBefore   []string
	InterruptAfter    []string
	MultitaskStrategy string
	IfNotExists       string
	OnCompletion      string
	AfterSeconds      float64
	Webhook           string
	CheckpointID      *uuid.UUID
	FeedbackKeys      []string
	// Headers are request headers copied into config.configurable (x-*).
	Headers map[string]string
	// Streamed tells that the caller will stream the run's events.
	Streamed bool
}

// Create validates and stores a run, applies the multitask strategy and
// queues it. It returns once the run is durable.
func (s *Service) Create(ctx context.Context, p CreateParams) (storage.Run, error) {
	return s.CreateGuarded(ctx, p, nil)
}

// CreateGuarded creates a run as Create does, but first calls guard (when
// not nil) in the transaction that stores the run: when guard fails,
// nothing is written and its error is returned. The cron scheduler claims
// a firing this way, so that a firing and its run commit together or not
// at all. guard may be called more than once (group commit retries).
func (s *Service) CreateGuarded(ctx context.Context, p CreateParams, guard func(tx *storage.Tx) error) (storage.Run, error) {
	c, err := s.prepare(ctx, p)
	if err != nil {
		return storage.Run{}, err
	}
	// A run whose thread is idle starts in the same commit that creates it
	// when a worker is free, saving one durable write per run.
	claimed := !c.run.NotBefore.After(c.run.CreatedAt) && s.sched.claim(c.run.ThreadID)
	if claimed {
		// So is its input's first checkpoint, computed out here.
		c.plan = s.planCreation(c)
	}
	err = s.db.UpdateReading(ctx, c.reads, func(tx *storage.Tx) error {
		if guard != nil {
			if err := guard(tx); err != nil {
				return err
			}
		}
		return c.apply(tx, claimed)
	})
	if err != nil {
		if claimed {
			s.sched.release(c.run.ThreadID)
		}
		return storage.Run{}, err
	}
	if claimed && !c.startNow {
		s.sched.release(c.run.ThreadID)
	}
	s.noteChildRun(ctx, c.run)
	return s.launch(c), nil
}

// CreateBatch creates several runs all or nothing: every item is checked
// first, then all are stored in one transaction; if one fails (its
// assistant or thread is unknown, its thread refuses it), none is created.
// The error names the failing item by its index.
func (s *Service) CreateBatch(ctx context.Context, ps []CreateParams) ([]storage.Run, error) {
	cs := make([]*creation, len(ps))
	for i, p := range ps {
		c, err := s.prepare(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("batch item %d: %w", i, err)
		}
		cs[i] = c
	}
	err := s.db.Update(ctx, func(tx *storage.Tx) error {
		for i, c := range cs {
			if err := c.apply(tx, false); err != nil {
				return fmt.Errorf("batch item %d: %w", i, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]storage.Run, len(cs))
	for i, c := range cs {
		out[i] = s.launch(c)
	}
	return out, nil
}

// creation is a run being created: built and checked by prepare, stored by
// apply, announced and queued by launch.
type creation struct {
	p        CreateParams
	asst     assistants.Assistant
	run      storage.Run
	config   map[string]any
	strategy string

	// replica is the server creating the run (Options.ReplicaID).
	replica string
	// credentials are the per-user caller's (Caller.Credentials).
	credentials http.Header
	// restrict is the caller's filter on the run's thread; newThread is
	// the metadata of the thread to create (stateless, if_not_exists),
	// with the owner fields the caller's Authorizer wrote.
	restrict  map[string]any
	newThread map[string]any
	// freshThread is set when prepare generated the thread's id (a
	// stateless run): no record of the thread, its runs or its
	// checkpoints can exist, so apply reads none.
	freshThread bool

	// plan is the run's start, computed when it may start in its
	// creation's commit (planCreation).
	plan *startPlan

	// Set by apply: runs of the thread to cancel once committed, pending
	// runs it ended, whether the run was stored as running, and whether
	// its plan was written with it.
	cancelIDs   []uuid.UUID
	ended       []storage.Run
	startNow    bool
	planWritten bool
}

// prepare checks a run's parameters and builds its record, reading but not
// writing storage.
func (s *Service) prepare(ctx context.Context, p CreateParams) (*creation, error) {
	if p.Assistant == "" {
		return nil, fmt.Errorf("assistant_id is required: %w", errdefs.ErrInvalid)
	}
	if err := s.opts.Webhooks.check(p.Webhook); err != nil {
		return nil, err
	}
	asst, err := s.assistants.Get(ctx, p.Assistant)
	if err != nil {
		return nil, err
	}
	if _, ok := s.graphs.Get(asst.GraphID); !ok {
		return nil, fmt.Errorf("graph %q of assistant %s is not served: %w", asst.GraphID, asst.AssistantID, errdefs.ErrNotFound)
	}
	strategy := p.MultitaskStrategy
	if strategy == "" {
		strategy = DefaultStrategy
	}
	if len(p.Command) > 0 {
		// A command takes precedence over an input sent with it, as on
		// LangGraph's servers: chat clients resume an interrupt with
		// {"input": {}, "command": {"resume": …}}.
		p.Input = nil
	}
	modes, err := normalizeModes(p.StreamModes)
	if err != nil {
		return nil, err
	}
	now := s.now()
	run := storage.Run{
		RunID: uuid.Must(uuid.NewV7()), AssistantID: asst.AssistantID, GraphID: asst.GraphID,
		CreatedAt: now, UpdatedAt: now, Status: storage.RunPending, MultitaskStrategy: strategy,
		NotBefore:   now.Add(time.Duration(p.AfterSeconds * float64(time.Second))),
		Traceparent: tracing.Traceparent(ctx),
	}
	fresh := p.ThreadID == nil
	if fresh {
		id := uuid.Must(uuid.NewV7())
		p.ThreadID = &id
		p.IfNotExists = "create"
		run.Stateless = true
		run.Temporary = p.OnCompletion != "keep"
	}
	run.ThreadID = *p.ThreadID
	restrict, newThread, err := authorizeRun(ctx, p, asst)
	if err != nil {
		return nil, err
	}
	config := jsonx.Merge(asst.Config, p.Config)
	configurable := jsonx.Merge(mapOf(asst.Config["configurable"]), mapOf(p.Config["configurable"]))
	for k, v := range p.Headers {
		configurable[k] = v
	}
	var credentials http.Header
	if caller, ok := authz.CallerFrom(ctx); ok {
		configurable["langgraph_auth_user"] = caller.User.AuthUser()
		configurable["langgraph_auth_user_id"] = caller.User.Identity
		if authz.Restricted(ctx) {
			run.ActsFor, credentials = caller.User.AuthUser(), caller.Credentials
		}
	}
	for k, v := range map[string]any{"run_id": run.RunID.String(), "thread_id": run.ThreadID.String(), "graph_id": asst.GraphID, "assistant_id": asst.AssistantID.String()} {
		configurable[k] = v
	}
	config["configurable"] = configurable
	run.Kwargs = storage.RunOptions{
		Input: p.Input, Config: config, Context: jsonx.Merge(asst.Context, p.Context),
		StreamModes: modes, Subgraphs: p.StreamSubgraphs, Resumable: p.StreamResumable,
		InterruptBefore: p.InterruptBefore, InterruptAfter: p.InterruptAfter,
		Webhook: p.Webhook, FeedbackKeys: p.FeedbackKeys, Temporary: run.Temporary,
	}
	if len(p.Command) > 0 {
		run.Kwargs.Command = p.Command
	}
	if p.CheckpointID != nil {
		run.Kwargs.CheckpointID = p.CheckpointID.String()
	}
	if run.Temporary && s.shared != nil {
		// Its outcome is kept only in this process's memory for the
		// creator's waiters: another replica runs it only if this one dies.
		run.Pinned = s.opts.ReplicaID
	}
	return &creation{p: p, asst: asst, run: run, config: config, strategy: strategy, replica: s.opts.ReplicaID, freshThread: fresh, restrict: restrict, newThread: newThread, credentials: credentials}, nil
}

// authorizeRun asks the caller of ctx to create a run on the thread of p
// (threads:create_run, stateless runs too) and, when the run may create
// its thread, to create that thread. It returns the filter the thread must
// satisfy and the metadata of a thread to create.
func authorizeRun(ctx context.Context, p CreateParams, asst assistants.Assistant) (map[string]any, map[string]any, error) {
	if !authz.Restricted(ctx) {
		if p.IfNotExists != "create" {
			return nil, nil, nil
		}
		return nil, jsonx.CloneMap(p.Metadata), nil
	}
	restrict, err := threads.Restriction(ctx, authz.CreateRun, map[string]any{
		"thread_id": p.ThreadID.String(), "assistant_id": asst.AssistantID.String(), "metadata": jsonx.CloneMap(p.Metadata),
	})
	if err != nil {
		return nil, nil, err
	}
	if p.IfNotExists != "create" {
		return restrict, nil, nil
	}
	md, _, err := threads.CreationMetadata(ctx, *p.ThreadID, p.Metadata)
	return restrict, md, err
}

// reads declares what apply reads first: nothing on a fresh thread, else
// the thread's record and its runs.
func (c *creation) reads(tx *storage.Tx) {
	if !c.freshThread {
		tx.PrefetchThreadRuns(c.run.ThreadID)
	}
}

// apply stores the run in tx and applies its multitask strategy. With
// claimed (a worker slot and the thread are reserved), a run whose thread
// has nothing in flight is stored as running. It may run more than once
// (group commit) and resets what it sets.
func (c *creation) apply(tx *storage.Tx, claimed bool) error {
	p, run := c.p, &c.run
	now := run.CreatedAt
	c.cancelIDs, c.ended, c.startNow, c.planWritten = nil, nil, false, false
	run.Status, run.Attempt, run.StartedAt, run.UpdatedAt = storage.RunPending, 0, nil, now
	th, err := storage.Thread{}, storage.ErrNotFound
	if !c.freshThread {
		th, err = tx.GetThread(run.ThreadID)
	}
	if th, err = c.threadFor(th, err); err != nil {
		return err
	}
	if p.CheckpointID != nil {
		if _, err := tx.GetCheckpoint(run.ThreadID, *p.CheckpointID); err != nil {
			return err
		}
	}
	var inflight []storage.Run
	if !c.freshThread {
		if inflight, err = tx.ActiveThreadRuns(run.ThreadID); err != nil {
			return err
		}
	}
	if len(inflight) > 0 && !run.Stateless {
		if err := c.applyStrategy(tx, inflight); err != nil {
			return err
		}
	}
	run.Token, run.Owner = 0, ""
	if claimed && len(inflight) == 0 {
		c.startNow = true
		markStarted(run, now, c.replica)
	}
	run.Metadata = c.runMetadata(th.Metadata)
	if c.startNow && c.plan != nil && sameMetadata(run.Metadata, c.plan.metadata) {
		if c.planWritten, err = c.plan.write(tx, c.freshThread); err != nil {
			return err
		}
	}
	th.Metadata = jsonx.Merge(th.Metadata, map[string]any{"graph_id": c.asst.GraphID, "assistant_id": c.asst.AssistantID.String()})
	th.Status = threads.StatusBusy
	th.UpdatedAt = now
	th.Config = c.config
	put := tx.PutThread
	if c.freshThread {
		put = tx.PutNewThread
	}
	if err := put(th); err != nil {
		return err
	}
	return tx.PutRun(*run)
}

// runMetadata is the metadata of the run being created on a thread with
// the given metadata: the assistant's, the thread's, then the request's,
// and the caller's owner fields.
func (c *creation) runMetadata(thread map[string]any) map[string]any {
	return ownerFields(jsonx.Merge(jsonx.Merge(c.asst.Metadata, thread), c.p.Metadata), c.restrict)
}

// threadFor returns the thread the run is created on, given what reading
// it gave: the existing one (another user's is not found), or the one
// if_not_exists creates.
func (c *creation) threadFor(th storage.Thread, err error) (storage.Thread, error) {
	now := c.run.CreatedAt
	switch {
	case err == nil && len(c.restrict) > 0 && !jsonx.Contains(th.Metadata, c.restrict):
		// Another user's thread: not found, and never taken over by
		// if_not_exists.
		return th, fmt.Errorf("thread %s: %w", c.run.ThreadID, errdefs.ErrNotFound)
	case err == nil:
		return th, nil
	case c.p.IfNotExists == "create":
		th = storage.Thread{ThreadID: c.run.ThreadID, CreatedAt: now, UpdatedAt: now, StateUpdatedAt: now, Metadata: jsonx.CloneMap(c.newThread)}
		if th.Metadata == nil {
			th.Metadata = map[string]any{}
		}
		return th, nil
	}
	return th, err
}

// ownerFields sets the single-valued keys of restrict in a run's metadata,
// so that the run carries its thread's owner whatever metadata the client
// sent (run searches filter on it).
func ownerFields(md, restrict map[string]any) map[string]any {
	for k, v := range restrict {
		if _, isList := v.([]any); !isList {
			md[k] = v
		}
	}
	return md
}

// applyStrategy applies the multitask strategy to the runs in flight on
// the run's thread: reject refuses the run; interrupt and rollback end the
// pending ones here and mark the running ones to be cancelled.
func (c *creation) applyStrategy(tx *storage.Tx, inflight []storage.Run) error {
	switch c.strategy {
	case StrategyReject:
		return fmt.Errorf("thread %s is busy with run %s; choose another multitask strategy or wait: %w", c.run.ThreadID, inflight[0].RunID, errdefs.ErrConflict)
	case StrategyInterrupt, StrategyRollback:
	default:
		return nil
	}
	for _, r := range inflight {
		if r.Status == storage.RunRunning {
			c.cancelIDs = append(c.cancelIDs, r.RunID)
			if err := requestCancel(tx, r, actionOf(c.strategy)); err != nil {
				return err
			}
			continue
		}
		// A pending run never started: it ends here (a rollback erases it).
		r.Status, r.UpdatedAt = storage.RunInterrupted, c.run.CreatedAt
		var err error
		if c.strategy == StrategyRollback {
			err = tx.DeleteRun(r.RunID)
		} else {
			err = tx.PutRun(r)
		}
		if err != nil {
			return err
		}
		c.ended = append(c.ended, r)
	}
	return nil
}

// actionOf is the cancel action of a multitask strategy that cancels.
func actionOf(strategy string) string {
	if strategy == StrategyRollback {
		return ActionRollback
	}
	return ActionInterrupt
}

// requestCancel records in a running run's record that it is to be
// cancelled, so that its replica hears of it and a replica taking it over
// ends it instead of retrying it. A rollback is never weakened.
func requestCancel(tx *storage.Tx, r storage.Run, action string) error {
	if r.CancelAction == action || r.CancelAction == ActionRollback {
		return nil
	}
	r.CancelAction = action
	return tx.PutRun(r)
}

// launch follows a committed creation: the runs it superseded end or are
// cancelled, the run's stream opens with its metadata event, and the run
// is queued (or started, when it was stored as running). It returns the
// run as clients are told about it.
func (s *Service) launch(c *creation) storage.Run {
	run := c.run
	for _, r := range c.ended {
		s.endPending(r, c.strategy == StrategyRollback)
	}
	for _, id := range c.cancelIDs {
		s.cancelLive(id, actionOf(c.strategy))
	}
	// The metadata event goes out with the creation, so a streaming client
	// hears back at once even when the run waits in its thread's queue.
	log := s.broker.Open(run.RunID, c.p.StreamResumable)
	meta := metadataEvent(run.RunID, run.ThreadID, 1)
	log.Append("metadata", meta)
	s.watchers.publish(run.ThreadID, "metadata", meta)
	s.track(run.RunID, c.p.Streamed, c.startNow, c.credentials)
	s.attachPlan(c)
	if s.creations != nil {
		s.creations.RunCreated(run)
	}
	if !c.startNow {
		s.sched.enqueue(run)
		return run
	}
	if !s.sched.startClaimed(run) {
		s.sched.release(run.ThreadID) // shutting down: recovery restarts it
	}
	// Clients are told about the run as created, like on LangGraph
	// Platform: pending, even when it started in the same commit.
	created := run
	created.Status, created.Attempt, created.StartedAt = storage.RunPending, 0, nil
	return created
}

// Start recovers the runs left by the previous process and lets workers
// execute queued runs.
func (s *Service) Start(ctx context.Context) error {
	if s.shared != nil {
		return s.startShared(ctx)
	}
	active, err := s.recoverable(ctx)
	if err != nil {
		return err
	}
	for _, r := range active {
		s.broker.Open(r.RunID, r.Kwargs.Resumable)
		s.track(r.RunID, false, true, nil)
		s.sched.enqueue(r)
	}
	s.sched.start()
	return nil
}

// recoverable returns the runs to queue after a restart: pending runs as
// they are, running runs (a crash stopped them) back to pending, or error
// once they used every attempt.
func (s *Service) recoverable(ctx context.Context) ([]storage.Run, error) {
	var queue, ended []storage.Run
	retried := 0
	err := s.db.Update(ctx, func(tx *storage.Tx) error {
		queue, ended, retried = nil, nil, 0
		now := s.now()
		if err := s.failUnreadable(tx, now); err != nil {
			return err
		}
		active, err := tx.ActiveRuns()
		if err != nil {
			return err
		}
		for _, r := range active {
			if r.Status == storage.RunRunning {
				gone, err := s.requeueRun(tx, &r, now)
				if err != nil {
					return err
				}
				if gone {
					ended = append(ended, r)
					continue
				}
				retried++
			}
			queue = append(queue, r)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, r := range ended {
		s.log.Warn("run stopped with the server and was not retried", "run_id", r.RunID, "thread_id", r.ThreadID, "status", r.Status, "attempts", r.Attempt)
	}
	for range retried {
		metrics.RunRetried()
	}
	return queue, nil
}

// QueueStats reports the queue and the workers (metrics.QueueSource).
func (s *Service) QueueStats() metrics.QueueStats { return s.sched.stats() }

// CheckDB reports whether the database answers and, on a shared database,
// whether the others count this replica as live (storage.CheckReplica): a
// replica that was frozen longer than a lease has had its runs taken over
// and is unhealthy until its next heartbeat.
func (s *Service) CheckDB() error {
	if err := s.db.Ping(); err != nil {
		return err
	}
	if !s.db.Shared() {
		return nil
	}
	return s.db.CheckReplica(s.opts.ReplicaID)
}

// Shutdown stops every run (they resume after the next start) and waits for
// workers and webhooks.
func (s *Service) Shutdown(ctx context.Context) error {
	s.sched.stop()
	s.cancel(errShutdown)
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("runs still stopping: %w", ctx.Err())
	}
	if s.shared != nil {
		// Its runs are back in the queue: the other replicas may take
		// them all now, the pinned ones included.
		if err := s.db.Deregister(s.opts.ReplicaID); err != nil {
			s.log.Warn("deregister replica", "err", err)
		}
	}
	return nil
}

// Stopped reports whether Shutdown has begun.
func (s *Service) Stopped() bool {
	return s.ctx.Err() != nil
}

// track registers the in-memory side of a run that is about to be queued.
func (s *Service) track(id uuid.UUID, streamed, here bool, credentials http.Header) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.live[id]; !ok {
		s.live[id] = &liveRun{done: make(chan struct{}), streamed: streamed, here: here, credentials: credentials}
	}
}

// settle records how a run ended and wakes everyone waiting for it.
func (s *Service) settle(r storage.Run, values map[string]any) {
	s.mu.Lock()
	lr := s.live[r.RunID]
	delete(s.live, r.RunID)
	now := s.now()
	slim := r
	slim.Kwargs = storage.RunOptions{} // the record is in storage; keep only what Wait needs
	s.results[r.RunID] = &outcome{run: slim, values: values, at: now}
	s.order = append(s.order, r.RunID)
	s.pruneResultsLocked(now)
	s.mu.Unlock()
	if lr != nil {
		close(lr.done)
	}
	if l, ok := s.broker.Get(r.RunID); ok && !l.Closed() {
		l.Close()
	}
}

// maxResults bounds the outcomes kept in memory; older ones are read back
// from storage (temporary runs excepted, which have no record left).
const maxResults = 4096

// resultRetention bounds how long an outcome stays in memory.
const resultRetention = 2 * time.Minute

// pruneResultsLocked drops the oldest outcomes: those past their retention,
// and any beyond maxResults. It touches only the expired head of the queue.
func (s *Service) pruneResultsLocked(now time.Time) {
	drop := 0
	for drop < len(s.order) {
		o := s.results[s.order[drop]]
		if o != nil && len(s.order)-drop <= maxResults && now.Sub(o.at) <= min(resultRetention, s.opts.Retention) {
			break
		}
		delete(s.results, s.order[drop])
		drop++
	}
	// Slicing forward is amortized O(1): append moves the live part to a
	// new array only when the old one is used up.
	s.order = s.order[drop:]
}

func metadataEvent(runID, threadID uuid.UUID, attempt int) json.RawMessage {
	raw, _ := json.Marshal(map[string]any{"run_id": runID.String(), "attempt": attempt, "thread_id": threadID.String()})
	return raw
}

func mapOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}
