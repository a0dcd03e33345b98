package runs

import (
	"encoding/json"
	"sync"

	"github.com/google/uuid"

	"agentserver/internal/events"
)

// threadWatchers fans the events of every run of a thread out to the
// clients of GET /threads/{thread_id}/stream. Each client has its own log,
// so a slow client only delays itself.
type threadWatchers struct {
	mu   sync.RWMutex
	logs map[uuid.UUID]map[*events.Log]struct{}
}

// SubscribeThread follows every future run of a thread until the returned
// subscription is closed. Last-Event-ID values are accepted, but a thread
// stream replays nothing: each connection starts with the next event.
func (s *Service) SubscribeThread(threadID uuid.UUID, lastEventID string) (*ThreadSubscription, error) {
	if _, err := parseEventID(lastEventID); err != nil {
		return nil, err
	}
	log := s.broker.Open(uuid.Must(uuid.NewV7()), false)
	w := &s.watchers
	w.mu.Lock()
	if w.logs == nil {
		w.logs = map[uuid.UUID]map[*events.Log]struct{}{}
	}
	if w.logs[threadID] == nil {
		w.logs[threadID] = map[*events.Log]struct{}{}
	}
	w.logs[threadID][log] = struct{}{}
	w.mu.Unlock()
	return &ThreadSubscription{Subscription: log.Subscribe(0), release: func() {
		w.mu.Lock()
		delete(w.logs[threadID], log)
		if len(w.logs[threadID]) == 0 {
			delete(w.logs, threadID)
		}
		w.mu.Unlock()
		log.Close()
	}}, nil
}

// ThreadSubscription is a client's view of a thread stream.
type ThreadSubscription struct {
	*events.Subscription
	once    sync.Once
	release func()
}

// Close stops the subscription and detaches it from the thread.
func (t *ThreadSubscription) Close() {
	t.once.Do(func() {
		t.Subscription.Close()
		t.release()
	})
}

// has reports whether a thread has stream clients.
func (w *threadWatchers) has(threadID uuid.UUID) bool {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return len(w.logs[threadID]) > 0
}

// publish copies one run event to the thread's watchers.
func (w *threadWatchers) publish(threadID uuid.UUID, name string, data json.RawMessage) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	for log := range w.logs[threadID] {
		log.Append(name, data)
	}
}
