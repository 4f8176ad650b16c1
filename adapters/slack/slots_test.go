package slack

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels/kit"
	"github.com/switchboard-bot/switchboard/internal/chantest"
	slackfake "github.com/switchboard-bot/switchboard/internal/fake/slack"
	"github.com/switchboard-bot/switchboard/internal/leasetest"
)

// The tests of issue 14's "many processes, one Redis" for Slack's Socket Mode connection
// budget, in process: Channels on one lease open at most Connections sockets together, split
// the slots, and take a dead one's over.

func sharedSlots(lease kit.Lease, owner string, connections int) func(*Config) {
	return func(c *Config) {
		c.Connections, c.Lease, c.LeaseOwner, c.LeaseTTL = connections, lease, owner, 600*time.Millisecond
	}
}

// TestProcessesShareTheSocketBudget proves processes on one lease never open more sockets
// together than the budget: two processes with a budget of two hold one each, a third holds
// none and is still ready, and every event reaches exactly one of them.
func TestProcessesShareTheSocketBudget(t *testing.T) {
	fake := slackfake.New(t)
	fake.SetPingInterval(100 * time.Millisecond)
	mem := &kit.MemoryLease{}
	a := startWith(t, fake, sharedSlots(mem, "a", 2), &recorder{})
	eventually(t, "a to open both sockets", func() bool { return a.ch.sockets.held() == 2 && fake.Connections() == 2 })
	b := startWith(t, fake, sharedSlots(mem, "b", 2), &recorder{})
	eventually(t, "one socket each", func() bool { return a.ch.sockets.held() == 1 && b.ch.sockets.held() == 1 && fake.Connections() == 2 })
	c := startWith(t, fake, sharedSlots(mem, "c", 2), &recorder{})
	if c.ch.sockets.held() != 0 {
		t.Errorf("a third process opened %d sockets over a budget of 2", c.ch.sockets.held())
	}
	if err := c.ch.Ready(); err != nil {
		t.Errorf("the process without a socket is not ready: %v", err)
	}
	for range 6 {
		fake.PushMessage(slackfake.Msg{Channel: "D0ANN", ChannelType: "im", User: ann, Text: "hi"})
	}
	eventually(t, "six events", func() bool { return len(a.rec.got())+len(b.rec.got())+len(c.rec.got()) == 6 })
	if n := len(c.rec.got()); n != 0 {
		t.Errorf("the process without a socket received %d events", n)
	}
	if n := fake.PeakConnections(); n > 2 {
		t.Errorf("%d sockets were open at once, over the budget of 2", n)
	}
	eventually(t, "every envelope acknowledged", func() bool { return fake.Unacked() == 0 })
}

// TestDeadProcessSocketSlotsTakenOver proves a process cut off without handing back closes its
// socket at its first failed renewal (before its lease can pass on), and that the survivor
// takes its slot over once the lease expires: the budget is never exceeded and events keep
// arriving.
func TestDeadProcessSocketSlotsTakenOver(t *testing.T) {
	fake := slackfake.New(t)
	fake.SetPingInterval(100 * time.Millisecond)
	mem := &kit.MemoryLease{}
	dying := &leasetest.Severable{M: mem}
	a := startWith(t, fake, sharedSlots(dying, "a", 2), &recorder{})
	eventually(t, "a to open both sockets", func() bool { return a.ch.sockets.held() == 2 })
	b := startWith(t, fake, sharedSlots(mem, "b", 2), &recorder{})
	eventually(t, "one socket each", func() bool { return a.ch.sockets.held() == 1 && b.ch.sockets.held() == 1 })
	cut := time.Now()
	dying.Sever()
	eventually(t, "a to close its socket", func() bool { return a.ch.sockets.held() == 0 })
	eventually(t, "b to hold both slots", func() bool { return b.ch.sockets.held() == 2 && fake.Connections() == 2 })
	t.Logf("slot taken over %v after the cut (lease %v)", time.Since(cut).Round(time.Millisecond), 600*time.Millisecond)
	for range 4 {
		fake.PushMessage(slackfake.Msg{Channel: "D0ANN", ChannelType: "im", User: ann, Text: "still there?"})
	}
	eventually(t, "four events on b", func() bool { return len(b.rec.got()) == 4 })
	if n := fake.PeakConnections(); n > 2 {
		t.Errorf("%d sockets were open at once, over the budget of 2", n)
	}
}

// TestStoppedProcessHandsItsSlotsBack proves Stop gives the slots back at once: the other
// process opens them within a round, not a lease expiry.
func TestStoppedProcessHandsItsSlotsBack(t *testing.T) {
	fake := slackfake.New(t)
	fake.SetPingInterval(100 * time.Millisecond)
	mem := &kit.MemoryLease{}
	ttl := 5 * time.Second
	long := func(c *Config) { c.Connections, c.Lease, c.LeaseTTL = 2, mem, ttl }
	a := startWith(t, fake, func(c *Config) { long(c); c.LeaseOwner = "a" }, &recorder{})
	b := startWith(t, fake, func(c *Config) { long(c); c.LeaseOwner = "b" }, &recorder{})
	eventually(t, "one socket each", func() bool { return a.ch.sockets.held() == 1 && b.ch.sockets.held() == 1 })
	began := time.Now()
	if err := a.ch.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "b to hold both slots", func() bool { return b.ch.sockets.held() == 2 })
	if took := time.Since(began); took > ttl/2 {
		t.Errorf("b took the slot over %v after the stop, want within a round (%v)", took, ttl/5)
	}
	if n := fake.PeakConnections(); n > 2 {
		t.Errorf("%d sockets were open at once, over the budget of 2", n)
	}
}

// TestReadyWhileSlotsChangeHands proves Ready reads the sockets a process holds safely while
// their slots change hands: Ready is asked without pause on both processes while, three times,
// a hands a slot over to a new process b and takes it back when b stops. Run with -race, a read
// of the sockets outside the lock they are changed under fails the test (and before the fix,
// Ready could meet a socket the hand-over had just cleared, and panic).
func TestReadyWhileSlotsChangeHands(t *testing.T) {
	fake := slackfake.New(t)
	fake.SetPingInterval(100 * time.Millisecond)
	mem := &kit.MemoryLease{}
	a := startWith(t, fake, sharedSlots(mem, "a", 2), &recorder{})
	eventually(t, "a to open both sockets", func() bool { return a.ch.sockets.held() == 2 })
	chantest.AskReady(t, a.ch)
	for round := range 3 {
		b := startWith(t, fake, sharedSlots(mem, "b"+strconv.Itoa(round), 2), &recorder{})
		chantest.AskReady(t, b.ch)
		eventually(t, "one socket each", func() bool { return a.ch.sockets.held() == 1 && b.ch.sockets.held() == 1 })
		if err := b.ch.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		eventually(t, "a to hold both slots again", func() bool { return a.ch.sockets.held() == 2 })
	}
}
