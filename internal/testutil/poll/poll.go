// Package poll is how tests wait: poll a condition until a deadline, never
// a fixed sleep. It imports only the standard library, so in-package tests
// of any package (storage's included, which testutil imports) may use it.
package poll

import (
	"testing"
	"time"
)

// Eventually polls cond until it returns true or the deadline passes, then
// fails the test with msg.
func Eventually(t testing.TB, within time.Duration, msg string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for wait := time.Millisecond; ; wait = min(wait*2, 20*time.Millisecond) {
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", within, msg)
		}
		time.Sleep(wait)
	}
}
