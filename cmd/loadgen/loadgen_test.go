package main

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestPercentileNearestRank(t *testing.T) {
	var lat []time.Duration
	for i := 1; i <= 100; i++ {
		lat = append(lat, time.Duration(i)*time.Millisecond)
	}
	s := summarize(lat, 0, time.Second, false)
	if s.p50 != 50*time.Millisecond || s.p90 != 90*time.Millisecond || s.p99 != 99*time.Millisecond || s.pmax != 100*time.Millisecond {
		t.Fatalf("percentiles = %+v", s)
	}
	if got := percentile([]time.Duration{7}, 99); got != 7 {
		t.Fatalf("single sample p99 = %v", got)
	}
}

func TestLoopStopsAtCount(t *testing.T) {
	var calls atomic.Int64
	res := loop(context.Background(), 8, 1000, time.Minute, func(context.Context, int) error {
		calls.Add(1)
		return nil
	})
	if calls.Load() != 1000 || res.n != 1000 || res.capped || res.firstErr != nil {
		t.Fatalf("calls=%d res=%+v", calls.Load(), res)
	}
}

func TestLoopStopsAtTimeCap(t *testing.T) {
	res := loop(context.Background(), 2, 1<<30, 50*time.Millisecond, func(context.Context, int) error {
		time.Sleep(time.Millisecond)
		return nil
	})
	if !res.capped || res.n == 0 || res.n >= 1<<30 {
		t.Fatalf("res=%+v", res)
	}
}

func TestLoopStopsAfterMaxErrors(t *testing.T) {
	boom := errors.New("boom")
	res := loop(context.Background(), 1, 1<<30, time.Minute, func(context.Context, int) error { return boom })
	if res.errors != maxErrors || !errors.Is(res.firstErr, boom) || res.n != 0 {
		t.Fatalf("res=%+v", res)
	}
}

func TestReadStream(t *testing.T) {
	body := "event: metadata\ndata: {\"run_id\":\"x\"}\n\n" +
		": heartbeat\n\n" +
		"event: values\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n" +
		"data: no name\n\n" +
		"id: 7\nevent: end\ndata: null\n\n"
	s, err := readStream(strings.NewReader(body), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if s.events != 4 || s.first != "metadata" || s.last != "end" || s.errorData != nil {
		t.Fatalf("summary = %+v", s)
	}
}

func TestReadStreamLongLineAndError(t *testing.T) {
	long := strings.Repeat("x", 100<<10)
	body := "event: metadata\ndata: " + long + "\n\nevent: error\ndata: {\"error\":\"E\"}\n\nevent: end\ndata: null\n\n"
	s, err := readStream(strings.NewReader(body), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if s.events != 3 || s.first != "metadata" || string(s.errorData) != `{"error":"E"}` {
		t.Fatalf("summary = %+v", s)
	}
}

func TestReadStreamTruncated(t *testing.T) {
	if _, err := readStream(strings.NewReader("event: metadata\ndata: {}\n"), time.Now()); err == nil {
		t.Fatal("a stream cut inside an event must fail")
	}
}

func TestProcCPUTicks(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	if _, err := procCPUTicks(os.Getpid()); err != nil {
		t.Fatal(err)
	}
}
