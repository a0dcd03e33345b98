package storage

import (
	"bytes"

	"github.com/google/uuid"
)

// deleteThreadRuns removes every run of a thread and its index entries.
func (t *Tx) deleteThreadRuns(threadID uuid.UUID) error {
	idx := t.bucket(bucketRunsByThread)
	runs := t.bucket(bucketRuns)
	c := idx.Cursor()
	prefix := threadID[:]
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Seek(prefix) {
		if err := runs.Delete(k[16:32]); err != nil {
			return err
		}
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}
