package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/events"
)

// A thread's feed keeps its events for a client that comes back within
// feedRetention, replays them in order under the thread's ids, and is
// dropped once the retention has passed.
func TestThreadFeedRetention(t *testing.T) {
	now := time.Now()
	s := &Service{broker: events.NewBroker(nil, events.BrokerOptions{})}
	s.watchers.now = func() time.Time { return now }
	tid := uuid.New()

	if s.watchers.has(tid) {
		t.Fatal("a thread nobody watched has a feed")
	}
	s.watchers.publish(tid, "values", json.RawMessage(`{"n":0}`)) // nobody listens: not kept
	first, err := s.SubscribeThread(context.Background(), tid, "")
	if err != nil {
		t.Fatal(err)
	}
	s.watchers.publish(tid, "values", json.RawMessage(`{"n":1}`))
	ev, ok, err := first.TryNext()
	if !ok || err != nil || string(ev.Data) != `{"n":1}` {
		t.Fatalf("live event: %+v %v %v", ev, ok, err)
	}
	first.Close()

	now = now.Add(feedRetention / 2)
	if !s.watchers.has(tid) {
		t.Fatal("the feed was dropped within its retention")
	}
	s.watchers.publish(tid, "values", json.RawMessage(`{"n":2}`)) // kept for the reconnect
	again, err := s.SubscribeThread(context.Background(), tid, ev.ID())
	if err != nil {
		t.Fatal(err)
	}
	next, ok, err := again.TryNext()
	if !ok || err != nil || string(next.Data) != `{"n":2}` || next.Seq <= ev.Seq {
		t.Fatalf("replay after id %d: %+v %v %v", ev.Seq, next, ok, err)
	}
	if _, ok, _ := again.TryNext(); ok {
		t.Fatal("the replay repeats an event")
	}
	again.Close()

	now = now.Add(feedRetention + time.Second)
	if s.watchers.has(tid) {
		t.Fatal("the feed outlived its retention")
	}
	if n := s.watchers.count.Load(); n != 0 || len(s.watchers.feeds) != 0 {
		t.Fatalf("%d feeds left (count %d)", len(s.watchers.feeds), n)
	}
}

// newThreadSubscription subscribes to a new thread's stream of a service
// with no runs.
func newThreadSubscription(t *testing.T) (*Service, uuid.UUID, *ThreadSubscription) {
	t.Helper()
	s := &Service{broker: events.NewBroker(nil, events.BrokerOptions{})}
	tid := uuid.New()
	sub, err := s.SubscribeThread(context.Background(), tid, "")
	if err != nil {
		t.Fatal(err)
	}
	return s, tid, sub
}

// A connection holds no events of its own: a client that reads nothing
// while the feed drops more events than it keeps continues with the oldest
// event still kept, its ids jumping over the gap.
func TestThreadStreamSlowClientIsBounded(t *testing.T) {
	s, tid, sub := newThreadSubscription(t)
	defer sub.Close()
	const extra = 10
	for i := range feedKeep + extra {
		s.watchers.publish(tid, "values", json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)))
	}
	ev, ok, err := sub.TryNext()
	if !ok || err != nil || string(ev.Data) != fmt.Sprintf(`{"n":%d}`, extra) {
		t.Fatalf("first event of a slow client: %+v %v %v, want n=%d", ev, ok, err, extra)
	}
	n := 1
	for {
		next, ok, err := sub.TryNext()
		if err != nil || !ok {
			break
		}
		if next.Seq <= ev.Seq || string(next.Data) != fmt.Sprintf(`{"n":%d}`, extra+n) {
			t.Fatalf("event %d (%s) follows %d", next.Seq, next.Data, ev.Seq)
		}
		ev = next
		n++
	}
	if n != feedKeep {
		t.Fatalf("read %d events, want the %d kept", n, feedKeep)
	}
}

// Next waits for the thread's next event and returns ErrClosed once the
// subscription is closed.
func TestThreadStreamNextWakesAndCloses(t *testing.T) {
	s, tid, sub := newThreadSubscription(t)
	got := make(chan events.Event, 1)
	go func() {
		ev, err := sub.Next(context.Background())
		if err == nil {
			got <- ev
		}
		close(got)
	}()
	s.watchers.publish(tid, "values", json.RawMessage(`{"n":1}`))
	if ev, ok := <-got; !ok || string(ev.Data) != `{"n":1}` {
		t.Fatalf("Next: %+v %v", ev, ok)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := sub.Next(context.Background())
		errc <- err
	}()
	sub.Close()
	if err := <-errc; !errors.Is(err, events.ErrClosed) {
		t.Fatalf("Next after Close: %v", err)
	}
}
