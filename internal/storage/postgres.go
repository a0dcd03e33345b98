package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"agentserver/internal/retry"
)

// migrationLockSQL serializes the migrations of every process opening
// the same schema: each takes this transaction-scoped advisory lock before
// it reads schema_migrations. Write transactions take no such lock: they
// lock the rows they read (see pgGetForUpdateSQL).
const migrationLockSQL = `SELECT pg_advisory_xact_lock(hashtextextended('agentserver writer ' || current_schema(), 0))`

// writerIdleTimeout is how long a write transaction's session may sit
// idle between its round trips before PostgreSQL ends it, releasing the
// row locks it holds (idle_in_transaction_session_timeout, set for the
// transaction only). A transaction that no network or model call
// interrupts is never idle that long unless its process is frozen (a
// SIGSTOP, a VM pause): a replica writing the same rows then waits at most
// this long instead of for the whole freeze. A retried transaction gets
// writerIdleGrowth times more, so that one which is merely slow (a large
// batch on a loaded machine) is not cut off again and again.
const (
	writerIdleTimeout = 500 * time.Millisecond
	writerIdleGrowth  = 4
)

// pgWriteAttempts bounds the tries of one write transaction whose
// session was lost or which PostgreSQL aborted for a reason that a new try
// removes (a serialization failure, a deadlock, the idle timeout).
const pgWriteAttempts = 5

// pgWriteRetry spaces the tries of a write transaction.
var pgWriteRetry = retry.Policy{Base: 20 * time.Millisecond, Factor: 4, Max: time.Second, Jitter: 0.5}

// Cursor page sizes: a cursor first fetches pgFirstPage rows from where it
// is positioned, then pages grow fourfold up to pgMaxPage, so a point
// lookup reads little and a long scan costs few round trips.
const (
	pgFirstPage = 4
	pgMaxPage   = 64
)

// pgMaxConns bounds the connections of one server: the writer holds one,
// readers share the rest (the listener has a connection of its own).
const pgMaxConns = 16

// defaultConnectTimeout bounds each connection attempt (the TCP connect and
// the server's answer to the start-up message) when the URL sets no
// connect_timeout: a port that accepts connections and never answers then
// fails the start within it instead of hanging.
const defaultConnectTimeout = 10 * time.Second

// pgOpTimeout bounds a queue or replica statement outside the writer.
const pgOpTimeout = 10 * time.Second

// pgListenRetry bounds the pause before the listener reconnects.
const pgListenRetry = 2 * time.Second

// pgPingTimeout bounds a health check.
const pgPingTimeout = 5 * time.Second

const (
	pgGetSQL = `SELECT v FROM kv WHERE bucket = $1 AND k = $2`
	// pgGetForUpdateSQL is a write transaction's point read: it locks the
	// row until the transaction ends, so that a read-modify-write of a
	// record (a thread, a run, a run's fencing token) is never interleaved
	// with another replica's. Rows of other records are not touched:
	// writers of different threads never wait for each other.
	pgGetForUpdateSQL = pgGetSQL + ` FOR UPDATE`
	pgTailSQL         = `DELETE FROM kv WHERE bucket = $1 AND k >= $2`
	pgFromSQL         = `SELECT k, v FROM kv WHERE bucket = $1 AND k >= $2 ORDER BY k LIMIT $3`
	pgAfterSQL        = `SELECT k, v FROM kv WHERE bucket = $1 AND k > $2 ORDER BY k LIMIT $3`
	pgBeforeSQL       = `SELECT k, v FROM kv WHERE bucket = $1 AND k < $2 ORDER BY k DESC LIMIT $3`
	pgLastSQL         = `SELECT k, v FROM kv WHERE bucket = $1 ORDER BY k DESC LIMIT $2`
)

// pgBackend keeps the key-value tree in one PostgreSQL table (see
// migrations/0001_kv.sql).
type pgBackend struct {
	pool *pgxpool.Pool
	cfg  *pgx.ConnConfig // for the listener's own connection
	name string          // the URL without its password
	// lease is how long a replica's hold on a running run lasts.
	lease time.Duration
	log   *slog.Logger
	// channel is the NOTIFY channel of the schema; origin tells this
	// process's notices from the others'.
	channel, origin string

	stop     context.CancelFunc // ends the listener
	listened chan struct{}      // closed when the listener has ended
}

// OpenPostgres opens the PostgreSQL database at databaseURL (a postgres://
// URL or a key=value connection string), applies the pending migrations
// and starts the writer. Tables live in the connection's search path
// (set it with the search_path URL parameter).
func OpenPostgres(databaseURL string, opts Options) (*DB, error) {
	be, err := openPostgres(databaseURL, opts)
	if err != nil {
		return nil, err
	}
	return start(be)
}

func openPostgres(databaseURL string, opts Options) (*pgBackend, error) {
	name := redactURL(databaseURL)
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", name, err)
	}
	applyPoolDefaults(cfg, opts)
	ctx := context.Background()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", name, err)
	}
	if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return migrate(ctx, tx) }); err != nil {
		pool.Close()
		if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
			return nil, fmt.Errorf("open database %s: no answer within %s (the URL's connect_timeout, in seconds, sets it): %w", name, cfg.ConnConfig.ConnectTimeout, oneLine{err})
		}
		return nil, fmt.Errorf("open database %s: %w", name, oneLine{err})
	}
	var schema string
	if err := pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open database %s: %w", name, oneLine{err})
	}
	lease := opts.Lease
	if lease <= 0 {
		lease = DefaultLease
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	be := &pgBackend{pool: pool, cfg: cfg.ConnConfig, name: name, lease: lease, log: log,
		channel: noticeChannel(schema), origin: uuid.NewString(), listened: make(chan struct{})}
	close(be.listened) // until listen starts one
	return be, nil
}

// applyPoolDefaults sets what the server needs of the pool where the URL
// leaves it open: the pool size, a bounded connect timeout, the
// application name, and asynchronous commits for NoSync.
func applyPoolDefaults(cfg *pgxpool.Config, opts Options) {
	cfg.MaxConns = pgMaxConns
	if cfg.ConnConfig.ConnectTimeout <= 0 {
		cfg.ConnConfig.ConnectTimeout = defaultConnectTimeout
	}
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "agentserver"
	}
	if opts.NoSync {
		cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	}
}

// noticeChannel is the NOTIFY channel of a schema: channels are shared by
// the whole database, so deployments in other schemas do not hear it.
func noticeChannel(schema string) string {
	h := fnv.New64a()
	h.Write([]byte(schema))
	return fmt.Sprintf("agentserver_%016x", h.Sum64())
}

func (be *pgBackend) opCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), pgOpTimeout)
}

// oneLine is an error whose text fits one line: the driver lists each
// connection attempt on a line of its own, and start-up errors are one line.
type oneLine struct{ err error }

func (e oneLine) Error() string {
	var b strings.Builder
	for _, line := range strings.Split(e.err.Error(), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "":
			continue
		case b.Len() == 0:
		case strings.HasSuffix(b.String(), ":"):
			b.WriteString(" ")
		default:
			b.WriteString("; ")
		}
		b.WriteString(line)
	}
	return b.String()
}

func (e oneLine) Unwrap() error { return e.err }

// isTimeout reports whether err is a network or connect timeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// redactURL is databaseURL without its password, for errors and logs.
func redactURL(databaseURL string) string {
	u, err := url.Parse(databaseURL)
	if err != nil || u.Scheme == "" {
		return "(PostgreSQL connection string)"
	}
	return u.Redacted()
}

// The statements that open a transaction. They are not sent alone: they
// go in the same pipelined batch as the transaction's first round trip.
const (
	pgBeginReadSQL  = `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`
	pgBeginWriteSQL = `BEGIN`
	pgCommitSQL     = `COMMIT`
	pgRollbackSQL   = `ROLLBACK`
	// pgXactIDSQL starts the statement that opens a write transaction
	// after BEGIN (writerOpenSQL): the transaction's id tells, should the
	// session be lost while COMMIT is in flight, whether it committed
	// (pgXactStatusSQL).
	pgXactIDSQL     = `SELECT pg_current_xact_id()::text::bigint`
	pgXactStatusSQL = `SELECT pg_xact_status($1::text::xid8)`
)

// writerOpenSQL are the statements that open a write transaction on try
// attempt (0 first): BEGIN, then one statement that reads the
// transaction's id, sets its idle timeout and steers its plans off
// sequential scans.
//
// Every statement of a write transaction reads or writes rows by key
// (point reads, key ranges, deletes of listed keys, the run queue's
// claims), so an index is always the right path. The planner does not
// always know it: the run queue, runs, threads and kv rows of a busy
// server are inserted and deleted by the thousand between two visits of
// autovacuum, whose statistics a new schema does not have yet, so the
// planner sees tables of a few pages and prefers a sequential scan (and a
// hash join over the keys) that then reads every dead row left since the
// last vacuum, on every commit. Where no index serves a statement, it
// still scans.
func writerOpenSQL(attempt int) []string {
	idle := writerIdleTimeout
	for range attempt {
		idle *= writerIdleGrowth
	}
	return []string{pgBeginWriteSQL, fmt.Sprintf(
		"%s, set_config('idle_in_transaction_session_timeout', '%d', true) IS NULL, set_config('enable_seqscan', 'off', true) IS NULL",
		pgXactIDSQL, idle.Milliseconds())}
}

// acquire takes a connection of the pool for one transaction; release
// hands it back, rolling back whatever the transaction left open (a
// connection that cannot be rolled back is closed by the pool).
func (be *pgBackend) acquire(ctx context.Context, readOnly bool) (*pgTxn, func(), error) {
	conn, err := be.pool.Acquire(ctx)
	if err != nil {
		return nil, nil, err
	}
	t := &pgTxn{ctx: ctx, conn: conn.Conn(), readOnly: readOnly}
	release := func() {
		if t.begun && conn.Conn().PgConn().TxStatus() != 'I' {
			conn.Conn().Exec(ctx, pgRollbackSQL)
		}
		conn.Release()
	}
	return t, release, nil
}

func (be *pgBackend) view(ctx context.Context, fn func(kvTx) error) error {
	return be.read(ctx, fn, true)
}

func (be *pgBackend) viewLatest(ctx context.Context, fn func(kvTx) error) error {
	return be.read(ctx, fn, false)
}

// read runs fn read-only. In a snapshot, BEGIN goes with the first read:
// a view that reads nothing costs no round trip, and one that reads once
// costs two (the read, COMMIT). Without one, every read is a statement of
// its own and nothing opens or ends a transaction. Cancelling ctx stops the
// statement in flight (and the connection's transaction is rolled back).
func (be *pgBackend) read(ctx context.Context, fn func(kvTx) error, snapshot bool) error {
	t, release, err := be.acquire(ctx, true)
	if err != nil {
		return fmt.Errorf("begin read: %w", err)
	}
	defer release()
	if snapshot {
		t.begin = []string{pgBeginReadSQL}
	}
	if err := fn(t); err != nil {
		return t.failureOr(err)
	}
	if t.err != nil || !snapshot || !t.begun {
		return t.err
	}
	return t.endWith(pgCommitSQL)
}

// update runs fn in a write transaction, trying again on a fresh
// connection, up to pgWriteAttempts times, when the transaction did not
// commit for a reason a new try removes: its session was lost or ended by
// PostgreSQL (a frozen process cut off by the idle timeout, an
// administrator's pg_terminate_backend), a serialization failure, a
// deadlock. fn then runs again from the start; the batch commits once or
// not at all: when the session is lost while COMMIT is in flight, the
// transaction's status on the server decides between success and a new try,
// and an outcome it cannot tell is an error, never a success.
func (be *pgBackend) update(fn func(kvTx) error) error {
	for attempt := 0; ; attempt++ {
		t, err := be.updateOnce(fn, attempt)
		if err == nil {
			return nil
		}
		if t == nil || t.err == nil {
			return err // fn's own error, or no connection at all
		}
		committed, again := be.outcome(t)
		switch {
		case committed:
			be.resendNotices(t)
			return nil
		case !again || attempt+1 >= pgWriteAttempts:
			return err
		}
		be.log.Warn("database write did not commit; trying again on a new connection", "attempt", attempt+1, "err", oneLine{err})
		_ = retry.Wait(context.Background(), pgWriteRetry.Delay(attempt, 0))
	}
}

// updateOnce is one try of update. It returns the transaction (nil when
// none began) with the error.
func (be *pgBackend) updateOnce(fn func(kvTx) error, attempt int) (*pgTxn, error) {
	ctx := context.Background()
	t, release, err := be.acquire(ctx, false)
	if err != nil {
		return nil, fmt.Errorf("begin write: %w", err)
	}
	defer func() {
		// Read before the connection goes back to the pool, where another
		// transaction may take it.
		t.connClosed = t.conn.IsClosed()
		release()
	}()
	// BEGIN and the writer lock go with the first round trip, before any
	// statement of the transaction, and COMMIT with the last batch.
	t.begin = writerOpenSQL(attempt)
	t.lease = be.lease
	if err := fn(t); err != nil {
		return t, t.failureOr(err)
	}
	t.notice.Origin = be.origin
	t.afterCommit = noticeSQL(be.channel, t.notice.payloads())
	if err := t.endWith(pgCommitSQL); err != nil {
		return t, fmt.Errorf("commit: %w", err)
	}
	if t.afterCommitErr != nil {
		be.log.Warn("database notices: a committed write's notice was not sent", "err", oneLine{t.afterCommitErr})
	}
	return t, nil
}

// noticeSQL are the statements that send a write transaction's notices
// once it has committed: they follow its COMMIT in the same round trip and
// form a transaction of their own (the implicit one that a pipeline's
// statements after COMMIT run in, up to its end). NOTIFY inside the write
// transaction would serialize the commits of every replica: PostgreSQL
// takes one lock for the whole database from a notifying transaction's
// commit until its end (its WAL flush included). The notices' transaction
// does not wait for its flush (synchronous_commit off, for itself): they
// are hints that wake listeners, and one lost in a crash of the database
// loses nothing stored (the replicas' safety poll looks anyway).
// Listeners still hear only of committed changes, and of one sender's in
// commit order (its writes commit one after another, each round trip's
// notices sent before the next begins).
func noticeSQL(channel string, payloads []string) []queuedSQL {
	out := make([]queuedSQL, len(payloads))
	for i, p := range payloads {
		out[i] = queuedSQL{sql: `SELECT set_config('synchronous_commit', 'off', true), pg_notify($1, $2)`, args: []any{channel, p}}
	}
	return out
}

// queuedSQL is a statement with its arguments.
type queuedSQL struct {
	sql  string
	args []any
}

// resendNotices sends, on a connection of the pool, the notices of a
// transaction that committed although its session was lost while COMMIT
// was in flight, so that their own statements may not have run.
func (be *pgBackend) resendNotices(t *pgTxn) {
	ctx, cancel := be.opCtx()
	defer cancel()
	for _, q := range t.afterCommit {
		if _, err := be.pool.Exec(ctx, q.sql, q.args...); err != nil {
			be.log.Warn("database notices: a committed write's notice was not sent", "err", oneLine{err})
			return
		}
	}
}

// retriedSQLStates are the errors after which a write transaction is tried
// again: it did not commit, and a new try may.
var retriedSQLStates = map[string]bool{
	"40001": true, // serialization_failure
	"40P01": true, // deadlock_detected
	"25P03": true, // idle_in_transaction_session_timeout
	"57P01": true, // admin_shutdown (pg_terminate_backend)
	"57P05": true, // idle_session_timeout
}

// isKeyTaken reports a unique violation of the primary key of kv or of a
// record table: a key another transaction inserted after this one read it
// as absent (the relations' insertManySQL), which a new try reads.
func isKeyTaken(pgErr *pgconn.PgError) bool {
	if pgErr.Code != "23505" {
		return false
	}
	table, ok := strings.CutSuffix(pgErr.ConstraintName, "_pkey")
	return ok && (table == pgKV.table || pgRelations[table] != nil)
}

// outcome tells what became of a write transaction that failed (t.err):
// whether it committed after all (its session was lost while COMMIT was
// in flight, and the server says it committed), and otherwise whether a
// new try may succeed.
func (be *pgBackend) outcome(t *pgTxn) (committed, again bool) {
	var pgErr *pgconn.PgError
	if errors.As(t.err, &pgErr) {
		// The server answered with an error: the transaction did not
		// commit (an error ends it).
		return false, retriedSQLStates[pgErr.Code] || isKeyTaken(pgErr)
	}
	if !t.connClosed && !isConnLoss(t.err) {
		return false, false
	}
	if !t.commitSent || pgconn.SafeToRetry(t.err) {
		// Lost before COMMIT was sent (or before anything of the round
		// trip was): nothing committed.
		return false, true
	}
	if t.xid == 0 {
		return false, false // no id to ask about: the outcome is unknown
	}
	ctx, cancel := be.opCtx()
	defer cancel()
	var status *string
	if err := be.pool.QueryRow(ctx, pgXactStatusSQL, strconv.FormatInt(t.xid, 10)).Scan(&status); err != nil || status == nil {
		return false, false
	}
	switch *status {
	case "committed":
		return true, false
	case "aborted":
		return false, true
	}
	return false, false // still in progress: unknown
}

// isConnLoss reports whether err is the loss of a connection (as opposed
// to an error the server answered).
func isConnLoss(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || pgconn.SafeToRetry(err)
}

// endWith sends the pending writes and then sql (COMMIT) in one round
// trip, and checks that the transaction did commit: COMMIT of a failed
// transaction answers ROLLBACK without an error.
func (t *pgTxn) endWith(sql string) error {
	if t.err != nil {
		return t.err
	}
	t.commit = sql
	if err := t.query("", nil, nil); err != nil {
		return err
	}
	if t.conn.PgConn().TxStatus() != 'I' {
		return errors.New("postgres: the transaction is still open after COMMIT")
	}
	return nil
}

func (be *pgBackend) ping() error {
	ctx, cancel := context.WithTimeout(context.Background(), pgPingTimeout)
	defer cancel()
	var one int
	return be.pool.QueryRow(ctx, `SELECT 1 FROM schema_migrations LIMIT 1`).Scan(&one)
}

func (be *pgBackend) close() error {
	if be.stop != nil {
		be.stop()
	}
	<-be.listened
	be.pool.Close()
	return nil
}

// listen starts delivering the schema's notices to fn, on a connection of
// its own, until the database closes. When the connection fails it
// reconnects and delivers a Resync notice, since notices may have been
// missed meanwhile. It returns once the first LISTEN is in place (or
// failed: the listener then keeps retrying).
func (be *pgBackend) listen(fn func(Notice)) {
	ctx, stop := context.WithCancel(context.Background())
	be.stop, be.listened = stop, make(chan struct{})
	ready := make(chan struct{})
	go func() {
		defer close(be.listened)
		first := true
		for ctx.Err() == nil {
			err := be.listenOnce(ctx, fn, func() {
				if first {
					first = false
					close(ready)
				} else {
					fn(Notice{Resync: true})
				}
			})
			if first {
				first = false
				close(ready)
			}
			if ctx.Err() != nil {
				return
			}
			be.log.Warn("database notices: listener failed, reconnecting", "err", err)
			_ = retry.Wait(ctx, pgListenRetry) // the loop ends with ctx
		}
	}()
	<-ready
}

// listenOnce listens on one connection until it fails; listening is called
// once the LISTEN is in place.
func (be *pgBackend) listenOnce(ctx context.Context, fn func(Notice), listening func()) error {
	conn, err := pgx.ConnectConfig(ctx, be.cfg.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{be.channel}.Sanitize()); err != nil {
		return err
	}
	listening()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		var notice Notice
		if err := json.Unmarshal([]byte(n.Payload), &notice); err != nil {
			continue // not ours
		}
		notice.Local = notice.Origin == be.origin
		fn(notice)
	}
}

func (be *pgBackend) describe() string { return be.name }

// pgTxn is a PostgreSQL transaction under the seam. Writes are queued and
// sent together, pipelined, before the next read and at commit, so that a
// transaction costs few round trips; every read therefore sees the
// transaction's own writes.
type pgTxn struct {
	ctx  context.Context
	conn *pgx.Conn
	// begin holds the statements that open the transaction until they
	// are sent, ahead of its first round trip; begun is set once they are.
	begin    []string
	begun    bool
	readOnly bool
	// commit, when set, ends the next round trip (the last one);
	// commitSent is set once it is sent. afterCommit follows it in the
	// same round trip (the notices, noticeSQL); an error of theirs does
	// not fail the committed transaction and is kept in afterCommitErr.
	commit         string
	commitSent     bool
	afterCommit    []queuedSQL
	afterCommitErr error
	// xid is the id of a write transaction (pgXactIDSQL), once read.
	xid int64
	// connClosed is whether the connection was closed when a write
	// transaction's try ended (update reads it after the release).
	connClosed bool
	lease      time.Duration
	// notice collects what the transaction tells the replicas at commit.
	notice  Notice
	pending pgx.Batch
	// queueRows holds the run queue rows written since the last batch
	// (nil: deleted), one per run (see writeQueue).
	queueRows map[uuid.UUID]*Run
	// ownerDeletes are the owner deletes gathered since the last batch
	// (pgownerdeletes.go).
	ownerDeletes ownerDeletes
	// gathering is set while prefetches are gathered for one round trip
	// (gatherPrefetches); gathered holds them.
	gathering bool
	gathered  gatheredReads
	// overlay answers reads of keys the transaction wrote or read.
	overlay pgOverlay
	// writes counts the writes queued so far; a cursor whose page is older
	// than the last write fetches again from its position.
	writes uint64
	err    error
}

func (t *pgTxn) bucket(name []byte) kvBucket {
	return &pgBucket{t: t, name: string(name), rel: pgRelationOf(string(name))}
}

func (t *pgTxn) failure() error { return t.err }

// failureOr prefers the transaction's own failure to err, which fn may have
// derived from a read that silently returned nothing.
func (t *pgTxn) failureOr(err error) error {
	if t.err != nil {
		return t.err
	}
	return err
}

// fail records the first failure of the transaction.
func (t *pgTxn) fail(err error) {
	if t.err == nil {
		t.err = fmt.Errorf("postgres: %w", err)
	}
}

// queue adds a write to the pending batch.
func (t *pgTxn) queue(sql string, args ...any) error {
	if t.err != nil {
		return t.err
	}
	if t.readOnly {
		return errReadOnly
	}
	t.ownerDeletes.queue(&t.pending)
	t.pending.Queue(sql, args...)
	t.writes++
	return nil
}

var errReadOnly = errors.New("write in a read-only transaction")

// pgBucket is one bucket's rows: those of its table, or its rows of kv.
type pgBucket struct {
	t    *pgTxn
	name string
	rel  *pgRelation
}

func (b *pgBucket) Get(k []byte) []byte {
	if b.t.err != nil {
		return nil
	}
	if v, ok := b.t.overlay.get(b.name, k); ok {
		return v
	}
	// No queued write touches k (the overlay would know): the server's
	// state is the transaction's for this key, without a flush.
	var v []byte
	found := false
	sql := b.rel.getSQL
	if !b.t.readOnly {
		sql = b.rel.getForUpdateSQL
	}
	err := b.t.read(sql, b.rel.args(b.name, k), func(rows pgx.Rows) error {
		for rows.Next() {
			found = true
			if err := rows.Scan(&v); err != nil {
				return err
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil
	}
	if !found {
		b.t.overlay.read(b.name, bytes.Clone(k), nil)
		return nil
	}
	v = present(v)
	b.t.overlay.read(b.name, bytes.Clone(k), v)
	return v
}

// present makes the value of a present key non-nil, as bbolt returns it.
func present(v []byte) []byte {
	if v == nil {
		return []byte{}
	}
	return v
}

func (b *pgBucket) Put(k, v []byte) error {
	return b.write(k, present(v))
}

func (b *pgBucket) Delete(k []byte) error {
	return b.write(k, nil)
}

// write records a put (v not nil) or a delete in the overlay; the net
// change of each key goes to the server with the next batch (writeDirty).
func (b *pgBucket) write(k, v []byte) error {
	t := b.t
	if t.err != nil {
		return t.err
	}
	if t.readOnly {
		return errReadOnly
	}
	b.noteVectors()
	t.overlay.write(b.name, k, v)
	t.writes++
	return nil
}

// noteVectors tells the other replicas, at commit, that store vectors
// changed: their in-memory vector indexes reload.
func (b *pgBucket) noteVectors() {
	if b.name == string(bucketStoreVectors) {
		b.t.notice.StoreVectors = true
	}
}

// deleteRange deletes every key in [from, to). A bounded range goes with
// the next batch, in one statement with the batch's other bounded ranges
// (writeDirty); a delete to the bucket's end is queued alone.
func (b *pgBucket) deleteRange(from, to []byte) error {
	t := b.t
	if t.err != nil {
		return t.err
	}
	if t.readOnly {
		return errReadOnly
	}
	b.noteVectors()
	if to == nil {
		if err := t.queue(b.rel.tailSQL, b.rel.args(b.name, present(from))...); err != nil {
			return err
		}
	} else {
		t.writes++
	}
	t.overlay.deleteRange(b.name, present(from), to)
	return nil
}

func (b *pgBucket) ForEach(fn func(k, v []byte) error) error {
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if err := fn(k, v); err != nil {
			return err
		}
	}
	return b.t.err
}

func (b *pgBucket) Cursor() kvCursor { return &pgCursor{b: b} }

type kvPair struct{ k, v []byte }

// pgCursor walks a bucket a page at a time. rows is the current page in
// the direction it was fetched (desc: newest key first); at is the index of
// the pair the cursor is on.
type pgCursor struct {
	b      *pgBucket
	rows   []kvPair
	at     int
	desc   bool
	more   bool   // the page was full: rows may follow it
	limit  int    // size of the next page
	writes uint64 // the transaction's write count when the page was fetched
}

func (c *pgCursor) First() ([]byte, []byte) {
	return c.position(false, c.b.rel.fromSQL, []byte{})
}

func (c *pgCursor) Last() ([]byte, []byte) {
	return c.position(true, c.b.rel.lastSQL)
}

func (c *pgCursor) Seek(seek []byte) ([]byte, []byte) {
	// present: pgx sends a nil slice as NULL, which no key is >= to.
	return c.position(false, c.b.rel.fromSQL, present(seek))
}

func (c *pgCursor) Next() ([]byte, []byte) { return c.step(false) }

func (c *pgCursor) Prev() ([]byte, []byte) { return c.step(true) }

func (c *pgCursor) Delete() error {
	k, _ := c.current()
	if k == nil {
		return errors.New("cursor delete: the cursor is on no pair")
	}
	return c.b.Delete(k)
}

// position fetches a first page of pgFirstPage rows.
func (c *pgCursor) position(desc bool, sql string, bound ...[]byte) ([]byte, []byte) {
	c.limit = pgFirstPage
	return c.fetch(desc, sql, bound...)
}

// step moves one pair on in direction desc, fetching the next page when
// the current one is used up, fetched the other way, or older than a write.
func (c *pgCursor) step(desc bool) ([]byte, []byte) {
	k, _ := c.current()
	if k == nil {
		return nil, nil
	}
	fresh := c.writes == c.b.t.writes
	if fresh && desc == c.desc {
		if c.at+1 < len(c.rows) {
			c.at++
			return c.current()
		}
		if !c.more {
			c.at = len(c.rows)
			return nil, nil
		}
	}
	if fresh && desc == c.desc {
		c.limit = min(c.limit*4, pgMaxPage)
	} else {
		c.limit = pgFirstPage
	}
	if desc {
		return c.fetch(true, c.b.rel.beforeSQL, k)
	}
	return c.fetch(false, c.b.rel.afterSQL, k)
}

func (c *pgCursor) current() ([]byte, []byte) {
	if c.at < 0 || c.at >= len(c.rows) {
		return nil, nil
	}
	p := c.rows[c.at]
	return p.k, p.v
}

// fetch replaces the page with up to c.limit rows of the query.
func (c *pgCursor) fetch(desc bool, sql string, bound ...[]byte) ([]byte, []byte) {
	t := c.b.t
	c.rows, c.at, c.desc, c.more = c.rows[:0], 0, desc, false
	var args []any
	for _, b := range bound {
		args = append(args, b)
	}
	args = c.b.rel.args(c.b.name, append(args, c.limit)...)
	var page []kvPair
	err := t.query(sql, args, func(rows pgx.Rows) error {
		for rows.Next() {
			var p kvPair
			if err := rows.Scan(&p.k, &p.v); err != nil {
				return err
			}
			p.v = present(p.v)
			page = append(page, p)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, nil
	}
	c.rows, c.more, c.writes = page, len(page) == c.limit, t.writes
	return c.current()
}

// query runs a query after the queued writes, in the same round trip (the
// writes and the query go in one pipelined batch), and hands its rows to
// read; with sql empty it only sends the writes. A failure fails the
// transaction.
func (t *pgTxn) query(sql string, args []any, read func(pgx.Rows) error) error {
	if t.err != nil {
		return t.err
	}
	t.ownerDeletes.queue(&t.pending)
	t.overlay.writeDirty(&t.pending)
	t.writeQueue(&t.pending)
	batch := t.pending
	t.pending = pgx.Batch{}
	t.overlay.flushed()
	return t.send(&batch, sql, args, read)
}

// read runs a query that needs none of the queued writes (they touch no
// key it reads), leaving them queued.
func (t *pgTxn) read(sql string, args []any, read func(pgx.Rows) error) error {
	if t.err != nil {
		return t.err
	}
	return t.send(&pgx.Batch{}, sql, args, read)
}

// send sends batch, then the query sql (when not empty), in one round
// trip, preceded by the statements that open the transaction when they
// are still to be sent and followed by t.commit when set.
func (t *pgTxn) send(batch *pgx.Batch, sql string, args []any, read func(pgx.Rows) error) error {
	n := batch.Len()
	var open []string
	if !t.begun {
		open, t.begun = t.begin, true
	}
	if len(open) == 0 && n == 0 && t.commit == "" {
		if sql == "" {
			return nil
		}
		rows, err := t.conn.Query(t.ctx, sql, args...)
		if err == nil {
			err = read(rows)
			rows.Close()
		}
		if err != nil {
			t.fail(err)
		}
		return t.err
	}
	full := &pgx.Batch{}
	for _, stmt := range open {
		full.Queue(stmt)
	}
	full.QueuedQueries = append(full.QueuedQueries, batch.QueuedQueries...)
	if sql != "" {
		full.Queue(sql, args...)
	}
	if t.commit != "" {
		full.Queue(t.commit)
		for _, q := range t.afterCommit {
			full.Queue(q.sql, q.args...)
		}
	}
	t.commitSent = t.commit != ""
	results := t.conn.SendBatch(t.ctx, full)
	var err error
	for i := range len(open) + n {
		if i < len(open) && strings.HasPrefix(open[i], pgXactIDSQL) {
			err = results.QueryRow().Scan(&t.xid, nil, nil)
		} else {
			_, err = results.Exec()
		}
		if err != nil {
			break
		}
	}
	if err == nil && sql != "" {
		var rows pgx.Rows
		if rows, err = results.Query(); err == nil {
			err = read(rows)
			rows.Close()
		}
	}
	if err == nil && t.commit != "" {
		var tag pgconn.CommandTag
		if tag, err = results.Exec(); err == nil && tag.String() != t.commit {
			err = fmt.Errorf("%s answered %s", t.commit, tag)
		}
		for range t.afterCommit {
			if err != nil {
				break
			}
			if _, aerr := results.Exec(); aerr != nil {
				t.afterCommitErr = aerr
				break
			}
		}
	}
	if cerr := results.Close(); err == nil && t.afterCommitErr == nil {
		err = cerr
	}
	if err != nil {
		t.fail(err)
	}
	return t.err
}
