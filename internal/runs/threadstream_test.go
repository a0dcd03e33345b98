package runs

import (
	"encoding/json"
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
	first, err := s.SubscribeThread(tid, "")
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
	again, err := s.SubscribeThread(tid, ev.ID())
	if err != nil {
		t.Fatal(err)
	}
	next, ok, err := again.TryNext()
	if !ok || err != nil || string(next.Data) != `{"n":2}` || next.Seq != ev.Seq+1 {
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
