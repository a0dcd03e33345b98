package testutil

import (
	"testing"
	"time"

	"agentserver/internal/testutil/poll"
)

// Eventually polls cond until it returns true or the deadline passes, then
// fails the test with msg. It is how tests wait: never a fixed sleep.
func Eventually(t testing.TB, within time.Duration, msg string, cond func() bool) {
	t.Helper()
	poll.Eventually(t, within, msg, cond)
}
