package discord

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/logbuf"
)

// TestChannelBacklogIsBoundedAtMaxQueued proves Discord's backlog rule for the messages handed
// over in order per channel (kit.Lanes): the gateway never redelivers, so a busy channel's
// messages queue up to maxQueued behind the one being handed over and the next is dropped and
// logged, while other channels still take theirs.
func TestChannelBacklogIsBoundedAtMaxQueued(t *testing.T) {
	var logs logbuf.Buffer
	ch, err := New(Config{Token: "bot-token", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ch.workers.Begin(context.Background())
	release, started := make(chan struct{}), make(chan struct{})
	ch.dispatcher.goOrdered("busy", func(context.Context) { close(started); <-release })
	<-started
	ran := 0
	for range maxQueued {
		ch.dispatcher.goOrdered("busy", func(context.Context) { ran++ }) // one at a time: no race on ran
	}
	ch.dispatcher.goOrdered("busy", func(context.Context) { t.Error("a message past the backlog was handed over") })
	if !strings.Contains(logs.String(), "backlog is full") {
		t.Fatalf("the dropped message was not logged:\n%s", logs.String())
	}
	other := make(chan struct{})
	ch.dispatcher.goOrdered("other", func(context.Context) { close(other) })
	<-other
	close(release)
	ch.dispatcher.lanes.Wait(context.Background())
	if ran != maxQueued {
		t.Fatalf("%d queued messages handed over, want %d", ran, maxQueued)
	}
}
