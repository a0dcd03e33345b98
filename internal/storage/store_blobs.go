package storage

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/errdefs"
)

// Large store values. A value whose encoding is longer than
// storeChunkBytes is not written inside the transaction that puts its
// item: StageStoreValue first writes it in chunks on the writer's bulk
// lane, where each transaction carries at most maxBulkBatchBytes of them
// beside the small writes queued meanwhile; then PutStoreItem stores a
// record that names the chunks (value_blob) instead of holding the value.
// A write queued behind a large value so waits for a commit of a few
// chunks, not for the whole value.
//
// Until its item takes it up, a staged value has an entry in
// store_staged (value id -> time of its last chunk), written with every
// chunk; PutStoreItem deletes it in the transaction that stores the item.
// A value whose put failed is dropped at once (DropStagedStoreValue); one
// left by a crash is deleted by DeleteStaleStoreValues once its entry is
// older than StagedStoreValueGrace.

// storeChunkBytes is the size of the chunks of a staged value, and the
// size from which a value is staged.
const storeChunkBytes = 256 << 10

// StagedStoreValueGrace is how long a staged value may wait for its item
// before DeleteStaleStoreValues deletes it. Staging a value and putting
// its item take seconds at most.
const StagedStoreValueGrace = 10 * time.Minute

// storeBlob names the chunks of a staged value.
type storeBlob struct {
	ID     uuid.UUID `json:"id"`
	Chunks int       `json:"chunks"`
	Size   int       `json:"size"`
	// staged marks a value StageStoreValue wrote and no item holds yet.
	staged bool
}

// storeBlobKey encodes value id(16) | chunk index(4, big endian).
func storeBlobKey(id uuid.UUID, i int) []byte {
	k := make([]byte, 20)
	copy(k, id[:])
	binary.BigEndian.PutUint32(k[16:], uint32(i))
	return k
}

// StageStoreValue writes the value of an item PrepareStoreItem encoded,
// when it is longer than one chunk, ahead of the transaction that puts the
// item; PutStoreItem then stores the item with a reference to it. A
// smaller value is left in the item. On error nothing the item refers to
// was written. A caller whose put of the item fails calls
// DropStagedStoreValue.
func (db *DB) StageStoreValue(ctx context.Context, it *StoreItem) error {
	value := it.encodedValue
	if len(value) <= storeChunkBytes {
		return nil
	}
	blob := storeBlob{ID: uuid.Must(uuid.NewV7()), Chunks: (len(value) + storeChunkBytes - 1) / storeChunkBytes, Size: len(value), staged: true}
	writes := make([]*Write, 0, blob.Chunks)
	var err error
	for i := range blob.Chunks {
		chunk := value[i*storeChunkBytes : min(len(value), (i+1)*storeChunkBytes)]
		var w *Write
		w, err = db.submitBulk(ctx, len(chunk), func(tx *Tx) error { return tx.putStoreChunk(blob.ID, i, chunk) })
		if err != nil {
			break
		}
		writes = append(writes, w)
	}
	for _, w := range writes {
		if werr := w.Wait(); werr != nil && err == nil {
			err = werr
		}
	}
	if err != nil {
		if derr := db.dropStaged(blob); derr != nil {
			return errors.Join(fmt.Errorf("stage store value: %w", err), derr)
		}
		return fmt.Errorf("stage store value: %w", err)
	}
	it.blob, it.encodedValue = &blob, nil
	return nil
}

// putStoreChunk writes chunk i of a staged value and marks the value
// staged as of now.
func (t *Tx) putStoreChunk(id uuid.UUID, i int, chunk []byte) error {
	at := make([]byte, 8)
	putTime(at, time.Now())
	if err := t.bucket(bucketStoreStaged).Put(id[:], at); err != nil {
		return err
	}
	return t.bucket(bucketStoreBlobs).Put(storeBlobKey(id, i), chunk)
}

// DropStagedStoreValue deletes the value StageStoreValue staged for it,
// unless an item took it up. It does nothing for an item whose value was
// not staged.
func (db *DB) DropStagedStoreValue(it StoreItem) error {
	if it.blob == nil || !it.blob.staged {
		return nil
	}
	return db.dropStaged(*it.blob)
}

func (db *DB) dropStaged(blob storeBlob) error {
	err := db.Update(context.Background(), func(tx *Tx) error {
		if tx.bucket(bucketStoreStaged).Get(blob.ID[:]) == nil {
			return tx.kv.failure() // taken up by an item, or never written
		}
		return tx.deleteStoreBlob(blob.ID)
	})
	if err != nil {
		return fmt.Errorf("drop staged store value %s: %w", blob.ID, err)
	}
	return nil
}

// deleteStoreBlob deletes every chunk of a value and its staged entry.
func (t *Tx) deleteStoreBlob(id uuid.UUID) error {
	if err := t.bucket(bucketStoreStaged).Delete(id[:]); err != nil {
		return err
	}
	return deletePrefix(t.bucket(bucketStoreBlobs), id[:])
}

// takeStoreBlob makes a staged value the value of the item being put: its
// staged entry goes, so that no sweep deletes it. A value swept meanwhile
// (its put waited longer than StagedStoreValueGrace) is refused.
func (t *Tx) takeStoreBlob(blob storeBlob) error {
	staged := t.bucket(bucketStoreStaged)
	if staged.Get(blob.ID[:]) == nil {
		if err := t.kv.failure(); err != nil {
			return err
		}
		return fmt.Errorf("the staged store value %s was deleted before its item was put: %w", blob.ID, errdefs.ErrConflict)
	}
	return staged.Delete(blob.ID[:])
}

// storeBlobValue reads the chunks of a value back into its encoding.
func (t *Tx) storeBlobValue(blob storeBlob) ([]byte, error) {
	out := make([]byte, 0, blob.Size)
	n := 0
	err := scanPrefix(t.bucket(bucketStoreBlobs), blob.ID[:], func(k, v []byte) error {
		if !bytes.Equal(k, storeBlobKey(blob.ID, n)) {
			return fmt.Errorf("store value %s: chunk %d is missing", blob.ID, n)
		}
		out = append(out, v...)
		n++
		return nil
	})
	if err == nil {
		err = t.kv.failure()
	}
	if err == nil && (n != blob.Chunks || len(out) != blob.Size) {
		err = fmt.Errorf("store value %s: %d chunks of %d bytes, want %d of %d", blob.ID, n, len(out), blob.Chunks, blob.Size)
	}
	if err != nil {
		return nil, fmt.Errorf("decode record: %w", err)
	}
	return out, nil
}

// DeleteStaleStoreValues deletes up to limit staged values (limit <= 0:
// no bound) whose last chunk was written more than StagedStoreValueGrace
// before now and that no item took up: what a put cut off by a crash left.
// It returns how many it deleted.
func (t *Tx) DeleteStaleStoreValues(now time.Time, limit int) (int, error) {
	var stale []uuid.UUID
	err := t.bucket(bucketStoreStaged).ForEach(func(k, v []byte) error {
		if limit > 0 && len(stale) >= limit {
			return errStopScan
		}
		id, err := uuid.FromBytes(k)
		if err != nil || len(v) != 8 {
			return fmt.Errorf("store_staged entry %x: malformed", k)
		}
		if now.Sub(time.Unix(0, int64(binary.BigEndian.Uint64(v)))) > StagedStoreValueGrace {
			stale = append(stale, id)
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStopScan) {
		return 0, err
	}
	for _, id := range stale {
		if err := t.deleteStoreBlob(id); err != nil {
			return 0, err
		}
	}
	return len(stale), nil
}

// errStopScan ends a ForEach early.
var errStopScan = errors.New("stop scan")
