// Package fakeclock is a clock that tests move by hand. It has no
// dependencies, so that the internal tests of any package can use it.
package fakeclock

import (
	"sync"
	"time"
)

// Clock is a fake clock, safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// New returns a clock that reads t until it is advanced.
func New(t time.Time) *Clock {
	return &Clock{t: t}
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
