package storage

import (
	"context"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
)

// Every record table has the columns its relation writes, in order, after
// k and v: the Go column list and the migrations that create the tables
// cannot drift apart unnoticed.
func TestPostgresRecordTablesHaveTheirColumns(t *testing.T) {
	db := openPostgresOrSkip(t)
	be := db.be.(*pgBackend)
	for _, table := range recordTables {
		rows, err := be.pool.Query(context.Background(), `SELECT column_name FROM information_schema.columns
			WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position`, string(table.bucket))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for rows.Next() {
			var name string
			if err := rows.Scan(&name); err != nil {
				t.Fatal(err)
			}
			got = append(got, name)
		}
		rows.Close()
		want := []string{"k", "v"}
		for _, c := range table.columns {
			want = append(want, c.name)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("table %s has columns %v, its relation writes %v", table.bucket, got, want)
		}
	}
}

// An earlier release kept every record in kv. The upgrade moves each
// family to its table: every record reads back as before through the
// record code, its typed columns are filled, and kv keeps none of them.
func TestPostgresUpgradeMovesRecordsToTheirTables(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	assistant := Assistant{AssistantID: uuid.New(), GraphID: "agent", Name: "helper", Version: 2, CreatedAt: now, UpdatedAt: now, Metadata: map[string]any{"team": "a"}}
	version := assistant
	version.Version = 1
	versionK, err := versionKey(assistant.AssistantID, 1)
	if err != nil {
		t.Fatal(err)
	}
	thread := newThread(map[string]any{"user": "u1"}, "busy")
	thread.CreatedAt = time.Date(2026, 12, 6, 8, 30, 0, 123456789, time.UTC)
	run := Run{RunID: uuid.New(), ThreadID: thread.ThreadID, AssistantID: assistant.AssistantID, GraphID: "agent", Status: RunError,
		CreatedAt: now, UpdatedAt: now, NotBefore: now, Metadata: map[string]any{}}
	cp := Checkpoint{ThreadID: thread.ThreadID, CheckpointID: uuid.Must(uuid.NewV7()), CreatedAt: now, Values: map[string]any{"n": 1.0}, Metadata: map[string]any{}}
	nested := cp
	nested.CheckpointNS, nested.CheckpointID = "child:1", uuid.Must(uuid.NewV7())
	next := now.Add(time.Hour)
	cron := Cron{CronID: uuid.New(), AssistantID: assistant.AssistantID, ThreadID: &thread.ThreadID, Schedule: "0 * * * *", Enabled: true,
		Payload: map[string]any{}, Metadata: map[string]any{}, NextRunDate: &next, CreatedAt: now, UpdatedAt: now}
	item := StoreItem{Namespace: []string{"users", "u1"}, Key: "prefs", Value: map[string]any{"theme": "dark"}, CreatedAt: now, UpdatedAt: now}
	itemK, err := storeItemKey(item.Namespace, item.Key)
	if err != nil {
		t.Fatal(err)
	}
	// An item past its deadline, with the expiry entry the release wrote.
	lapsed := now.Add(-time.Minute)
	expired := StoreItem{Namespace: []string{"users", "u1"}, Key: "old", Value: map[string]any{}, CreatedAt: now, UpdatedAt: now, ExpiresAt: &lapsed}
	expiredK, err := storeItemKey(expired.Namespace, expired.Key)
	if err != nil {
		t.Fatal(err)
	}

	vectors, err := encodeVectors([][]float32{{1, 2, 3}, {4, 5, 6}})
	if err != nil {
		t.Fatal(err)
	}
	blob := uuid.New()

	url, pool := schemaBefore(t, 6,
		kvRow{"store_vectors", itemK, rawValue(vectors)},
		kvRow{"store_blobs", storeBlobKey(blob, 1), rawValue("chunk")},
		kvRow{"assistants", assistant.AssistantID[:], assistant},
		kvRow{"assistant_versions", versionK, version},
		kvRow{"threads", thread.ThreadID[:], thread},
		kvRow{"runs", run.RunID[:], run},
		kvRow{"checkpoints", pairKey(cp.ThreadID, cp.CheckpointID), cp},
		kvRow{"nested_checkpoints", nestedKey(nested.ThreadID, nested.CheckpointNS, nested.CheckpointID), nested},
		kvRow{"crons", cron.CronID[:], cron},
		kvRow{"crons_by_due", timeIDKey(nil, next, cron.CronID), rawValue{}},
		kvRow{"threads_by_created", timeIDKey(nil, thread.CreatedAt, thread.ThreadID), rawValue{}},
		kvRow{"threads_by_status", timeIDKey(statusPrefix("busy"), thread.CreatedAt, thread.ThreadID), rawValue{}},
		kvRow{"store_items", itemK, item},
		kvRow{"store_items", expiredK, expired},
		kvRow{"store_expiry", storeExpiryKey(lapsed, expiredK), rawValue{}})
	db, err := OpenPostgres(url, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	err = db.View(ctx, func(tx *Tx) error {
		if a, err := tx.GetAssistant(assistant.AssistantID); err != nil || a.Name != "helper" || a.Version != 2 {
			t.Errorf("assistant after the upgrade: %+v %v", a, err)
		}
		if v, err := tx.GetAssistantVersion(assistant.AssistantID, 1); err != nil || v.Version != 1 {
			t.Errorf("assistant version after the upgrade: %+v %v", v, err)
		}
		if th, err := tx.GetThread(thread.ThreadID); err != nil || th.Status != "busy" || th.Metadata["user"] != "u1" {
			t.Errorf("thread after the upgrade: %+v %v", th, err)
		}
		// Found through the table's columns: the threads_by_* entries are gone.
		if found, n, err := tx.SearchThreads(ThreadQuery{Status: "busy", Metadata: map[string]any{"user": "u1"}}); err != nil || n != 1 || found[0].ThreadID != thread.ThreadID {
			t.Errorf("thread search after the upgrade: %d %v", n, err)
		}
		if r, err := tx.GetRun(run.RunID); err != nil || r.Status != RunError {
			t.Errorf("run after the upgrade: %+v %v", r, err)
		}
		if c, err := tx.GetCheckpoint(cp.ThreadID, cp.CheckpointID); err != nil || c.Values["n"] != 1.0 {
			t.Errorf("checkpoint after the upgrade: %+v %v", c, err)
		}
		if c, err := tx.GetNestedCheckpoint(nested.ThreadID, nested.CheckpointNS, &nested.CheckpointID); err != nil || c.CheckpointNS != "child:1" {
			t.Errorf("nested checkpoint after the upgrade: %+v %v", c, err)
		}
		if c, err := tx.GetCron(cron.CronID); err != nil || c.Schedule != "0 * * * *" {
			t.Errorf("cron after the upgrade: %+v %v", c, err)
		}
		// Due through the table's index: crons_by_due is gone.
		if due := tx.DueCrons(next.Add(time.Second), 10); len(due) != 1 || due[0] != cron.CronID {
			t.Errorf("due crons after the upgrade: %v, want the cron", due)
		}
		if at, ok := tx.NextCronDue(); !ok || !at.Equal(next) {
			t.Errorf("next cron due after the upgrade: %v %v, want %v", at, ok, next)
		}
		if due := tx.DueCrons(next.Add(-time.Second), 10); len(due) != 0 {
			t.Errorf("crons due before their time: %v", due)
		}
		if it, err := tx.GetStoreItem(item.Namespace, item.Key, now); err != nil || it.Value["theme"] != "dark" {
			t.Errorf("store item after the upgrade: %+v %v", it, err)
		}
		if v, err := tx.storeVectors(itemK); err != nil || len(v) != 2 || v[1][2] != 6 {
			t.Errorf("store vectors after the upgrade: %v %v", v, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// Found through the table's expires_at: store_expiry is gone.
	if err := db.Update(ctx, func(tx *Tx) error {
		n, err := tx.DeleteExpiredStoreItems(now, 0)
		if err == nil && n != 1 {
			t.Errorf("expired store items deleted after the upgrade: %d, want 1", n)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM kv WHERE bucket IN ('assistants', 'assistant_versions', 'threads', 'runs',
		'checkpoints', 'nested_checkpoints', 'crons', 'store_items', 'store_vectors', 'store_blobs', 'crons_by_due',
		'threads_by_created', 'threads_by_status', 'threads_by_meta', 'store_expiry')`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("kv keeps %d records (%v), want none", left, err)
	}
	var (
		graph, status, runStatus, schedule, key string
		version64, dims, chunk                  int64
		cpThread, nestedCP, runThread           uuid.UUID
		namespace                               []string
		user, createdNS                         string
	)
	for _, q := range []struct {
		sql  string
		args []any
		dest []any
	}{
		{`SELECT graph_id FROM assistants WHERE assistant_id = $1`, []any{assistant.AssistantID}, []any{&graph}},
		{`SELECT version FROM assistant_versions WHERE assistant_id = $1`, []any{assistant.AssistantID}, []any{&version64}},
		{`SELECT status, metadata->>'user', created_ns::text FROM threads WHERE thread_id = $1`, []any{thread.ThreadID}, []any{&status, &user, &createdNS}},
		{`SELECT status, thread_id FROM runs WHERE run_id = $1`, []any{run.RunID}, []any{&runStatus, &runThread}},
		{`SELECT thread_id FROM checkpoints WHERE checkpoint_id = $1`, []any{cp.CheckpointID}, []any{&cpThread}},
		{`SELECT checkpoint_id FROM nested_checkpoints WHERE thread_id = $1`, []any{thread.ThreadID}, []any{&nestedCP}},
		{`SELECT schedule FROM crons WHERE thread_id = $1 AND enabled`, []any{thread.ThreadID}, []any{&schedule}},
		{`SELECT namespace, key FROM store_items WHERE bytes > 0`, nil, []any{&namespace, &key}},
		{`SELECT dims FROM store_vectors WHERE vectors = 2`, nil, []any{&dims}},
		{`SELECT chunk FROM store_blobs WHERE blob_id = $1 AND bytes = 5`, []any{blob}, []any{&chunk}},
	} {
		if err := pool.QueryRow(ctx, q.sql, q.args...).Scan(q.dest...); err != nil {
			t.Errorf("%s: %v", q.sql, err)
		}
	}
	if graph != "agent" || version64 != 1 || status != "busy" || user != "u1" || runStatus != RunError || runThread != thread.ThreadID || cpThread != thread.ThreadID ||
		nestedCP != nested.CheckpointID || schedule != "0 * * * *" || !reflect.DeepEqual(namespace, item.Namespace) || key != "prefs" || dims != 3 || chunk != 1 {
		t.Errorf("typed columns after the upgrade: %q %d %q %q %q %v %v %q %v %q %d %d", graph, version64, status, user, runStatus, cpThread, nestedCP, schedule, namespace, key, dims, chunk)
	}
	if want := strconv.FormatInt(thread.CreatedAt.UnixNano(), 10); createdNS != want {
		t.Errorf("threads.created_ns after the upgrade: %s, want %s", createdNS, want)
	}
}

// Counts of records (the cron cap, the vector index's size) include the
// transaction's own writes, on both backends; on PostgreSQL they are one
// count(*) of a table.
func TestCountsSeeTheTransactionsWrites(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db *DB) {
		ids := []uuid.UUID{uuid.New(), uuid.New(), uuid.New()}
		err := db.Update(context.Background(), func(tx *Tx) error {
			for _, id := range ids {
				if err := tx.PutCron(Cron{CronID: id, Schedule: "0 * * * *", Payload: map[string]any{}, Metadata: map[string]any{}}); err != nil {
					return err
				}
			}
			if err := tx.DeleteCron(ids[0]); err != nil {
				return err
			}
			for _, key := range []string{"a", "b"} {
				if err := tx.PutStoreVectors([]string{"docs"}, key, [][]float32{{1, 2}}); err != nil {
					return err
				}
			}
			if n := tx.CronCount(); n != 2 {
				t.Errorf("crons counted in the writing transaction: %d, want 2", n)
			}
			if n := tx.CountStoreVectors(); n != 2 {
				t.Errorf("vectors counted in the writing transaction: %d, want 2", n)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		counts, err := Read(context.Background(), db, func(tx *Tx) ([2]int, error) {
			return [2]int{tx.CronCount(), tx.CountStoreVectors()}, nil
		})
		if err != nil || counts != [2]int{2, 2} {
			t.Errorf("crons and vectors counted after the commit: %v (%v), want 2 and 2", counts, err)
		}
	})
}
