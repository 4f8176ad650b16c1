package slack

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	slackfake "github.com/switchboard-bot/switchboard/internal/fake/slack"
)

// Rate limits: a send's or an edit's 429 goes back to delivery at once; a later piece's, and a
// typing signal's, are not handed back (waited out here, or skipped).

// TestRateLimitsHandedBackWithTheirRetryAfter proves a send's 429 (HTTP 429 with Retry-After,
// or ok:false "ratelimited") comes back at once as a *channels.RateLimitError with Slack's wait
// (1 s for "ratelimited"), for delivery to wait out: the adapter itself never waits beneath it.
func TestRateLimitsHandedBackWithTheirRetryAfter(t *testing.T) {
	h := start(t, nil)
	ctx := context.Background()
	var waits []time.Duration
	h.ch.clock.Sleep = func(ctx context.Context, d time.Duration) error { waits = append(waits, d); return ctx.Err() }
	h.fake.RateLimit("chat.postMessage", 2, 3)
	h.fake.FailNext("chat.postMessage", 1, slackfake.Fault{Error: "ratelimited"})
	var got []time.Duration
	for {
		_, err := h.ch.Send(ctx, channels.Target{Conv: threadConv("")}, channels.Message{Text: "hi"})
		if rl, ok := errors.AsType[*channels.RateLimitError](err); ok {
			got = append(got, rl.RetryAfter) // delivery waits this long, then sends again
			continue
		}
		if err != nil {
			t.Fatalf("Send under a short storm: %v", err)
		}
		break
	}
	if len(got) != 3 || got[0] != 3*time.Second || got[2] != time.Second || len(waits) != 0 {
		t.Fatalf("rate limits %v, adapter waits %v; want 3s, 3s and 1s handed back, no wait", got, waits)
	}
	if n := len(h.fake.Posted("C1")); n != 1 {
		t.Fatalf("%d messages posted, want 1", n)
	}
}

// TestRateLimitOfALaterPieceIsWaitedOut proves a 429 of a piece posted after the first of a
// message (post with wait, as Send and Edit make it) is waited out in the adapter, as a retry of
// the whole message would post the first piece twice, and handed back past MaxRetryWait.
func TestRateLimitOfALaterPieceIsWaitedOut(t *testing.T) {
	h := start(t, func(c *Config) { c.MaxRetryWait = 10 * time.Second })
	ctx := context.Background()
	var waits []time.Duration
	h.ch.clock.Sleep = func(ctx context.Context, d time.Duration) error { waits = append(waits, d); return ctx.Err() }
	h.fake.RateLimit("chat.postMessage", 2, 3)
	if _, err := h.ch.post(ctx, true, threadConv(""), piece{text: "the second piece"}); err != nil {
		t.Fatalf("a later piece under a short storm: %v", err)
	}
	if len(waits) != 2 || waits[0] != 3*time.Second || len(h.fake.Posted("C1")) != 1 {
		t.Fatalf("waits %v, %d posted; want two waits of 3s and the piece posted once", waits, len(h.fake.Posted("C1")))
	}
	h.fake.RateLimit("chat.postMessage", 100, 20)
	_, err := h.ch.post(ctx, true, threadConv(""), piece{text: "again"})
	var rl *channels.RateLimitError
	if !errors.As(err, &rl) || rl.RetryAfter != 20*time.Second {
		t.Fatalf("a long storm: %v, want a RateLimitError of 20s", err)
	}
}

// TestTypingNeverWaitsOnRateLimits proves the typing signal, sent before an envelope is acked,
// makes one attempt and skips a rate limit instead of waiting it out.
func TestTypingNeverWaitsOnRateLimits(t *testing.T) {
	h := start(t, nil)
	var waits int
	h.ch.clock.Sleep = func(ctx context.Context, d time.Duration) error { waits++; return ctx.Err() }
	h.fake.RateLimit("assistant.threads.setStatus", 5, 30)
	if err := h.ch.Typing(context.Background(), channels.Target{Conv: threadConv(h.fake.NewTS())}); err != nil {
		t.Fatalf("Typing under a rate limit: %v", err)
	}
	if waits != 0 || h.fake.Count("assistant.threads.setStatus") != 1 {
		t.Fatalf("%d waits, %d calls; want one attempt, no wait", waits, h.fake.Count("assistant.threads.setStatus"))
	}
}

// TestRateLimitedEditIsHandedBack proves an edit's 429 comes back at once for delivery to wait
// out — the adapter never waits (nor coalesces) beneath delivery's retries, which make one run's
// edits one at a time — and that the newer edit made after it is what the message shows, with no
// stale edit made after it. (Edits waiting for their tier's budget still coalesce:
// TestTierWaitGivesWayToNewerEdit.)
func TestRateLimitedEditIsHandedBack(t *testing.T) {
	h := start(t, nil)
	var waits int
	h.ch.clock.Sleep = func(ctx context.Context, d time.Duration) error { waits++; return ctx.Err() }
	ref, err := h.ch.Send(context.Background(), channels.Target{Conv: threadConv("")}, channels.Message{Text: "v0"})
	if err != nil {
		t.Fatal(err)
	}
	h.fake.RateLimit("chat.update", 1, 1)
	_, err = h.ch.Edit(context.Background(), ref, channels.Message{Text: "v1 stale"})
	if rl, ok := errors.AsType[*channels.RateLimitError](err); !ok || rl.RetryAfter != time.Second {
		t.Fatalf("the rate-limited edit: %v, want a RateLimitError of 1s", err)
	}
	if _, err := h.ch.Edit(context.Background(), ref, channels.Message{Text: "v2 latest"}); err != nil {
		t.Fatalf("the newer edit: %v", err)
	}
	if got := h.fake.Posted("C1")[0].Text; got != "v2 latest" || waits != 0 {
		t.Fatalf("the message shows %q after %d adapter waits, want the latest edit and none", got, waits)
	}
	if n := h.fake.Count("chat.update"); n != 2 {
		t.Fatalf("chat.update called %d times, want 2 (the 429 and the latest)", n)
	}
}

// TestSendFileRateLimitIsHandedBack proves a rate limit on the byte upload comes back for
// delivery to wait out, and that the file sent again, as delivery sends it, is shared once with
// its bytes whole.
func TestSendFileRateLimitIsHandedBack(t *testing.T) {
	data := []byte("the rest of the answer\n")
	target := channels.Target{Conv: threadConv("1700000000.000100")}
	h := start(t, nil)
	h.fake.RateLimit(slackfake.UploadMethod, 1, 0)
	// Handed back and sent again whole, as delivery does (nothing shows before the last
	// step): the file is shared once.
	err := channels.RetryRateLimited(context.Background(), time.Second, 5, func(ctx context.Context) error {
		_, err := h.ch.SendFile(ctx, target, channels.File{Name: "answer.md", Data: data, Caption: "The rest."})
		return err
	})
	if err != nil {
		t.Fatalf("SendFile: %v", err)
	}
	if ups := h.fake.Uploads(); len(ups) != 1 || !bytes.Equal(ups[0].Data, data) {
		t.Fatalf("uploads %+v", ups)
	}
	if n := h.fake.Count(slackfake.UploadMethod); n != 2 {
		t.Errorf("%d byte uploads, want the 429 and the retry", n)
	}
}
