package llm_test

import (
	"testing"

	"agentserver/internal/llm"
	"agentserver/internal/llm/scripted"
)

// BenchmarkStreamingOverhead measures one streamed call against the scripted
// server at zero latency: request encoding, HTTP round trip over loopback,
// SSE decoding, chunk maps and message assembly. The server runs in the same
// process, so its allocations are included.
func BenchmarkStreamingOverhead(b *testing.B) {
	f := newFixture(b)
	f.srv.SetResponder(func(scripted.ChatRequest) scripted.Step {
		return scripted.Text("The quick brown fox jumps over the lazy dog.").Split(8).WithUsage(20, 10)
	})
	req := llm.Request{Messages: []llm.Message{
		{"type": "system", "content": "You are terse."},
		human("Say something."),
	}}
	chunks := 0
	onChunk := func(llm.Message) { chunks++ }
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.model.Generate(b.Context(), req, onChunk); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(chunks)/float64(b.N), "chunks/op")
}
