package storage

import (
	"context"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// docSQLBlocks returns the sql blocks of section (a "## " heading) of a
// markdown file, in order.
func docSQLBlocks(t *testing.T, path, section string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(raw), "\n## "+section+"\n")
	if !ok {
		t.Fatalf("%s has no section %q", path, section)
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	var blocks []string
	for {
		_, after, ok := strings.Cut(rest, "```sql\n")
		if !ok {
			return blocks
		}
		body, tail, _ := strings.Cut(after, "```")
		blocks, rest = append(blocks, body), tail
	}
}

// TestOperatorQueriesOfTheDocs runs the operators' queries of
// docs/scale-out.md, as written there, on a schema seeded through the
// record code, and checks their answers.
func TestOperatorQueriesOfTheDocs(t *testing.T) {
	db := openPostgresOrSkip(t)
	queries := docSQLBlocks(t, "../../docs/scale-out.md", "SQL for operators")
	if len(queries) != 4 {
		t.Fatalf("docs/scale-out.md has %d operator queries, the test knows 4", len(queries))
	}
	ctx := context.Background()
	midnight := time.Now().UTC().Truncate(24 * time.Hour)
	today, yesterday := midnight.Add(time.Second), midnight.Add(-time.Second)
	alpha, beta := uuid.New(), uuid.New()
	big, small := uuid.New(), uuid.New()
	var pending []uuid.UUID
	err := db.Update(ctx, func(tx *Tx) error {
		for id, name := range map[uuid.UUID]string{alpha: "alpha", beta: "beta"} {
			if err := tx.PutAssistant(Assistant{AssistantID: id, GraphID: "agent", Name: name, Version: 1, CreatedAt: today, UpdatedAt: today, Metadata: map[string]any{}}); err != nil {
				return err
			}
		}
		put := func(assistant uuid.UUID, status string, created time.Time, owner string) uuid.UUID {
			r := Run{RunID: uuid.New(), ThreadID: uuid.New(), AssistantID: assistant, GraphID: "agent", Status: status,
				CreatedAt: created, UpdatedAt: created, NotBefore: created, Owner: owner, Metadata: map[string]any{}}
			if status == RunRunning {
				r.Token = NewRunToken()
			}
			if err := tx.PutRun(r); err != nil {
				t.Fatal(err)
			}
			return r.RunID
		}
		put(alpha, RunError, today, "")
		put(alpha, RunError, today.Add(time.Minute), "")
		put(alpha, RunError, yesterday, "") // not today
		put(alpha, RunSuccess, today, "")
		put(beta, RunError, today, "")
		for i := range 3 {
			pending = append(pending, put(beta, RunPending, today.Add(time.Duration(i)*time.Second), ""))
		}
		put(alpha, RunRunning, today, "replica-1")
		put(beta, RunRunning, today, "replica-1")
		for i, thread := range []uuid.UUID{big, big, big, small} {
			values := map[string]any{"messages": strings.Repeat("x", 1000*(i+1))}
			if thread == small {
				values["messages"] = "short"
			}
			if err := tx.PutCheckpoint(Checkpoint{ThreadID: thread, CheckpointID: uuid.New(), CreatedAt: today, Values: values}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Every view reads its records: one of each kind the queries do not use.
	item, err := PrepareStoreItem(StoreItem{Namespace: []string{"users", "u1"}, Key: "prefs", Value: map[string]any{"nul": "a\u0000b"}, CreatedAt: today, UpdatedAt: today})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(ctx, func(tx *Tx) error {
		if err := tx.PutThread(Thread{ThreadID: big, CreatedAt: today, UpdatedAt: today, Status: "idle", Metadata: map[string]any{"user": "u1"}}); err != nil {
			return err
		}
		if err := tx.PutCron(Cron{CronID: uuid.New(), AssistantID: alpha, Schedule: "0 11 * * *", Enabled: true, NextRunDate: &today, CreatedAt: today, UpdatedAt: today}); err != nil {
			return err
		}
		return tx.PutStoreItem(item)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Heartbeat("replica-1", "http://127.0.0.1:2024"); err != nil {
		t.Fatal(err)
	}
	conn, err := db.be.(*pgBackend).pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SET TimeZone = 'UTC'`); err != nil { // "today" as the seed counts it
		t.Fatal(err)
	}
	defer conn.Exec(ctx, `RESET TimeZone`)
	rows := func(sql string) [][]any {
		t.Helper()
		r, err := conn.Query(ctx, sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		out, err := pgx.CollectRows(r, func(row pgx.CollectableRow) ([]any, error) { return row.Values() })
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return out
	}

	if got, want := rows(queries[0]), [][]any{{"alpha", int64(2)}, {"beta", int64(1)}}; !reflect.DeepEqual(got, want) {
		t.Errorf("failed runs per assistant today: %v, want %v", got, want)
	}
	var oldest []uuid.UUID
	for _, r := range rows(queries[1]) {
		oldest = append(oldest, uuid.UUID(r[0].([16]byte)))
	}
	if !reflect.DeepEqual(oldest, pending) {
		t.Errorf("oldest pending runs: %v, want %v", oldest, pending)
	}
	biggest := rows(queries[2])
	if len(biggest) != 2 || uuid.UUID(biggest[0][0].([16]byte)) != big || biggest[0][1] != int64(3) || uuid.UUID(biggest[1][0].([16]byte)) != small || biggest[1][1] != int64(1) {
		t.Errorf("biggest threads: %v, want %s with 3 checkpoints, then %s with 1", biggest, big, small)
	}
	for view, want := range map[string][]any{
		`SELECT thread_id::text, status, metadata->>'user' FROM threads`:             {big.String(), "idle", "u1"},
		`SELECT schedule, enabled, assistant_id::text FROM crons`:                    {"0 11 * * *", true, alpha.String()},
		`SELECT namespace, key FROM store_items`:                                     {[]any{"users", "u1"}, "prefs"},
		`SELECT count(*) FROM assistants WHERE name IN ('alpha', 'beta')`:            {int64(2)},
		`SELECT count(*) FROM runs WHERE status = 'running' AND owner = 'replica-1'`: {int64(2)},
	} {
		if got := rows(view); len(got) != 1 || !reflect.DeepEqual(got[0], want) {
			t.Errorf("%s: %v, want one row %v", view, got, want)
		}
	}
	placed := rows(queries[3])
	if len(placed) != 1 || placed[0][0] != "replica-1" || placed[0][1] != "http://127.0.0.1:2024" || placed[0][2] != int64(2) {
		t.Errorf("runs per replica: %v, want replica-1 at its URL running 2", placed)
	}
}

// A schema written before the views (migrations 1 and 2, as the previous
// release left it) is upgraded in place at open: the records are all
// there, through the record code and through the views.
func TestPostgresUpgradeAddsViewsOverExistingRecords(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	th := Thread{ThreadID: uuid.New(), CreatedAt: now, UpdatedAt: now, Status: "idle", Metadata: map[string]any{"k": "v"}}
	run := Run{RunID: uuid.New(), ThreadID: th.ThreadID, AssistantID: uuid.New(), GraphID: "agent", Status: RunError,
		Error: "boom", CreatedAt: now, UpdatedAt: now, NotBefore: now, Metadata: map[string]any{}, Attempt: 1}
	url, pool := schemaBefore(t, 3, kvRow{"threads", th.ThreadID[:], th}, kvRow{"runs", run.RunID[:], run})
	ctx := context.Background()
	db, err := OpenPostgres(url, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got, err := Read(ctx, db, func(tx *Tx) (Run, error) { return tx.GetRun(run.RunID) })
	if err != nil || got.Status != RunError || got.Error != "boom" {
		t.Fatalf("the run after the upgrade: %+v %v", got, err)
	}
	var status, errText, threadStatus string
	if err := pool.QueryRow(ctx, `SELECT r.status, r.error, t.status FROM runs r JOIN threads t USING (thread_id) WHERE r.run_id = $1`, run.RunID).
		Scan(&status, &errText, &threadStatus); err != nil {
		t.Fatal(err)
	}
	if status != RunError || errText != "boom" || threadStatus != "idle" {
		t.Fatalf("the views after the upgrade: run %s %q, thread %s", status, errText, threadStatus)
	}
}
