package router

import (
	"errors"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/runs"
	"github.com/switchboard-bot/switchboard/internal/redistest"
)

// TestRedeliveryHandledWhenTheClaimCouldNotBeGivenBack proves an event whose handling failed
// because Redis went away right after its claim — so that the claim could not be given back
// either — is not lost. Its redelivery to the same router takes the claim again and queues its
// one run; one to another router is refused (ErrEventPending, so the platform tries again) while
// the claim is pending, and handled once it expired. Either way one run is queued, and later
// redeliveries to both routers are duplicates.
func TestRedeliveryHandledWhenTheClaimCouldNotBeGivenBack(t *testing.T) {
	for _, c := range []struct {
		name  string
		fault func(*redistest.Faults)
	}{
		// The claim is taken, then Redis is gone: the enqueue and the release fail.
		{"redis gone after the claim", func(f *redistest.Faults) { f.DownAfter("set") }},
		// The claim is taken but its reply is lost: intake fails, not knowing it holds it.
		{"the claim's reply lost", func(f *redistest.Faults) { f.LoseReplyOf("set") }},
	} {
		for _, sameRouter := range []bool{true, false} {
			name := c.name + "/redelivered to another router"
			if sameRouter {
				name = c.name + "/redelivered to the same router"
			}
			t.Run(name, func(t *testing.T) { testClaimNotGivenBack(t, c.fault, sameRouter) })
		}
	}
}

func testClaimNotGivenBack(t *testing.T, fault func(*redistest.Faults), sameRouter bool) {
	h := newRedisHarness(t, func(o *Options, _ *runs.Options) { o.PendingTTL = 300 * time.Millisecond })
	faults := &redistest.Faults{}
	h.redis.client.AddHook(faults)
	conv := dm("c1")
	in := channels.Inbound{EventID: "update:41", Conv: conv, Identity: user("u1"), Text: "hello", Direct: true}

	fault(faults)
	if err := h.router.HandleInbound(h.ctx, h.ch, in); err == nil {
		t.Fatal("handling succeeded with Redis failing")
	}
	faults.Heal()
	other, err := New(h.router.opt)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.HandleInbound(h.ctx, h.ch, in); !errors.Is(err, ErrEventPending) {
		t.Fatalf("another router's redelivery while the claim is pending: %v, want ErrEventPending", err)
	}
	if sameRouter {
		h.send(in) // takes its claim again
	} else {
		waitFor(t, "the other router to take the redelivery once the claim expired", func() bool {
			return other.HandleInbound(h.ctx, h.ch, in) == nil
		})
	}
	if n := h.queued(conv); n != 1 {
		t.Fatalf("%d runs queued after the redelivery, want 1", n)
	}
	h.send(in)
	if err := other.HandleInbound(h.ctx, h.ch, in); err != nil {
		t.Fatalf("a later redelivery to the other router: %v", err)
	}
	if n := h.queued(conv); n != 1 {
		t.Errorf("%d runs queued after more redeliveries, want still 1", n)
	}
}

// TestRedeliveryAfterALostEnqueueReplyRunsOnce proves an event whose run reached its mailbox
// although the router saw the enqueue fail (Redis applied it, the reply was lost) is not run
// twice: the claim is given back, and the redelivery finds the run's mark and queues nothing.
func TestRedeliveryAfterALostEnqueueReplyRunsOnce(t *testing.T) {
	h := newRedisHarness(t)
	faults := &redistest.Faults{}
	h.redis.client.AddHook(faults)
	conv := dm("c2")
	in := channels.Inbound{EventID: "update:42", Conv: conv, Identity: user("u1"), Text: "hello", Direct: true}

	faults.LoseReplyOf("evalsha") // the first script after the claim: the enqueue's first step
	if err := h.router.HandleInbound(h.ctx, h.ch, in); err == nil {
		t.Fatal("handling succeeded although the enqueue's reply was lost")
	}
	if n := h.queued(conv); n != 1 {
		t.Fatalf("%d runs in the mailbox after the lost reply, want the 1 Redis applied", n)
	}
	h.send(in)
	h.send(in)
	if n := h.queued(conv); n != 1 {
		t.Errorf("%d runs queued after redeliveries, want 1", n)
	}
	if n := h.metrics.Get("dedupe/test"); n != 2 {
		t.Errorf("dedupe hits = %d, want 2", n)
	}
}

// TestCommandClaimCompleted proves an event handled without a run (a command) completes its
// claim, so a redelivery is a duplicate rather than refused as pending.
func TestCommandClaimCompleted(t *testing.T) {
	h := newHarness(t)
	in := channels.Inbound{EventID: "update:43", Conv: dm("c3"), Identity: user("u1"), Text: "/help", Direct: true}
	h.send(in)
	h.send(in)
	if n := h.metrics.Get("dedupe/test"); n != 1 {
		t.Errorf("dedupe hits = %d, want 1", n)
	}
	if n := len(h.ch.Sent()); n != 1 {
		t.Errorf("%d replies to a command delivered twice, want 1", n)
	}
}
