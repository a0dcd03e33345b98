package protostream_test

import (
	"bufio"
	"encoding/json"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"agentserver/internal/llm/scripted"
	"agentserver/internal/testutil"
	"agentserver/internal/testutil/stats"
)

// protoFrame is one frame of a protocol SSE stream, as a benchmark reads it.
type protoFrame struct {
	Method string
	Data   []byte
	At     time.Time
}

// readProtoFrames calls fn with each frame of r until fn returns false or
// the stream ends.
func readProtoFrames(r io.Reader, fn func(protoFrame) bool) {
	rd := bufio.NewReaderSize(r, 16<<10)
	var f protoFrame
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case strings.HasPrefix(line, "event: "):
			f.Method = line[7:]
		case strings.HasPrefix(line, "data: "):
			f.Data = []byte(line[6:])
		case line == "" && f.Data != nil:
			f.At = time.Now()
			if !fn(f) {
				return
			}
			f = protoFrame{}
		}
	}
}

// protoEnvelope is the part of an event envelope the benchmarks read.
type protoEnvelope struct {
	Params struct {
		Namespace []string `json:"namespace"`
		Data      struct {
			Event string `json:"event"`
			Delta struct {
				Text string `json:"text"`
			} `json:"delta"`
		} `json:"data"`
	} `json:"params"`
}

// rootEnded reports whether a lifecycle frame ends the root run.
func rootEnded(f protoFrame, env *protoEnvelope) bool {
	if f.Method != "lifecycle" || len(env.Params.Namespace) != 0 {
		return false
	}
	switch env.Params.Data.Event {
	case "completed", "failed", "interrupted":
		return true
	}
	return false
}

// BenchmarkProtocolTokenPassThrough measures model token → v2 SSE client:
// the scripted model stamps each delta with its send time, and the client
// of POST /threads/{id}/stream/events (channels messages, lifecycle)
// measures when the content-block-delta carrying it arrives.
func BenchmarkProtocolTokenPassThrough(b *testing.B) {
	const chunks = 500
	s, model := testutil.StartBenchAgent(b, testutil.Options{})
	var lat []time.Duration
	for range b.N {
		b.StopTimer()
		tid := testutil.NewBenchThread(b, s).String()
		model.Script(scripted.Text(strings.Repeat("x", chunks)).Split(chunks).WithLatency(0, 2*time.Millisecond).WithSendTimestamps())
		resp := s.Stream("POST", "/threads/"+tid+"/stream/events", map[string]any{"channels": []string{"messages", "lifecycle"}}, nil)
		b.StartTimer()
		s.Must(200, "POST", "/threads/"+tid+"/commands", map[string]any{"id": 1, "method": "run.start", "params": map[string]any{"assistant_id": "agent", "input": testutil.UserInput("stream")}})
		n := 0
		readProtoFrames(resp.Body, func(f protoFrame) bool {
			var env protoEnvelope
			if err := json.Unmarshal(f.Data, &env); err != nil {
				b.Fatalf("frame %s: %v", f.Data, err)
			}
			for _, sent := range scripted.SendTimes(env.Params.Data.Delta.Text) {
				lat = append(lat, f.At.Sub(sent))
				n++
			}
			return !rootEnded(f, &env)
		})
		resp.Body.Close()
		b.StopTimer()
		if n != chunks+1 {
			b.Fatalf("streamed %d stamped deltas, want %d", n, chunks+1)
		}
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(stats.Millis(stats.Quantile(lat, 0.5)), "p50-ms")
	b.ReportMetric(stats.Millis(stats.Quantile(lat, 0.99)), "p99-ms")
	b.ReportMetric(stats.Millis(lat[len(lat)-1]), "max-ms")
	b.ReportMetric(float64(len(lat)), "deltas")
}

// BenchmarkProtocol1000Subscribers opens 1,000 v2 SSE connections on one
// thread, streams a run of 300 token deltas, and checks that every
// connection got every delta; it reports the process's RSS growth from
// before the connections opened to after the run was delivered (client
// and server share the process, so the figure counts both sides).
func BenchmarkProtocol1000Subscribers(b *testing.B) {
	const subscribers, chunks = 1000, 300
	s, model := testutil.StartBenchAgent(b, testutil.Options{})
	var growth, wall []float64
	for range b.N {
		b.StopTimer()
		tid := testutil.NewBenchThread(b, s).String()
		model.Script(scripted.Text(strings.Repeat("y", chunks)).Split(chunks).WithLatency(0, time.Millisecond))
		runtime.GC()
		before := stats.ProcStatusMiB()["VmRSS"]
		resps := make([]io.ReadCloser, subscribers)
		for i := range resps {
			resp := s.Stream("POST", "/threads/"+tid+"/stream/events", map[string]any{"channels": []string{"messages", "lifecycle"}}, nil)
			if resp.StatusCode != 200 {
				b.Fatalf("subscriber %d: status %d", i, resp.StatusCode)
			}
			resps[i] = resp.Body
		}
		b.StartTimer()
		start := time.Now()
		s.Must(200, "POST", "/threads/"+tid+"/commands", map[string]any{"id": 1, "method": "run.start", "params": map[string]any{"assistant_id": "agent", "input": testutil.UserInput("busy")}})
		got := make([]int, subscribers)
		var wg sync.WaitGroup
		for i, body := range resps {
			wg.Add(1)
			go func() {
				defer wg.Done()
				readProtoFrames(body, func(f protoFrame) bool {
					var env protoEnvelope
					if json.Unmarshal(f.Data, &env) != nil {
						return false
					}
					got[i] += len(env.Params.Data.Delta.Text)
					return !rootEnded(f, &env)
				})
			}()
		}
		wg.Wait()
		b.StopTimer()
		wall = append(wall, time.Since(start).Seconds())
		growth = append(growth, stats.ProcStatusMiB()["VmRSS"]-before)
		for i, body := range resps {
			body.Close()
			if got[i] != chunks {
				b.Fatalf("subscriber %d got %d of %d delta characters", i, got[i], chunks)
			}
		}
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(slices.Max(growth), "rss-growth-MiB")
	b.ReportMetric(slices.Max(wall), "delivered-s")
}
