package slack

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	slackfake "github.com/switchboard-bot/switchboard/internal/fake/slack"
)

const (
	setPrompts = "assistant.threads.setSuggestedPrompts"
	setTitle   = "assistant.threads.setTitle"
)

// startedThread sends an assistant_thread_started for a new thread of D1 and returns the
// thread's ts and the envelope's id.
func startedThread(fake *slackfake.Server) (root, env string) {
	root = fake.NewTS()
	env = fake.Send("events_api", fake.Callback(map[string]any{"type": "assistant_thread_started",
		"assistant_thread": map[string]any{"user_id": ann, "channel_id": "D1", "thread_ts": root}}))
	return root, env
}

// TestSocketAckDoesNotWaitForAssistantThreadCalls proves an envelope is acked before the
// suggested prompts and the title it leads to are set (Slack wants the ack within 3 s; those
// calls may wait out rate limits for 30 s), and that the calls still come afterwards, the
// thread's title after its prompts.
func TestSocketAckDoesNotWaitForAssistantThreadCalls(t *testing.T) {
	h := start(t, func(c *Config) { c.SuggestedPrompts = []string{"What can you do?"} })
	releasePrompts := h.fake.Hold(setPrompts, 1)
	releaseTitle := h.fake.Hold(setTitle, 1)
	defer releasePrompts()
	defer releaseTitle()

	root, env := startedThread(h.fake)
	eventually(t, "the assistant_thread_started ack", func() bool { return h.fake.Acked(env) })
	_, msg := h.fake.PushMessage(slackfake.Msg{Channel: "D1", ChannelType: "im", User: ann, Text: "plan my week", ThreadTS: root})
	eventually(t, "the first message's ack", func() bool { return h.fake.Acked(msg) })
	if got := h.waitInbound(t, 1); got[0].Conv.Thread != root {
		t.Fatalf("handed over %+v", got[0].Conv)
	}
	// Both envelopes are acked while the prompts are held at the fake: the acks did not wait.
	if n := len(h.fake.CallsOf(setPrompts)); n != 0 {
		t.Fatalf("the prompts were answered (%d) before the held call was released", n)
	}
	eventually(t, "the prompts call", func() bool { return h.fake.Count(setPrompts) == 1 })
	if n := h.fake.Count(setTitle); n != 0 {
		t.Fatalf("the title was asked for (%d) before the thread's prompts were set", n)
	}
	releasePrompts()
	eventually(t, "the prompts set", func() bool { return len(h.fake.CallsOf(setPrompts)) == 1 })
	eventually(t, "the title call", func() bool { return h.fake.Count(setTitle) == 1 })
	releaseTitle()
	eventually(t, "the title set", func() bool { return len(h.fake.CallsOf(setTitle)) == 1 })
	if got := h.fake.CallsOf(setTitle)[0].Params["title"]; got != "plan my week" {
		t.Fatalf("title %q", got)
	}
}

// TestHTTPAckDoesNotWaitForARateLimitedTitle proves HTTP mode answers 200 while the thread's
// title waits out a 429, and that the title is set once the wait is over.
func TestHTTPAckDoesNotWaitForARateLimitedTitle(t *testing.T) {
	fake := slackfake.New(t)
	waiting, over := make(chan time.Duration, 1), make(chan struct{})
	h := startPrepared(t, fake, func(c *Config) { c.Mode, c.AppToken = ModeHTTP, "" }, &recorder{}, func(ch *Channel) {
		ch.clock.Sleep = func(ctx context.Context, d time.Duration) error {
			waiting <- d
			select {
			case <-over:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	})
	ch, rec := h.ch, h.rec
	srv := httptest.NewServer(ch.EventsHandler())
	t.Cleanup(srv.Close)
	fake.RateLimit(setTitle, 1, 30)

	root := fake.NewTS()
	r, err := fake.DeliverEvent(srv.URL, fake.Callback(map[string]any{"type": "assistant_thread_started",
		"assistant_thread": map[string]any{"user_id": ann, "channel_id": "D1", "thread_ts": root}}), slackfake.Delivery{})
	if err != nil || r.Status != http.StatusOK {
		t.Fatalf("assistant_thread_started: %d, %v", r.Status, err)
	}
	cb, _ := fake.MessageCallback(slackfake.Msg{Channel: "D1", ChannelType: "im", User: ann, Text: "plan my week", ThreadTS: root})
	r, err = fake.DeliverEvent(srv.URL, cb, slackfake.Delivery{})
	if err != nil || r.Status != http.StatusOK || len(rec.got()) != 1 {
		t.Fatalf("the first message: %d, %v, %d handed over", r.Status, err, len(rec.got()))
	}
	// Answered while the title waits out its 429 (or before it even started).
	if d := <-waiting; d != 30*time.Second {
		t.Fatalf("the title waits %s, want the 30 s Slack asked for", d)
	}
	close(over)
	eventually(t, "the title set after the wait", func() bool {
		calls := fake.CallsOf(setTitle)
		return len(calls) == 2 && calls[1].Status == http.StatusOK && calls[1].Params["title"] == "plan my week"
	})
}

// TestStopCutsShortAHeldAssistantThreadCall proves Stop does not wait past its deadline for a
// title call that hangs: the call is cancelled, Stop says so, and no goroutine is left (goleak).
func TestStopCutsShortAHeldAssistantThreadCall(t *testing.T) {
	h := start(t, nil)
	defer h.fake.Hold(setTitle, -1)() // released when the test ends
	root, env := startedThread(h.fake)
	eventually(t, "the ack", func() bool { return h.fake.Acked(env) })
	_, msg := h.fake.PushMessage(slackfake.Msg{Channel: "D1", ChannelType: "im", User: ann, Text: "hello", ThreadTS: root})
	eventually(t, "the ack", func() bool { return h.fake.Acked(msg) })
	eventually(t, "the title call", func() bool { return h.fake.Count(setTitle) == 1 })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := h.ch.Stop(ctx)
	if err == nil || !strings.Contains(err.Error(), "cut short") {
		t.Fatalf("Stop with the title held: %v, want it cut short", err)
	}
}
