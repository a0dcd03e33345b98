package runs

import (
	"context"
	"errors"
	"sync"

	"github.com/google/uuid"

	"agentserver/internal/storage"
)

// checkpointWriter commits a run's intermediate checkpoints in the
// background while the next node runs (LangGraph's "async" durability).
// At most one commit is in flight; checkpoints handed over meanwhile wait
// and go together in the next commit, so a fast run costs one fsync per
// burst of steps rather than one per step, and a commit never waits behind
// a chain of earlier ones. A crash can lose the newest checkpoints; the
// retry then resumes from an older one.
//
// The run's last commit does not wait for the one in flight: drain returns
// once that commit is queued, and the storage writer commits in queue
// order, so the last commit lands after it (in the same batch or the next).
type checkpointWriter struct {
	db *storage.DB
	// run is the run whose checkpoints these are, token the fencing token
	// of its start: a commit writes nothing once the run no longer owns
	// its thread (storage.Tx.RunHeldBy).
	run   uuid.UUID
	token uint64
	// enc encodes every checkpoint of the run, first in the background
	// commits, then (after drain) for the run's last commit.
	enc storage.CheckpointEncoder

	// submitting is held while a batch is taken, encoded and queued, so
	// that drain returns only when no taken batch is still unqueued.
	submitting sync.Mutex

	mu     sync.Mutex
	queue  []storage.Checkpoint // handed over, not yet taken by a commit
	idle   chan struct{}        // the running loop's; closed when it exits, nil while none runs
	err    error                // errors of failed background commits
	closed bool
}

// add queues checkpoints for the next background commit. After drain it
// does nothing.
func (w *checkpointWriter) add(cps ...storage.Checkpoint) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return // the run is ending; its last commit has what it needs
	}
	w.queue = append(w.queue, cps...)
	if w.idle != nil {
		return // the running loop picks them up
	}
	w.idle = make(chan struct{})
	go w.loop(w.idle)
}

func (w *checkpointWriter) loop(idle chan struct{}) {
	defer close(idle)
	for {
		write, err := w.submitNext()
		if write == nil && err == nil {
			return
		}
		if err == nil {
			err = write.Wait()
		}
		if err != nil {
			w.mu.Lock()
			w.err = errors.Join(w.err, err)
			w.mu.Unlock()
		}
	}
}

// submitNext takes the queued checkpoints and queues their commit. It
// returns nil, nil when there is nothing to take, which ends the loop: the
// queue is then empty under the lock, so the next add starts a new loop.
func (w *checkpointWriter) submitNext() (*storage.Write, error) {
	w.submitting.Lock()
	defer w.submitting.Unlock()
	w.mu.Lock()
	batch := w.queue
	w.queue = nil
	if len(batch) == 0 {
		// Marked as exited under the lock, so that add starts a new loop.
		w.idle = nil
		w.mu.Unlock()
		return nil, nil
	}
	w.mu.Unlock()
	encoded, err := w.encode(batch)
	if err != nil {
		return nil, err
	}
	return w.db.Submit(context.Background(), func(tx *storage.Tx) error {
		if !tx.RunHeldBy(w.run, w.token) {
			return nil // fenced: the run lost its thread
		}
		return putEncoded(tx, encoded)
	})
}

// encode serializes checkpoints outside any transaction.
func (w *checkpointWriter) encode(cps []storage.Checkpoint) ([]storage.EncodedCheckpoint, error) {
	out := make([]storage.EncodedCheckpoint, 0, len(cps))
	for _, c := range cps {
		e, err := w.enc.Encode(c)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

func putEncoded(tx *storage.Tx, cps []storage.EncodedCheckpoint) error {
	for _, c := range cps {
		if err := tx.PutEncodedCheckpoint(c); err != nil {
			return err
		}
	}
	return nil
}

// drain stops background commits and returns, in order, the checkpoints no
// commit has taken (the caller writes them with the run's end, encoded by
// encode). When it returns, every commit taken earlier is queued in the
// storage writer ahead of anything the caller queues next; settled reports
// their outcome.
func (w *checkpointWriter) drain() []storage.Checkpoint {
	w.submitting.Lock()
	defer w.submitting.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	rest := w.queue
	w.queue = nil
	return rest
}

// settled waits for the background loop to exit and returns the errors of
// its commits. Called after the run's last commit, it does not wait for
// any fsync: the commits it waits for were queued before that one.
func (w *checkpointWriter) settled() error {
	w.mu.Lock()
	idle := w.idle
	w.mu.Unlock()
	if idle != nil {
		<-idle
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}
