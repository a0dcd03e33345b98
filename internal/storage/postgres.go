package storage

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// writerLockSQL serializes read-write transactions of every process using
// the same schema: each one takes this transaction-scoped advisory lock
// first. The key is derived from the schema name, so deployments (or tests)
// in different schemas of one database do not wait for each other.
const writerLockSQL = `SELECT pg_advisory_xact_lock(hashtextextended('agentserver writer ' || current_schema(), 0))`

// serverLockSQL takes the session advisory lock that marks a schema as
// used by a server; it returns false at once when another session has it.
const serverLockSQL = `SELECT pg_try_advisory_lock(hashtextextended('agentserver server ' || current_schema(), 0))`

// pgLockWait is how long OpenPostgres waits for the server lock: a server
// that just stopped (or was killed) releases it when PostgreSQL notices its
// connection has gone, which is quick but not instant.
var pgLockWait = 5 * time.Second

// pgLockPoll is how often OpenPostgres retries the server lock.
const pgLockPoll = 100 * time.Millisecond

// Cursor page sizes: a cursor first fetches pgFirstPage rows from where it
// is positioned, then pages grow fourfold up to pgMaxPage, so a point
// lookup reads little and a long scan costs few round trips.
const (
	pgFirstPage = 4
	pgMaxPage   = 64
)

// pgMaxConns bounds the connections of one server: the writer holds one,
// readers share the rest.
const pgMaxConns = 16

// pgPingTimeout bounds a health check.
const pgPingTimeout = 5 * time.Second

const (
	pgGetSQL    = `SELECT v FROM kv WHERE bucket = $1 AND k = $2`
	pgPutSQL    = `INSERT INTO kv (bucket, k, v) VALUES ($1, $2, $3) ON CONFLICT (bucket, k) DO UPDATE SET v = excluded.v`
	pgDeleteSQL = `DELETE FROM kv WHERE bucket = $1 AND k = $2`
	pgRangeSQL  = `DELETE FROM kv WHERE bucket = $1 AND k >= $2 AND k < $3`
	pgTailSQL   = `DELETE FROM kv WHERE bucket = $1 AND k >= $2`
	pgFromSQL   = `SELECT k, v FROM kv WHERE bucket = $1 AND k >= $2 ORDER BY k LIMIT $3`
	pgAfterSQL  = `SELECT k, v FROM kv WHERE bucket = $1 AND k > $2 ORDER BY k LIMIT $3`
	pgBeforeSQL = `SELECT k, v FROM kv WHERE bucket = $1 AND k < $2 ORDER BY k DESC LIMIT $3`
	pgLastSQL   = `SELECT k, v FROM kv WHERE bucket = $1 ORDER BY k DESC LIMIT $2`
)

// pgBackend keeps the key-value tree in one PostgreSQL table (see
// migrations/0001_kv.sql).
type pgBackend struct {
	pool *pgxpool.Pool
	// held is the connection holding the server lock for as long as the
	// database is open.
	held *pgx.Conn
	name string // the URL without its password
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
	cfg.MaxConns = pgMaxConns
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "agentserver"
	}
	if opts.NoSync {
		cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	}
	ctx := context.Background()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", name, err)
	}
	if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return migrate(ctx, tx) }); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open database %s: %w", name, oneLine{err})
	}
	held, err := holdServerLock(ctx, cfg.ConnConfig)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("open database %s: %w", name, oneLine{err})
	}
	return &pgBackend{pool: pool, held: held, name: name}, nil
}

// holdServerLock opens a connection that holds the schema's server lock,
// waiting up to pgLockWait for a server that is stopping to release it.
// Until replicas coordinate their runs, a second server on one schema would
// run every queued run a second time, so it is refused (ErrLocked).
func holdServerLock(ctx context.Context, cfg *pgx.ConnConfig) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, cfg.Copy())
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(pgLockWait)
	for {
		var got bool
		if err := conn.QueryRow(ctx, serverLockSQL).Scan(&got); err != nil {
			conn.Close(ctx)
			return nil, err
		}
		if got {
			return conn, nil
		}
		if time.Now().After(deadline) {
			conn.Close(ctx)
			return nil, fmt.Errorf("%w (another server uses this database and schema; run one server per schema)", ErrLocked)
		}
		time.Sleep(pgLockPoll) // polling another process's lock, with a deadline
	}
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

// redactURL is databaseURL without its password, for errors and logs.
func redactURL(databaseURL string) string {
	u, err := url.Parse(databaseURL)
	if err != nil || u.Scheme == "" {
		return "(PostgreSQL connection string)"
	}
	return u.Redacted()
}

func (be *pgBackend) view(fn func(kvTx) error) error {
	ctx := context.Background()
	tx, err := be.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return fmt.Errorf("begin read: %w", err)
	}
	defer tx.Rollback(ctx)
	t := &pgTxn{ctx: ctx, tx: tx, readOnly: true}
	if err := fn(t); err != nil {
		return t.failureOr(err)
	}
	if t.err != nil {
		return t.err
	}
	return tx.Commit(ctx)
}

func (be *pgBackend) update(fn func(kvTx) error) error {
	ctx := context.Background()
	tx, err := be.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin write: %w", err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, writerLockSQL); err != nil {
		return fmt.Errorf("take the writer lock: %w", err)
	}
	t := &pgTxn{ctx: ctx, tx: tx}
	if err := fn(t); err != nil {
		return t.failureOr(err)
	}
	if err := t.flush(); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
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
	be.pool.Close()
	return be.held.Close(context.Background())
}

func (be *pgBackend) describe() string { return be.name }

// pgTxn is a PostgreSQL transaction under the seam. Writes are queued and
// sent together, pipelined, before the next read and at commit, so that a
// transaction costs few round trips; every read therefore sees the
// transaction's own writes.
type pgTxn struct {
	ctx      context.Context
	tx       pgx.Tx
	readOnly bool
	pending  pgx.Batch
	// writes counts the writes queued so far; a cursor whose page is older
	// than the last write fetches again from its position.
	writes uint64
	err    error
}

func (t *pgTxn) bucket(name []byte) kvBucket { return &pgBucket{t: t, name: string(name)} }

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
	t.pending.Queue(sql, args...)
	t.writes++
	return nil
}

var errReadOnly = errors.New("write in a read-only transaction")

// flush sends the pending writes in one pipelined batch.
func (t *pgTxn) flush() error {
	if t.err != nil {
		return t.err
	}
	n := t.pending.Len()
	if n == 0 {
		return nil
	}
	results := t.tx.SendBatch(t.ctx, &t.pending)
	var err error
	for range n {
		if _, err = results.Exec(); err != nil {
			break
		}
	}
	if cerr := results.Close(); err == nil {
		err = cerr
	}
	t.pending = pgx.Batch{}
	if err != nil {
		t.fail(err)
	}
	return t.err
}

// pgBucket is one bucket's rows of the kv table.
type pgBucket struct {
	t    *pgTxn
	name string
}

func (b *pgBucket) Get(k []byte) []byte {
	if b.t.flush() != nil {
		return nil
	}
	var v []byte
	err := b.t.tx.QueryRow(b.t.ctx, pgGetSQL, b.name, k).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		b.t.fail(err)
		return nil
	}
	return present(v)
}

// present makes the value of a present key non-nil, as bbolt returns it.
func present(v []byte) []byte {
	if v == nil {
		return []byte{}
	}
	return v
}

func (b *pgBucket) Put(k, v []byte) error {
	return b.t.queue(pgPutSQL, b.name, k, present(v))
}

func (b *pgBucket) Delete(k []byte) error {
	return b.t.queue(pgDeleteSQL, b.name, k)
}

// deleteRange queues one statement deleting every key in [from, to).
func (b *pgBucket) deleteRange(from, to []byte) error {
	if to == nil {
		return b.t.queue(pgTailSQL, b.name, present(from))
	}
	return b.t.queue(pgRangeSQL, b.name, present(from), to)
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
	return c.position(false, pgFromSQL, []byte{})
}

func (c *pgCursor) Last() ([]byte, []byte) {
	return c.position(true, pgLastSQL)
}

func (c *pgCursor) Seek(seek []byte) ([]byte, []byte) {
	// present: pgx sends a nil slice as NULL, which no key is >= to.
	return c.position(false, pgFromSQL, present(seek))
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
		return c.fetch(true, pgBeforeSQL, k)
	}
	return c.fetch(false, pgAfterSQL, k)
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
	if t.flush() != nil {
		return nil, nil
	}
	args := []any{c.b.name}
	for _, b := range bound {
		args = append(args, b)
	}
	args = append(args, c.limit)
	rows, err := t.tx.Query(t.ctx, sql, args...)
	if err != nil {
		t.fail(err)
		return nil, nil
	}
	var page []kvPair
	for rows.Next() {
		var p kvPair
		if err := rows.Scan(&p.k, &p.v); err != nil {
			rows.Close()
			t.fail(err)
			return nil, nil
		}
		p.v = present(p.v)
		page = append(page, p)
	}
	if err := rows.Err(); err != nil {
		t.fail(err)
		return nil, nil
	}
	c.rows, c.more, c.writes = page, len(page) == c.limit, t.writes
	return c.current()
}
