// Package pgtest gives each test its own PostgreSQL schema when the
// environment names a test database (AGENTSERVER_TEST_DATABASE_URL, as
// scripts/pg-test-cluster.sh sets it). It depends on pgx only, so that every
// package's tests, storage's included, can use it.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL is the environment variable naming the test database.
const EnvURL = "AGENTSERVER_TEST_DATABASE_URL"

// adminTimeout bounds creating or dropping a schema.
const adminTimeout = 30 * time.Second

// URL is the test database's URL, or "" when the tests run on bbolt only.
func URL() string { return os.Getenv(EnvURL) }

// Enabled reports whether a test database is configured.
func Enabled() bool { return URL() != "" }

// FreshSchema creates an empty schema in the test database and returns a
// URL whose connections use it (search_path); the schema and everything in
// it are dropped when the test ends, after the cleanups registered later
// (such as closing the server that uses it). It fails the test when no
// test database is configured.
func FreshSchema(t testing.TB) string {
	t.Helper()
	base := URL()
	if base == "" {
		t.Fatalf("%s is not set", EnvURL)
	}
	schema := "t_" + randomHex(8)
	admin(t, base, "CREATE SCHEMA "+schema)
	t.Cleanup(func() { admin(t, base, "DROP SCHEMA IF EXISTS "+schema+" CASCADE") })
	return WithSearchPath(t, base, schema)
}

// WithSearchPath returns base with its connections' search_path set to
// schema.
func WithSearchPath(t testing.TB, base, schema string) string {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil || u.Scheme == "" {
		// A key=value connection string.
		return strings.TrimSpace(base) + " search_path=" + schema
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func admin(t testing.TB, base, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect to the test database: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}
