package events_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/events"
	"agentserver/internal/storage"
)

// countingStore counts the calls that reach the real store and can be told
// to fail appends.
type countingStore struct {
	events.StorageAdapter

	mu       sync.Mutex
	appends  map[uuid.UUID]int // AppendEvents calls per run
	deletes  int
	failNext int // AppendEvents calls to fail before passing through
}

var errInjected = errors.New("injected store failure")

func (s *countingStore) AppendEvents(ctx context.Context, runID uuid.UUID, evs []events.Event) error {
	s.mu.Lock()
	if s.failNext > 0 {
		s.failNext--
		s.mu.Unlock()
		return errInjected
	}
	s.appends[runID]++
	s.mu.Unlock()
	return s.StorageAdapter.AppendEvents(ctx, runID, evs)
}

func (s *countingStore) DeleteEvents(ctx context.Context, runIDs []uuid.UUID) error {
	s.mu.Lock()
	s.deletes++
	s.mu.Unlock()
	return s.StorageAdapter.DeleteEvents(ctx, runIDs)
}

func (s *countingStore) appendCalls(runID uuid.UUID) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.appends[runID]
}

// openDB opens a real database; inside a synctest bubble it must be called
// from the bubble so that its writer goroutine belongs to it.
func openDB(t *testing.T, dir string) (*storage.DB, *countingStore) {
	t.Helper()
	db, err := storage.Open(dir, storage.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	return db, &countingStore{StorageAdapter: events.StorageAdapter{DB: db}, appends: map[uuid.UUID]int{}}
}

// runBroker starts b.Run and returns a function that stops it and waits.
func runBroker(b *events.Broker) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.Run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

func persistedSeqs(t *testing.T, db *storage.DB, runID uuid.UUID) []int64 {
	t.Helper()
	evs, err := db.LoadRunEvents(context.Background(), runID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, ev := range evs {
		out = append(out, ev.Seq)
	}
	return out
}

func TestBrokerPersistsResumableLogsInBatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db, store := openDB(t, t.TempDir())
		defer db.Close()
		b := events.NewBroker(store, events.BrokerOptions{FlushInterval: 25 * time.Millisecond})
		stop := runBroker(b)
		defer stop()

		// A burst of 1,000 token chunks: one write, plus none at close
		// because everything is already persisted.
		burst := b.Open(uuid.New(), true)
		for i := 1; i <= 1000; i++ {
			burst.Append("messages", data(i))
		}
		time.Sleep(25 * time.Millisecond)
		synctest.Wait()
		if got := store.appendCalls(burst.RunID()); got != 1 {
			t.Fatalf("burst: %d writes, want 1", got)
		}
		checkRange(t, persistedSeqs(t, db, burst.RunID()), 1, 1000)
		burst.Close()
		synctest.Wait()
		if got := store.appendCalls(burst.RunID()); got != 1 {
			t.Fatalf("burst after close: %d writes, want 1", got)
		}

		// 1,000 chunks over one second: one write per flush interval, and
		// the tail is written as soon as the log closes.
		paced := b.Open(uuid.New(), true)
		quiet := b.Open(uuid.New(), false)
		for i := 1; i <= 1000; i++ {
			paced.Append("messages", data(i))
			quiet.Append("messages", data(i))
			time.Sleep(time.Millisecond)
		}
		paced.Append("end", nil)
		paced.Close()
		quiet.Close()
		synctest.Wait() // no time passes: the close flush is immediate
		checkRange(t, persistedSeqs(t, db, paced.RunID()), 1, 1001)
		if got := store.appendCalls(paced.RunID()); got < 5 || got > 1000/25+2 {
			t.Fatalf("paced: %d writes, want about one per 25ms", got)
		} else {
			t.Logf("paced: 1,001 events over 1s in %d writes", got)
		}
		if got := store.appendCalls(quiet.RunID()); got != 0 {
			t.Fatalf("non-resumable log written %d times", got)
		}
		if got := persistedSeqs(t, db, quiet.RunID()); len(got) != 0 {
			t.Fatalf("non-resumable log persisted %d events", len(got))
		}
	})
}

func TestBrokerFlushesConcurrentLogsTogether(t *testing.T) {
	db, store := openDB(t, t.TempDir())
	defer db.Close()
	b := events.NewBroker(store, events.BrokerOptions{FlushInterval: time.Hour})
	var logs []*events.Log
	for i := range 50 {
		l := b.Open(uuid.New(), true)
		for j := 0; j <= i; j++ {
			l.Append("values", data(j))
		}
		logs = append(logs, l)
	}
	if err := b.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i, l := range logs {
		checkRange(t, persistedSeqs(t, db, l.RunID()), 1, int64(i+1))
		if got := store.appendCalls(l.RunID()); got != 1 {
			t.Fatalf("log %d: %d writes", i, got)
		}
	}
	// Nothing new: Flush writes nothing.
	if err := b.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, l := range logs {
		if got := store.appendCalls(l.RunID()); got != 1 {
			t.Fatalf("idle flush wrote again: %d", got)
		}
	}
}

func TestBrokerRetriesFailedWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db, store := openDB(t, t.TempDir())
		defer db.Close()
		store.failNext = 3
		b := events.NewBroker(store, events.BrokerOptions{Log: discardLogger()})
		stop := runBroker(b)
		defer stop()

		l := b.Open(uuid.New(), true)
		for i := 1; i <= 10; i++ {
			l.Append("values", data(i))
		}
		l.Close()
		// Backoff: 100ms, 200ms, 400ms.
		time.Sleep(time.Second)
		synctest.Wait()
		checkRange(t, persistedSeqs(t, db, l.RunID()), 1, 10)
		store.mu.Lock()
		defer store.mu.Unlock()
		if store.failNext != 0 || store.appends[l.RunID()] != 1 {
			t.Fatalf("failures left %d, successful writes %d", store.failNext, store.appends[l.RunID()])
		}
	})
}

func TestBrokerRunFlushesOnCancel(t *testing.T) {
	db, store := openDB(t, t.TempDir())
	defer db.Close()
	b := events.NewBroker(store, events.BrokerOptions{FlushInterval: time.Hour})
	stop := runBroker(b)
	l := b.Open(uuid.New(), true)
	for i := 1; i <= 100; i++ {
		l.Append("values", data(i))
	}
	stop() // returns only after Run returned
	checkRange(t, persistedSeqs(t, db, l.RunID()), 1, 100)
	if got := store.appendCalls(l.RunID()); got != 1 {
		t.Fatalf("%d writes, want 1", got)
	}
}

func TestBrokerReplaysAfterEvictionAndDeletesAfterRetention(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db, store := openDB(t, t.TempDir())
		defer db.Close()
		b := events.NewBroker(store, events.BrokerOptions{
			Retention:       10 * time.Minute,
			MemoryRetention: time.Minute,
		})
		stop := runBroker(b)
		defer stop()

		res := b.Open(uuid.New(), true)
		plain := b.Open(uuid.New(), false)
		for i := 1; i <= 20; i++ {
			res.Append("values", data(i))
			plain.Append("values", data(i))
		}
		res.Close()
		plain.Close()

		// Within MemoryRetention both logs are in memory.
		time.Sleep(59 * time.Second)
		synctest.Wait()
		for _, l := range []*events.Log{res, plain} {
			if _, ok := b.Get(l.RunID()); !ok {
				t.Fatal("log evicted before MemoryRetention")
			}
			s, err := b.Subscribe(context.Background(), l.RunID(), 0)
			if err != nil {
				t.Fatal(err)
			}
			checkRange(t, drain(t, s), 1, 20)
		}

		// After MemoryRetention both leave memory; the resumable one is
		// replayed from the store.
		time.Sleep(2 * time.Second)
		synctest.Wait()
		for _, l := range []*events.Log{res, plain} {
			if _, ok := b.Get(l.RunID()); ok {
				t.Fatal("log still in memory after MemoryRetention")
			}
		}
		if _, err := b.Subscribe(context.Background(), plain.RunID(), 0); !errors.Is(err, events.ErrNoLog) {
			t.Fatalf("evicted non-resumable log: %v", err)
		}
		for _, after := range []int64{-1, 0, 7, 19} {
			s, err := b.Subscribe(context.Background(), res.RunID(), after)
			if err != nil {
				t.Fatal(err)
			}
			checkRange(t, drain(t, s), max(after, 0)+1, 20)
		}
		s, err := b.Subscribe(context.Background(), res.RunID(), 20) // caught up: empty replay
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Next(context.Background()); !errors.Is(err, io.EOF) {
			t.Fatalf("caught-up replay: %v", err)
		}
		if _, err := b.Subscribe(context.Background(), res.RunID(), 25); !errors.Is(err, events.ErrNoLog) {
			t.Fatalf("after past the end: %v", err)
		}
		if _, err := b.Subscribe(context.Background(), uuid.New(), -1); !errors.Is(err, events.ErrNoLog) {
			t.Fatalf("unknown run: %v", err)
		}

		// A new broker on the same database (a restart) replays too.
		b2 := events.NewBroker(store, events.BrokerOptions{})
		s, err = b2.Subscribe(context.Background(), res.RunID(), -1)
		if err != nil {
			t.Fatal(err)
		}
		checkRange(t, drain(t, s), 1, 20)

		// Retention after the close, the persisted events are deleted.
		time.Sleep(9 * time.Minute)
		synctest.Wait()
		if got := persistedSeqs(t, db, res.RunID()); len(got) != 0 {
			t.Fatalf("%d events left after Retention", len(got))
		}
		if _, err := b.Subscribe(context.Background(), res.RunID(), -1); !errors.Is(err, events.ErrNoLog) {
			t.Fatalf("after Retention: %v", err)
		}
	})
}

func TestBrokerKeepsResumableLogInMemoryWithoutStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := events.NewBroker(nil, events.BrokerOptions{Retention: 5 * time.Minute, MemoryRetention: time.Minute})
		stop := runBroker(b)
		defer stop()
		l := b.Open(uuid.New(), true)
		l.Append("values", data(1))
		l.Close()
		time.Sleep(4 * time.Minute)
		synctest.Wait()
		s, err := b.Subscribe(context.Background(), l.RunID(), -1)
		if err != nil {
			t.Fatal(err)
		}
		checkRange(t, drain(t, s), 1, 1)
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if _, err := b.Subscribe(context.Background(), l.RunID(), -1); !errors.Is(err, events.ErrNoLog) {
			t.Fatalf("after Retention: %v", err)
		}
	})
}

func TestBrokerAfterRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		db, store := openDB(t, dir)
		defer db.Close()

		// The first process persisted two runs that never closed (a crash).
		b1 := events.NewBroker(store, events.BrokerOptions{})
		crashed, orphan := b1.Open(uuid.New(), true), b1.Open(uuid.New(), true)
		for i := 1; i <= 5; i++ {
			crashed.Append("values", data(i))
			orphan.Append("values", data(i))
		}
		if err := b1.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}

		b2 := events.NewBroker(store, events.BrokerOptions{Retention: 10 * time.Minute})
		stop := runBroker(b2)
		defer stop()

		// The run engine executes the crashed run again: its log continues
		// the persisted sequence, and its events are no longer scheduled for
		// deletion.
		again := b2.Open(crashed.RunID(), true)
		if again.LastSeq() != 5 {
			t.Fatalf("re-opened log starts after %d, want 5", again.LastSeq())
		}
		if ev := again.Append("metadata", data(6)); ev.Seq != 6 {
			t.Fatalf("next seq %d, want 6", ev.Seq)
		}
		s, err := b2.Subscribe(context.Background(), crashed.RunID(), 3)
		if err != nil {
			t.Fatal(err)
		}
		if ev, err := s.Next(context.Background()); err != nil || ev.Seq != 4 {
			t.Fatalf("first replayed event: %+v %v", ev, err)
		}

		// The orphan is replayable until Retention after the start.
		s, err = b2.Subscribe(context.Background(), orphan.RunID(), -1)
		if err != nil {
			t.Fatal(err)
		}
		checkRange(t, drain(t, s), 1, 5)
		time.Sleep(10*time.Minute + time.Second)
		synctest.Wait()
		if got := persistedSeqs(t, db, orphan.RunID()); len(got) != 0 {
			t.Fatalf("orphan: %d events left", len(got))
		}
		checkRange(t, persistedSeqs(t, db, crashed.RunID()), 1, 6)
		again.Close()
	})
}

func TestBrokerReopenClosedLog(t *testing.T) {
	b := events.NewBroker(nil, events.BrokerOptions{})
	id := uuid.New()
	l := b.Open(id, false)
	l.Append("values", data(1))
	l.Close()
	if again := b.Open(id, false); again != l || again.Closed() {
		t.Fatalf("Open did not re-open the existing log")
	}
	if ev := l.Append("values", data(2)); ev.Seq != 2 {
		t.Fatalf("Append after re-open: %+v", ev)
	}
	if got, ok := b.Get(id); !ok || got != l {
		t.Fatal("Get lost the log")
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func ExampleBroker() {
	b := events.NewBroker(nil, events.BrokerOptions{})
	l := b.Open(uuid.MustParse("01994ed8-29c4-7108-93d4-d649c7a9e370"), false)
	s := l.Subscribe(-1)
	l.Append("metadata", []byte(`{"run_id":"01994ed8-29c4-7108-93d4-d649c7a9e370","attempt":1}`))
	l.Append("values", []byte("{\n  \"messages\": []\n}"))
	l.Close()
	for {
		ev, err := s.Next(context.Background())
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(ev.ID(), ev.Name, string(ev.Data))
	}
	// Output:
	// 1 metadata {"run_id":"01994ed8-29c4-7108-93d4-d649c7a9e370","attempt":1}
	// 2 values {"messages":[]}
	// EOF
}

func TestBrokerFlushRacesWithAppends(t *testing.T) {
	db, store := openDB(t, t.TempDir())
	defer db.Close()
	b := events.NewBroker(store, events.BrokerOptions{FlushInterval: time.Hour})
	l := b.Open(uuid.New(), true)
	const n = 20_000
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 1; i <= n; i++ {
			l.Append("messages", data(i))
		}
		l.Close()
	}()
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		default:
		}
		if err := b.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkRange(t, persistedSeqs(t, db, l.RunID()), 1, n)
	evs, err := db.LoadRunEvents(context.Background(), l.RunID(), n-1)
	if err != nil || len(evs) != 1 || string(evs[0].Data) != string(data(n)) {
		t.Fatalf("last persisted event %+v %v", evs, err)
	}
}
