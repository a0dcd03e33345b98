package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgAdminTimeout bounds creating or dropping a schema.
const pgAdminTimeout = 30 * time.Second

// pgSchema is a schema loadgen created for one group of servers; the
// servers of the group share it, and drop removes it with everything in it.
type pgSchema struct {
	base, name string
	// url is base with its connections' search_path set to the schema, and
	// their application_name to its name (to find the group's backends).
	url string
}

// newPGSchema creates an empty schema with a random name in the database
// of base, so that every group of servers starts on an empty database.
func newPGSchema(ctx context.Context, base string) (*pgSchema, error) {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	s := &pgSchema{base: base, name: "loadgen_" + hex.EncodeToString(b)}
	if err := pgExec(ctx, base, "CREATE SCHEMA "+s.name); err != nil {
		return nil, err
	}
	u, err := url.Parse(base)
	if err != nil || u.Scheme == "" {
		// A key=value connection string.
		s.url = strings.TrimSpace(base) + " search_path=" + s.name + " application_name=" + s.name
		return s, nil
	}
	q := u.Query()
	q.Set("search_path", s.name)
	q.Set("application_name", s.name)
	u.RawQuery = q.Encode()
	s.url = u.String()
	return s, nil
}

// drop removes the schema and everything in it.
func (s *pgSchema) drop() error {
	return pgExec(context.Background(), s.base, "DROP SCHEMA IF EXISTS "+s.name+" CASCADE")
}

func pgExec(ctx context.Context, base, sql string) error {
	ctx, cancel := context.WithTimeout(ctx, pgAdminTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return fmt.Errorf("connect to -database-url: %w", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("%s: %w", sql, err)
	}
	return nil
}

// pgFacts describes the PostgreSQL server of base: its version and the
// settings that decide what a commit costs.
func pgFacts(ctx context.Context, base string) string {
	ctx, cancel := context.WithTimeout(ctx, pgAdminTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return "unreachable: " + err.Error()
	}
	defer conn.Close(context.Background())
	var facts []string
	for _, k := range []string{"server_version", "fsync", "synchronous_commit", "shared_buffers", "max_connections"} {
		var v string
		if err := conn.QueryRow(ctx, "SELECT current_setting('"+k+"')").Scan(&v); err != nil {
			v = "?"
		}
		facts = append(facts, k+"="+v)
	}
	return strings.Join(facts, " ")
}
