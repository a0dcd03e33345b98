package protostream

import (
	"testing"

	"github.com/google/uuid"

	"agentserver/internal/testutil/testdb"
)

// BenchmarkHubRunEvent measures the protocol feed's hot path: one op
// translates a run's message chunk into protocol events, numbers and keeps
// them in the thread's feed, and each of 4 connections (2 that select
// messages, 2 that select only lifecycle) reads what it selects. The
// store's flushes run as in the server (Hub.Run is not started, so the
// feed's bounds hold unsaved events; Flush runs every 1,024 ops).
func BenchmarkHubRunEvent(b *testing.B) {
	db := testdb.Open(b)
	h := NewHub(db, Options{})
	thread := uuid.New()
	if _, err := h.Follow(thread); err != nil {
		b.Fatal(err)
	}
	lifecycle := Filter{Channels: []string{"lifecycle"}}
	messages := Filter{Channels: []string{"messages", "lifecycle"}}
	var subs []*Subscription
	for _, f := range []Filter{messages, messages, lifecycle, lifecycle} {
		s, err := h.Subscribe(thread, f, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		subs = append(subs, s)
	}
	run := testRun(thread)
	h.RunStarted(run)
	chunk := []any{
		map[string]any{"type": "AIMessageChunk", "id": "m1", "content": "x"},
		map[string]any{"langgraph_node": "agent"},
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		h.RunEvent(run, "messages", chunk)
		for _, s := range subs {
			for {
				if _, ok, err := s.TryNext(); err != nil {
					b.Fatal(err)
				} else if !ok {
					break
				}
			}
		}
		if i%1024 == 1023 {
			h.Flush(b.Context())
		}
	}
}
