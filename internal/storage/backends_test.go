package storage

import (
	"testing"

	"agentserver/internal/testutil/pgtest"
)

// testBackend is a backend the package's tests run against.
type testBackend struct {
	name string
	// location returns the place of a new, empty database (a directory, or
	// a PostgreSQL URL of a fresh schema dropped when the test ends).
	location func(t *testing.T) string
	open     func(location string, opts Options) (*DB, error)
}

// testBackends are bbolt, and PostgreSQL when the environment names a test
// database.
func testBackends() []testBackend {
	out := []testBackend{{
		name:     "bbolt",
		location: func(t *testing.T) string { return t.TempDir() },
		open:     Open,
	}}
	if pgtest.Enabled() {
		out = append(out, testBackend{
			name:     "postgres",
			location: func(t *testing.T) string { return pgtest.FreshSchema(t) },
			open:     OpenPostgres,
		})
	}
	return out
}

// forEachBackendAt runs test once per backend, as a subtest named after it.
func forEachBackendAt(t *testing.T, test func(t *testing.T, be testBackend)) {
	for _, be := range testBackends() {
		t.Run(be.name, func(t *testing.T) { test(t, be) })
	}
}

// forEachBackend runs test once per backend on a new, empty database.
func forEachBackend(t *testing.T, test func(t *testing.T, db *DB)) {
	forEachBackendAt(t, func(t *testing.T, be testBackend) {
		test(t, be.openNew(t))
	})
}

// openNew opens a new, empty database that is closed when the test ends.
func (be testBackend) openNew(t *testing.T) *DB {
	t.Helper()
	db, err := be.open(be.location(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// openPostgresOrSkip opens a PostgreSQL database in a fresh schema, closed
// when the test ends, or skips the test when no test database is set.
// openReplicasOrSkip opens n databases on one fresh PostgreSQL schema, as
// n servers sharing it do (closed when the test ends), or skips the test
// when no test database is configured.
func openReplicasOrSkip(tb testing.TB, n int) []*DB {
	tb.Helper()
	if !pgtest.Enabled() {
		tb.Skip(pgtest.EnvURL + " is not set")
	}
	url := pgtest.FreshSchema(tb)
	dbs := make([]*DB, n)
	for i := range dbs {
		db, err := OpenPostgres(url, Options{})
		if err != nil {
			tb.Fatalf("server %d of %d on the schema: %v", i+1, n, err)
		}
		tb.Cleanup(func() { db.Close() })
		dbs[i] = db
	}
	return dbs
}

func openPostgresOrSkip(tb testing.TB) *DB {
	tb.Helper()
	if !pgtest.Enabled() {
		tb.Skip(pgtest.EnvURL + " is not set")
	}
	db, err := OpenPostgres(pgtest.FreshSchema(tb), Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}
