package runs

import (
	"context"
	"encoding/json"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/eventlog"
	"agentserver/internal/events"
)

// threadWatchers fans the events of every run of a thread out to the
// clients of GET /threads/{thread_id}/stream.
//
// A thread that has (or recently had) clients has a feed: its events are
// numbered per thread, and the most recent ones are kept (at most feedKeep
// events and feedKeepBytes of data), so that a client that reconnects with
// Last-Event-ID gets what it missed. A feed outlives its last client by
// feedRetention; events published meanwhile are kept for the reconnect.
// Runs of threads without a feed pay one atomic load per event.
//
// A feed is an eventlog.Log; a connection holds no events of its own: it
// is a cursor into its feed's kept events, so its memory does not
// grow however long it stays open. A client that falls so far behind that
// events it has not read leave the feed continues with the oldest event
// still kept: its event ids jump over the gap.
type threadWatchers struct {
	count atomic.Int32 // len(feeds), read without the lock
	mu    sync.RWMutex // guards feeds
	feeds map[uuid.UUID]*threadFeed
	now   func() time.Time // nil: time.Now
}

// threadFeed is a thread's feed: its recent events, numbered per thread.
type threadFeed = eventlog.Log[feedEvent]

const (
	// feedRetention is how long a thread's feed outlives its last client.
	feedRetention = time.Minute
	// feedKeep and feedKeepBytes bound the events a feed keeps for replay.
	feedKeep      = 1024
	feedKeepBytes = 8 << 20
)

// feedEvent is an event of a thread's feed; relayed events come from runs
// on other replicas, and are not passed on to those replicas' relays.
type feedEvent struct {
	events.Event
	relayed bool
}

func (w *threadWatchers) clock() time.Time {
	if w.now != nil {
		return w.now()
	}
	return time.Now()
}

// expired reports whether a feed's retention has ended (the clock is read
// only for a feed without clients).
func (w *threadWatchers) expired(f *threadFeed) bool {
	return f.Cursors() == 0 && f.IdleFor(w.clock()) > feedRetention
}

// feed returns the thread's feed if it is live, dropping it when its
// retention has ended.
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
	if !w.expired(f) {
		return f
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.feeds[threadID] == f && w.expired(f) {
		delete(w.feeds, threadID)
		w.count.Add(-1)
	}
	return nil
}

// SubscribeThread follows every future run of a thread until the returned
// subscription is closed. With a Last-Event-ID the events kept since that
// id are replayed first ("-1": all that are kept); without one the
// connection starts with the next event. Event ids are the thread's.
//
// On a shared database, the events of the thread's runs on other replicas
// are relayed into the feed while it has clients; a request from another
// replica (WithPeer) reads only the runs that execute here.
func (s *Service) SubscribeThread(ctx context.Context, threadID uuid.UUID, lastEventID string) (*ThreadSubscription, error) {
	after, err := parseEventID(lastEventID)
	if err != nil {
		return nil, err
	}
	peer := fromPeer(ctx)
	var match func(*feedEvent) bool
	if peer {
		match = func(ev *feedEvent) bool { return !ev.relayed } // a relay of another replica reads
	}
	w := &s.watchers
	f, c := w.subscribe(threadID, after, match)
	if after == onlyNew {
		after = c.After()
	}
	c.OnClose(func() {
		if f.Cursors() == 0 {
			// Drop the feed once its retention has passed, even if the
			// thread never has another event that would notice.
			time.AfterFunc(feedRetention+time.Second, func() { w.has(threadID) })
		}
	})
	if s.shared != nil && !peer {
		relayFrom := after
		if lastEventID == "" {
			relayFrom = onlyNew
		}
		s.relayThread(threadID, relayFrom)
	}
	return &ThreadSubscription{c: c}, nil
}

// subscribe opens a cursor on the thread's feed after event after
// (onlyNew: after the newest), creating the feed when there is none.
func (w *threadWatchers) subscribe(threadID uuid.UUID, after int64, match func(*feedEvent) bool) (*threadFeed, *eventlog.Cursor[feedEvent]) {
	if after == onlyNew {
		after = math.MaxInt64 // capped at the newest
	}
	for {
		f := w.openFeed(threadID)
		c := f.Subscribe(after, match)
		w.mu.RLock()
		live := w.feeds[threadID] == f
		w.mu.RUnlock()
		if live {
			return f, c
		}
		c.Close() // the feed expired meanwhile
	}
}

// openFeed returns the thread's feed, creating it when there is none.
func (w *threadWatchers) openFeed(threadID uuid.UUID) *threadFeed {
	if f := w.feed(threadID); f != nil {
		return f
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	f := w.feeds[threadID]
	if f == nil {
		if w.feeds == nil {
			w.feeds = map[uuid.UUID]*threadFeed{}
		}
		// Numbering starts from the clock (µs), so that the ids of a
		// thread's later feed (after a retention gap or a restart) are
		// larger than any id of an earlier one.
		f = eventlog.New[feedEvent](w.clock().UnixMicro(), nil, eventlog.Options{Keep: feedKeep, KeepBytes: feedKeepBytes, Clock: w.clock})
		w.feeds[threadID] = f
		w.count.Add(1)
	}
	return f
}

// ThreadSubscription is one client's cursor into a thread's feed. Next
// must not be called concurrently with itself; Close may be called from
// any goroutine.
type ThreadSubscription struct {
	c *eventlog.Cursor[feedEvent]
}

// Next returns the next event of the thread, waiting for one to be
// published. It returns ctx.Err() when ctx ends first and
// events.ErrClosed after Close; a thread stream has no end of its own.
func (t *ThreadSubscription) Next(ctx context.Context) (events.Event, error) {
	ev, err := t.c.Next(ctx)
	return ev.Event, err
}

// TryNext returns the next event if one is available now.
func (t *ThreadSubscription) TryNext() (events.Event, bool, error) {
	ev, ok, err := t.c.TryNext()
	return ev.Event, ok, err
}

// Close stops the subscription and detaches it from the thread.
func (t *ThreadSubscription) Close() { t.c.Close() }

// has reports whether a thread's events are wanted: it has stream
// clients, or had some recently enough to reconnect.
func (w *threadWatchers) has(threadID uuid.UUID) bool {
	return w.feed(threadID) != nil
}

// hasClients reports whether a thread's feed has open connections.
func (w *threadWatchers) hasClients(threadID uuid.UUID) bool {
	f := w.feed(threadID)
	return f != nil && f.Cursors() > 0
}

// publish numbers one run event in the thread's feed, keeps it for replay
// and wakes the thread's clients.
func (w *threadWatchers) publish(threadID uuid.UUID, name string, data json.RawMessage) {
	w.add(threadID, name, data, false, 0)
}

// publishRelayed publishes an event of one of the thread's runs on
// another replica, under the id it has there (0: none).
func (w *threadWatchers) publishRelayed(threadID uuid.UUID, name string, data json.RawMessage, id int64) {
	w.add(threadID, name, data, true, id)
}

// add numbers an event and keeps it. An event's id is the wall clock in
// microseconds when it was published where its run executes (or one more
// than the feed's last id, when that is larger), and a relayed event keeps
// the id it got there: so a thread's events have the same ids on every
// replica, and a client may reconnect with Last-Event-ID to any of them.
func (w *threadWatchers) add(threadID uuid.UUID, name string, data json.RawMessage, relayed bool, id int64) {
	f := w.feed(threadID)
	if f == nil {
		return
	}
	if !relayed {
		id = w.clock().UnixMicro()
	}
	f.Append(id, func(seq int64) feedEvent {
		return feedEvent{Event: events.Event{Seq: seq, Name: name, Data: data}, relayed: relayed} // compact JSON from json.Marshal
	})
}
