package events_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"

	"agentserver/internal/events"
)

// BenchmarkLogAppendFanOut measures the run event log's hot path: one op
// appends a token-sized event to a run's log and every one of 4
// subscribers reads it (TryNext, as the SSE pump does while events are
// ready).
func BenchmarkLogAppendFanOut(b *testing.B) {
	l := events.NewBroker(nil, events.BrokerOptions{}).Open(uuid.New(), false)
	subs := make([]*events.Subscription, 4)
	for i := range subs {
		subs[i] = l.Subscribe(0)
	}
	data := json.RawMessage(`[{"content":"x","type":"AIMessageChunk"},{"langgraph_node":"agent"}]`)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		l.Append("messages", data)
		for _, s := range subs {
			if _, ok, err := s.TryNext(); !ok || err != nil {
				b.Fatalf("TryNext: %v %v", ok, err)
			}
		}
	}
}

// BenchmarkLogWakeUp measures an append that wakes a subscriber blocked in
// Next on another goroutine: one op is one event handed over.
func BenchmarkLogWakeUp(b *testing.B) {
	l := events.NewBroker(nil, events.BrokerOptions{}).Open(uuid.New(), false)
	sub := l.Subscribe(0)
	got := make(chan struct{})
	go func() {
		for {
			if _, err := sub.Next(context.Background()); err != nil {
				close(got)
				return
			}
			got <- struct{}{}
		}
	}()
	data := json.RawMessage(`{"i":1}`)
	b.ResetTimer()
	for range b.N {
		l.Append("values", data)
		<-got
	}
	b.StopTimer()
	l.Close()
	<-got
}
