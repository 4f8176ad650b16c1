package slack

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/kit"
	"github.com/switchboard-bot/switchboard/core/conv"
	slackfake "github.com/switchboard-bot/switchboard/internal/fake/slack"
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
	if n := l.buckets.Len(); n != 1001 {
		t.Fatalf("%d buckets, want 1001", n)
	}
	later := now.Add(kit.PacerSweepEvery)
	w := l.reserve("TBUSY", "chat.update", later)
	if n := l.buckets.Len(); n != 1 {
		t.Fatalf("after a minute: %d buckets, want only the busy workspace's", n)
	}
	if w != 0 {
		t.Errorf("the busy workspace waited %s a minute later", w)
	}
	if w := l.reserve("T0", "chat.update", later); w != 0 {
		t.Errorf("a dropped workspace waited %s", w)
	}
}

// fakeClock is a clock that moves only when the adapter sleeps on it; it records the waits per
// workspace named by at.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	at    string
	waits map[string][]time.Duration
}

func useFakeClock(ch *Channel) *fakeClock {
	c := &fakeClock{now: time.Unix(1_700_000_000, 0), waits: map[string][]time.Duration{}}
	ch.clock.Now = func() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
	ch.clock.Sleep = func(ctx context.Context, d time.Duration) error {
		c.mu.Lock()
		c.now = c.now.Add(d)
		c.waits[c.at] = append(c.waits[c.at], d)
		c.mu.Unlock()
		return ctx.Err()
	}
	return c
}

func (c *fakeClock) in(team string) { c.mu.Lock(); c.at = team; c.mu.Unlock() }

func (c *fakeClock) waited(team string) []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits[team]...)
}

const otherTeam = "T0OTHER"

// sendIn posts a message in chat of workspace and returns its ref.
func sendIn(t *testing.T, h *harness, workspace, chat string) channels.MessageRef {
	t.Helper()
	ref, err := h.ch.Send(context.Background(), channels.Target{Conv: conv.Key{Platform: "slack", Workspace: workspace, Chat: chat}},
		channels.Message{Text: "v0"})
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// TestTierBudgetSpreadsEditsPerWorkspace proves a burst of chat.update (Tier 3) in one
// workspace is spread to the tier's rate — its burst of 10 at once, then one every 1.2 s — while
// another workspace editing at the same time never waits, and that nothing is dropped.
func TestTierBudgetSpreadsEditsPerWorkspace(t *testing.T) {
	h := start(t, func(c *Config) { c.Pacing = true })
	clock := useFakeClock(h.ch)
	busy, other := sendIn(t, h, slackfake.TeamID, "C1"), sendIn(t, h, otherTeam, "C2")
	ctx := context.Background()
	for i := range 15 {
		clock.in(slackfake.TeamID)
		if _, err := h.ch.Edit(ctx, busy, channels.Message{Text: "busy " + strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
		if i < 10 {
			clock.in(otherTeam)
			if _, err := h.ch.Edit(ctx, other, channels.Message{Text: "other " + strconv.Itoa(i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := []time.Duration{1200 * time.Millisecond, 1200 * time.Millisecond, 1200 * time.Millisecond, 1200 * time.Millisecond, 1200 * time.Millisecond}
	if got := clock.waited(slackfake.TeamID); !slices.Equal(got, want) {
		t.Errorf("the busy workspace waited %v, want %v (10 at once, then 50 a minute)", got, want)
	}
	if got := clock.waited(otherTeam); len(got) != 0 {
		t.Errorf("the other workspace waited %v", got)
	}
	if n := h.fake.Count("chat.update"); n != 25 {
		t.Errorf("chat.update called %d times, want every edit made (25)", n)
	}
	if got := h.fake.Posted("C1")[0].Text; got != "busy 14" {
		t.Errorf("the busy message shows %q", got)
	}
}

// TestTierBudgetPausedByRetryAfter proves a 429 on chat.update pauses the workspace's Tier 3
// budget for the Retry-After: the next Tier 3 call (chat.delete) waits it out before it is
// made, while another workspace's edits go at once.
func TestTierBudgetPausedByRetryAfter(t *testing.T) {
	h := start(t, func(c *Config) { c.Pacing = true; c.MaxRetryWait = time.Second })
	clock := useFakeClock(h.ch)
	busy, other := sendIn(t, h, slackfake.TeamID, "C1"), sendIn(t, h, otherTeam, "C2")
	ctx := context.Background()
	h.fake.RateLimit("chat.update", 1, 30)
	clock.in(slackfake.TeamID)
	var rl *channels.RateLimitError
	if _, err := h.ch.Edit(ctx, busy, channels.Message{Text: "v1"}); !errors.As(err, &rl) {
		t.Fatalf("an edit meeting a 30 s storm with MaxRetryWait 1 s: %v, want a RateLimitError", err)
	}
	clock.in(otherTeam)
	if _, err := h.ch.Edit(ctx, other, channels.Message{Text: "v1"}); err != nil {
		t.Fatal(err)
	}
	clock.in(slackfake.TeamID)
	if err := h.ch.Delete(ctx, busy); err != nil {
		t.Fatal(err)
	}
	if got := clock.waited(slackfake.TeamID); !slices.Equal(got, []time.Duration{30 * time.Second}) {
		t.Errorf("the paused workspace waited %v, want the Retry-After (30s)", got)
	}
	if got := clock.waited(otherTeam); len(got) != 0 {
		t.Errorf("the other workspace waited %v", got)
	}
	if n := h.fake.Count("chat.delete"); n != 1 {
		t.Errorf("chat.delete called %d times, want 1", n)
	}
}

// editBurst posts a message in C1 and edits it 10 times: chat.update's tier budget is then
// spent, so the next edit waits.
func editBurst(t *testing.T, h *harness) channels.MessageRef {
	t.Helper()
	ref := sendIn(t, h, slackfake.TeamID, "C1")
	for range 10 {
		if _, err := h.ch.Edit(context.Background(), ref, channels.Message{Text: "early"}); err != nil {
			t.Fatal(err)
		}
	}
	return ref
}

// TestTierWaitGivesWayToNewerEdit proves edits waiting for the tier's budget coalesce as those
// waiting out a 429 do: a newer edit of the same message makes the waiting one give up without
// a call, so edits are not queued one by one.
func TestTierWaitGivesWayToNewerEdit(t *testing.T) {
	h := start(t, func(c *Config) { c.Pacing = true })
	ref := editBurst(t, h)
	ctx := context.Background()
	waiting, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	h.ch.clock.Sleep = func(ctx context.Context, d time.Duration) error {
		first := false
		once.Do(func() { first = true })
		if first {
			close(waiting)
			<-release
		}
		return ctx.Err()
	}
	done := make(chan error, 1)
	go func() {
		_, err := h.ch.Edit(ctx, ref, channels.Message{Text: "stale"})
		done <- err
	}()
	receive(t, waiting, "the call to wait for its tier's budget")
	if _, err := h.ch.Edit(ctx, ref, channels.Message{Text: "latest"}); err != nil {
		t.Fatalf("the newer edit: %v", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("the superseded edit: %v, want nil", err)
	}
	if got := h.fake.Posted("C1")[0].Text; got != "latest" {
		t.Fatalf("the message shows %q, want the latest edit", got)
	}
	if n := h.fake.Count("chat.update"); n != 11 {
		t.Fatalf("chat.update called %d times, want 11 (the burst and the latest)", n)
	}
}

// TestTierWaitEndsWithContext proves a call waiting for its tier's budget gives up when its
// context ends, without calling Slack.
func TestTierWaitEndsWithContext(t *testing.T) {
	h := start(t, func(c *Config) { c.Pacing = true })
	ref := editBurst(t, h)
	ctx, cancel := context.WithCancel(context.Background())
	waiting := make(chan struct{})
	h.ch.clock.Sleep = func(ctx context.Context, d time.Duration) error {
		close(waiting)
		<-ctx.Done()
		return ctx.Err()
	}
	done := make(chan error, 1)
	go func() {
		_, err := h.ch.Edit(ctx, ref, channels.Message{Text: "never"})
		done <- err
	}()
	receive(t, waiting, "the call to wait for its tier's budget")
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("an edit whose context ended while waiting: %v, want context.Canceled", err)
	}
	if n := h.fake.Count("chat.update"); n != 10 {
		t.Fatalf("chat.update called %d times, want 10 (none after the cancel)", n)
	}
}

// receive waits for c to be closed, failing the test after 10 s.
func receive(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}
