package router

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
)

// gatedChannel is a fakeChannel whose Send waits at a gate: entered receives each Send as it
// starts, and a value on release lets one through (a closed release lets every one through).
type gatedChannel struct {
	*fakeChannel
	entered chan string
	release chan struct{}
}

func (g *gatedChannel) Send(ctx context.Context, to channels.Target, m channels.Message) (channels.MessageRef, error) {
	g.entered <- m.Text
	select {
	case <-g.release:
	case <-ctx.Done():
		return channels.MessageRef{}, ctx.Err()
	}
	return g.fakeChannel.Send(ctx, to, m)
}

// TestRouterRepliesDoNotHoldHandleInbound proves a command's reply and a refusal are sent after
// HandleInbound returns — a platform's ack waits for the durable enqueue, not for a post that
// may wait out a rate limit for a minute — and that the replies still go out, one
// conversation's in order, with Close waiting for them.
func TestRouterRepliesDoNotHoldHandleInbound(t *testing.T) {
	h := newHarness(t)
	g := &gatedChannel{fakeChannel: h.ch, entered: make(chan string, 4), release: make(chan struct{})}
	chat := dm("gated")
	for _, text := range []string{"/whoami", "/nosuchcommand", strings.Repeat("x", DefaultMaxMessageChars+1)} {
		// Every Send is held at the gate: HandleInbound returning proves it did not wait for it.
		if err := h.router.HandleInbound(h.ctx, g, channels.Inbound{Conv: chat, Identity: user("u1"), Text: text, Direct: true}); err != nil {
			t.Fatalf("HandleInbound(%.20q): %v", text, err)
		}
	}
	if first := <-g.entered; !strings.Contains(first, "`u1`") {
		t.Fatalf("first reply to reach the channel %q, want /whoami's", first)
	}
	if n := len(h.ch.Sent()); n != 0 {
		t.Fatalf("%d replies posted before the gate opened", n)
	}
	closed := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		closed <- h.router.Close(ctx)
	}()
	for range 3 {
		g.release <- struct{}{}
	}
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	sent := h.ch.Sent()
	if len(sent) != 3 || !strings.Contains(sent[0].Text, "`u1`") || !strings.Contains(sent[1].Text, "/nosuchcommand") ||
		!strings.Contains(sent[2].Text, "too long") {
		t.Fatalf("replies after Close, in order: %+v", sent)
	}
	// After Close, a reply is sent before HandleInbound returns: nothing is left behind.
	close(g.release)
	if err := h.router.HandleInbound(h.ctx, g, channels.Inbound{Conv: chat, Identity: user("u1"), Text: "/whoami", Direct: true}); err != nil {
		t.Fatal(err)
	}
	if n := len(h.ch.Sent()); n != 4 {
		t.Fatalf("%d replies after a command handled past Close, want 4", n)
	}
}

// TestRouterRepliesToNativeCommandsBeforeReturning proves a native command's reply and an
// interaction's notice still go out before HandleInbound returns: the adapter acknowledged
// those on its own clock, and Discord fills a command's deferred response with the reply, which
// it can do only while the command is being handled.
func TestRouterRepliesToNativeCommandsBeforeReturning(t *testing.T) {
	h := newHarness(t)
	chat := dm("native")
	if err := h.router.HandleInbound(h.ctx, h.ch, channels.Inbound{Conv: chat, Identity: user("u1"), Command: "whoami", Direct: true}); err != nil {
		t.Fatal(err)
	}
	if sent := h.ch.Sent(); len(sent) != 1 || !strings.Contains(sent[0].Text, "`u1`") {
		t.Fatalf("sent when HandleInbound returned: %+v, want the command's reply", sent)
	}
	if n := h.router.replies.Pending(); n != 0 {
		t.Fatalf("%d replies left for later", n)
	}
}
