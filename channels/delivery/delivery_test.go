package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/core/runs"
	"github.com/switchboard-bot/switchboard/core/threads"
)

var deliveryConv = conv.Key{Platform: "test", Chat: "d1"}

type deliveryHarness struct {
	t       *testing.T
	ctx     context.Context
	store   Records
	ch      *fakeChannel
	metrics *countMetrics
}

func newDeliveryHarness(t *testing.T) *deliveryHarness {
	t.Helper()
	return &deliveryHarness{t: t, ctx: ctxT(t), store: newMemRecords(), ch: newFakeChannel("test"), metrics: newCountMetrics()}
}

// delivery returns a new Delivery (a new process, as far as memory goes) on the harness's store.
func (h *deliveryHarness) delivery(ch channels.Channel, tweak ...func(*Options)) *Delivery {
	h.t.Helper()
	o := Options{Channels: map[string]channels.Channel{"test": ch}, Records: h.store, ActionKey: testActionKey,
		Logger: quietLog, Metrics: h.metrics, MaxRetryWait: time.Second}
	for _, f := range tweak {
		f(&o)
	}
	d, err := New(o)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(d.Close)
	return d
}

func (h *deliveryHarness) deliver(d *Delivery, evs ...runs.Event) {
	h.t.Helper()
	for _, ev := range evs {
		if ev.Conv.IsZero() {
			ev.Conv = deliveryConv
		}
		if err := d.Deliver(h.ctx, ev); err != nil {
			h.t.Fatalf("Deliver %s: %v", ev.Kind, err)
		}
	}
}

// cancelAfterSend cancels the run's context as soon as a message is sent.
type cancelAfterSend struct {
	*fakeChannel
	cancel context.CancelFunc
}

func (c cancelAfterSend) Send(ctx context.Context, to channels.Target, m channels.Message) (channels.MessageRef, error) {
	ref, err := c.fakeChannel.Send(ctx, to, m)
	c.cancel()
	return ref, err
}

func started(run string) runs.Event { return runs.Event{RunID: run, Kind: runs.EventStarted, Step: 1} }

// attempt stamps evs as Run.Emit does for the given attempt of a run answering message msg.
func attempt(n int, msg string, evs ...runs.Event) []runs.Event {
	for i := range evs {
		evs[i].Attempt, evs[i].ReplyTo = n, msg
	}
	return evs
}

// startedAnswering is a first attempt's started event of a run answering message msg.
func startedAnswering(run, msg string) runs.Event {
	return runs.Event{RunID: run, Kind: runs.EventStarted, Step: 1, Attempt: 1, ReplyTo: msg}
}

// progress is a tool's progress, as the lead emits it; a notice (no tool) is notice.
func progress(run, text string) runs.Event {
	return runs.Event{RunID: run, Kind: runs.EventProgress, Tool: "search", Text: text}
}

// notice is a progress event with no tool: what the lead tells the user when the model is not
// answering and the run will be tried again.
func notice(run, text string) runs.Event {
	return runs.Event{RunID: run, Kind: runs.EventProgress, Text: text}
}

func final(run, text string) runs.Event {
	return runs.Event{RunID: run, Kind: runs.EventFinal, Text: text}
}

func subResult(run, id, name, summary string) runs.Event {
	return runs.Event{RunID: run, Kind: runs.EventSubagentResult, Subagent: &runs.SubagentInfo{
		ID: id, Name: name, StopReason: "completed", Summary: summary, Structured: json.RawMessage(`{"price":"42 EUR"}`)}}
}

// TestWorkingSignalOnStarted proves started posts a placeholder at once (replying to the
// message the run answers), shows typing and reacts on that message.
func TestWorkingSignalOnStarted(t *testing.T) {
	h := newDeliveryHarness(t)
	d := h.delivery(h.ch)
	run := runs.NewRunID()
	h.deliver(d, startedAnswering(run, "55"))
	s := h.ch.Sent()
	if len(s) != 1 || !strings.Contains(s[0].Text, "Working") || s[0].To.ReplyTo != "55" {
		t.Fatalf("sent %+v, want one working placeholder replying to 55", s)
	}
	if h.ch.Typings != 1 || len(h.ch.Reacts) != 1 || h.ch.Reacts[0] != "55:👀" {
		t.Errorf("typing %d, reactions %v", h.ch.Typings, h.ch.Reacts)
	}
}

// TestIdempotentDeliveryOnReplay proves a run id delivered twice posts once: a replay after the
// answer went out skips it, and a replay after a crash mid-run (another process, no memory)
// edits the recorded placeholder instead of posting a new one.
func TestIdempotentDeliveryOnReplay(t *testing.T) {
	t.Run("replay after the answer", func(t *testing.T) {
		h := newDeliveryHarness(t)
		run := runs.NewRunID()
		h.deliver(h.delivery(h.ch), started(run), progress(run, "searching"), final(run, "The answer is 42."))
		h.deliver(h.delivery(h.ch), started(run), progress(run, "searching"), final(run, "The answer is 42."))
		if n := len(h.ch.Sent()); n != 1 {
			t.Errorf("%d posts for one run delivered twice, want 1", n)
		}
		if v := h.ch.Visible(); len(v) != 1 || !strings.Contains(v[0], "The answer is 42.") {
			t.Errorf("visible %q, want the answer once", v)
		}
	})
	t.Run("replay after a crash mid-run", func(t *testing.T) {
		h := newDeliveryHarness(t)
		run := runs.NewRunID()
		h.deliver(h.delivery(h.ch), attempt(1, "55", started(run), progress(run, "searching"))...)
		edits := h.ch.EditCount()
		h.deliver(h.delivery(h.ch), attempt(2, "55", started(run), progress(run, "searching again"), final(run, "Found it."))...)
		if n := len(h.ch.Sent()); n != 1 {
			t.Errorf("%d posts, want 1 (the replay edits the placeholder)", n)
		}
		if h.ch.EditCount() <= edits {
			t.Error("the replay did not edit the placeholder")
		}
		if v := h.ch.Visible(); len(v) != 1 || !strings.Contains(v[0], "Found it.") {
			t.Errorf("visible %q, want the answer in the placeholder", v)
		}
	})
	t.Run("a run cancelled just after its send", func(t *testing.T) {
		// Handed back at shutdown the moment its answer went out: the record is still written,
		// so the next attempt does not post the answer again.
		h := newDeliveryHarness(t)
		run := runs.NewRunID()
		ctx, cancel := context.WithCancel(h.ctx)
		defer cancel()
		_ = h.delivery(cancelAfterSend{h.ch, cancel}).Deliver(ctx, runs.Event{RunID: run, Kind: runs.EventFinal, Text: "Sent.", Conv: deliveryConv})
		h.deliver(h.delivery(h.ch), final(run, "Sent."))
		if n := len(h.ch.Sent()); n != 1 {
			t.Errorf("%d posts, want 1: the record of the first send was lost with its context", n)
		}
	})
	t.Run("the closing event alone on replay", func(t *testing.T) {
		// The lead re-emits only the closing event when a finished run is redelivered.
		h := newDeliveryHarness(t)
		run := runs.NewRunID()
		h.deliver(h.delivery(h.ch), started(run), final(run, "Done."))
		h.deliver(h.delivery(h.ch), final(run, "Done."))
		if n := len(h.ch.Sent()); n != 1 {
			t.Errorf("%d posts, want 1", n)
		}
	})
}

// TestProgressThrottledAndSubagentsKept proves progress edits are throttled per platform (the
// latest state is shown when the interval ends) and that subagent results are never dropped:
// the final card carries them all.
func TestProgressThrottledAndSubagentsKept(t *testing.T) {
	h := newDeliveryHarness(t)
	d := h.delivery(h.ch, func(o *Options) { o.EditEvery = map[string]time.Duration{"test": 50 * time.Millisecond} })
	run := runs.NewRunID()
	h.deliver(d, started(run))
	for _, text := range []string{"one", "two", "three"} {
		h.deliver(d, progress(run, text))
	}
	h.deliver(d, subResult(run, "s1", "flights", "Cheapest on Tuesday"), subResult(run, "s2", "hotels", "Two options"))
	if n := h.ch.EditCount(); n > 1 {
		t.Errorf("%d edits within one interval, want at most 1", n)
	}
	waitFor(t, "the trailing edit with the latest state", func() bool {
		v := h.ch.Visible()
		return len(v) == 1 && strings.Contains(v[0], "three") && strings.Contains(v[0], "hotels")
	})
	h.deliver(d, final(run, "Book Tuesday."))
	v := h.ch.Visible()
	if len(v) != 1 {
		t.Fatalf("visible %q", v)
	}
	for _, want := range []string{"Book Tuesday.", "flights", "Cheapest on Tuesday", "hotels", "price: 42 EUR"} {
		if !strings.Contains(v[0], want) {
			t.Errorf("final card lacks %q:\n%s", want, v[0])
		}
	}
}

// TestCloseStopsPendingEdits proves Close cancels a scheduled throttled edit and leaves no
// goroutine behind (goleak checks the package).
func TestCloseStopsPendingEdits(t *testing.T) {
	h := newDeliveryHarness(t)
	d := h.delivery(h.ch, func(o *Options) { o.EditEvery = map[string]time.Duration{"test": time.Hour} })
	run := runs.NewRunID()
	h.deliver(d, started(run), progress(run, "a"), progress(run, "b"))
	d.Close()
	d.Close()
	if n := h.ch.EditCount(); n > 1 {
		t.Errorf("%d edits", n)
	}
}

// TestTextFallbackWhenCardRefused proves a platform refusing cards still gets every message,
// as plain text: the placeholder, and the answer edited in (or sent, without an editor).
func TestTextFallbackWhenCardRefused(t *testing.T) {
	cases := []struct {
		name string
		ch   func(f *fakeChannel) channels.Channel
	}{
		{"with edits", func(f *fakeChannel) channels.Channel { return f }},
		{"send only", func(f *fakeChannel) channels.Channel { return sendOnly{F: f} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newDeliveryHarness(t)
			h.ch.RefuseCards = true
			d := h.delivery(tc.ch(h.ch))
			run := runs.NewRunID()
			h.deliver(d, started(run), final(run, "Plain answer."))
			v := h.ch.Visible()
			if len(v) == 0 || !strings.Contains(v[len(v)-1], "Plain answer.") {
				t.Errorf("visible %q, want the answer as text", v)
			}
			for _, s := range h.ch.Sent() {
				if s.Msg.Card != nil {
					t.Error("a card was accepted by a platform that refuses cards")
				}
			}
			if h.metrics.Get("outbound/test/card_refused") == 0 {
				t.Error("card refusals not counted")
			}
		})
	}
}

// TestRateLimitHandling proves a 429 is waited out and retried: the final answer arrives, once.
func TestRateLimitHandling(t *testing.T) {
	h := newDeliveryHarness(t)
	d := h.delivery(h.ch)
	run := runs.NewRunID()
	h.deliver(d, started(run))
	h.ch.Mu.Lock()
	h.ch.RateLimitN, h.ch.RetryAfter = 2, 20*time.Millisecond
	h.ch.Mu.Unlock()
	begin := time.Now()
	h.deliver(d, final(run, "Worth the wait."))
	if waited := time.Since(begin); waited < 40*time.Millisecond {
		t.Errorf("retried after %s, before the platform's Retry-After", waited)
	}
	if v := h.ch.Visible(); len(v) != 1 || !strings.Contains(v[0], "Worth the wait.") {
		t.Errorf("visible %q, want the answer once", v)
	}

	t.Run("never silently lost", func(t *testing.T) {
		run := runs.NewRunID()
		h.ch.Mu.Lock()
		h.ch.FailSendsAll = true
		h.ch.Mu.Unlock()
		err := d.Deliver(h.ctx, runs.Event{RunID: run, Conv: deliveryConv, Kind: runs.EventFinal, Text: "lost?", Attempt: 1})
		if err == nil {
			t.Error("an undeliverable answer returned no error")
		}
		if h.metrics.Get("outbound/test/final_failed") != 1 {
			t.Error("the undelivered answer was not counted")
		}
		// The run's next try re-emits the event: delivered, once.
		h.ch.Mu.Lock()
		h.ch.FailSendsAll = false
		h.ch.Mu.Unlock()
		before := len(h.ch.Visible())
		if err := d.Deliver(h.ctx, runs.Event{RunID: run, Conv: deliveryConv, Kind: runs.EventFinal, Text: "lost?", Attempt: 2}); err != nil {
			t.Errorf("the next try: %v", err)
		}
		var shown int
		for _, v := range h.ch.Visible()[before:] {
			shown += strings.Count(v, "lost?")
		}
		if shown != 1 {
			t.Errorf("the next try showed the answer %d times, want once: %q", shown, h.ch.Visible())
		}
		// The platform said no to the first send: the second is no possible double.
		if n := h.metrics.Get("outbound/test/possible_double"); n != 0 {
			t.Errorf("possible doubles %d, want 0 after a refused send", n)
		}
	})
}

// TestNoPlaceholderLeftBehind proves an answer too long to edit into the placeholder is sent
// as new messages and the placeholder is deleted (or, without delete, turned into a pointer).
func TestNoPlaceholderLeftBehind(t *testing.T) {
	long := strings.Repeat("A long answer line.\n", 400) // ~8,000 characters
	t.Run("deleted", func(t *testing.T) {
		h := newDeliveryHarness(t)
		h.ch.MaxEdit, h.ch.PieceLen = 4096, 4096
		d := h.delivery(h.ch)
		run := runs.NewRunID()
		h.deliver(d, started(run), final(run, long))
		s := h.ch.Sent()
		if len(s) != 2 || len(s[1].IDs) < 2 {
			t.Fatalf("sends %d (last with %d ids), want the placeholder then the answer in several messages", len(s), len(s[len(s)-1].IDs))
		}
		if len(h.ch.Deletes) != 1 || h.ch.Deletes[0] != s[0].IDs[0] {
			t.Errorf("deleted %v, want the placeholder %s", h.ch.Deletes, s[0].IDs[0])
		}
		for _, v := range h.ch.Visible() {
			if strings.Contains(v, "Working") {
				t.Error("the placeholder is still visible")
			}
		}
	})
	t.Run("no delete capability", func(t *testing.T) {
		h := newDeliveryHarness(t)
		h.ch.MaxEdit, h.ch.PieceLen = 4096, 4096
		d := h.delivery(editNoDelete{SendOnly: sendOnly{F: h.ch}})
		run := runs.NewRunID()
		h.deliver(d, started(run), final(run, long))
		v := h.ch.Visible()
		if len(v) < 3 || !strings.Contains(v[0], "answer is below") {
			t.Errorf("visible %d messages, first %q; want the placeholder pointing to the answer", len(v), v[0])
		}
	})
	t.Run("placeholder gone", func(t *testing.T) {
		h := newDeliveryHarness(t)
		d := h.delivery(h.ch)
		run := runs.NewRunID()
		h.deliver(d, started(run))
		h.ch.Mu.Lock()
		h.ch.EditGone = true
		h.ch.Mu.Unlock()
		h.deliver(d, final(run, "Fresh message."))
		if v := h.ch.Visible(); len(v) != 2 || !strings.Contains(v[1], "Fresh message.") {
			t.Errorf("visible %q, want the answer as a new message", v)
		}
	})
}

// TestClosingCards proves the question, failure and cancellation cards: status, reason, and a
// form whose options can be answered.
func TestClosingCards(t *testing.T) {
	h := newDeliveryHarness(t)
	d := h.delivery(h.ch)
	cases := []struct {
		name string
		ev   runs.Event
		want []string
	}{
		{"clarification", runs.Event{Kind: runs.EventClarification, Text: "Before I book:", Form: &runs.Form{ID: "q01ABC", Question: "How many people?", Fields: peopleForm.Fields}},
			[]string{"Before I book:", "How many people?", "1. 2", "2. 4", "Waiting"}},
		{"clarification with an unsignable id", runs.Event{Kind: runs.EventClarification, Form: &runs.Form{ID: "bad id!", Question: "Size?", Fields: peopleForm.Fields}},
			[]string{"Size?", "1. 2"}},
		{"failed", runs.Event{Kind: runs.EventFailed, Reason: "The model declined."}, []string{"Failed", "The model declined."}},
		{"cancelled", runs.Event{Kind: runs.EventCancelled, Reason: "Cancelled."}, []string{"Cancelled"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run := runs.NewRunID()
			tc.ev.RunID = run
			h.deliver(d, started(run), tc.ev)
			v := h.ch.Visible()
			last := v[len(v)-1]
			for _, w := range tc.want {
				if !strings.Contains(last, w) {
					t.Errorf("card lacks %q:\n%s", w, last)
				}
			}
		})
	}
}

// commandNames records the names of the Redis commands a client sends.
type commandNames struct {
	mu    sync.Mutex
	names []string
}

func (h *commandNames) add(cmds ...redis.Cmder) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range cmds {
		h.names = append(h.names, c.Name())
	}
}

func (h *commandNames) list() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.names)
}

func (h *commandNames) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *commandNames) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.add(cmd); return next(ctx, cmd) }
}

func (h *commandNames) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.add(cmds...); return next(ctx, cmds) }
}

// TestFirstAttemptReadsNoRecords proves a run's first attempt is delivered without reading what
// earlier attempts recorded (there can be none) and replies to the message its events name,
// while a later attempt reads the records and finds the placeholder to edit.
func TestFirstAttemptReadsNoRecords(t *testing.T) {
	h := newDeliveryHarness(t)
	c := realRedis(t)
	names := &commandNames{}
	c.AddHook(names)
	h.store = threads.New(c, threads.Options{Prefix: uniquePrefix(t, c)}).Records()

	run := runs.NewRunID()
	h.deliver(h.delivery(h.ch), attempt(1, "55", started(run), progress(run, "searching"))...)
	for _, n := range names.list() {
		if n == "get" || n == "mget" {
			t.Fatalf("first attempt sent %v: it read earlier attempts' records", names.list())
		}
	}
	if s := h.ch.Sent(); len(s) != 1 || s[0].To.ReplyTo != "55" {
		t.Fatalf("sent %+v, want the placeholder replying to 55", s)
	}

	h.deliver(h.delivery(h.ch), attempt(2, "55", started(run), final(run, "Found it."))...)
	if !slices.Contains(names.list(), "get") {
		t.Errorf("second attempt sent %v, want a read of the run's records", names.list())
	}
	if n := len(h.ch.Sent()); n != 1 {
		t.Errorf("%d posts, want 1 (the retry edits the placeholder)", n)
	}
	if v := h.ch.Visible(); len(v) != 1 || !strings.Contains(v[0], "Found it.") {
		t.Errorf("visible %q, want the answer in the placeholder", v)
	}
}

// TestUnreachableConversationGivesUp proves a closing message the platform can no longer take
// (the user blocked the bot mid-run) is given up and counted — whether it was to be edited into
// the placeholder or sent anew — and does not fail the run, which would only retry in vain.
func TestUnreachableConversationGivesUp(t *testing.T) {
	for _, placeholder := range []bool{true, false} {
		h := newDeliveryHarness(t)
		d := h.delivery(h.ch)
		run := runs.NewRunID()
		if placeholder {
			h.deliver(d, startedAnswering(run, "55"))
		}
		h.ch.Mu.Lock()
		h.ch.Unreachable = true
		h.ch.Mu.Unlock()
		if err := d.Deliver(h.ctx, runs.Event{RunID: run, Conv: deliveryConv, Kind: runs.EventFinal, Text: "nobody hears this"}); err != nil {
			t.Errorf("placeholder %v: Deliver = %v, want the answer given up without an error", placeholder, err)
		}
		if h.metrics.Get("outbound/test/unreachable") != 1 || h.metrics.Get("outbound/test/final_failed") != 0 {
			t.Errorf("placeholder %v: unreachable counted %d, final_failed %d; want 1 and 0", placeholder,
				h.metrics.Get("outbound/test/unreachable"), h.metrics.Get("outbound/test/final_failed"))
		}
	}
}

// TestSubagentResultsInTheOrderAsked proves the card lists subagent results in the order the
// lead asked for them (SubagentInfo.Order), whatever order they finish in; a result without an
// order follows, and a repeated result replaces its entry in place.
func TestSubagentResultsInTheOrderAsked(t *testing.T) {
	h := newDeliveryHarness(t)
	d := h.delivery(h.ch)
	run := runs.NewRunID()
	ordered := func(order int, id, name string) runs.Event {
		ev := subResult(run, id, name, "result of "+name)
		ev.Subagent.Order = order
		return ev
	}
	h.deliver(d, started(run), ordered(3, "c", "third"), ordered(0, "x", "unnumbered"), ordered(1, "a", "first"),
		ordered(2, "b", "second"), ordered(1, "a", "first"), final(run, "The answer."))
	v := h.ch.Visible()
	if len(v) != 1 {
		t.Fatalf("visible %q, want one message", v)
	}
	at := -1
	for _, want := range []string{"first", "second", "third", "unnumbered", "The answer."} {
		i := strings.Index(v[0], want)
		if i < 0 || i < at {
			t.Fatalf("%q is not after what comes before it:\n%s", want, v[0])
		}
		at = i
	}
	if n := strings.Count(v[0], "result of first"); n != 1 {
		t.Errorf("the repeated result is shown %d times, want once:\n%s", n, v[0])
	}
}

// TestMayHavePosted: a send that timed out or lost its connection mid-call may have reached the
// platform; one the platform answered with an error, or whose connection was refused, did not.
func TestMayHavePosted(t *testing.T) {
	refused := &url.Error{Op: "Post", URL: "http://x", Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	reset := &url.Error{Op: "Post", URL: "http://x", Err: &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"the platform's error answer", errors.New("telegram: Bad Gateway (502)"), false},
		{"connection refused", fmt.Errorf("send: %w", refused), false},
		{"deadline", fmt.Errorf("send: %w", context.DeadlineExceeded), true},
		{"connection reset mid-call", fmt.Errorf("send: %w", reset), true},
		{"answer cut short", fmt.Errorf("send: %w", io.ErrUnexpectedEOF), true},
		{"a url error of another kind", &url.Error{Op: "Post", URL: "http://x", Err: errors.New("tls: handshake failure")}, true},
		{"refused after pieces it could not withdraw", fmt.Errorf("send: %w", &partlyPosted{err: errors.New("telegram: Bad Gateway (502)")}), true},
	} {
		if got := mayHavePosted(tc.err); got != tc.want {
			t.Errorf("%s: mayHavePosted(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
