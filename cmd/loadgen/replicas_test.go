package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

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
	if !pgtest.Enabled() {
		t.Skip(pgtest.EnvURL + " is not set")
	}
	ctx := context.Background()
	s, err := newPGSchema(ctx, pgtest.URL())
	if err != nil {
		t.Fatal(err)
	}
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
