package storage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"agentserver/internal/errdefs"
	"agentserver/internal/metrics"
)

// SchemaVersion is the layout version this build reads and writes.
const SchemaVersion = 1

// maxBatch bounds how many queued writes share one transaction.
const maxBatch = 512

// maxBulkBatchBytes bounds the bytes the bulk writes of one transaction
// carry (at least one bulk write is taken), so that a commit holding bulk
// data stays short for the small writes that share it.
const maxBulkBatchBytes = 512 << 10

var (
	// ErrNotFound reports that a record does not exist.
	ErrNotFound = errdefs.ErrNotFound
	// ErrConflict reports that a record already exists.
	ErrConflict = errdefs.ErrConflict
	// ErrClosed reports use of a database after Close.
	ErrClosed = errors.New("storage closed")
	// ErrNoSpace reports a write refused because the disk is full.
	ErrNoSpace = errdefs.ErrNoSpace
	// ErrSchemaTooNew reports a file written by a newer build.
	ErrSchemaTooNew = errors.New("database schema is newer than this build")
	// ErrInvalidVectors reports store vectors of unequal lengths or a
	// damaged vector record.
	ErrInvalidVectors = errors.New("invalid store vectors")
	// ErrLocked reports an embedded database file another server holds.
	ErrLocked = errors.New("database is in use by another process")
)

var bucketNames = [][]byte{
	bucketMeta,
	bucketAssistants, bucketAssistantVersions,
	bucketThreads, bucketThreadsByCreated, bucketThreadsByMeta, bucketThreadsByStatus, bucketThreadsByExpiry,
	bucketCheckpoints, bucketNestedCheckpoints,
	bucketRuns, bucketRunsByThread, bucketRunsActive, bucketRunEvents,
	bucketStoreItems, bucketStoreExpiry, bucketStoreVectors, bucketStoreBlobs, bucketStoreStaged,
	bucketSubagents,
	bucketThreadEvents,
	bucketCrons, bucketCronsByDue, bucketCronsByThread,
}

var (
	bucketMeta              = []byte("meta")
	bucketAssistants        = []byte("assistants")
	bucketAssistantVersions = []byte("assistant_versions")
	bucketThreads           = []byte("threads")
	bucketThreadsByCreated  = []byte("threads_by_created")
	bucketThreadsByMeta     = []byte("threads_by_meta")
	bucketThreadsByStatus   = []byte("threads_by_status")
	bucketThreadsByExpiry   = []byte("threads_by_expiry")
	bucketCheckpoints       = []byte("checkpoints")
	bucketNestedCheckpoints = []byte("nested_checkpoints")
	bucketRuns              = []byte("runs")
	bucketRunsByThread      = []byte("runs_by_thread")
	bucketRunsActive        = []byte("runs_active")
	bucketRunEvents         = []byte("run_events")
	bucketStoreItems        = []byte("store_items")
	bucketStoreExpiry       = []byte("store_expiry")
	bucketStoreVectors      = []byte("store_vectors")
	bucketStoreBlobs        = []byte("store_blobs")
	bucketStoreStaged       = []byte("store_staged")
	bucketSubagents         = []byte("subagents")
	bucketThreadEvents      = []byte("thread_events")
	bucketCrons             = []byte("crons")
	bucketCronsByDue        = []byte("crons_by_due")
	bucketCronsByThread     = []byte("crons_by_thread")

	keySchemaVersion = []byte("schema_version")
)

// Options tune how the database is opened.
type Options struct {
	// NoSync skips fsync on commit (on PostgreSQL: synchronous_commit off).
	// Only benchmarks and tests that measure something other than
	// durability set it.
	NoSync bool
	// Lease is how long a replica's hold on a running run lasts without
	// renewal, on a shared (PostgreSQL) database. Default DefaultLease.
	Lease time.Duration
	// Log receives what the database reports in the background (a
	// PostgreSQL notice listener that reconnects); nil: discarded.
	Log *slog.Logger
}

// DB is the database, embedded (bbolt) or PostgreSQL. It is safe for
// concurrent use.
type DB struct {
	be backend

	writes chan *writeRequest
	// bulk queues the writes of large data in pieces (store values
	// staged by StageStoreValue): each transaction takes the small writes
	// queued and bulk ones up to maxBulkBatchBytes.
	bulk     chan *writeRequest
	quit     chan struct{}
	loopDone chan struct{}

	noticeMu  sync.Mutex
	noticeFns []func(Notice)
	// afterClose run once the database has closed.
	afterClose []func()

	closeOnce sync.Once
	mu        sync.RWMutex // guards closed against in-flight Update calls
	closed    bool
}

type writeRequest struct {
	fn func(*Tx) error
	// reads, when set, declares what fn reads (see UpdateReading).
	reads func(*Tx)
	done  chan error
	// size is the number of bytes a bulk write carries.
	size int
	// afterCommit collects callbacks registered by fn during its last execution.
	afterCommit []func()
}

// start checks the schema version of a freshly opened backend and starts
// the writer.
func start(be backend) (*DB, error) {
	if err := be.update(checkSchemaVersion); err != nil {
		be.close()
		return nil, fmt.Errorf("open database %s: %w", be.describe(), err)
	}
	db := &DB{
		be:       be,
		writes:   make(chan *writeRequest, maxBatch),
		bulk:     make(chan *writeRequest, maxBatch),
		quit:     make(chan struct{}),
		loopDone: make(chan struct{}),
	}
	go db.writeLoop()
	return db, nil
}

// checkSchemaVersion records SchemaVersion in a new database and refuses
// one written by a newer build.
func checkSchemaVersion(tx kvTx) error {
	meta := tx.bucket(bucketMeta)
	raw := meta.Get(keySchemaVersion)
	if err := tx.failure(); err != nil {
		return err
	}
	if raw == nil {
		return meta.Put(keySchemaVersion, []byte(strconv.Itoa(SchemaVersion)))
	}
	v, err := strconv.Atoi(string(raw))
	if err != nil {
		return fmt.Errorf("read schema version %q: %w", raw, err)
	}
	if v > SchemaVersion {
		return fmt.Errorf("%w: database has %d, build has %d", ErrSchemaTooNew, v, SchemaVersion)
	}
	return nil
}

// Close stops the writer after it has committed every queued write, then
// closes the file. It is safe to call more than once.
func (db *DB) Close() error {
	var err error
	db.closeOnce.Do(func() {
		db.mu.Lock()
		db.closed = true
		db.mu.Unlock()
		close(db.quit)
		<-db.loopDone
		err = db.be.close()
		for _, f := range db.afterClose {
			f()
		}
	})
	return err
}

// AfterClose registers f to run once Close has closed the database.
func (db *DB) AfterClose(f func()) {
	db.afterClose = append(db.afterClose, f)
}

// OnNotice delivers the notices of every transaction committed on the
// database from now on, this process's included, to fn, in commit order
// per sender, until Close. The first call starts listening and returns
// once the database listens. On an embedded database, which no other
// process shares, it does nothing. fn must not block.
func (db *DB) OnNotice(fn func(Notice)) {
	pg, ok := db.be.(*pgBackend)
	if !ok {
		return
	}
	db.noticeMu.Lock()
	defer db.noticeMu.Unlock()
	first := len(db.noticeFns) == 0
	db.noticeFns = append(db.noticeFns, fn)
	if first {
		pg.listen(db.deliver)
	}
}

// deliver hands a notice to every OnNotice function.
func (db *DB) deliver(n Notice) {
	db.noticeMu.Lock()
	fns := db.noticeFns
	db.noticeMu.Unlock()
	for _, fn := range fns {
		fn(n)
	}
}

// Ping checks that the database answers (the file is readable, or the
// PostgreSQL server responds).
func (db *DB) Ping() error {
	return db.be.ping()
}

// Describe names the database for logs: the file path, or the PostgreSQL
// URL without its password.
func (db *DB) Describe() string {
	return db.be.describe()
}

// View runs fn in a read-only transaction that sees one consistent
// snapshot. Cancelling ctx stops its database reads (a read then fails and
// View returns the context's error).
func (db *DB) View(ctx context.Context, fn func(*Tx) error) error {
	return db.be.view(ctx, func(kv kvTx) error {
		return fn(&Tx{kv: kv})
	})
}

// ViewLatest runs fn read-only as View does, but its reads do not share
// one snapshot: each sees what was committed when it ran. For fn that reads
// one record it is View at less cost: on PostgreSQL the read is a statement
// of its own, without BEGIN and COMMIT (one round trip instead of two).
func (db *DB) ViewLatest(ctx context.Context, fn func(*Tx) error) error {
	lv, ok := db.be.(latestViewer)
	if !ok {
		return db.View(ctx, fn)
	}
	return lv.viewLatest(ctx, func(kv kvTx) error {
		return fn(&Tx{kv: kv})
	})
}

// Read runs fn in View and returns its result: the one-line form of the
// usual "declare, read in a closure, return" pattern.
func Read[T any](ctx context.Context, db *DB, fn func(*Tx) (T, error)) (T, error) {
	var out T
	err := db.View(ctx, func(tx *Tx) error {
		var err error
		out, err = fn(tx)
		return err
	})
	return out, err
}

// ReadLatest is Read through ViewLatest.
func ReadLatest[T any](ctx context.Context, db *DB, fn func(*Tx) (T, error)) (T, error) {
	var out T
	err := db.ViewLatest(ctx, func(tx *Tx) error {
		var err error
		out, err = fn(tx)
		return err
	})
	return out, err
}

// latestViewer is a backend whose reads can go outside a transaction.
type latestViewer interface {
	viewLatest(ctx context.Context, fn func(kvTx) error) error
}

// Update runs fn in a read-write transaction that commits durably before
// Update returns. Concurrent calls are grouped into one transaction, so fn
// may run more than once (when another member of its batch fails) and must
// have no effect outside the transaction; effects that must follow the commit
// go through Tx.AfterCommit. The context only bounds the wait for a place in
// the queue: once queued, the write is carried out and awaited.
func (db *DB) Update(ctx context.Context, fn func(*Tx) error) error {
	return db.UpdateReading(ctx, nil, fn)
}

// UpdateReading is Update for fn whose reads reads declares (with the Tx
// Prefetch methods): on PostgreSQL, what every write of a group commit
// declares is read in one round trip before the first of them runs,
// instead of one round trip per write. reads must not write; nil declares
// nothing.
func (db *DB) UpdateReading(ctx context.Context, reads func(*Tx), fn func(*Tx) error) error {
	w, err := db.submit(ctx, &writeRequest{fn: fn, reads: reads, done: make(chan error, 1)})
	if err != nil {
		return err
	}
	return w.Wait()
}

// Write is a write queued by Submit.
type Write struct{ req *writeRequest }

// Submit queues fn as Update does but returns as soon as it is queued; Wait
// returns its outcome. Writes commit in the order they were queued (in the
// same batch or a later one), so a write queued after another successful
// one sees its effects and is durable only after it.
func (db *DB) Submit(ctx context.Context, fn func(*Tx) error) (*Write, error) {
	return db.submit(ctx, &writeRequest{fn: fn, done: make(chan error, 1)})
}

func (db *DB) submit(ctx context.Context, req *writeRequest) (*Write, error) {
	return db.enqueue(ctx, db.writes, req)
}

// submitBulk queues fn, which writes size bytes of bulk data, on the bulk
// lane. Bulk writes commit in the order they were queued, but small writes
// queued after them may commit first: what a bulk write stores must stay
// unreachable until a small write that follows its commit refers to it.
func (db *DB) submitBulk(ctx context.Context, size int, fn func(*Tx) error) (*Write, error) {
	return db.enqueue(ctx, db.bulk, &writeRequest{fn: fn, size: size, done: make(chan error, 1)})
}

func (db *DB) enqueue(ctx context.Context, lane chan *writeRequest, req *writeRequest) (*Write, error) {
	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.closed {
		return nil, ErrClosed
	}
	select {
	case lane <- req:
		return &Write{req}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Wait blocks until the write has committed durably (or failed), runs the
// callbacks it registered with Tx.AfterCommit on success, and returns its
// error. It must be called once.
func (w *Write) Wait() error {
	err := <-w.req.done
	if err == nil {
		for _, f := range w.req.afterCommit {
			f()
		}
	}
	return err
}

// writeLoop owns every read-write transaction. It drains whatever is queued
// into one batch (every small write, bulk writes up to maxBulkBatchBytes),
// commits it with a single fsync, and answers each caller.
func (db *DB) writeLoop() {
	defer close(db.loopDone)
	batch := make([]*writeRequest, 0, maxBatch)
	for {
		select {
		case req := <-db.writes:
			batch = append(batch[:0], req)
		case req := <-db.bulk:
			batch = append(batch[:0], req)
		case <-db.quit:
			// Update refuses new work once closed is set, so draining what is
			// queued now finishes every accepted write.
			db.drainAtClose()
			return
		}
		db.commit(db.fill(batch))
	}
}

// fill adds to batch the small writes queued now and bulk writes until
// their bytes reach maxBulkBatchBytes.
func (db *DB) fill(batch []*writeRequest) []*writeRequest {
	bulkBytes := 0
	for _, req := range batch {
		bulkBytes += req.size
	}
	for len(batch) < maxBatch {
		select {
		case req := <-db.writes:
			batch = append(batch, req)
			continue
		default:
		}
		if bulkBytes >= maxBulkBatchBytes {
			return batch
		}
		select {
		case req := <-db.bulk:
			batch = append(batch, req)
			bulkBytes += req.size
		default:
			return batch
		}
	}
	return batch
}

// drainAtClose commits, one by one, the writes still queued on both lanes.
func (db *DB) drainAtClose() {
	for {
		select {
		case req := <-db.writes:
			db.commit([]*writeRequest{req})
		case req := <-db.bulk:
			db.commit([]*writeRequest{req})
		default:
			return
		}
	}
}

// commit runs batch in one transaction and answers its members. When a
// member fails, the transaction is rolled back and the batch split in two:
// the others are committed without it (a batch of their own, which may
// split again), then the failed member runs alone, so that its error
// reflects the state it would have seen serially.
func (db *DB) commit(batch []*writeRequest) {
	failed, err := db.runBatch(batch)
	switch {
	case err == nil:
		for _, req := range batch {
			req.done <- nil
		}
	case failed < 0 || len(batch) == 1:
		// The commit itself failed (disk error) or the lone member failed.
		err = writeError(err)
		for _, req := range batch {
			req.afterCommit = nil
			req.done <- err
		}
	default:
		solo := batch[failed]
		db.commit(append(batch[:failed:failed], batch[failed+1:]...))
		db.commit([]*writeRequest{solo})
	}
}

// runBatch runs the members of batch in one transaction. It returns the
// transaction's error and the index of the member whose error aborted it
// (-1 when none did: success, or the database itself failed).
func (db *DB) runBatch(batch []*writeRequest) (failed int, err error) {
	failed, start := -1, time.Now()
	err = db.be.update(func(kv kvTx) error {
		prefetchBatch(kv, batch)
		for i, req := range batch {
			tx := &Tx{kv: kv}
			if err := req.fn(tx); err != nil {
				if kvErr := kv.failure(); kvErr != nil {
					return kvErr // the database failed, not the member
				}
				failed = i
				return err
			}
			req.afterCommit = tx.afterCommit
		}
		return nil
	})
	metrics.StorageCommit(time.Since(start), len(batch))
	return failed, err
}

// batchPrefetcher is a transaction that gathers the reads the members of a
// batch declare and fetches them together (PostgreSQL).
type batchPrefetcher interface {
	// gatherPrefetches makes the prefetches that follow gathered until
	// sendPrefetches sends them all in one round trip.
	gatherPrefetches()
	sendPrefetches()
}

// prefetchBatch reads what the members of batch declare they read, at
// once, where the backend can.
func prefetchBatch(kv kvTx, batch []*writeRequest) {
	bp, ok := kv.(batchPrefetcher)
	if !ok {
		return
	}
	bp.gatherPrefetches()
	for _, req := range batch {
		if req.reads != nil {
			req.reads(&Tx{kv: kv})
		}
	}
	bp.sendPrefetches()
}

// pgDiskFull is PostgreSQL's SQLSTATE for a full disk (disk_full).
const pgDiskFull = "53100"

// writeError marks a failed write caused by a full disk with ErrNoSpace,
// keeping the cause for errors.Is; other errors are returned as they are.
func writeError(err error) error {
	var pgErr *pgconn.PgError
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.As(err, &pgErr) && pgErr.Code == pgDiskFull {
		return &noSpaceError{cause: err}
	}
	return err
}

// noSpaceError is a write refused because the disk is full. Its text names
// the cause but not the file, since it reaches clients.
type noSpaceError struct{ cause error }

func (e *noSpaceError) Error() string {
	return "the disk holding the database is full (no space left on device): nothing was written"
}

func (e *noSpaceError) Unwrap() []error { return []error{ErrNoSpace, e.cause} }

// Tx is a database transaction seen through the record accessors of this
// package. It must not be used after the function it was passed to returns.
type Tx struct {
	kv          kvTx
	afterCommit []func()
}

// AfterCommit registers f to run after the transaction has committed
// durably. In a read-only transaction f never runs.
func (t *Tx) AfterCommit(f func()) {
	t.afterCommit = append(t.afterCommit, f)
}

// bucket returns the named key space of the transaction's backend.
func (t *Tx) bucket(name []byte) kvBucket {
	return t.kv.bucket(name)
}
