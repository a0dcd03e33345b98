package events_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/events"
)

func newLog(t *testing.T) *events.Log {
	t.Helper()
	return events.NewBroker(nil, events.BrokerOptions{}).Open(uuid.New(), false)
}

func data(i int) json.RawMessage { return json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)) }

// drain reads s until io.EOF and returns the seqs read.
func drain(t *testing.T, s *events.Subscription) []int64 {
	t.Helper()
	var seqs []int64
	for {
		ev, err := s.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return seqs
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		seqs = append(seqs, ev.Seq)
	}
}

func checkRange(t *testing.T, got []int64, from, to int64) {
	t.Helper()
	if int64(len(got)) != max(0, to-from+1) {
		t.Fatalf("got %d events, want seqs %d..%d", len(got), from, to)
	}
	for i, s := range got {
		if s != from+int64(i) {
			t.Fatalf("event %d has seq %d, want %d", i, s, from+int64(i))
		}
	}
}

func TestAppendAssignsSeqAndReplaysFromAnyPoint(t *testing.T) {
	l := newLog(t)
	if l.LastSeq() != 0 || l.Closed() {
		t.Fatalf("new log: LastSeq %d, Closed %v", l.LastSeq(), l.Closed())
	}
	for i := 1; i <= 100; i++ {
		ev := l.Append("values", data(i))
		if ev.Seq != int64(i) || ev.ID() != fmt.Sprint(i) || ev.Name != "values" || string(ev.Data) != string(data(i)) {
			t.Fatalf("Append %d returned %+v", i, ev)
		}
	}
	l.Close()
	if !l.Closed() || l.LastSeq() != 100 {
		t.Fatalf("closed log: LastSeq %d, Closed %v", l.LastSeq(), l.Closed())
	}
	if ev := l.Append("values", data(101)); ev.Seq != 0 || l.LastSeq() != 100 {
		t.Fatalf("Append after Close returned %+v", ev)
	}
	for _, after := range []int64{-5, -1, 0, 1, 2, 50, 99, 100, 1000} {
		got := drain(t, l.Subscribe(after))
		checkRange(t, got, max(after, 0)+1, 100)
	}
}

func TestSubscriberFollowsLiveAppends(t *testing.T) {
	l := newLog(t)
	s := l.Subscribe(0)
	defer s.Close()
	const n = 5000
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 1; i <= n; i++ {
			l.Append("messages", data(i))
		}
		l.Close()
	}()
	got := drain(t, s)
	<-done
	checkRange(t, got, 1, n)
	// After EOF, Next keeps returning EOF.
	if _, err := s.Next(context.Background()); !errors.Is(err, io.EOF) {
		t.Fatalf("Next after EOF: %v", err)
	}
}

func TestManyConcurrentSubscribers(t *testing.T) {
	l := newLog(t)
	const subs, n = 64, 2000
	var wg sync.WaitGroup
	results := make([][]int64, subs)
	afters := make([]int64, subs)
	for i := range subs {
		// Even subscribers start at the beginning, odd ones join mid-stream
		// with "only new events".
		if i%2 == 1 {
			afters[i] = l.LastSeq()
		} else {
			afters[i] = -1
		}
		s := l.Subscribe(afters[i])
		wg.Go(func() {
			defer s.Close()
			results[i] = drain(t, s)
		})
		l.Append("values", data(i))
	}
	for i := subs; i < n; i++ {
		l.Append("values", data(i))
	}
	l.Close()
	wg.Wait()
	for i, got := range results {
		checkRange(t, got, max(afters[i], 0)+1, n)
	}
}

func TestStalledSubscriberDoesNotBlockAppend(t *testing.T) {
	l := newLog(t)
	stalled := l.Subscribe(0) // never reads until the end
	defer stalled.Close()

	// Another subscriber is parked inside Next the whole time.
	ctx, cancel := context.WithCancel(context.Background())
	parked := l.Subscribe(l.LastSeq())
	parkedErr := make(chan error, 1)
	go func() {
		for {
			if _, err := parked.Next(ctx); err != nil {
				parkedErr <- err
				return
			}
		}
	}()

	const n = 100_000
	payload := json.RawMessage(`{"content":"tok"}`)
	for range n {
		l.Append("messages", payload)
	}
	if l.LastSeq() != n {
		t.Fatalf("LastSeq = %d, want %d", l.LastSeq(), n)
	}
	cancel()
	if err := <-parkedErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("parked subscriber: %v", err)
	}
	// The stalled subscriber still gets everything, from the log.
	l.Close()
	checkRange(t, drain(t, stalled), 1, n)
}

func TestNextHonoursContextAndClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLog(t)
		l.Append("metadata", data(0))

		s := l.Subscribe(1)
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			_, err := s.Next(ctx)
			errc <- err
		}()
		synctest.Wait() // the goroutine is blocked in Next
		select {
		case err := <-errc:
			t.Fatalf("Next returned early: %v", err)
		default:
		}
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("Next after cancel: %v", err)
		}

		// A deadline ends the wait as well.
		dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer dcancel()
		start := time.Now()
		if _, err := s.Next(dctx); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 5*time.Second {
			t.Fatalf("Next with deadline: %v after %v", err, time.Since(start))
		}

		// An available event wins over a cancelled context.
		l.Append("values", data(1))
		if ev, err := s.Next(ctx); err != nil || ev.Seq != 2 {
			t.Fatalf("Next with available event and cancelled ctx: %+v %v", ev, err)
		}

		// Close from another goroutine wakes a blocked Next.
		go func() {
			_, err := s.Next(context.Background())
			errc <- err
		}()
		synctest.Wait()
		s.Close()
		s.Close() // idempotent
		if err := <-errc; !errors.Is(err, events.ErrClosed) {
			t.Fatalf("Next after Close: %v", err)
		}
		if _, err := s.Next(context.Background()); !errors.Is(err, events.ErrClosed) {
			t.Fatalf("Next on closed subscription: %v", err)
		}
		l.Close()
		// synctest.Test fails if any goroutine started here were still blocked.
	})
}

func TestCloseWakesWaitersWithEOF(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLog(t)
		const waiters = 10
		var wg sync.WaitGroup
		got := make([][]int64, waiters)
		for i := range waiters {
			s := l.Subscribe(0)
			wg.Go(func() { got[i] = drain(t, s) })
		}
		synctest.Wait()
		l.Append("values", data(1))
		l.Append("end", nil)
		l.Close()
		l.Close() // idempotent
		wg.Wait()
		for i := range got {
			checkRange(t, got[i], 1, 2)
		}
	})
}

func TestAppendNormalizesData(t *testing.T) {
	l := newLog(t)
	cases := []struct{ in, want string }{
		{"", "null"},
		{"  ", "null"},
		{`{"a": 1}`, `{"a": 1}`}, // one line: kept as is
		{"{\n  \"a\": [1,\r\n 2],\n  \"s\": \"x\\ny\"\n}", `{"a":[1,2],"s":"x\ny"}`},
		{"not json\nat all", `"not json\nat all"`},
		{"{", `"{"`},
	}
	for _, c := range cases {
		var in json.RawMessage
		if c.in != "" {
			in = json.RawMessage(c.in)
		}
		if got := l.Append("custom", in); string(got.Data) != c.want {
			t.Errorf("Append(%q).Data = %q, want %q", c.in, got.Data, c.want)
		}
	}
}
