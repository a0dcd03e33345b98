package a2a_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/testutil"
)

// BenchmarkStreamFirstEvent measures A2A message/stream on loopback: a
// message in a new context to the echo assistant of a whole in-process
// server (real bbolt file, fsync on), timed from sending the request to
// the first server-sent event (the submitted task) and to the last one
// (the completed status). One stream at a time, read to its end.
//
// Each A2A stream alternates with the same run through the LangGraph API
// (POST /threads/{id}/runs/stream with if_not_exists: create, whose first
// event is the run's metadata), so that the figures of the path both
// share (the durable creation of the thread and run) can be told from
// the A2A layer's own cost under the same machine load.
//
// fsync=off runs the same without fsync, which leaves the cost of the
// HTTP and JSON-RPC layers and the run engine without the disk's.
//
// Metrics (ms): a2a-first-p50/p99/max (target: p99 ≤ 10 ms),
// a2a-final-p50/p99, and the same for the LangGraph API (lg-…).
func BenchmarkStreamFirstEvent(b *testing.B) {
	for _, noSync := range []bool{false, true} {
		name := map[bool]string{false: "fsync=on", true: "fsync=off"}[noSync]
		b.Run(name, func(b *testing.B) { benchStreamFirstEvent(b, noSync) })
	}
}

func benchStreamFirstEvent(b *testing.B, noSync bool) {
	s := testutil.StartServer(b, testutil.Options{Graphs: graphsJSON, NoSync: noSync})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	a2aStream := func() (time.Duration, time.Duration) {
		return streamTimes(b, client, s.URL()+"/a2a/echo", rpc("message/stream", map[string]any{"message": userMessage("hello", "")}), `"final":true`)
	}
	lgStream := func() (time.Duration, time.Duration) {
		body := map[string]any{"assistant_id": "echo", "if_not_exists": "create", "stream_mode": []string{"values"},
			"input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hello"}}}}
		return streamTimes(b, client, s.URL()+"/threads/"+uuid.NewString()+"/runs/stream", body, "event: end")
	}
	for range 20 {
		a2aStream()
		lgStream()
	}
	lat := map[string][]time.Duration{}
	for b.Loop() {
		first, final := a2aStream()
		lat["a2a-first"], lat["a2a-final"] = append(lat["a2a-first"], first), append(lat["a2a-final"], final)
		first, final = lgStream()
		lat["lg-first"], lat["lg-final"] = append(lat["lg-first"], first), append(lat["lg-final"], final)
	}
	for name, l := range lat {
		slices.Sort(l)
		at := func(p float64) float64 { return float64(l[int(float64(len(l)-1)*p)]) / float64(time.Millisecond) }
		b.ReportMetric(at(0.5), name+"-p50-ms")
		b.ReportMetric(at(0.99), name+"-p99-ms")
		if strings.HasSuffix(name, "first") {
			b.ReportMetric(at(1), name+"-max-ms")
		}
	}
}

// streamTimes posts body to url, reads the event stream to its end and
// returns the time to its first line and to the line containing last.
func streamTimes(b *testing.B, client *http.Client, url string, body any, last string) (first, final time.Duration) {
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if first == 0 && line != "" {
			first = time.Since(start)
		}
		if strings.Contains(line, last) {
			final = time.Since(start)
		}
	}
	if resp.StatusCode != http.StatusOK || final == 0 {
		b.Fatalf("%s: status %d, the stream ended without %s", url, resp.StatusCode, last)
	}
	return first, final
}
