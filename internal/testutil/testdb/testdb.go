// Package testdb opens a real database in a test's temporary directory.
// It depends on storage only, so that the internal tests of the services
// can use it.
package testdb

import (
	"testing"

	"agentserver/internal/storage"
)

// Open opens a database without fsync in a new temporary directory and
// closes it when the test ends.
func Open(t testing.TB) *storage.DB {
	t.Helper()
	db, err := storage.Open(t.TempDir(), storage.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
