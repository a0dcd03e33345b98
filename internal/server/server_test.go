package server_test

import (
	"testing"

	"agentserver/internal/testutil"
)

// A server whose construction fails after the database is open releases
// it: the database (the bbolt file, or the PostgreSQL schema and the data
// directory's replica lock) can be opened again at once, by hand and by
// the next server.
func TestFailedNewReleasesTheDatabase(t *testing.T) {
	dir := t.TempDir()
	for _, graphs := range []string{
		`{"graphs": {"echo": "builtin:no-such-graph"}}`,                               // fails loading the graphs
		`{"graphs": {"echo": "builtin:echo"}, "store": {"ttl": {"default_ttl": -1}}}`, // fails building the store
	} {
		if err := testutil.BuildErr(t, testutil.Options{DataDir: dir, Graphs: graphs}); err == nil {
			t.Fatalf("a server was built with %s", graphs)
		}
		db, err := testutil.OpenDatabase(t, dir)
		if err != nil {
			t.Fatalf("the failed server kept the database: %v", err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	s := testutil.StartServer(t, testutil.Options{DataDir: dir})
	s.Must(200, "GET", "/ok", nil)
}
