package runs

import (
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/events"
)

// threadWatchers fans the events of every run of a thread out to the
// clients of GET /threads/{thread_id}/stream. Each client has its own log,
// so a slow client only delays itself.
//
// A thread that has (or recently had) clients has a feed: its events are
// numbered per thread, and the most recent ones are kept, so that a client
// that reconnects with Last-Event-ID gets what it missed. A feed outlives
// its last client by feedRetention; events published meanwhile are kept
// for the reconnect. Runs of threads without a feed pay one atomic load
// per event.
type threadWatchers struct {
	count atomic.Int32 // len(feeds), read without the lock
	mu    sync.RWMutex // guards feeds
	feeds map[uuid.UUID]*threadFeed
	now   func() time.Time // nil: time.Now
}

type threadFeed struct {
	mu     sync.Mutex
	seq    int64
	recent []events.Event // the newest events, oldest first
	bytes  int            // data bytes held in recent
	logs   map[*events.Log]struct{}
	// left is when the last client left (zero while there are clients).
	left time.Time
}

const (
	// feedRetention is how long a thread's feed outlives its last client.
	feedRetention = time.Minute
	// feedKeep and feedKeepBytes bound the events a feed keeps for replay.
	feedKeep      = 1024
	feedKeepBytes = 8 << 20
)

func (w *threadWatchers) clock() time.Time {
	if w.now != nil {
		return w.now()
	}
	return time.Now()
}

// expiredLocked reports whether a feed's retention has ended (f.mu held).
func (w *threadWatchers) expiredLocked(f *threadFeed) bool {
	return len(f.logs) == 0 && w.clock().Sub(f.left) > feedRetention
}

// feed returns the thread's feed if it is live, dropping it when its
// retention has ended; the feed is returned locked.
func (w *threadWatchers) feed(threadID uuid.UUID) *threadFeed {
	if w.count.Load() == 0 {
		return nil
	}
	w.mu.RLock()
	f := w.feeds[threadID]
	w.mu.RUnlock()
	if f == nil {
		return nil
	}
	f.mu.Lock()
	if !w.expiredLocked(f) {
		return f
	}
	f.mu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.feeds[threadID] == f {
		f.mu.Lock()
		expired := w.expiredLocked(f)
		f.mu.Unlock()
		if expired {
			delete(w.feeds, threadID)
			w.count.Add(-1)
		}
	}
	return nil
}

// SubscribeThread follows every future run of a thread until the returned
// subscription is closed. With a Last-Event-ID the events kept since that
// id are replayed first ("-1": all that are kept); without one the
// connection starts with the next event. Event ids are the thread's.
func (s *Service) SubscribeThread(threadID uuid.UUID, lastEventID string) (*ThreadSubscription, error) {
	after, err := parseEventID(lastEventID)
	if err != nil {
		return nil, err
	}
	log := s.broker.Open(uuid.Must(uuid.NewV7()), false)
	w := &s.watchers
	f := w.feed(threadID)
	if f == nil {
		w.mu.Lock()
		if f = w.feeds[threadID]; f == nil {
			if w.feeds == nil {
				w.feeds = map[uuid.UUID]*threadFeed{}
			}
			// Numbering starts from the clock (µs), so that the ids of a
			// thread's later feed (after a retention gap or a restart)
			// are larger than any id of an earlier one.
			f = &threadFeed{logs: map[*events.Log]struct{}{}, seq: w.clock().UnixMicro()}
			w.feeds[threadID] = f
			w.count.Add(1)
		}
		f.mu.Lock()
		w.mu.Unlock()
	}
	if after != onlyNew {
		for _, ev := range f.recent {
			if ev.Seq > after {
				log.AppendAt(ev.Seq, ev.Name, ev.Data)
			}
		}
	}
	f.logs[log] = struct{}{}
	f.left = time.Time{}
	f.mu.Unlock()
	return &ThreadSubscription{Subscription: log.Subscribe(0), release: func() {
		f.mu.Lock()
		delete(f.logs, log)
		last := len(f.logs) == 0
		if last {
			f.left = w.clock()
		}
		f.mu.Unlock()
		log.Close()
		if last {
			// Drop the feed once its retention has passed, even if the
			// thread never has another event that would notice.
			time.AfterFunc(feedRetention+time.Second, func() { w.has(threadID) })
		}
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

// has reports whether a thread's events are wanted: it has stream
// clients, or had some recently enough to reconnect.
func (w *threadWatchers) has(threadID uuid.UUID) bool {
	f := w.feed(threadID)
	if f != nil {
		f.mu.Unlock()
	}
	return f != nil
}

// publish numbers one run event in the thread's feed, keeps it for replay
// and copies it to the thread's clients.
func (w *threadWatchers) publish(threadID uuid.UUID, name string, data json.RawMessage) {
	f := w.feed(threadID)
	if f == nil {
		return
	}
	defer f.mu.Unlock()
	f.seq++
	ev := events.Event{Seq: f.seq, Name: name, Data: data}
	f.recent = append(f.recent, ev)
	f.bytes += len(data)
	for len(f.recent) > feedKeep || f.bytes > feedKeepBytes {
		f.bytes -= len(f.recent[0].Data)
		f.recent[0] = events.Event{}
		f.recent = f.recent[1:]
	}
	for log := range f.logs {
		log.AppendAt(ev.Seq, name, data)
	}
}
