package events

import (
	"context"

	"github.com/google/uuid"

	"agentserver/internal/storage"
)

// Store persists the events of resumable runs.
type Store interface {
	// AppendEvents durably stores evs (consecutive events of one run, in
	// Seq order). Storing an event whose Seq is already stored overwrites it.
	AppendEvents(ctx context.Context, runID uuid.UUID, evs []Event) error
	// LoadEvents returns the stored events of a run with Seq > after, in
	// order; none (and no error) for an unknown run.
	LoadEvents(ctx context.Context, runID uuid.UUID, after int64) ([]Event, error)
	// DeleteEvents removes every stored event of the given runs.
	DeleteEvents(ctx context.Context, runIDs []uuid.UUID) error
}

// Lister is implemented by a Store that can list the runs with stored
// events. Broker.Run uses it at start to schedule the deletion of events
// that an earlier process persisted.
type Lister interface {
	// RunsWithEvents returns the runs that have stored events.
	RunsWithEvents(ctx context.Context) ([]uuid.UUID, error)
}

// StorageAdapter implements Store and Lister on the bbolt database.
type StorageAdapter struct {
	DB *storage.DB
}

// AppendEvents implements Store.
func (a StorageAdapter) AppendEvents(ctx context.Context, runID uuid.UUID, evs []Event) error {
	out := make([]storage.StoredEvent, len(evs))
	for i, ev := range evs {
		out[i] = storage.StoredEvent{Seq: ev.Seq, Name: ev.Name, Data: ev.Data}
	}
	return a.DB.AppendRunEvents(ctx, runID, out)
}

// LoadEvents implements Store.
func (a StorageAdapter) LoadEvents(ctx context.Context, runID uuid.UUID, after int64) ([]Event, error) {
	stored, err := a.DB.LoadRunEvents(ctx, runID, after)
	if err != nil {
		return nil, err
	}
	out := make([]Event, len(stored))
	for i, ev := range stored {
		out[i] = Event{Seq: ev.Seq, Name: ev.Name, Data: ev.Data}
	}
	return out, nil
}

// DeleteEvents implements Store.
func (a StorageAdapter) DeleteEvents(ctx context.Context, runIDs []uuid.UUID) error {
	return a.DB.DeleteRunEvents(ctx, runIDs)
}

// RunsWithEvents implements Lister.
func (a StorageAdapter) RunsWithEvents(ctx context.Context) ([]uuid.UUID, error) {
	return a.DB.RunsWithEvents(ctx)
}
