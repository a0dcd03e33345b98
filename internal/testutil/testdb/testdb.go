// Package testdb opens a real database for a test: bbolt in the test's
// temporary directory, or a fresh PostgreSQL schema when
// AGENTSERVER_TEST_DATABASE_URL names a test database. It depends on storage
// only, so that the internal tests of the services can use it.
package testdb

import (
	"testing"

	"agentserver/internal/storage"
	"agentserver/internal/testutil/pgtest"
)

// Open opens a database without fsync and closes it when the test ends.
func Open(t testing.TB) *storage.DB {
	t.Helper()
	return OpenWith(t, storage.Options{NoSync: true})
}

// OpenWith is Open with the given options.
func OpenWith(t testing.TB, opts storage.Options) *storage.DB {
	t.Helper()
	var db *storage.DB
	var err error
	if pgtest.Enabled() {
		db, err = storage.OpenPostgres(pgtest.FreshSchema(t), opts)
	} else {
		db, err = storage.Open(t.TempDir(), opts)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
