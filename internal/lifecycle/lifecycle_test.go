package lifecycle

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
)

// recorder is a service that records what is done to it, in one journal
// shared by every service of a test.
type recorder struct {
	name     string
	journal  *[]string
	mu       *sync.Mutex
	startErr error
	drains   bool
}

func (r recorder) note(what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	*r.journal = append(*r.journal, what+" "+r.name)
}

func (r recorder) Start(context.Context) error { r.note("start"); return r.startErr }
func (r recorder) Stop(context.Context) error  { r.note("stop"); return nil }

type drainingRecorder struct{ recorder }

func (r drainingRecorder) Drain(context.Context) error { r.note("drain"); return nil }

type journal struct {
	mu      sync.Mutex
	entries []string
}

func (j *journal) service(name string, startErr error) recorder {
	return recorder{name: name, journal: &j.entries, mu: &j.mu, startErr: startErr}
}

func (j *journal) opened(g *Group, name string) {
	g.Opened(name, func(context.Context) error {
		j.mu.Lock()
		defer j.mu.Unlock()
		j.entries = append(j.entries, "release "+name)
		return nil
	})
}

func (j *journal) want(t *testing.T, want ...string) {
	t.Helper()
	j.mu.Lock()
	defer j.mu.Unlock()
	if !slices.Equal(j.entries, want) {
		t.Fatalf("journal:\n got %q\nwant %q", j.entries, want)
	}
}

// Services start in order; the group drains those that take work, then
// stops everything, each in reverse order; resources opened before the
// services are released after them.
func TestStartOrderAndReverseStop(t *testing.T) {
	ctx := context.Background()
	var j journal
	var g Group
	j.opened(&g, "db")
	for _, name := range []string{"sweeper", "engine", "http"} {
		var s Service = j.service(name, nil)
		if name != "sweeper" {
			s = drainingRecorder{j.service(name, nil)}
		}
		if err := g.Start(ctx, ctx, name, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := g.Stop(ctx); err != nil { // a second Stop does nothing
		t.Fatal(err)
	}
	j.want(t, "start sweeper", "start engine", "start http",
		"drain http", "drain engine",
		"stop http", "stop engine", "stop sweeper", "release db")
	if got := g.Names(); !slices.Equal(got, []string{"db", "sweeper", "engine", "http"}) {
		t.Fatalf("names %q", got)
	}
}

// A start that fails stops the service that failed and everything added
// before it, in reverse order, and returns the error; services after it
// are never started, and the group refuses to start more.
func TestFailedStartStopsTheStarted(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("boom")
	var j journal
	var g Group
	j.opened(&g, "db")
	if err := g.Start(ctx, ctx, "a", j.service("a", nil)); err != nil {
		t.Fatal(err)
	}
	err := g.Start(ctx, ctx, "b", j.service("b", boom))
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	if err := g.Start(ctx, ctx, "c", j.service("c", nil)); err == nil {
		t.Fatal("a stopped group started a service")
	}
	if err := g.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	j.want(t, "start a", "start b", "stop b", "stop a", "release db")
}

// Resources opened during construction are released in reverse order when
// the construction fails, each once, and every error is returned.
func TestOpenedReleasedInReverseOnError(t *testing.T) {
	ctx := context.Background()
	var j journal
	var g Group
	j.opened(&g, "lock")
	j.opened(&g, "db")
	bad := errors.New("close failed")
	g.OpenedDrain("workers", func(context.Context) error {
		j.mu.Lock()
		defer j.mu.Unlock()
		j.entries = append(j.entries, "release workers")
		return bad
	})
	j.opened(&g, "listener")
	err := g.Stop(ctx)
	if !errors.Is(err, bad) {
		t.Fatalf("err = %v, want the close error", err)
	}
	if err2 := g.Stop(ctx); err2 != err {
		t.Fatalf("second stop returned %v, want the first result", err2)
	}
	// The workers hold work: released in the drain pass, before the rest.
	j.want(t, "release workers", "release listener", "release db", "release lock")
}

// A loop runs until Stop, which waits for it to return.
func TestLoop(t *testing.T) {
	ctx := context.Background()
	started := make(chan struct{})
	var ended bool
	l := Loop(func(ctx context.Context) {
		close(started)
		<-ctx.Done()
		ended = true
	})
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}
	<-started
	if err := l.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if !ended {
		t.Fatal("Stop returned before the loop did")
	}
	if err := Loop(func(context.Context) {}).Stop(ctx); err != nil { // never started
		t.Fatal(err)
	}
}
