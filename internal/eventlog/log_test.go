package eventlog_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"agentserver/internal/eventlog"
)

// entry is a test entry: a Seq and a payload.
type entry struct {
	Seq  int64
	Body string
}

func (e entry) LogSeq() int64 { return e.Seq }
func (e entry) LogSize() int  { return len(e.Body) }

func add(l *eventlog.Log[entry], hint int64, body string) entry {
	e, _ := l.Append(hint, func(seq int64) entry { return entry{Seq: seq, Body: body} })
	return e
}

// seqs reads every entry available now.
func seqs(t *testing.T, c *eventlog.Cursor[entry]) []int64 {
	t.Helper()
	var out []int64
	for {
		e, ok, err := c.TryNext()
		if err != nil && !errors.Is(err, io.EOF) {
			t.Fatalf("TryNext: %v", err)
		}
		if !ok {
			return out
		}
		out = append(out, e.Seq)
	}
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Entries are numbered after New's start (or the saved entries), and a
// hint larger than the next number is taken as the entry's number.
func TestNumbering(t *testing.T) {
	l := eventlog.New[entry](100, nil, eventlog.Options{})
	if got := add(l, 0, "a").Seq; got != 101 {
		t.Fatalf("first entry after start 100: Seq %d", got)
	}
	if got := add(l, 500, "b").Seq; got != 500 {
		t.Fatalf("hint 500: Seq %d", got)
	}
	if got := add(l, 7, "c").Seq; got != 501 {
		t.Fatalf("hint 7 below the last: Seq %d, want 501", got)
	}
	seeded := eventlog.New(0, []entry{{1, "x"}, {2, "y"}}, eventlog.Options{})
	if got := add(seeded, 0, "z").Seq; got != 3 || seeded.LastSeq() != 3 {
		t.Fatalf("after two saved entries: Seq %d, LastSeq %d", got, seeded.LastSeq())
	}
	if got := seqs(t, seeded.Subscribe(-1, nil)); !equal(got, []int64{1, 2, 3}) {
		t.Fatalf("a cursor from the start read %v", got)
	}
}

// A cursor starts after the Seq it is given, capped at the newest entry,
// and a filter skips entries while moving the cursor past them.
func TestCursorPositionAndFilter(t *testing.T) {
	l := eventlog.New[entry](0, nil, eventlog.Options{})
	for _, b := range []string{"a", "bb", "a", "bb"} {
		add(l, 0, b)
	}
	if got := seqs(t, l.Subscribe(2, nil)); !equal(got, []int64{3, 4}) {
		t.Fatalf("after 2: %v", got)
	}
	past := l.Subscribe(99, nil)
	if past.After() != 4 {
		t.Fatalf("a cursor past the end stands at %d, want 4", past.After())
	}
	add(l, 0, "a")
	if got := seqs(t, past); !equal(got, []int64{5}) {
		t.Fatalf("a cursor past the end then read %v, want [5]", got)
	}
	short := l.Subscribe(0, func(e *entry) bool { return len(e.Body) == 1 })
	if got := seqs(t, short); !equal(got, []int64{1, 3, 5}) {
		t.Fatalf("filtered: %v", got)
	}
	add(l, 0, "bb")
	if got := seqs(t, short); len(got) != 0 || short.After() != 6 {
		t.Fatalf("a skipped entry: read %v, cursor at %d, want none at 6", got, short.After())
	}
}

// Keep and KeepBytes drop the oldest entries; a cursor behind them
// continues with the oldest kept, or gets ErrBehind when the log reports
// gaps and continues once moved.
func TestBoundsAndGaps(t *testing.T) {
	l := eventlog.New[entry](0, nil, eventlog.Options{Keep: 3, KeepBytes: 10})
	slow := l.Subscribe(0, nil)
	for range 5 {
		add(l, 0, "x")
	}
	if l.Len() != 3 || l.Oldest() != 3 {
		t.Fatalf("Keep 3: %d kept from %d", l.Len(), l.Oldest())
	}
	add(l, 0, strings.Repeat("y", 10)) // with any other entry > 10 bytes
	if l.Len() != 1 || l.Oldest() != 6 {
		t.Fatalf("KeepBytes 10: %d kept from %d", l.Len(), l.Oldest())
	}
	if got := seqs(t, slow); !equal(got, []int64{6}) {
		t.Fatalf("a slow cursor read %v, want the oldest kept [6]", got)
	}

	g := eventlog.New[entry](0, nil, eventlog.Options{Keep: 2, ReportGaps: true})
	behind := g.Subscribe(0, nil)
	for range 4 {
		add(g, 0, "x")
	}
	if _, _, err := behind.TryNext(); !errors.Is(err, eventlog.ErrBehind) {
		t.Fatalf("a cursor behind the kept entries: %v, want ErrBehind", err)
	}
	behind.MoveTo(2) // entries 1 and 2 were read elsewhere
	if got := seqs(t, behind); !equal(got, []int64{3, 4}) {
		t.Fatalf("after MoveTo(2): %v", got)
	}
	if _, _, err := g.Subscribe(1, nil).TryNext(); !errors.Is(err, eventlog.ErrBehind) {
		t.Fatalf("a new cursor before the kept entries: %v, want ErrBehind", err)
	}
	fresh := eventlog.New[entry](50, nil, eventlog.Options{ReportGaps: true})
	if _, _, err := fresh.Subscribe(40, nil).TryNext(); !errors.Is(err, eventlog.ErrBehind) {
		t.Fatalf("a cursor before New's start: %v, want ErrBehind", err)
	}
}

// A persisted log keeps unsaved entries whatever its bounds, hands them to
// one save at a time, and asks again for those of a failed save.
func TestPersistence(t *testing.T) {
	l := eventlog.New[entry](0, nil, eventlog.Options{Keep: 1, Persist: true})
	if _, need := l.Append(0, func(seq int64) entry { return entry{Seq: seq} }); !need {
		t.Fatal("the first unsaved entry did not ask for a save")
	}
	if _, need := l.Append(0, func(seq int64) entry { return entry{Seq: seq} }); need {
		t.Fatal("the second unsaved entry asked for a save again")
	}
	if l.Len() != 2 || !l.Unsaved() {
		t.Fatalf("Keep 1 dropped unsaved entries: %d kept", l.Len())
	}
	batch := l.TakeUnsaved()
	if len(batch) != 2 || l.TakeUnsaved() != nil {
		t.Fatalf("took %d entries, then more", len(batch))
	}
	if !l.SaveFailed() {
		t.Fatal("a failed save did not ask for another")
	}
	batch = l.TakeUnsaved()
	if len(batch) != 2 {
		t.Fatalf("after a failure took %d entries, want 2", len(batch))
	}
	add(l, 0, "c")
	l.Saved(batch[1].Seq)
	if !l.Unsaved() || l.Len() != 1 {
		t.Fatalf("after saving 2: unsaved %v, %d kept (want entry 3 only)", l.Unsaved(), l.Len())
	}
	if got := l.TakeUnsaved(); len(got) != 1 || got[0].Seq != 3 {
		t.Fatalf("then took %v", got)
	}

	plain := eventlog.New[entry](0, nil, eventlog.Options{})
	add(plain, 0, "a")
	if plain.Unsaved() || plain.NeedSave() {
		t.Fatal("a log that does not persist has unsaved entries")
	}
	if !plain.Persist() || len(plain.TakeUnsaved()) != 1 {
		t.Fatal("Persist did not hand over the entries appended before")
	}
}

// Next waits for an Append, ends with io.EOF after Close and the remaining
// entries, and with ErrClosed or ctx.Err() when the cursor or ctx ends.
func TestWakeUpsAndEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := eventlog.New[entry](0, nil, eventlog.Options{})
		c := l.Subscribe(0, nil)
		got := make(chan int64)
		go func() {
			for {
				e, err := c.Next(context.Background())
				if err != nil {
					close(got)
					if !errors.Is(err, io.EOF) {
						t.Errorf("Next ended with %v, want io.EOF", err)
					}
					return
				}
				got <- e.Seq
			}
		}()
		synctest.Wait() // the reader waits
		add(l, 0, "a")
		if s := <-got; s != 1 {
			t.Fatalf("woke with %d", s)
		}
		add(l, 0, "b")
		if gen, ok := l.Close(); !ok || gen != 1 {
			t.Fatalf("Close: gen %d ok %v", gen, ok)
		}
		if _, ok := l.Close(); ok {
			t.Fatal("a second Close closed again")
		}
		if _, ok := l.Append(0, func(seq int64) entry { return entry{Seq: seq} }); ok {
			t.Fatal("a closed log asked for a save")
		}
		if s := <-got; s != 2 {
			t.Fatalf("after Close read %d, want the remaining 2", s)
		}
		if _, open := <-got; open {
			t.Fatal("the reader did not end")
		}
		l.Reopen()
		add(l, 0, "c")
		if closed, gen := l.Closed(); closed || gen != 1 || l.LastSeq() != 3 {
			t.Fatalf("after Reopen: closed %v gen %d last %d", closed, gen, l.LastSeq())
		}

		w := l.Subscribe(3, nil)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, err := w.Next(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Next past ctx: %v", err)
		}
		ended := make(chan error)
		go func() { _, err := w.Next(context.Background()); ended <- err }()
		synctest.Wait()
		w.Close()
		if err := <-ended; !errors.Is(err, eventlog.ErrClosed) {
			t.Fatalf("Next after Close: %v", err)
		}
	})
}

// IdleFor counts from the last cursor's Close, on the log's clock.
func TestIdleFor(t *testing.T) {
	now := time.Unix(1000, 0)
	l := eventlog.New[entry](0, nil, eventlog.Options{Clock: func() time.Time { return now }})
	if d := l.IdleFor(now.Add(time.Minute)); d != time.Minute {
		t.Fatalf("a log without cursors since New: idle %v", d)
	}
	a, b := l.Subscribe(0, nil), l.Subscribe(0, nil)
	closed := 0
	a.OnClose(func() { closed++ })
	if l.Cursors() != 2 || l.IdleFor(now.Add(time.Hour)) != 0 {
		t.Fatalf("with 2 cursors: %d cursors, idle %v", l.Cursors(), l.IdleFor(now.Add(time.Hour)))
	}
	now = now.Add(10 * time.Second)
	a.Close()
	a.Close()
	if closed != 1 || l.IdleFor(now.Add(time.Hour)) != 0 {
		t.Fatalf("one of two closed: OnClose ran %d times, idle %v", closed, l.IdleFor(now.Add(time.Hour)))
	}
	now = now.Add(10 * time.Second)
	b.Close()
	if d := l.IdleFor(now.Add(5 * time.Second)); d != 5*time.Second {
		t.Fatalf("5 s after the last cursor closed: idle %v", d)
	}
}

// One producer and several readers: every reader gets every entry, in
// order, without gaps or duplicates.
func TestConcurrentReaders(t *testing.T) {
	const n = 2000
	l := eventlog.New[entry](0, nil, eventlog.Options{})
	var wg sync.WaitGroup
	for range 4 {
		c := l.Subscribe(0, nil)
		wg.Go(func() {
			want := int64(1)
			for {
				e, err := c.Next(context.Background())
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil || e.Seq != want {
					t.Errorf("read %d (%v), want %d", e.Seq, err, want)
					return
				}
				want++
			}
			if want != n+1 {
				t.Errorf("read %d entries, want %d", want-1, n)
			}
		})
	}
	for range n {
		add(l, 0, "x")
	}
	l.Close()
	wg.Wait()
}
