// Package poll waits, in tests, for a condition that another goroutine makes true — the one
// place the suite polls, so no test synchronizes with a bare sleep.
package poll

import (
	"testing"
	"time"
)

// Deadline is how long Until waits before failing the test.
const Deadline = 20 * time.Second

// Until checks cond every millisecond until it holds, and fails the test (naming what it waited
// for) if it does not within Deadline.
func Until(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	if cond() {
		return
	}
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(Deadline)
	defer deadline.Stop()
	for {
		select {
		case <-tick.C:
			if cond() {
				return
			}
		case <-deadline.C:
			tb.Fatalf("timed out after %s waiting for %s", Deadline, what)
		}
	}
}
