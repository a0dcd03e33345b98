package lifecycle

import (
	"context"
	"errors"
	"sync"
	"time"
)

// WallClock is the clock of a server that was given none: the wall clock,
// in UTC. The server hands one clock to every service that reads the time.
func WallClock() time.Time { return time.Now().UTC() }

// ClockOr is clock, or WallClock when it is nil.
func ClockOr(clock func() time.Time) func() time.Time {
	if clock == nil {
		return WallClock
	}
	return clock
}

// Service is a background service of the server.
type Service interface {
	// Start begins the service's work and returns once it has begun.
	Start(ctx context.Context) error
	// Stop ends the work and returns once it has ended; ctx bounds the
	// wait where the service can cut it short.
	Stop(ctx context.Context) error
}

// Drainer is a service that takes work from others: Drain stops it taking
// new work, before any service is stopped.
type Drainer interface {
	Drain(ctx context.Context) error
}

// Hooks is a Service and a Drainer made of functions; a nil one does
// nothing.
type Hooks struct {
	OnStart, OnDrain, OnStop func(ctx context.Context) error
}

// Start implements Service.
func (h Hooks) Start(ctx context.Context) error { return call(h.OnStart, ctx) }

// Drain implements Drainer.
func (h Hooks) Drain(ctx context.Context) error { return call(h.OnDrain, ctx) }

// Stop implements Service.
func (h Hooks) Stop(ctx context.Context) error { return call(h.OnStop, ctx) }

func call(f func(context.Context) error, ctx context.Context) error {
	if f == nil {
		return nil
	}
	return f(ctx)
}

// Loop is a Service that runs run in a goroutine until Stop cancels its
// context, then waits for it to return. run must return when its context
// ends.
func Loop(run func(ctx context.Context)) Service {
	return &loop{run: run}
}

type loop struct {
	run    func(context.Context)
	cancel context.CancelFunc
	done   chan struct{}
}

func (l *loop) Start(context.Context) error {
	// Not the start context: the loop lives until Stop.
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel, l.done = cancel, make(chan struct{})
	go func() {
		defer close(l.done)
		l.run(ctx)
	}()
	return nil
}

func (l *loop) Stop(context.Context) error {
	if l.cancel == nil {
		return nil
	}
	l.cancel()
	<-l.done
	return nil
}

// Group starts services in order and stops them, with the resources
// opened before them, in reverse order (see the package documentation).
// The zero value is ready to use; it is safe for concurrent use.
type Group struct {
	mu      sync.Mutex
	entries []entry
	stopped bool
	stopErr error
}

type entry struct {
	name string
	svc  Service
}

// Opened adds a resource that is already open; release is called when the
// group stops.
func (g *Group) Opened(name string, release func(ctx context.Context) error) {
	g.add(name, Hooks{OnStop: release})
}

// OpenedDrain adds a resource that is already open and is released in the
// drain pass (before any service is stopped): one that holds work, such as
// a pool of worker processes.
func (g *Group) OpenedDrain(name string, release func(ctx context.Context) error) {
	g.add(name, Hooks{OnDrain: release})
}

func (g *Group) add(name string, s Service) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.entries = append(g.entries, entry{name, s})
}

// Start starts s and adds it to the group. If s fails, it stops the group
// (stopCtx bounds that) and returns s's error joined with the errors of
// stopping.
func (g *Group) Start(ctx, stopCtx context.Context, name string, s Service) error {
	g.mu.Lock()
	if g.stopped {
		g.mu.Unlock()
		return errors.New(name + ": not started: the server is stopping")
	}
	g.entries = append(g.entries, entry{name, s}) // stopped even if Start fails midway
	g.mu.Unlock()
	if err := s.Start(ctx); err != nil {
		return errors.Join(err, g.Stop(stopCtx))
	}
	return nil
}

// Names lists the entries in the order they were added.
func (g *Group) Names() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]string, len(g.entries))
	for i, e := range g.entries {
		out[i] = e.name
	}
	return out
}

// Stop drains and then stops every entry in reverse order, once.
func (g *Group) Stop(ctx context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return g.stopErr
	}
	g.stopped = true
	var errs []error
	for i := len(g.entries) - 1; i >= 0; i-- {
		if d, ok := g.entries[i].svc.(Drainer); ok {
			errs = append(errs, d.Drain(ctx))
		}
	}
	for i := len(g.entries) - 1; i >= 0; i-- {
		errs = append(errs, g.entries[i].svc.Stop(ctx))
	}
	g.stopErr = errors.Join(errs...)
	return g.stopErr
}
