package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// FileName is the name of the database file inside the data directory.
const FileName = "agentserver.db"

// lockWait is how long Open tries to take the file lock.
const lockWait = 100 * time.Millisecond

// fillPercent packs pages fuller than bbolt's default: most keys here grow
// in time order (UUIDv7, timestamps), so half-empty split pages would only
// waste file and memory.
const fillPercent = 0.9

// boltBackend is the embedded default: one bbolt file in the data directory.
type boltBackend struct {
	db   *bolt.DB
	path string
}

// Open opens (creating if needed) the embedded database in dir and starts
// its writer.
func Open(dir string, opts Options) (*DB, error) {
	be, err := openBolt(dir, opts)
	if err != nil {
		return nil, err
	}
	return start(be)
}

func openBolt(dir string, opts Options) (*boltBackend, error) {
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
	if err := createBuckets(b); err != nil {
		b.Close()
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	return &boltBackend{db: b, path: path}, nil
}

// createBuckets makes every bucket of the tree, indexing existing records
// when an index bucket is new. A file written by a newer schema is refused
// before anything is written to it.
func createBuckets(b *bolt.DB) error {
	return b.Update(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketMeta) != nil {
			if err := checkSchemaVersion(boltTxn{tx}); err != nil {
				return err
			}
		}
		backfill := tx.Bucket(bucketThreadsByExpiry) == nil && tx.Bucket(bucketThreads) != nil
		for _, name := range bucketNames {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("create bucket %s: %w", name, err)
			}
		}
		if backfill {
			if err := backfillThreadExpiry(boltBucket{tx.Bucket(bucketThreads)}, boltBucket{tx.Bucket(bucketThreadsByExpiry)}); err != nil {
				return fmt.Errorf("index thread deadlines: %w", err)
			}
		}
		return nil
	})
}

// view reads from the memory-mapped file, which needs no wait that a
// context could cut short: a cancelled ctx only keeps it from starting.
func (be *boltBackend) view(ctx context.Context, fn func(kvTx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return be.db.View(func(tx *bolt.Tx) error { return fn(boltTxn{tx}) })
}

func (be *boltBackend) update(fn func(kvTx) error) error {
	return be.db.Update(func(tx *bolt.Tx) error { return fn(boltTxn{tx}) })
}

func (be *boltBackend) ping() error {
	return be.db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketMeta) == nil {
			return errors.New("meta bucket missing")
		}
		return nil
	})
}

func (be *boltBackend) close() error { return be.db.Close() }

func (be *boltBackend) describe() string { return be.path }

// boltTxn is a bbolt transaction under the seam.
type boltTxn struct{ tx *bolt.Tx }

func (t boltTxn) bucket(name []byte) kvBucket {
	b := t.tx.Bucket(name)
	b.FillPercent = fillPercent
	return boltBucket{b}
}

// failure is always nil: bbolt reads from memory and cannot fail.
func (boltTxn) failure() error { return nil }

// boltBucket adapts *bolt.Bucket, whose Cursor returns the concrete type.
type boltBucket struct{ *bolt.Bucket }

func (b boltBucket) Cursor() kvCursor { return b.Bucket.Cursor() }
