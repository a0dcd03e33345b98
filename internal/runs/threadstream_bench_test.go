package runs

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"

	"agentserver/internal/events"
)

// BenchmarkThreadFeedPublish measures the thread feed's hot path: one op
// publishes a token-sized run event into a thread's feed (numbering,
// retention bounds, wake-up) and each of 4 clients of GET
// /threads/{id}/stream reads it.
func BenchmarkThreadFeedPublish(b *testing.B) {
	s := &Service{broker: events.NewBroker(nil, events.BrokerOptions{})}
	tid := uuid.New()
	subs := make([]*ThreadSubscription, 4)
	for i := range subs {
		sub, err := s.SubscribeThread(context.Background(), tid, "")
		if err != nil {
			b.Fatal(err)
		}
		defer sub.Close()
		subs[i] = sub
	}
	data := json.RawMessage(`[{"content":"x","type":"AIMessageChunk"},{"langgraph_node":"agent"}]`)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		s.watchers.publish(tid, "messages", data)
		for _, sub := range subs {
			if _, ok, err := sub.TryNext(); !ok || err != nil {
				b.Fatalf("TryNext: %v %v", ok, err)
			}
		}
	}
}
