package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"agentserver/internal/testutil/pgtest"
)

// The fault behaviour of the PostgreSQL backend: sessions lost mid
// transaction, transactions the server aborts, interrupted migrations, and
// the replica checks that let the others carry on without a frozen one.

// countingWrite returns an Update function that, on its every execution
// (counted in runs), reads the counter key, writes it plus one and writes
// the keys a and b, calling between the two writes, after a round trip,
// mid(attempt, the writer's session pid) — where a test interferes.
func countingWrite(runs *int, mid func(attempt int, pid uint32)) func(*Tx) error {
	return func(tx *Tx) error {
		*runs++
		meta := tx.bucket(bucketMeta)
		n := 0
		if raw := meta.Get([]byte("counter")); raw != nil {
			n, _ = strconv.Atoi(string(raw))
		}
		if err := meta.Put([]byte("a"), []byte("written")); err != nil {
			return err
		}
		// A cursor sends the queued writes: the transaction has begun
		// and holds the writer lock.
		meta.Cursor().First()
		if err := tx.kv.failure(); err != nil {
			return err
		}
		mid(*runs, tx.kv.(*pgTxn).conn.PgConn().PID())
		if err := meta.Put([]byte("b"), []byte("written")); err != nil {
			return err
		}
		return meta.Put([]byte("counter"), []byte(strconv.Itoa(n+1)))
	}
}

// metaValues reads keys of the meta bucket.
func metaValues(t *testing.T, db *DB, keys ...string) []string {
	t.Helper()
	var out []string
	err := db.View(context.Background(), func(tx *Tx) error {
		for _, k := range keys {
			out = append(out, string(tx.bucket(bucketMeta).Get([]byte(k))))
		}
		return tx.kv.failure()
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// wantRetriedOnce fails t unless a write that was aborted once succeeded
// (err nil) after two runs — the aborted try and one more — leaving the
// meta keys as want says.
func wantRetriedOnce(t *testing.T, db *DB, what string, err error, runs int, want map[string]string) {
	t.Helper()
	if err != nil {
		t.Fatalf("a write %s failed: %v", what, err)
	}
	if runs != 2 {
		t.Fatalf("a write %s ran %d times, want 2 (the aborted try and one more)", what, runs)
	}
	for k, v := range want {
		if got := metaValues(t, db, k); got[0] != v {
			t.Errorf("a write %s: %s = %q, want %q", what, k, got[0], v)
		}
	}
}

// A write transaction whose session is terminated half way (after its
// first writes went to the server, before the rest and COMMIT) leaves
// nothing of that try, and is tried again on a new connection: the write
// succeeds, whole, once.
func TestPostgresWriterSessionKilledMidTransaction(t *testing.T) {
	db := openPostgresOrSkip(t)
	pool := db.be.(*pgBackend).pool
	runs := 0
	write := countingWrite(&runs, func(attempt int, pid uint32) {
		if attempt > 1 {
			return
		}
		var ok bool
		if err := pool.QueryRow(context.Background(), `SELECT pg_terminate_backend($1)`, pid).Scan(&ok); err != nil || !ok {
			t.Errorf("terminate the writer's session %d: %v %v", pid, ok, err)
		}
	})
	err := db.Update(context.Background(), func(tx *Tx) error {
		if runs == 0 {
			// Sent to the server before the session is terminated; the
			// next try does not write it.
			if err := tx.bucket(bucketMeta).Put([]byte("first try"), []byte("written")); err != nil {
				return err
			}
		}
		return write(tx)
	})
	// Both writes and the counter once, and nothing of the first try: one
	// commit.
	wantRetriedOnce(t, db, "whose session was terminated mid-transaction", err, runs, map[string]string{"a": "written", "b": "written", "counter": "1", "first try": ""})
}

// A process frozen in the middle of a write transaction (here: a write
// that stalls between two round trips, as under SIGSTOP) holds the rows it
// wrote only until PostgreSQL's idle timeout ends its session: another
// server's write of one of those rows commits meanwhile, and the stalled
// write, once it goes on, is tried again and commits once.
func TestPostgresFrozenWriterReleasesItsRows(t *testing.T) {
	dbs := openReplicasOrSkip(t, 2)
	frozen, other := dbs[0], dbs[1]
	runs := 0
	err := frozen.Update(context.Background(), countingWrite(&runs, func(attempt int, _ uint32) {
		if attempt > 1 {
			return
		}
		// Holding row "a", stalled: the other server's write of it can
		// only commit once PostgreSQL has ended this session.
		waitForWrite(t, other, "a", "other")
	}))
	wantRetriedOnce(t, frozen, "stalled past the idle timeout", err, runs, map[string]string{"a": "written", "b": "written", "counter": "1", "other": "written"})
}

// waitForWrite writes key k (and "other") of the meta bucket on db and
// waits for the write to commit.
func waitForWrite(t *testing.T, db *DB, k, v string) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		done <- db.Update(context.Background(), func(tx *Tx) error {
			meta := tx.bucket(bucketMeta)
			if err := meta.Put([]byte(k), []byte(v)); err != nil {
				return err
			}
			return meta.Put([]byte("other"), []byte("written"))
		})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the other server's write: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("the other server's write did not commit while this one stalled")
	}
}

// Writers of different rows never wait for each other: with one server's
// write transaction stalled while it holds rows, another server's write
// of other rows commits, and the stalled one then commits on its first
// try (had the other waited, the idle timeout would have ended the stalled
// session and forced a second).
func TestPostgresWritersOfDifferentRowsDoNotWait(t *testing.T) {
	dbs := openReplicasOrSkip(t, 2)
	stalled, other := dbs[0], dbs[1]
	runs := 0
	err := stalled.Update(context.Background(), countingWrite(&runs, func(attempt int, _ uint32) {
		waitForWrite(t, other, "elsewhere", "written")
	}))
	if err != nil || runs != 1 {
		t.Fatalf("the stalled write: %v after %d tries, want success on the first", err, runs)
	}
	for k, want := range map[string]string{"a": "written", "b": "written", "counter": "1", "elsewhere": "written", "other": "written"} {
		if got := metaValues(t, stalled, k); got[0] != want {
			t.Errorf("%s = %q, want %q", k, got[0], want)
		}
	}
}

// A write transaction that read a key as absent and then writes it does
// not overwrite a row another server inserted in between (as a thread
// created with if_exists "raise" must not replace one created meanwhile):
// its insert fails, and the new try reads the row as present. The same in
// kv and in a record table (whose primary key has a name of its own).
func TestPostgresInsertAfterAbsentReadSeesARacingInsert(t *testing.T) {
	checkpointKey := pairKey(uuid.New(), uuid.New())
	for _, c := range []struct {
		name   string
		bucket []byte
		k      []byte
	}{{"kv", bucketMeta, []byte("claimed")}, {"record table", bucketCheckpoints, checkpointKey}} {
		t.Run(c.name, func(t *testing.T) {
			dbs := openReplicasOrSkip(t, 2)
			first, racer := dbs[0], dbs[1]
			var seen []string
			err := first.Update(context.Background(), func(tx *Tx) error {
				b := tx.bucket(c.bucket)
				cur := b.Get(c.k)
				seen = append(seen, string(cur))
				if cur != nil {
					return nil // taken: leave it
				}
				if len(seen) == 1 {
					if err := racer.Update(context.Background(), func(tx *Tx) error {
						return tx.bucket(c.bucket).Put(c.k, []byte("by the racer"))
					}); err != nil {
						t.Fatalf("the racer's insert: %v", err)
					}
				}
				return b.Put(c.k, []byte("by the first"))
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(seen) != 2 || seen[0] != "" || seen[1] != "by the racer" {
				t.Fatalf("the tries read %q, want absent, then the racer's row", seen)
			}
			var kept string
			if err := first.View(context.Background(), func(tx *Tx) error {
				kept = string(tx.bucket(c.bucket).Get(c.k))
				return tx.kv.failure()
			}); err != nil || kept != "by the racer" {
				t.Fatalf("the key holds %q (%v), want the racer's value kept", kept, err)
			}
		})
	}
}

// A write transaction that PostgreSQL aborts for a reason a new try
// removes — a deadlock, a serialization failure — is tried again and
// succeeds: the caller (an HTTP request) never sees the error.
func TestPostgresWriterRetriesAbortedTransactions(t *testing.T) {
	t.Run("deadlock", func(t *testing.T) {
		db := openPostgresOrSkip(t)
		pool := db.be.(*pgBackend).pool
		ctx := context.Background()
		if err := db.Update(ctx, func(tx *Tx) error {
			return tx.bucket(bucketMeta).Put([]byte("lock"), []byte("held"))
		}); err != nil {
			t.Fatal(err)
		}
		// Another session inserts the key the writer is about to write,
		// and keeps its transaction open.
		other, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer other.Release()
		for _, sql := range []string{
			// The writer (default deadlock_timeout: 1 s) detects the
			// deadlock first and is the one aborted.
			`SET deadlock_timeout = '30s'`,
			`BEGIN`,
			`INSERT INTO kv (bucket, k, v) VALUES ('meta', 'counter', '41')`,
		} {
			if _, err := other.Exec(ctx, sql); err != nil {
				t.Skipf("%s: %v", sql, err)
			}
		}
		runs := 0
		var writer atomic.Uint32 // the writer's session
		done := make(chan error, 1)
		go func() {
			done <- db.Update(ctx, func(tx *Tx) error {
				runs++
				writer.Store(tx.kv.(*pgTxn).conn.PgConn().PID())
				meta := tx.bucket(bucketMeta)
				meta.Get([]byte("lock")) // a write transaction's read locks the row
				if err := meta.Put([]byte("counter"), []byte("written")); err != nil {
					return err
				}
				meta.Cursor().First() // the upsert waits for the other session
				return tx.kv.failure()
			})
		}()
		// Once the writer waits for the row, the other session asks for
		// the row the writer locked: a deadlock.
		deadline := time.Now().Add(10 * time.Second)
		for {
			var waiting bool
			if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid = $1)`, writer.Load()).Scan(&waiting); err != nil {
				t.Fatal(err)
			}
			if waiting {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the writer never waited for the other session's row")
			}
			time.Sleep(10 * time.Millisecond) // polling the server with a deadline
		}
		if _, err := other.Exec(ctx, `SELECT 1 FROM kv WHERE bucket = 'meta' AND k = 'lock' FOR UPDATE`); err != nil {
			t.Fatalf("the other session was the one aborted: %v", err)
		}
		if _, err := other.Exec(ctx, `COMMIT`); err != nil {
			t.Fatal(err)
		}
		wantRetriedOnce(t, db, "aborted by a deadlock", <-done, runs, map[string]string{"counter": "written", "lock": "held"})
	})
	t.Run("serialization failure", func(t *testing.T) {
		db := openPostgresOrSkip(t)
		runs := 0
		err := db.Update(context.Background(), countingWrite(&runs, func(attempt int, _ uint32) {}))
		if err != nil {
			t.Fatal(err)
		}
		runs = 0
		err = db.Update(context.Background(), func(tx *Tx) error {
			runs++
			if runs == 1 {
				p := tx.kv.(*pgTxn)
				p.query(`DO $$ BEGIN RAISE EXCEPTION 'could not serialize access' USING ERRCODE = 'serialization_failure'; END $$`, nil, func(pgx.Rows) error { return nil })
				return p.failure()
			}
			return countingWrite(new(int), func(int, uint32) {})(tx)
		})
		// The counter: the first write and the retried one, once each.
		wantRetriedOnce(t, db, "aborted by a serialization failure", err, runs, map[string]string{"counter": "2"})
	})
	t.Run("other errors are not retried", func(t *testing.T) {
		db := openPostgresOrSkip(t)
		runs := 0
		err := db.Update(context.Background(), func(tx *Tx) error {
			runs++
			p := tx.kv.(*pgTxn)
			p.query(`SELECT 1/0`, nil, func(pgx.Rows) error { return nil })
			return p.failure()
		})
		if err == nil || runs != 1 {
			t.Fatalf("a division by zero: %v after %d runs, want its error after one", err, runs)
		}
	})
}

// When the session is lost while COMMIT is in flight, the transaction's
// status on the server decides: committed is a success (not tried again:
// it would commit twice), aborted is tried again, and an outcome that
// cannot be told is an error, never a success.
func TestPostgresLostCommitIsDecidedByTheServer(t *testing.T) {
	db := openPostgresOrSkip(t)
	be := db.be.(*pgBackend)
	ctx := context.Background()
	xact := func(end string) int64 {
		conn, err := pgx.ConnectConfig(ctx, be.cfg.Copy())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var xid int64
		if _, err := conn.Exec(ctx, `BEGIN`); err != nil {
			t.Fatal(err)
		}
		if err := conn.QueryRow(ctx, pgXactIDSQL).Scan(&xid); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, end); err != nil {
			t.Fatal(err)
		}
		return xid
	}
	closed, err := pgx.ConnectConfig(ctx, be.cfg.Copy())
	if err != nil {
		t.Fatal(err)
	}
	closed.Close(ctx)
	lost := fmt.Errorf("postgres: %w", io.ErrUnexpectedEOF)
	_, unsent := closed.Exec(ctx, `COMMIT`) // refused before anything is sent
	for _, c := range []struct {
		name             string
		err              error
		xid              int64
		commitSent       bool
		committed, retry bool
	}{
		{"committed", lost, xact("COMMIT"), true, true, false},
		{"aborted", lost, xact("ROLLBACK"), true, false, true},
		{"lost before COMMIT was sent", lost, xact("COMMIT"), false, false, true},
		{"no transaction id", lost, 0, true, false, false},
		{"nothing of the round trip sent", fmt.Errorf("postgres: %w", unsent), 0, true, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			committed, again := be.outcome(&pgTxn{conn: closed, err: c.err, xid: c.xid, commitSent: c.commitSent})
			if committed != c.committed || again != c.retry {
				t.Fatalf("outcome: committed %v, try again %v; want %v, %v", committed, again, c.committed, c.retry)
			}
		})
	}
}

// Migrations run in one transaction: one that fails half way, or whose
// session is lost half way, leaves nothing of that open — not its own
// tables, nor those of the migrations before it — and the next open
// applies them all.
func TestPostgresInterruptedMigrationLeavesNothing(t *testing.T) {
	if !pgtest.Enabled() {
		t.Skip(pgtest.EnvURL + " is not set")
	}
	all, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	for name, broken := range map[string]string{
		"failed":       `CREATE TABLE half_done (x int); SELECT 1/0;`,
		"session lost": `CREATE TABLE half_done (x int); SELECT pg_terminate_backend(pg_backend_pid());`,
	} {
		t.Run(name, func(t *testing.T) {
			url := pgtest.FreshSchema(t)
			ctx := context.Background()
			conn, err := pgx.Connect(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			withBroken := append(all[:len(all):len(all)], migration{version: 9999, name: "9999_broken.sql", sql: broken})
			if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error { return applyMigrations(ctx, tx, withBroken) }); err == nil {
				t.Fatal("a broken migration was applied")
			}
			conn.Close(ctx)
			// Asked on a new session: the broken migration may have ended
			// its own.
			if conn, err = pgx.Connect(ctx, url); err != nil {
				t.Fatal(err)
			}
			var left int
			err = conn.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()`).Scan(&left)
			conn.Close(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if left != 0 {
				t.Fatalf("%d tables left by the interrupted open, want none (not even the migrations before the broken one)", left)
			}
			be, err := openPostgres(url, Options{})
			if err != nil {
				t.Fatalf("open after the interrupted migration: %v", err)
			}
			defer be.close()
			var tables []string
			rows, err := be.pool.Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY 1`)
			if err != nil {
				t.Fatal(err)
			}
			if tables, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
				t.Fatal(err)
			}
			var applied int
			if err := be.pool.QueryRow(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&applied); err != nil {
				t.Fatal(err)
			}
			for _, table := range tables {
				if table == "half_done" {
					t.Fatalf("the interrupted migration's table survived: %v", tables)
				}
			}
			if applied != len(all) {
				t.Fatalf("%d migrations recorded after reopening, want %d", applied, len(all))
			}
		})
	}
}

// A replica counts as live while its heartbeat is younger than a lease;
// one whose heartbeat is older (a frozen process) or that is not
// registered does not, and its health check says so.
func TestPostgresCheckReplica(t *testing.T) {
	db := openPostgresOrSkip(t)
	if err := db.CheckReplica("r1"); !errors.Is(err, ErrReplicaStale) {
		t.Fatalf("an unregistered replica: %v, want ErrReplicaStale", err)
	}
	if err := db.Heartbeat("r1", "http://127.0.0.1:1"); err != nil {
		t.Fatal(err)
	}
	if err := db.CheckReplica("r1"); err != nil {
		t.Fatalf("a replica that just beat: %v", err)
	}
	pool := db.be.(*pgBackend).pool
	if _, err := pool.Exec(context.Background(), `UPDATE replicas SET seen_at = now() - $1::interval`, DefaultLease+time.Second); err != nil {
		t.Fatal(err)
	}
	if err := db.CheckReplica("r1"); !errors.Is(err, ErrReplicaStale) {
		t.Fatalf("a replica silent for more than a lease: %v, want ErrReplicaStale", err)
	}
}

// Leases are renewed only for the runs the replica still executes: one it
// holds in the queue but no longer executes (its end did not commit) is
// left to lapse, and is still reported held.
func TestPostgresRenewLeasesOnlyOfExecutingRuns(t *testing.T) {
	db := openPostgresOrSkip(t)
	now := time.Now()
	var ids []uuid.UUID
	for range 2 {
		r := Run{RunID: uuid.Must(uuid.NewV7()), ThreadID: uuid.Must(uuid.NewV7()), Status: RunRunning, Owner: "r1", Token: 1, NotBefore: now}
		if err := db.Update(context.Background(), func(tx *Tx) error { return tx.PutRun(r) }); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.RunID)
	}
	pool := db.be.(*pgBackend).pool
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `UPDATE run_queue SET lease_until = now() - interval '1 hour'`); err != nil {
		t.Fatal(err)
	}
	held, err := db.RenewLeases("r1", ids[:1])
	if err != nil {
		t.Fatal(err)
	}
	if len(held) != 2 {
		t.Fatalf("held %v, want both runs", held)
	}
	for i, id := range ids {
		var lapsed bool
		if err := pool.QueryRow(ctx, `SELECT lease_until < now() FROM run_queue WHERE run_id = $1`, id).Scan(&lapsed); err != nil {
			t.Fatal(err)
		}
		if lapsed != (i == 1) {
			t.Fatalf("run %d (executing: %v): lease lapsed %v", i, i == 0, lapsed)
		}
	}
}

// The notices that follow a COMMIT run in a transaction of their own that
// does not wait for its WAL flush; that setting must end with it, or the
// connection's next write transaction would be acknowledged before it is
// durable.
func TestPostgresNoticesLeaveCommitsSynchronous(t *testing.T) {
	if !pgtest.Enabled() {
		t.Skip(pgtest.EnvURL + " is not set")
	}
	u, err := url.Parse(pgtest.FreshSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("synchronous_commit", "on") // the test cluster's default is off
	u.RawQuery = q.Encode()
	db, err := OpenPostgres(u.String(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	for i := range 20 {
		var setting string
		err := db.Update(ctx, func(tx *Tx) error {
			p := tx.kv.(*pgTxn)
			p.notice.Wake = true // sent after the commit
			if err := tx.bucket(bucketMeta).Put([]byte("n"), []byte(strconv.Itoa(i))); err != nil {
				return err
			}
			return p.query(`SELECT current_setting('synchronous_commit')`, nil, func(rows pgx.Rows) error {
				for rows.Next() {
					if err := rows.Scan(&setting); err != nil {
						return err
					}
				}
				return rows.Err()
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		if setting != "on" {
			t.Fatalf("write %d ran with synchronous_commit %q after an earlier write's notices, want on", i, setting)
		}
	}
}

// A write whose COMMIT the server confirms only through pg_xact_status
// (its session was lost with the answer) may not have sent its notices:
// they are sent again, so the other replicas still hear of it.
func TestPostgresLostCommitResendsItsNotices(t *testing.T) {
	dbs := openReplicasOrSkip(t, 2)
	sender, listener := dbs[0], dbs[1]
	heard := make(chan Notice, 4)
	listener.OnNotice(func(n Notice) { heard <- n })
	be := sender.be.(*pgBackend)
	ended := uuid.New()
	payloads := (&Notice{Ended: []uuid.UUID{ended}, Origin: be.origin}).payloads()
	be.resendNotices(&pgTxn{afterCommit: noticeSQL(be.channel, payloads)})
	select {
	case n := <-heard:
		if len(n.Ended) != 1 || n.Ended[0] != ended || n.Local {
			t.Fatalf("the other replica heard %+v, want the end of %s from elsewhere", n, ended)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the other replica heard nothing")
	}
}

// A replica starting up reports as interrupted the subagent executions a
// crash cut off — its own, and those of runs no replica runs — but not
// those whose parent run another replica is executing.
func TestPostgresStartUpLeavesOtherReplicasSubagents(t *testing.T) {
	db := openPostgresOrSkip(t)
	ctx := context.Background()
	now := time.Now().UTC()
	mine, others, orphan := uuid.New(), uuid.New(), uuid.New()
	err := db.Update(ctx, func(tx *Tx) error {
		for owner, id := range map[string]uuid.UUID{"me": mine, "other": others, "": orphan} {
			r := Run{RunID: id, ThreadID: uuid.New(), Status: RunRunning, Owner: owner, Token: NewRunToken(), CreatedAt: now, NotBefore: now}
			if owner == "" {
				r.Status = RunPending
			}
			if err := tx.PutRun(r); err != nil {
				return err
			}
			if err := tx.PutSubagent(SubagentExecution{ParentRunID: id, ThreadID: r.ThreadID, ToolCallID: "call-1", Status: "running", StartedAt: now}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.Update(ctx, func(tx *Tx) error {
		var err error
		n, err = tx.InterruptLiveSubagents(now, "me")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	status := func(run uuid.UUID) string {
		e, err := Read(ctx, db, func(tx *Tx) (SubagentExecution, error) { return tx.GetSubagent(run, "call-1") })
		if err != nil {
			t.Fatal(err)
		}
		return e.Status
	}
	if n != 2 || status(mine) != "interrupted" || status(orphan) != "interrupted" || status(others) != "running" {
		t.Fatalf("marked %d; mine %s, orphan's %s, the other replica's %s; want 2: interrupted, interrupted, running",
			n, status(mine), status(orphan), status(others))
	}
}
