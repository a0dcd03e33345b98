package subagents

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// waitQueued starts Acquire in a goroutine and returns once the caller is
// in line (onQueued ran), with a channel that yields its release function.
func waitQueued(t *testing.T, ctx context.Context, a *Admission, wantPos int) <-chan func() {
	t.Helper()
	queued := make(chan int, 1)
	admitted := make(chan func(), 1)
	go func() {
		release, err := a.Acquire(ctx, func(pos int) { queued <- pos })
		if err != nil {
			close(admitted)
			return
		}
		admitted <- release
	}()
	select {
	case pos := <-queued:
		if pos != wantPos {
			t.Fatalf("queued at position %d, want %d", pos, wantPos)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Acquire neither queued nor returned")
	}
	return admitted
}

func admittedWithin(t *testing.T, ch <-chan func(), what string) func() {
	t.Helper()
	select {
	case release, ok := <-ch:
		if !ok {
			t.Fatalf("%s: Acquire failed", what)
		}
		return release
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: not admitted", what)
	}
	return nil
}

func notAdmitted(t *testing.T, ch <-chan func(), what string) {
	t.Helper()
	select {
	case <-ch:
		t.Fatalf("%s was admitted out of turn", what)
	default:
	}
}

func (a *Admission) counts() (running, queued int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.running, len(a.queue)
}

func TestAdmissionFIFO(t *testing.T) {
	ctx := context.Background()
	a := NewAdmission(2)
	calledBack := false
	r1, err := a.Acquire(ctx, func(int) { calledBack = true })
	if err != nil {
		t.Fatal(err)
	}
	r2, err := a.Acquire(ctx, func(int) { calledBack = true })
	if err != nil || calledBack {
		t.Fatalf("a free slot must admit at once without a queued callback (err %v)", err)
	}
	w1 := waitQueued(t, ctx, a, 1)
	w2 := waitQueued(t, ctx, a, 2)
	w3 := waitQueued(t, ctx, a, 3)
	if running, queued := a.counts(); running != 2 || queued != 3 {
		t.Fatalf("running %d queued %d", running, queued)
	}

	r1()
	g1 := admittedWithin(t, w1, "first waiter")
	notAdmitted(t, w2, "second waiter")
	// A newcomer does not jump the line even when it arrives as a slot is
	// handed over: it queues behind w2 and w3.
	w4 := waitQueued(t, ctx, a, 3)

	r2()
	g2 := admittedWithin(t, w2, "second waiter")
	notAdmitted(t, w3, "third waiter")
	g1()
	g3 := admittedWithin(t, w3, "third waiter")
	notAdmitted(t, w4, "fourth waiter")
	g2()
	g4 := admittedWithin(t, w4, "fourth waiter")
	g3()
	g4()
	if running, queued := a.counts(); running != 0 || queued != 0 {
		t.Fatalf("after all releases: running %d queued %d", running, queued)
	}
	// Slots are free again: admission is immediate.
	r, err := a.Acquire(ctx, func(int) { t.Fatal("queued with free slots") })
	if err != nil {
		t.Fatal(err)
	}
	r()
}

func TestAdmissionCancelWhileQueued(t *testing.T) {
	a := NewAdmission(1)
	hold, err := a.Acquire(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	cause := errors.New("parent run cancelled")
	ctx, cancel := context.WithCancelCause(context.Background())
	gone := make(chan error, 1)
	queued := make(chan int, 1)
	go func() {
		_, err := a.Acquire(ctx, func(pos int) { queued <- pos })
		gone <- err
	}()
	if pos := <-queued; pos != 1 {
		t.Fatalf("position %d", pos)
	}
	next := waitQueued(t, context.Background(), a, 2)
	cancel(cause)
	select {
	case err := <-gone:
		if !errors.Is(err, cause) {
			t.Fatalf("Acquire error = %v, want the context's cause", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a cancelled waiter kept waiting")
	}
	if running, queued := a.counts(); running != 1 || queued != 1 {
		t.Fatalf("after cancel: running %d queued %d (the cancelled waiter must leave the line)", running, queued)
	}
	// The slot goes to the waiter behind the cancelled one.
	hold()
	release := admittedWithin(t, next, "waiter behind the cancelled one")
	release()
	if running, queued := a.counts(); running != 0 || queued != 0 {
		t.Fatalf("end: running %d queued %d", running, queued)
	}

	// An already cancelled context never gets a slot when it has to wait.
	hold, _ = a.Acquire(context.Background(), nil)
	dead, stop := context.WithCancel(context.Background())
	stop()
	if _, err := a.Acquire(dead, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("dead context: %v", err)
	}
	hold()
	if running, queued := a.counts(); running != 0 || queued != 0 {
		t.Fatalf("dead context left running %d queued %d", running, queued)
	}
}

// TestAdmissionCancelRacesRelease cancels waiters at the moment slots are
// handed to them; whichever wins, no slot may leak or be handed out twice.
func TestAdmissionCancelRacesRelease(t *testing.T) {
	const limit, waiters = 3, 200
	a := NewAdmission(limit)
	var mu sync.Mutex
	inside, peak := 0, 0
	var wg sync.WaitGroup
	for i := range waiters {
		ctx, cancel := context.WithCancel(context.Background())
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 0 {
				go cancel()
			} else {
				defer cancel()
			}
			release, err := a.Acquire(ctx, nil)
			if err != nil {
				return
			}
			mu.Lock()
			inside++
			peak = max(peak, inside)
			mu.Unlock()
			mu.Lock()
			inside--
			mu.Unlock()
			release()
		}()
	}
	wg.Wait()
	if running, queued := a.counts(); running != 0 || queued != 0 {
		t.Fatalf("leaked: running %d queued %d", running, queued)
	}
	if peak > limit {
		t.Fatalf("%d ran at once with a limit of %d", peak, limit)
	}
}

func TestAdmissionLimitAtLeastOne(t *testing.T) {
	a := NewAdmission(0)
	r, err := a.Acquire(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	r()
}
