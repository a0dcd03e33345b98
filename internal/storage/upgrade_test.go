package storage

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"agentserver/internal/testutil/pgtest"
)

// kvRow is a row of kv as an earlier release wrote it: a record's key and
// its value, encoded as the record code encodes it.
type kvRow struct {
	bucket string
	k      []byte
	v      any
}

// rawValue is a kvRow's value stored as it is (not a record to encode).
type rawValue []byte

// schemaBefore creates a fresh schema as a release without migration
// version (and later) left it, holding rows, and returns its URL with a
// pool on it (closed with the test). Opening the URL then upgrades the
// schema in place.
func schemaBefore(t *testing.T, version int, rows ...kvRow) (string, *pgxpool.Pool) {
	t.Helper()
	if !pgtest.Enabled() {
		t.Skip(pgtest.EnvURL + " is not set")
	}
	url := pgtest.FreshSchema(t)
	all, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	var before []migration
	for _, m := range all {
		if m.version < version {
			before = append(before, m)
		}
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := applyMigrations(ctx, tx, before); err != nil {
			return err
		}
		for _, row := range rows {
			raw, isRaw := row.v.(rawValue)
			if !isRaw {
				var err error
				if raw, err = encode(row.v); err != nil {
					return err
				}
			}
			if _, err := tx.Exec(ctx, `INSERT INTO kv (bucket, k, v) VALUES ($1, $2, $3)`, row.bucket, row.k, raw); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return url, pool
}

// Subagent records written to kv by an earlier release move to their table
// at the upgrade: readable as before, the live one found by the start-up's
// recovery, and kv keeps none.
func TestPostgresUpgradeMovesSubagentsToTheirTable(t *testing.T) {
	run, thread := uuid.New(), uuid.New()
	started := time.Now().UTC().Truncate(time.Millisecond)
	done := SubagentExecution{ParentRunID: run, ThreadID: thread, ToolCallID: "call-a", Type: "research", Status: "completed", Result: "ok", StartedAt: started, EndedAt: &started}
	live := SubagentExecution{ParentRunID: run, ThreadID: thread, ToolCallID: "call-b", Type: "research", Status: "running", StartedAt: started}
	url, pool := schemaBefore(t, 5, kvRow{"subagents", subagentKey(run, done.ToolCallID), done}, kvRow{"subagents", subagentKey(run, live.ToolCallID), live})
	db, err := OpenPostgres(url, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	got, err := Read(ctx, db, func(tx *Tx) ([]SubagentExecution, error) { return tx.RunSubagents(run) })
	if err != nil || len(got) != 2 || got[0].ToolCallID != "call-a" || got[0].Result != "ok" || got[1].Status != "running" || !got[1].StartedAt.Equal(started) {
		t.Fatalf("the run's subagents after the upgrade: %+v %v", got, err)
	}
	var n int
	if err := db.Update(ctx, func(tx *Tx) error {
		var err error
		n, err = tx.InterruptLiveSubagents(time.Now(), "me")
		return err
	}); err != nil || n != 1 {
		t.Fatalf("recovery after the upgrade marked %d (%v), want the live one", n, err)
	}
	var left int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM kv WHERE bucket = 'subagents'`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("kv keeps %d subagent rows (%v), want none", left, err)
	}
}
