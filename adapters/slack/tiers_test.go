package slack

import (
	"strconv"
	"testing"
	"time"
)

// TestTierLimiterBurstThenTierRate proves each tier allows its burst at once and then its
// per-minute rate, and that methods no tier budgets never wait.
func TestTierLimiterBurstThenTierRate(t *testing.T) {
	for _, tc := range []struct {
		method string
		burst  int
		every  time.Duration
	}{
		{"chat.stopStream", 4, 3 * time.Second},                      // Tier 2: 20 a minute
		{"chat.update", 10, 1200 * time.Millisecond},                 // Tier 3: 50 a minute
		{"views.open", 20, 600 * time.Millisecond},                   // Tier 4: 100 a minute
		{"files.completeUploadExternal", 20, 600 * time.Millisecond}, // Tier 4
		{"chat.postMessage", 0, 0},                                   // special: paced per channel
		{methodUpload, 0, 0},                                         // no Web API method
	} {
		t.Run(tc.method, func(t *testing.T) {
			l := newTierLimiter()
			now := time.Unix(1000, 0)
			for i := range tc.burst + 3 {
				want := time.Duration(0)
				if tc.burst > 0 && i >= tc.burst {
					want = time.Duration(i-tc.burst+1) * tc.every
				}
				if got := l.reserve("T1", tc.method, now); got != want {
					t.Fatalf("call %d waits %s, want %s", i, got, want)
				}
			}
		})
	}
}

// TestTierLimiterSteadyRate proves callers that wait what they are told make calls at the
// tier's rate: 50 chat.update a minute past the burst.
func TestTierLimiterSteadyRate(t *testing.T) {
	l := newTierLimiter()
	now := time.Unix(1000, 0)
	start := now
	calls := 0
	for now.Sub(start) < 2*time.Minute {
		now = now.Add(l.reserve("T1", "chat.update", now))
		calls++
	}
	// The burst of 10, then 50 a minute for two minutes (the last one at 2:00 exactly).
	if calls != 10+2*50 {
		t.Fatalf("%d calls in two minutes, want %d", calls, 10+2*50)
	}
}

// TestTierLimiterSeparatesTeamsAndTiers proves one workspace's spent budget holds up neither
// another workspace nor another tier of its own, while methods of one tier share it.
func TestTierLimiterSeparatesTeamsAndTiers(t *testing.T) {
	l := newTierLimiter()
	now := time.Unix(1000, 0)
	for range 10 {
		l.reserve("T1", "chat.update", now)
	}
	if w := l.reserve("T1", "chat.delete", now); w == 0 {
		t.Error("chat.delete (Tier 3) did not wait after T1's Tier 3 burst")
	}
	if w := l.reserve("T2", "chat.update", now); w != 0 {
		t.Errorf("another workspace waited %s", w)
	}
	if w := l.reserve("T1", "views.open", now); w != 0 {
		t.Errorf("another tier waited %s", w)
	}
}

// TestTierLimiterPausesForRetryAfter proves a 429 holds the method's tier in that workspace
// until its Retry-After, then lets calls go one per interval (no burst straight after), and
// holds neither other workspaces nor other tiers.
func TestTierLimiterPausesForRetryAfter(t *testing.T) {
	l := newTierLimiter()
	now := time.Unix(1000, 0)
	l.pause("T1", "chat.update", now.Add(30*time.Second))
	if w := l.reserve("T1", "chat.update", now); w != 30*time.Second {
		t.Fatalf("after a 429 with Retry-After 30s: wait %s", w)
	}
	if w := l.reserve("T1", "chat.delete", now); w != 30*time.Second+1200*time.Millisecond {
		t.Fatalf("the next Tier 3 call: wait %s, want the pause and one interval", w)
	}
	if w := l.reserve("T2", "chat.update", now); w != 0 {
		t.Errorf("another workspace waited %s", w)
	}
	if w := l.reserve("T1", "chat.appendStream", now); w != 0 {
		t.Errorf("another tier waited %s", w)
	}
	// A shorter pause never shortens a longer one.
	l.pause("T1", "chat.update", now.Add(time.Second))
	if w := l.reserve("T1", "chat.update", now); w <= 30*time.Second {
		t.Errorf("a shorter pause cut the wait to %s", w)
	}
	// Methods no tier budgets are never paused.
	l.pause("T1", "chat.postMessage", now.Add(time.Hour))
	if w := l.reserve("T1", "chat.postMessage", now); w != 0 {
		t.Errorf("chat.postMessage waited %s", w)
	}
}

// TestTierLimiterDropsIdleBuckets proves memory follows the active workspaces: buckets that are
// full again are dropped at the next sweep, and a dropped bucket behaves as a fresh one.
func TestTierLimiterDropsIdleBuckets(t *testing.T) {
	l := newTierLimiter()
	now := time.Unix(1000, 0)
	for i := range 1000 {
		l.reserve("T"+strconv.Itoa(i), "chat.update", now)
	}
	for range 15 {
		l.reserve("TBUSY", "chat.update", now)
	}
	if n := len(l.tat); n != 1001 {
		t.Fatalf("%d buckets, want 1001", n)
	}
	later := now.Add(tierSweepEvery)
	w := l.reserve("TBUSY", "chat.update", later)
	if n := len(l.tat); n != 1 {
		t.Fatalf("after a minute: %d buckets, want only the busy workspace's", n)
	}
	if w != 0 {
		t.Errorf("the busy workspace waited %s a minute later", w)
	}
	if w := l.reserve("T0", "chat.update", later); w != 0 {
		t.Errorf("a dropped workspace waited %s", w)
	}
}
