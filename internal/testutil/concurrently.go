package testutil

import (
	"sync"
	"time"
)

// Concurrently calls fn(0) … fn(n-1) at once, each on a goroutine of its
// own, and waits for all of them. took[i] is the time from the start to
// call i's return, errs[i] its error; wall is the time until the last
// returned.
func Concurrently(n int, fn func(i int) error) (took []time.Duration, errs []error, wall time.Duration) {
	took, errs = make([]time.Duration, n), make([]error, n)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn(i)
			took[i] = time.Since(start)
		}()
	}
	wg.Wait()
	return took, errs, time.Since(start)
}
