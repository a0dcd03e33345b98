package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"

	"agentserver/internal/errdefs"
)

// SchemaVersion is the layout version this build reads and writes.
const SchemaVersion = 1

// FileName is the name of the database file inside the data directory.
const FileName = "agentserver.db"

// maxBatch bounds how many queued writes share one transaction.
const maxBatch = 512

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
	// ErrLocked reports a database file another process holds open.
	ErrLocked = errors.New("database is in use by another process")
)

var bucketNames = [][]byte{
	bucketMeta,
	bucketAssistants, bucketAssistantVersions,
	bucketThreads, bucketThreadsByCreated, bucketThreadsByMeta, bucketThreadsByStatus, bucketThreadsByExpiry,
	bucketCheckpoints,
	bucketRuns, bucketRunsByThread, bucketRunsActive, bucketRunEvents,
	bucketStoreItems, bucketStoreExpiry,
	bucketSubagents,
	bucketThreadEvents,
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
	bucketRuns              = []byte("runs")
	bucketRunsByThread      = []byte("runs_by_thread")
	bucketRunsActive        = []byte("runs_active")
	bucketRunEvents         = []byte("run_events")
	bucketStoreItems        = []byte("store_items")
	bucketStoreExpiry       = []byte("store_expiry")
	bucketSubagents         = []byte("subagents")
	bucketThreadEvents      = []byte("thread_events")

	keySchemaVersion = []byte("schema_version")
)

// Options tune how the database is opened.
type Options struct {
	// NoSync skips fsync on commit. Only benchmarks and tests that measure
	// something other than durability set it.
	NoSync bool
}

// DB is the embedded database. It is safe for concurrent use.
type DB struct {
	bolt *bolt.DB

	writes   chan *writeRequest
	quit     chan struct{}
	loopDone chan struct{}

	closeOnce sync.Once
	mu        sync.RWMutex // guards closed against in-flight Update calls
	closed    bool
}

type writeRequest struct {
	fn   func(*Tx) error
	done chan error
	// afterCommit collects callbacks registered by fn during its last execution.
	afterCommit []func()
}

// Open opens (creating if needed) the database in dir and starts its writer.
func Open(dir string, opts Options) (*DB, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	path := filepath.Join(dir, FileName)
	b, err := bolt.Open(path, 0o600, &bolt.Options{
		// The file lock is exclusive: another process holding it is a
		// server already running on this directory, so give up at once.
		Timeout: lockWait,
		// Address space only: avoids remapping (which blocks writers) as the
		// file grows.
		InitialMmapSize: 1 << 30,
		NoSync:          opts.NoSync,
		NoFreelistSync:  true,
		FreelistType:    bolt.FreelistMapType,
	})
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, fmt.Errorf("%w: %s (is another server running with --data-dir %s?)", ErrLocked, path, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	if err := initSchema(b); err != nil {
		b.Close()
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	db := &DB{
		bolt:     b,
		writes:   make(chan *writeRequest, maxBatch),
		quit:     make(chan struct{}),
		loopDone: make(chan struct{}),
	}
	go db.writeLoop()
	return db, nil
}

// lockWait is how long Open tries to take the file lock.
const lockWait = 100 * time.Millisecond

func initSchema(b *bolt.DB) error {
	return b.Update(func(tx *bolt.Tx) error {
		backfill := tx.Bucket(bucketThreadsByExpiry) == nil && tx.Bucket(bucketThreads) != nil
		for _, name := range bucketNames {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("create bucket %s: %w", name, err)
			}
		}
		if backfill {
			if err := backfillThreadExpiry(tx); err != nil {
				return fmt.Errorf("index thread deadlines: %w", err)
			}
		}
		meta := tx.Bucket(bucketMeta)
		raw := meta.Get(keySchemaVersion)
		if raw == nil {
			return meta.Put(keySchemaVersion, []byte(strconv.Itoa(SchemaVersion)))
		}
		v, err := strconv.Atoi(string(raw))
		if err != nil {
			return fmt.Errorf("read schema version %q: %w", raw, err)
		}
		if v > SchemaVersion {
			return fmt.Errorf("%w: file has %d, build has %d", ErrSchemaTooNew, v, SchemaVersion)
		}
		return nil
	})
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
		err = db.bolt.Close()
	})
	return err
}

// Ping checks that the database file is readable.
func (db *DB) Ping() error {
	return db.bolt.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketMeta) == nil {
			return errors.New("meta bucket missing")
		}
		return nil
	})
}

// View runs fn in a read-only transaction.
func (db *DB) View(fn func(*Tx) error) error {
	return db.bolt.View(func(btx *bolt.Tx) error {
		return fn(&Tx{tx: btx})
	})
}

// Update runs fn in a read-write transaction that commits durably before
// Update returns. Concurrent calls are grouped into one transaction, so fn
// may run more than once (when another member of its batch fails) and must
// have no effect outside the transaction; effects that must follow the commit
// go through Tx.AfterCommit. The context only bounds the wait for a place in
// the queue: once queued, the write is carried out and awaited.
func (db *DB) Update(ctx context.Context, fn func(*Tx) error) error {
	w, err := db.Submit(ctx, fn)
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
	req := &writeRequest{fn: fn, done: make(chan error, 1)}
	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.closed {
		return nil, ErrClosed
	}
	select {
	case db.writes <- req:
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
// into one batch, commits it with a single fsync, and answers each caller.
func (db *DB) writeLoop() {
	defer close(db.loopDone)
	batch := make([]*writeRequest, 0, maxBatch)
	for {
		select {
		case req := <-db.writes:
			batch = append(batch[:0], req)
		case <-db.quit:
			// Update refuses new work once closed is set, so draining what is
			// queued now finishes every accepted write.
			for {
				select {
				case req := <-db.writes:
					db.commit([]*writeRequest{req})
				default:
					return
				}
			}
		}
	drain:
		for len(batch) < maxBatch {
			select {
			case req := <-db.writes:
				batch = append(batch, req)
			default:
				break drain
			}
		}
		db.commit(batch)
	}
}

// commit runs batch in one transaction. When a member fails, the transaction
// is rolled back, the others are committed without it, and the failed member
// runs alone so that its error reflects the state it would have seen serially.
func (db *DB) commit(batch []*writeRequest) {
	for len(batch) > 0 {
		failed := -1
		err := db.bolt.Update(func(btx *bolt.Tx) error {
			for i, req := range batch {
				tx := &Tx{tx: btx}
				if err := req.fn(tx); err != nil {
					failed = i
					return err
				}
				req.afterCommit = tx.afterCommit
			}
			return nil
		})
		if err == nil {
			for _, req := range batch {
				req.done <- nil
			}
			return
		}
		if failed < 0 || len(batch) == 1 {
			// The commit itself failed (disk error) or the lone member failed.
			err = writeError(err)
			for _, req := range batch {
				req.afterCommit = nil
				req.done <- err
			}
			return
		}
		solo := batch[failed]
		rest := append(batch[:failed:failed], batch[failed+1:]...)
		db.commit(rest)
		db.commit([]*writeRequest{solo})
		return
	}
}

// writeError marks a failed write caused by a full disk with ErrNoSpace,
// keeping the cause for errors.Is; other errors are returned as they are.
func writeError(err error) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
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

// Tx is a bbolt transaction seen through the record accessors of this
// package. It must not be used after the function it was passed to returns.
type Tx struct {
	tx          *bolt.Tx
	afterCommit []func()
}

// AfterCommit registers f to run after the transaction has committed
// durably. In a read-only transaction f never runs.
func (t *Tx) AfterCommit(f func()) {
	t.afterCommit = append(t.afterCommit, f)
}

// fillPercent packs pages fuller than bbolt's default: most keys here grow
// in time order (UUIDv7, timestamps), so half-empty split pages would only
// waste file and memory.
const fillPercent = 0.9

func (t *Tx) bucket(name []byte) *bolt.Bucket {
	b := t.tx.Bucket(name)
	b.FillPercent = fillPercent
	return b
}
