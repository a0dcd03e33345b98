package main

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// maxErrors stops a loop that keeps failing: the figures would be meaningless
// and the cause is better read from the first error.
const maxErrors = 100

// loopResult is a measured loop's figures and its first error, if any.
type loopResult struct {
	stats
	firstErr error
}

// loop runs fn for i = 0..n-1 on workers goroutines, timing each call. It
// stops at n calls, at the time cap, when ctx ends, or after maxErrors
// failures. Calls are handed out in order, so with one worker the loop is
// strictly sequential.
func loop(ctx context.Context, workers, n int, limit time.Duration, fn func(ctx context.Context, i int) error) loopResult {
	return loopTimed(ctx, workers, n, limit, func(ctx context.Context, i int) (time.Duration, error) {
		t0 := time.Now()
		err := fn(ctx, i)
		return time.Since(t0), err
	})
}

// loopTimed is loop for calls that time themselves: fn returns the latency
// to record, so that unmeasured set-up and checks can share the call (the
// wall time and the rate still include them).
func loopTimed(ctx context.Context, workers, n int, limit time.Duration, fn func(ctx context.Context, i int) (time.Duration, error)) loopResult {
	var (
		next     atomic.Int64
		nErr     atomic.Int64
		capped   atomic.Bool
		errOnce  sync.Once
		firstErr error
		wg       sync.WaitGroup
	)
	lats := make([][]time.Duration, workers)
	start := time.Now()
	deadline := start.Add(limit)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := make([]time.Duration, 0, min(n/workers+1, 1<<16))
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil || nErr.Load() >= maxErrors {
					break
				}
				if time.Now().After(deadline) {
					capped.Store(true)
					break
				}
				d, err := fn(ctx, i)
				if err != nil {
					nErr.Add(1)
					errOnce.Do(func() { firstErr = err })
					continue
				}
				mine = append(mine, d)
			}
			lats[w] = mine
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	if firstErr == nil && ctx.Err() != nil {
		firstErr = ctx.Err()
	}
	return loopResult{stats: summarize(all, int(nErr.Load()), wall, capped.Load()), firstErr: firstErr}
}
