package telegram

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	telegramfake "github.com/switchboard-bot/switchboard/internal/fake/telegram"
)

// TestRevokedTokenIsReportedAndPolledSlowly: a token revoked while the bot runs (every call
// answered 401) is logged once, saying what to do, and shown by Ready; getUpdates is tried again
// every refusedWait, not in a ramp from 100 ms; a send it refuses is ErrUnauthorized, sent once
// and not ErrUnreachable (the bot's state, not the conversation's).
// Once Telegram accepts the token again, polling and Ready recover. The token is never in the log
// or the error.
func TestRevokedTokenIsReportedAndPolledSlowly(t *testing.T) {
	fake := telegramfake.New(t)
	ch, logs := newChannel(t, fake, nil)
	refused := telegramfake.Fault{Status: http.StatusUnauthorized, Description: "Unauthorized"}
	const spell = 3
	var (
		mu      sync.Mutex
		waits   []time.Duration
		readies []error
	)
	ch.clock.Sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		waits = append(waits, d)
		readies = append(readies, ch.Ready())
		mu.Unlock()
		return ctx.Err()
	}
	rec := &recorder{}
	fake.FailNext("getUpdates", spell, refused)
	if err := ch.Start(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	defer ch.Stop(context.Background())

	fake.FailNext("sendMessage", 1, refused)
	before := fake.Count("sendMessage")
	_, err := ch.Send(context.Background(), channels.Target{Conv: privateConv(ann.ID)}, channels.Message{Text: "hello"})
	if !errors.Is(err, channels.ErrUnauthorized) || errors.Is(err, channels.ErrUnreachable) {
		t.Errorf("Send refused with 401: err %v, want ErrUnauthorized and not ErrUnreachable", err)
	}
	if n := fake.Count("sendMessage") - before; n != 1 {
		t.Errorf("%d sendMessage calls for one refused send, want 1 (not retried)", n)
	}

	fake.PushPrivate(ann, "after the new token")
	eventually(t, "the update after the refusals", func() bool { return len(rec.got()) == 1 })
	eventually(t, "Ready after the refusals", func() bool { return ch.Ready() == nil })

	mu.Lock()
	gotWaits, gotReadies := append([]time.Duration(nil), waits...), append([]error(nil), readies...)
	mu.Unlock()
	if len(gotWaits) != spell {
		t.Fatalf("paused %v over %d refused polls, want %d pauses of %v", gotWaits, spell, spell, refusedWait)
	}
	for i, d := range gotWaits {
		if d != refusedWait {
			t.Errorf("pause %d after a refused poll: %v, want %v", i, d, refusedWait)
		}
		if r := gotReadies[i]; r == nil || !strings.Contains(r.Error(), "401") || !strings.Contains(r.Error(), "telegram.token") {
			t.Errorf("Ready while the token is refused: %v, want it to say so and what to set", r)
		}
	}
	out := logs.String()
	if n := strings.Count(out, "refused the bot token"); n != 1 {
		t.Errorf("the refusal was logged %d times over %d refused calls, want once:\n%s", n, spell+1, out)
	}
	if !strings.Contains(out, "BOT_TELEGRAM__TOKEN") || !strings.Contains(out, "accepts the bot token again") {
		t.Errorf("the log does not say what to do and that the token is accepted again:\n%s", out)
	}
	if strings.Contains(out, fake.Token()) || strings.Contains(err.Error(), fake.Token()) {
		t.Error("the token is in the log or the error")
	}
}
