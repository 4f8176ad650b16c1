package slack

import (
	"context"
	"testing"
)

// TestConversationBacklogIsNotBounded proves Slack's backlog rule for the envelopes handed over
// in order per conversation (kit.Lanes): nothing is dropped however many wait behind a busy
// conversation — an envelope is acknowledged only once handed over, so Slack's retries bound
// what waits — where Discord's adapter drops past its bound.
func TestConversationBacklogIsNotBounded(t *testing.T) {
	ch, err := New(Config{BotToken: "xoxb-1", AppToken: "xapp-1"})
	if err != nil {
		t.Fatal(err)
	}
	release, started := make(chan struct{}), make(chan struct{})
	ch.dispatcher.lanes.Run("busy", func() { close(started); <-release })
	<-started
	const backlog = 20000 // twice Discord's bound
	ran := 0
	for i := range backlog {
		if !ch.dispatcher.lanes.Run("busy", func() { ran++ }) {
			t.Fatalf("envelope %d refused", i)
		}
	}
	close(release)
	ch.dispatcher.lanes.Wait(context.Background())
	if ran != backlog {
		t.Fatalf("%d handed over, want %d", ran, backlog)
	}
}
