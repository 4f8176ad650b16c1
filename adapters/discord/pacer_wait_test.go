package discord

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/conv"
	discordfake "github.com/switchboard-bot/switchboard/internal/fake/discord"
	"github.com/switchboard-bot/switchboard/internal/poll"
)

// paceProbe watches the global pacer's waits (on its real clock): how long each request waited
// for its slot, and, once watching, a signal as each wait begins.
type paceProbe struct {
	mu    sync.Mutex
	waits []time.Duration
	began chan struct{} // nil until watch
}

func (pp *paceProbe) install(p *pacer) {
	sleep := p.sleepUntil
	p.sleepUntil = func(ctx context.Context, at time.Time) error {
		d := at.Sub(p.now())
		pp.mu.Lock()
		pp.waits = append(pp.waits, d)
		began := pp.began
		pp.mu.Unlock()
		if began != nil && d > 0 {
			select {
			case began <- struct{}{}:
			default:
			}
		}
		return sleep(ctx, at)
	}
}

func (pp *paceProbe) watch() <-chan struct{} {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	pp.began = make(chan struct{}, 16)
	return pp.began
}

func (pp *paceProbe) longest() time.Duration {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	var m time.Duration
	for _, d := range pp.waits {
		m = max(m, d)
	}
	return m
}

// pacedHarness is a started Channel whose REST requests may take each a per-request timeout of
// callTimeout, and whose global limit is then lowered to one request a second: a few requests
// at once wait seconds for their slots, many times callTimeout.
func pacedHarness(t *testing.T, callTimeout time.Duration) (*harness, *paceProbe) {
	t.Helper()
	pp := &paceProbe{}
	h := newHarnessPrepared(t, nil, func(c *Config) { c.CallTimeout = callTimeout }, func(ch *Channel) { pp.install(ch.global) })
	h.ch.global.setPer(1)
	return h, pp
}

// TestSendQueuedBehindThePacerOutlastsTheCallTimeout proves issue 38's first point: a send that
// waits in the bot's own pacer (Discord's global limit) longer than the per-request timeout
// waits its turn and succeeds — the thread a mention is answered in is started, the answer
// posted in it, a DM answered — because the timeout starts when the request is sent, not when
// it joins the queue.
func TestSendQueuedBehindThePacerOutlastsTheCallTimeout(t *testing.T) {
	const callTimeout = 300 * time.Millisecond
	h, pp := pacedHarness(t, callTimeout)
	ch := h.fk.Guild("500")
	id := h.fk.Post(discordfake.UserMessage{Channel: ch, Author: alice, Content: "a question", MentionBot: true})
	poll.Until(t, "the mention", func() bool { return h.rec.count() == 1 })
	mention := h.rec.all()[0]
	dm := dmConv(h)

	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, to := range []channels.Target{{Conv: mention.Conv, ReplyTo: mention.MessageID}, {Conv: dm}} {
		wg.Go(func() {
			if _, err := h.ch.Send(context.Background(), to, channels.Message{Text: "the answer"}); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a send queued behind the pacer failed: %v", err)
	}
	if n := h.fk.Count("POST", discordfake.RouteThreadFromMsg); n != 1 {
		t.Errorf("%d threads started, want 1", n)
	}
	if p := h.fk.PostedByBot(id); len(p) != 1 || p[0].Content != "the answer" {
		t.Errorf("posted in the thread: %+v", p)
	}
	if n := postsTo(h.fk, dm.Chat); n != 1 {
		t.Errorf("%d posts to the DM, want 1", n)
	}
	// Three requests at one a second: each waited about a second or more for its slot.
	if w := pp.longest(); w <= 2*callTimeout {
		t.Errorf("the longest wait for a slot was %v: the test needs waits well past the %v timeout", w, callTimeout)
	}
}

// TestPacerWaitCutByTheRunsContextIsTheContextsError proves that a send whose caller's context
// — a run's — ends while it waits for its slot returns that context's error, as is: not a rate
// limit, not an answer of Discord's (no status), not an unreachable conversation, so that
// nothing above counts it as the platform being down; and the request is never sent.
func TestPacerWaitCutByTheRunsContextIsTheContextsError(t *testing.T) {
	cases := []struct {
		name string
		ctx  func(began <-chan struct{}) (context.Context, context.CancelFunc)
		want error
	}{
		{"cancelled while waiting", func(began <-chan struct{}) (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				select {
				case <-began: // the send waits for its slot: the run is cancelled now
				case <-ctx.Done():
				}
				cancel()
			}()
			return ctx, cancel
		}, context.Canceled},
		// The run's deadline comes before the slot, and after the per-request timeout.
		{"the run's deadline passes while waiting", func(<-chan struct{}) (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 400*time.Millisecond)
		}, context.DeadlineExceeded},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, pp := pacedHarness(t, 100*time.Millisecond)
			k := conv.Key{Platform: "discord", Chat: h.fk.DM(alice.ID)}
			ctx, cancel := tc.ctx(pp.watch())
			defer cancel()
			_, err := h.ch.Send(ctx, channels.Target{Conv: k}, channels.Message{Text: "never sent"})
			if !errors.Is(err, tc.want) {
				t.Fatalf("Send = %v, want the context's %v", err, tc.want)
			}
			var rl *channels.RateLimitError
			switch {
			case errors.As(err, &rl):
				t.Errorf("Send = %v: a rate limit", err)
			case apiStatus(err) != 0:
				t.Errorf("Send = %v: an answer of Discord's (HTTP %d)", err, apiStatus(err))
			case errors.Is(err, channels.ErrUnreachable), errors.Is(err, channels.ErrUnauthorized):
				t.Errorf("Send = %v: the conversation or the bot refused", err)
			}
			if n := postsTo(h.fk, k.Chat); n != 0 {
				t.Errorf("%d posts reached Discord, want none", n)
			}
		})
	}
}
