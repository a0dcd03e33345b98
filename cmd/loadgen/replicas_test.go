package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"agentserver/internal/testutil"
	"agentserver/internal/testutil/pgtest"
)

func TestTargetBaseRoundRobin(t *testing.T) {
	g := &target{baseURL: "http://a", peers: []*target{{baseURL: "http://b"}, {baseURL: "http://c"}}}
	var got []string
	for i := range 6 {
		got = append(got, g.base(i))
	}
	if want := "http://a http://b http://c http://a http://b http://c"; strings.Join(got, " ") != want {
		t.Fatalf("base(0..5) = %v, want %s", got, want)
	}
	if one := (&target{baseURL: "http://a"}); one.base(7) != "http://a" || len(one.replicas()) != 1 {
		t.Fatalf("a single server: base(7) = %q, %d replicas", one.base(7), len(one.replicas()))
	}
}

// TestPGSchemaCreateDrop checks that a group's schema exists, is the one its
// URL's connections use, and is gone after drop.
func TestPGSchemaCreateDrop(t *testing.T) {
	ctx := context.Background()
	s := newTestSchema(t)
	conn, err := pgx.Connect(ctx, s.url)
	if err != nil {
		t.Fatal(errors.Join(err, s.drop()))
	}
	var current string
	err = conn.QueryRow(ctx, "SELECT current_schema()").Scan(&current)
	conn.Close(ctx)
	if err != nil || current != s.name {
		t.Fatalf("current_schema() = %q (%v), want %q", current, errors.Join(err, s.drop()), s.name)
	}
	if err := s.drop(); err != nil {
		t.Fatal(err)
	}
	admin, err := pgx.Connect(ctx, pgtest.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var n int
	if err := admin.QueryRow(ctx, "SELECT count(*) FROM pg_namespace WHERE nspname = $1", s.name).Scan(&n); err != nil || n != 0 {
		t.Fatalf("after drop: %d schemas named %s (%v)", n, s.name, err)
	}
}

// TestLockWaitSampler holds an advisory lock in one session of a group
// and has a second session of the group wait for it: the sampler reports
// the wait as an advisory-lock wait.
func TestLockWaitSampler(t *testing.T) {
	ctx := context.Background()
	s := newTestSchema(t)
	t.Cleanup(func() { s.drop() })
	holder, err := pgx.Connect(ctx, s.url)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(4242)"); err != nil {
		t.Fatal(err)
	}
	waiter, err := pgx.Connect(ctx, s.url)
	if err != nil {
		t.Fatal(err)
	}
	defer waiter.Close(ctx)
	waited := make(chan error, 1)
	go func() {
		_, err := waiter.Exec(ctx, "SELECT pg_advisory_lock(4242)")
		waited <- err
	}()
	r := &runner{ctx: ctx, opts: options{lockWaits: true}}
	sampler := r.startLockWaits(&target{schema: s})
	testutil.Eventually(t, 10*time.Second, "the sampler sees the advisory-lock wait", func() bool {
		return sampler.waitedOn("advisory") > 0
	})
	line, err := sampler.stop(1)
	if err != nil || !strings.Contains(line, "(advisory ") || strings.HasPrefix(line, "0.000") {
		t.Fatalf("stop: %q, %v; want a non-zero wait on the advisory lock", line, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err != nil {
		t.Fatalf("the waiting session: %v", err)
	}
}

// newTestSchema creates a group's schema in the test database; without
// one it skips the test.
func newTestSchema(t *testing.T) *pgSchema {
	t.Helper()
	if !pgtest.Enabled() {
		t.Skip(pgtest.EnvURL + " is not set")
	}
	s, err := newPGSchema(context.Background(), pgtest.URL())
	if err != nil {
		t.Fatal(err)
	}
	return s
}
