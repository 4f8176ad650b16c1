package delivery

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/runs"
	"github.com/switchboard-bot/switchboard/core/threads"
	"github.com/switchboard-bot/switchboard/internal/redistest"
)

// crashAfterSend is a channel whose sends reach the platform and after which the process
// "dies" as far as Redis is concerned: every Redis call fails from then on (until heal), so the
// send's record is never written — what a kill -9 in the instant after the send leaves behind.
type crashAfterSend struct {
	*fakeChannel
	faults *redistest.Faults
}

func (c crashAfterSend) Send(ctx context.Context, to channels.Target, m channels.Message) (channels.MessageRef, error) {
	ref, err := c.fakeChannel.Send(ctx, to, m)
	c.faults.DownFor(1 << 20)
	return ref, err
}

// keyedChannel is a fake with idempotent keyed sends (as Discord's nonce): a Send with a key
// already posted returns that message.
type keyedChannel struct {
	*fakeChannel
	byKey map[string]channels.MessageRef
}

func (k keyedChannel) KeyWindow() time.Duration { return time.Minute }

func (k keyedChannel) Send(ctx context.Context, to channels.Target, m channels.Message) (channels.MessageRef, error) {
	if ref, ok := k.byKey[m.Key]; ok && m.Key != "" {
		return ref, nil
	}
	ref, err := k.fakeChannel.Send(ctx, to, m)
	if err == nil && m.Key != "" {
		k.byKey[m.Key] = ref
	}
	return ref, err
}

// intentHarness is a delivery harness whose Redis client can be failed (faults).
func intentHarness(t *testing.T) (*deliveryHarness, *redistest.Faults) {
	t.Helper()
	c := realRedis(t)
	faults := &redistest.Faults{}
	c.AddHook(faults)
	return &deliveryHarness{t: t, ctx: ctxT(t), store: threads.New(c, threads.Options{Prefix: uniquePrefix(t, c)}).Records(),
		ch: newFakeChannel("test"), metrics: newCountMetrics()}, faults
}

// TestReplayAfterACrashBetweenSendAndRecordCountsOnePossibleDouble proves the write-ahead
// intent (issue 14, point 2): an attempt that posts a run's closing message and dies before
// recording it leaves the intent behind, so the replay that posts it again counts exactly one
// possible double (outbound errors of kind "possible_double"); the same for the placeholder.
func TestReplayAfterACrashBetweenSendAndRecordCountsOnePossibleDouble(t *testing.T) {
	cases := []struct {
		name  string
		first []runs.Event // attempt 1, which crashes after its first send
		again []runs.Event // attempt 2, in another process
		sends int          // messages posted in all
	}{
		{"closing message", []runs.Event{final("", "the answer")}, []runs.Event{started(""), final("", "the answer")}, 2},
		{"placeholder, then answered", []runs.Event{started(""), final("", "the answer")}, []runs.Event{started(""), final("", "the answer")}, 2},
		{"placeholder", []runs.Event{started("")}, []runs.Event{started(""), final("", "the answer")}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, faults := intentHarness(t)
			run := runs.NewRunID()
			d1 := h.delivery(crashAfterSend{h.ch, faults}, func(o *Options) { o.MaxRetryWait = 100 * time.Millisecond })
			h.deliver(d1, attempt(1, "7", withRun(run, tc.first)...)...)
			faults.DownFor(0)
			h.deliver(h.delivery(h.ch), attempt(2, "7", withRun(run, tc.again)...)...)
			if s := h.ch.Sent(); len(s) != tc.sends {
				t.Errorf("posted %d messages, want %d (the crashed attempt's send is posted again)", len(s), tc.sends)
			}
			if n := h.metrics.Get("outbound/" + deliveryConv.Platform + "/possible_double"); n != 1 {
				t.Errorf("possible doubles counted %d, want 1", n)
			}
		})
	}
}

// TestReplayWithoutIntentCountsNoDouble proves a replay counts no possible double where no
// earlier attempt got as far as intending the send: one that died before it, one whose send
// was recorded (the replay edits or skips), one on a first attempt.
func TestReplayWithoutIntentCountsNoDouble(t *testing.T) {
	cases := []struct {
		name  string
		first []runs.Event
		again []runs.Event
		sends int
	}{
		{"died before any send", nil, []runs.Event{final("", "the answer")}, 1},
		{"placeholder recorded", []runs.Event{started("")}, []runs.Event{started(""), final("", "the answer")}, 1},
		{"answer recorded", []runs.Event{final("", "the answer")}, []runs.Event{final("", "the answer")}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := intentHarness(t)
			run := runs.NewRunID()
			if tc.first != nil {
				h.deliver(h.delivery(h.ch), attempt(1, "7", withRun(run, tc.first)...)...)
			}
			h.deliver(h.delivery(h.ch), attempt(2, "7", withRun(run, tc.again)...)...)
			if s := h.ch.Sent(); len(s) != tc.sends {
				t.Errorf("posted %d messages, want %d", len(s), tc.sends)
			}
			if n := h.metrics.Get("outbound/" + deliveryConv.Platform + "/possible_double"); n != 0 {
				t.Errorf("possible doubles counted %d, want 0", n)
			}
		})
	}
}

// TestKeyedReplayAfterACrashPostsOnceAndCountsNothing proves that on a platform recognising a
// resend by its key (KeyedSender, Discord's nonce) the replay after a crash between send and
// record gets the first message back: posted once, no possible double.
func TestKeyedReplayAfterACrashPostsOnceAndCountsNothing(t *testing.T) {
	h, faults := intentHarness(t)
	keyed := keyedChannel{h.ch, map[string]channels.MessageRef{}}
	run := runs.NewRunID()
	d1 := h.delivery(keyedCrash{keyed, faults}, func(o *Options) { o.MaxRetryWait = 100 * time.Millisecond })
	h.deliver(d1, attempt(1, "7", final(run, "the answer"))...)
	faults.DownFor(0)
	h.deliver(h.delivery(keyed), attempt(2, "7", started(run), final(run, "the answer"))...)
	if s := h.ch.Sent(); len(s) != 1 {
		t.Errorf("posted %d messages, want the answer once", len(s))
	}
	if n := h.metrics.Get("outbound/" + deliveryConv.Platform + "/possible_double"); n != 0 {
		t.Errorf("possible doubles counted %d, want 0", n)
	}
	if !h.recorded(run, StepFinal) || !h.recorded(run, StepFinalIntent) {
		t.Error("the replay left no final record or no intent")
	}
}

// keyedCrash is keyedChannel with crashAfterSend's crash.
type keyedCrash struct {
	keyedChannel
	faults *redistest.Faults
}

func (c keyedCrash) Send(ctx context.Context, to channels.Target, m channels.Message) (channels.MessageRef, error) {
	ref, err := c.keyedChannel.Send(ctx, to, m)
	c.faults.DownFor(1 << 20)
	return ref, err
}

func withRun(run string, evs []runs.Event) []runs.Event {
	out := make([]runs.Event, len(evs))
	for i, ev := range evs {
		ev.RunID = run
		out[i] = ev
	}
	return out
}

// beforeFirstSend runs hook just before its first Send.
type beforeFirstSend struct {
	*fakeChannel
	once *sync.Once
	hook func()
}

func (b beforeFirstSend) Send(ctx context.Context, to channels.Target, m channels.Message) (channels.MessageRef, error) {
	b.once.Do(b.hook)
	return b.fakeChannel.Send(ctx, to, m)
}

// TestTwoAttemptsAtOnceLeaveOneMessage proves two attempts of one run delivering at the same
// time — the first taken over (its lease expired in a Redis outage) while it still ran — leave
// one message in the chat whatever the interleaving: a placeholder posted after the other
// attempt sent the closing message anew is removed (by whichever side sees the other's record),
// and a second closing message is deleted by the attempt whose record came second. Found by
// the chaos suite's Redis SIGKILL restart.
func TestTwoAttemptsAtOnceLeaveOneMessage(t *testing.T) {
	cases := []struct {
		name string
		play func(h *deliveryHarness, run string, late *Delivery)
	}{
		{"placeholder posted after the answer", func(h *deliveryHarness, run string, _ *Delivery) {
			// The other attempt delivers the answer between this one's read of the records, when
			// its grace period ends, and its placeholder's send.
			other := h.delivery(h.ch)
			hooked := beforeFirstSend{fakeChannel: h.ch, once: &sync.Once{}, hook: func() {
				h.deliver(other, attempt(2, "7", final(run, "the answer"))...)
			}}
			d, timers := h.lazyDelivery(hooked)
			h.deliver(d, attempt(1, "7", started(run))...)
			timers.fire() // the grace period ends: the records are read, the placeholder sent
		}},
		{"answer sent anew after a placeholder it never read", func(h *deliveryHarness, run string, late *Delivery) {
			h.deliver(late, attempt(2, "7", started(run))...) // reads the records: none yet; owes its placeholder
			h.deliver(h.delivery(h.ch), attempt(1, "7", started(run))...)
			h.deliver(late, attempt(2, "7", final(run, "the answer"))...)
		}},
		{"two answers sent anew", func(h *deliveryHarness, run string, late *Delivery) {
			h.deliver(late, attempt(2, "7", started(run))...)
			h.deliver(h.delivery(h.ch), attempt(1, "7", final(run, "the answer"))...)
			h.deliver(late, attempt(2, "7", final(run, "the answer"))...)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newDeliveryHarness(t)
			run := runReceivedAgo(5 * time.Second)
			late, _ := h.lazyDelivery(h.ch)
			tc.play(h, run, late)
			live := h.ch.Visible()
			if len(live) != 1 || !strings.Contains(live[0], "the answer") {
				t.Errorf("the chat shows %q, want the answer once", live)
			}
			if n := h.metrics.Get("outbound/" + deliveryConv.Platform + "/possible_double"); n != 0 {
				t.Errorf("possible doubles counted %d, want 0 (the second message was removed)", n)
			}
		})
	}
}

// finderChannel is a fake whose keyed sends can be found again (as Slack's message metadata
// in the history): SentFinder.
type finderChannel struct {
	*fakeChannel
	byKey  map[string]channels.MessageRef
	faults *redistest.Faults // when set, every Redis call fails after a send (crashAfterSend)
}

func (f finderChannel) Send(ctx context.Context, to channels.Target, m channels.Message) (channels.MessageRef, error) {
	ref, err := f.fakeChannel.Send(ctx, to, m)
	if err == nil && m.Key != "" {
		f.byKey[m.Key] = ref
	}
	if f.faults != nil {
		f.faults.DownFor(1 << 20)
	}
	return ref, err
}

func (f finderChannel) FindSent(_ context.Context, _ channels.Target, key string, _ time.Time) (channels.MessageRef, bool, error) {
	ref, ok := f.byKey[key]
	return ref, ok, nil
}

// TestFoundReplayAfterACrashSendsNothingAgain proves that on a platform where a message sent
// with a key can be found again (SentFinder, Slack's metadata), the replay after a crash between
// send and record takes the message the crashed attempt sent: the answer and the placeholder
// are each posted once, the placeholder edited into the answer, no possible double counted.
func TestFoundReplayAfterACrashSendsNothingAgain(t *testing.T) {
	for _, tc := range []struct {
		name  string
		first []runs.Event
	}{
		{"closing message", []runs.Event{final("", "the answer")}},
		{"placeholder", []runs.Event{started("")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, faults := intentHarness(t)
			byKey := map[string]channels.MessageRef{}
			run := runs.NewRunID()
			d1 := h.delivery(finderChannel{h.ch, byKey, faults}, func(o *Options) { o.MaxRetryWait = 100 * time.Millisecond })
			h.deliver(d1, attempt(1, "7", withRun(run, tc.first)...)...)
			faults.DownFor(0)
			h.deliver(h.delivery(finderChannel{h.ch, byKey, nil}), attempt(2, "7", started(run), final(run, "the answer"))...)
			if s := h.ch.Sent(); len(s) != 1 {
				t.Errorf("posted %d messages, want 1", len(s))
			}
			if live := h.ch.Visible(); len(live) != 1 || !strings.Contains(live[0], "the answer") {
				t.Errorf("the chat shows %q, want the answer once", live)
			}
			if n := h.metrics.Get("outbound/" + deliveryConv.Platform + "/possible_double"); n != 0 {
				t.Errorf("possible doubles counted %d, want 0", n)
			}
		})
	}
}
