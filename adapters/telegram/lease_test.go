package telegram

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels/kit"
	telegramfake "github.com/switchboard-bot/switchboard/internal/fake/telegram"
)

// TestLeasedPollingOneChannelPollsAndTheOtherTakesOver: two channels of one bot sharing a lease
// and an offset store — two processes on one Redis — poll one at a time: the fake never sees two
// getUpdates at once, the standby is ready, and when the poller stops the standby polls on from
// the saved offset, every update handed over exactly once.
func TestLeasedPollingOneChannelPollsAndTheOtherTakesOver(t *testing.T) {
	fake := telegramfake.New(t)
	lease, store := &kit.MemoryLease{}, &MemoryOffsets{}
	var pollingMu sync.Mutex
	polling := map[string]bool{}
	mk := func(owner string) (*Channel, *recorder) {
		ch, _ := newChannel(t, fake, func(c *Config) {
			c.Lease, c.LeaseOwner, c.LeaseTTL, c.Offsets = lease, owner, time.Second, store
			c.OnLease = func(on bool) {
				pollingMu.Lock()
				polling[owner] = on
				pollingMu.Unlock()
			}
		})
		rec := &recorder{}
		if err := ch.Start(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ch.Stop(context.Background()) })
		return ch, rec
	}
	a, recA := mk("a")
	eventually(t, "a to poll", func() bool { return a.poller.leading.Load() })
	b, recB := mk("b")
	seen := map[string]int{}
	count := func() {
		for _, r := range []*recorder{recA, recB} {
			for _, in := range r.got() {
				seen[in.EventID]++
			}
		}
	}
	var pushed []int64
	push := func(n int) {
		for i := range n {
			id, _ := fake.PushPrivate(ann, "m"+strconv.Itoa(len(pushed)+i))
			pushed = append(pushed, id)
		}
	}
	push(5)
	eventually(t, "a to take the first five", func() bool { return len(recA.got()) == 5 })
	if b.poller.leading.Load() || len(recB.got()) != 0 {
		t.Fatalf("the standby polls (leading %v, handed %d updates)", b.poller.leading.Load(), len(recB.got()))
	}
	if err := b.Ready(); err != nil {
		t.Fatalf("the standby is not ready: %v", err)
	}
	if err := a.Ready(); err != nil {
		t.Fatalf("the poller is not ready: %v", err)
	}
	if err := a.StopIntake(context.Background()); err != nil {
		t.Fatal(err)
	}
	if h := lease.Holder("telegram:" + strconv.FormatInt(telegramfake.BotID, 10)); h == "a" {
		t.Fatal("StopIntake left the lease held")
	}
	push(4)
	eventually(t, "b to take over and take the next four", func() bool { return len(recB.got()) == 4 })
	count()
	for _, id := range pushed {
		if n := seen[eventID(id)]; n != 1 {
			t.Errorf("update %d handed over %d times, want once", id, n)
		}
	}
	if n := fake.Conflicts(); n != 0 {
		t.Errorf("%d getUpdates calls ended in 409 Conflict: two channels polled at once", n)
	}
	pollingMu.Lock()
	defer pollingMu.Unlock()
	if polling["a"] || !polling["b"] {
		t.Errorf("OnLease reported %v, want b polling and a not", polling)
	}
}

// TestConflictIsLoggedOnceAndBackedOff: getUpdates answered 409 Conflict (another process polls
// the bot) is logged once, with what to do, and polled again only after a pause growing from 1 s
// — not in a hot loop; once the conflict ends polling recovers.
func TestConflictIsLoggedOnceAndBackedOff(t *testing.T) {
	fake := telegramfake.New(t)
	const conflicts = 4
	fake.FailNext("getUpdates", conflicts, telegramfake.Fault{Status: 409,
		Description: "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"})
	ch, logs := newChannel(t, fake, nil)
	var mu sync.Mutex
	var waits []time.Duration
	ch.clock.Sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		waits = append(waits, d)
		mu.Unlock()
		return ctx.Err()
	}
	rec := &recorder{}
	if err := ch.Start(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	defer ch.Stop(context.Background())
	fake.PushPrivate(ann, "after the conflict")
	eventually(t, "the update after the conflict", func() bool { return len(rec.got()) == 1 })
	mu.Lock()
	got := append([]time.Duration(nil), waits...)
	mu.Unlock()
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}
	if len(got) != len(want) {
		t.Fatalf("paused %v after %d conflicts, want %v", got, conflicts, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("paused %v after %d conflicts, want %v", got, conflicts, want)
		}
	}
	if n := strings.Count(logs.String(), "getUpdates answered 409 Conflict"); n != 1 {
		t.Errorf("the conflict was logged %d times, want once:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "polling lease") || !strings.Contains(logs.String(), "polling recovered") {
		t.Errorf("the log does not say what to do and that polling recovered:\n%s", logs.String())
	}
	if got := conflictWait(20); got != 30*time.Second {
		t.Errorf("conflictWait(20) = %v, want the 30 s cap", got)
	}
}
