package storage

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// The statements a write transaction sends by key use the indexes even on
// a new schema, whose tables have no statistics yet: the planner then
// takes them for tables of a few pages and, left alone, prefers sequential
// scans that read every dead row a busy server leaves between two visits
// of autovacuum (writerOpenSQL). The same statements planned without the
// write transaction's settings do scan, which shows the check can fail.
func TestPostgresWritesUseTheIndexes(t *testing.T) {
	db := openPostgresOrSkip(t)
	be := db.be.(*pgBackend)
	ctx := context.Background()
	// The keys of a group commit's 50 runs.
	var ids []pgtype.UUID
	var keys [][]byte
	var reads gatheredReads
	kvBuckets := make([]string, 50)
	for i := range kvBuckets {
		id := uuid.Must(uuid.NewV7())
		ids, keys, kvBuckets[i] = append(ids, pgUUID(id)), append(keys, id[:]), string(bucketRunsActive)
		for _, b := range [][]byte{bucketRunsActive, bucketThreads, bucketRuns} {
			reads.pb, reads.pk = append(reads.pb, string(b)), append(reads.pk, id[:])
		}
	}
	kv, threads, runs := pgRelationOf(string(bucketRunsActive)), pgRelationOf(string(bucketThreads)), pgRelationOf(string(bucketRuns))
	prefetch, prefetchArgs := prefetchQuery(reads, true)
	statements := []struct {
		name string
		sql  string
		args []any
	}{
		{"prefetch", prefetch, prefetchArgs},
		{"kv deletes", kv.deleteManySQL, kv.args(kvBuckets, keys)},
		{"thread deletes", threads.deleteManySQL, threads.args(nil, keys)},
		{"run deletes", runs.deleteManySQL, runs.args(nil, keys)},
		{"run queue deletes", pgDequeueRunsSQL, []any{ids}},
		{"run event deletes", runEventLog.table.deleteManySQL, []any{ids}},
	}
	// plans returns each statement's plan in a transaction opened with
	// open (BEGIN and the statements after it).
	plans := func(open []string) map[string]string {
		t.Helper()
		conn, err := be.pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Release()
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		for _, stmt := range open[1:] { // open[0] is BEGIN
			rows, err := tx.Query(ctx, stmt)
			if err != nil {
				t.Fatal(err)
			}
			rows.Close()
			if rows.Err() != nil {
				t.Fatal(rows.Err())
			}
		}
		out := map[string]string{}
		for _, s := range statements {
			lines, err := pgx.CollectRows(mustQuery(t, tx, "EXPLAIN "+s.sql, s.args...), pgx.RowTo[string])
			if err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
			out[s.name] = strings.Join(lines, "\n")
		}
		return out
	}
	for name, plan := range plans(writerOpenSQL(0)) {
		if strings.Contains(plan, "Seq Scan") {
			t.Errorf("%s in a write transaction scans a table:\n%s", name, plan)
		}
	}
	scans := 0
	for _, plan := range plans([]string{pgBeginWriteSQL}) {
		scans += strings.Count(plan, "Seq Scan")
	}
	if scans == 0 {
		t.Error("without the write transaction's settings no statement scans: the check above shows nothing")
	}
}

func mustQuery(t *testing.T, tx pgx.Tx, sql string, args ...any) pgx.Rows {
	t.Helper()
	rows, err := tx.Query(context.Background(), sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}
