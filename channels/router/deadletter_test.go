package router

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/delivery"
	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/core/runs"
)

// TestReplayedDeadLetterIsAnswered proves an admin's `/deadletters replay` reaches the user: the
// run that failed on every attempt told the chat so (its closing message, recorded as the run's
// final), and the replay — a new run of the same message, from the same sender — posts its answer
// after that notice instead of being taken for a redelivery of a run already closed.
func TestReplayedDeadLetterIsAnswered(t *testing.T) {
	h := newRedisHarness(t, func(_ *Options, o *runs.Options) {
		o.MaxAttempts, o.RetryBase, o.RetryMax = 2, 10*time.Millisecond, 20*time.Millisecond
	})
	d, err := delivery.New(delivery.Options{Channels: map[string]channels.Channel{"test": h.ch}, Records: h.redis.store.Records(), ActionKey: testActionKey, Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	var broken atomic.Bool
	broken.Store(true)
	var asker atomic.Value
	h.runPool(runs.HandlerFunc(func(ctx context.Context, r *runs.Run) (runs.Outcome, error) {
		if broken.Load() {
			return "", errors.New("the model is down")
		}
		asker.Store(r.Envelope.Identity.ChannelUserID)
		if err := r.Emit(ctx, runs.Event{Kind: runs.EventFinal, Text: "the answer to " + r.Envelope.Text}); err != nil {
			return "", err
		}
		return runs.OutcomeAnswered, nil
	}), d)

	chat := dm("deadletter")
	h.send(channels.Inbound{Conv: chat, Identity: user("u1"), Text: "the question", Direct: true})
	waitFor(t, "the failure notice", func() bool {
		return strings.Contains(strings.Join(h.ch.Visible(), "\n"), "failed after several attempts")
	})
	var dead []runs.DeadLetter
	waitFor(t, "the dead letter", func() bool { dead, _ = h.queue.DeadLetters(h.ctx, 10); return len(dead) == 1 })

	broken.Store(false)
	h.send(channels.Inbound{Conv: chat, Identity: user("admin1"), Text: "/deadletters replay " + dead[0].RunID, Direct: true})
	// The command's reply follows HandleInbound and may meet the replayed run's answer.
	if got := strings.Join(h.ch.Visible(), "\n"); !strings.Contains(got, "Replayed `"+dead[0].RunID+"` as run `") {
		t.Fatalf("the replay command's answer is missing from the chat:\n%s", got)
	}
	waitFor(t, "the replayed run's answer", func() bool { return strings.Contains(strings.Join(h.ch.Visible(), "\n"), "the answer to the question") })
	if who, _ := asker.Load().(string); who != "u1" {
		t.Errorf("the replay ran as %q, want the original sender u1 (not the admin who replayed it)", who)
	}
	if left, _ := h.queue.DeadLetters(h.ctx, 10); len(left) != 0 {
		t.Errorf("dead letters after the replay = %+v", left)
	}
}

// TestForgedDeadLetterIsNotReplayed proves `/deadletters replay` of an envelope that fails its
// signature check — queued by someone without the signing key — tells the admin so and runs
// nothing: the replay signs afresh, so it must never sign what it could not verify.
func TestForgedDeadLetterIsNotReplayed(t *testing.T) {
	h := newRedisHarness(t)
	var ran atomic.Int32
	h.runPool(runs.HandlerFunc(func(ctx context.Context, r *runs.Run) (runs.Outcome, error) {
		ran.Add(1)
		return runs.OutcomeAnswered, nil
	}), nil)
	other, err := runs.NewSigner([][]byte{[]byte("not the bot's signing key at all")})
	if err != nil {
		t.Fatal(err)
	}
	forged := &runs.Envelope{RunID: runs.NewRunID(), Kind: runs.KindMessage, Conv: dm("forged"), Text: "do as I say",
		Identity: conv.Identity{Platform: "test", ChannelUserID: "admin1"}, CreatedAt: time.Now()}
	other.Sign(forged)
	if err := h.queue.Enqueue(h.ctx, forged); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the forged run dead-lettered", func() bool { d, _ := h.queue.DeadLetters(h.ctx, 10); return len(d) == 1 })
	h.send(channels.Inbound{Conv: dm("ops"), Identity: user("admin1"), Text: "/deadletters replay " + forged.RunID, Direct: true})
	if got := h.ch.LastSent(); !strings.Contains(got, "fails its signature check (unknown_key)") || !strings.Contains(got, "/deadletters drop") {
		t.Errorf("the replay command answered %q; want the signature refusal and what to do", got)
	}
	if d, _ := h.queue.DeadLetters(h.ctx, 10); len(d) != 1 {
		t.Errorf("dead letters after the refused replay: %d, want the forged one kept", len(d))
	}
	if n := ran.Load(); n != 0 {
		t.Errorf("%d runs started; a forged envelope must never run", n)
	}
}
