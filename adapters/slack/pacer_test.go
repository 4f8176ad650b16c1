package slack

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
)

func TestPacerBurstThenOnePerInterval(t *testing.T) {
	p := newPacer(time.Second, 3)
	now := time.Unix(1000, 0)
	var waits []time.Duration
	for range 5 {
		waits = append(waits, p.reserve("C1", now))
	}
	want := []time.Duration{0, 0, 0, time.Second, 2 * time.Second}
	for i := range want {
		if waits[i] != want[i] {
			t.Fatalf("waits %v, want %v", waits, want)
		}
	}
	if w := p.reserve("C2", now); w != 0 {
		t.Errorf("another channel waited %s", w)
	}
	// After a quiet spell the burst is available again.
	if w := p.reserve("C1", now.Add(10*time.Second)); w != 0 {
		t.Errorf("after a pause: wait %s", w)
	}
}

func TestSendIsPacedPerChannel(t *testing.T) {
	h := start(t, func(c *Config) { c.Pacing = true })
	var slept time.Duration
	h.ch.clock.Sleep = func(ctx context.Context, d time.Duration) error { slept += d; return ctx.Err() }
	for range paceBurst + 2 {
		if _, err := h.ch.Send(context.Background(), channels.Target{Conv: threadConv("")}, channels.Message{Text: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	// The test's sleep returns at once, so hardly any time passes: the two posts past the
	// burst wait about one and two intervals.
	if slept > 3*paceEvery || slept < 3*paceEvery-time.Second/2 {
		t.Fatalf("slept %s, want about %s", slept, 3*paceEvery)
	}
}
