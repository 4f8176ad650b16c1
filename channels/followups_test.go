package channels

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// gatedChannel is a fakeChannel whose Send waits at a gate: entered receives each Send as it
// starts, and a value on release lets one through (a closed release lets every one through).
type gatedChannel struct {
	*fakeChannel
	entered chan string
	release chan struct{}
}

func (g *gatedChannel) Send(ctx context.Context, to Target, m Message) (MessageRef, error) {
	g.entered <- m.Text
	select {
	case <-g.release:
	case <-ctx.Done():
		return MessageRef{}, ctx.Err()
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
		if err := h.router.HandleInbound(h.ctx, g, Inbound{Conv: chat, Identity: user("u1"), Text: text, Direct: true}); err != nil {
			t.Fatalf("HandleInbound(%.20q): %v", text, err)
		}
	}
	if first := <-g.entered; !strings.Contains(first, "`u1`") {
		t.Fatalf("first reply to reach the channel %q, want /whoami's", first)
	}
	if n := len(h.ch.sent()); n != 0 {
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
	sent := h.ch.sent()
	if len(sent) != 3 || !strings.Contains(sent[0].Text, "`u1`") || !strings.Contains(sent[1].Text, "/nosuchcommand") ||
		!strings.Contains(sent[2].Text, "too long") {
		t.Fatalf("replies after Close, in order: %+v", sent)
	}
	// After Close, a reply is sent before HandleInbound returns: nothing is left behind.
	close(g.release)
	if err := h.router.HandleInbound(h.ctx, g, Inbound{Conv: chat, Identity: user("u1"), Text: "/whoami", Direct: true}); err != nil {
		t.Fatal(err)
	}
	if n := len(h.ch.sent()); n != 4 {
		t.Fatalf("%d replies after a command handled past Close, want 4", n)
	}
}

// TestFollowupsOrderPerKeyAndClose proves Followups' contract: one key's work runs in order
// while other keys run beside it, Close waits for work given before it, cuts short what is
// still running when its deadline passes, and runs later work on the caller's goroutine.
func TestFollowupsOrderPerKeyAndClose(t *testing.T) {
	f := NewFollowups()
	var mu sync.Mutex
	var order []string
	gate := make(chan struct{})
	f.Go(context.Background(), "a", func(context.Context) {
		<-gate
		mu.Lock()
		order = append(order, "a1")
		mu.Unlock()
	})
	f.Go(context.Background(), "a", func(context.Context) {
		mu.Lock()
		order = append(order, "a2")
		mu.Unlock()
	})
	bDone := make(chan struct{})
	f.Go(context.Background(), "b", func(context.Context) { close(bDone) })
	<-bDone // b ran while a's first work waits; it is counted done once its function returned
	waitFor(t, "a's two works pending, b's done", func() bool { return f.Pending() == 2 })
	close(gate)
	stuck := make(chan struct{})
	f.Go(context.Background(), "c", func(ctx context.Context) {
		close(stuck)
		<-ctx.Done() // work that only ends when cut short
	})
	<-stuck
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := f.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close with stuck work = %v, want it cut short", err)
	}
	mu.Lock()
	got := strings.Join(order, ",")
	mu.Unlock()
	if got != "a1,a2" {
		t.Fatalf("a's work ran as %q, want a1,a2", got)
	}
	ran := false
	f.Go(context.Background(), "a", func(context.Context) { ran = true })
	if !ran || f.Pending() != 0 {
		t.Fatalf("work after Close: ran inline = %v, pending %d", ran, f.Pending())
	}
	if err := f.Close(context.Background()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestRouterRepliesToNativeCommandsBeforeReturning proves a native command's reply and an
// interaction's notice still go out before HandleInbound returns: the adapter acknowledged
// those on its own clock, and Discord fills a command's deferred response with the reply, which
// it can do only while the command is being handled.
func TestRouterRepliesToNativeCommandsBeforeReturning(t *testing.T) {
	h := newHarness(t)
	chat := dm("native")
	if err := h.router.HandleInbound(h.ctx, h.ch, Inbound{Conv: chat, Identity: user("u1"), Command: "whoami", Direct: true}); err != nil {
		t.Fatal(err)
	}
	if sent := h.ch.sent(); len(sent) != 1 || !strings.Contains(sent[0].Text, "`u1`") {
		t.Fatalf("sent when HandleInbound returned: %+v, want the command's reply", sent)
	}
	if n := h.router.replies.Pending(); n != 0 {
		t.Fatalf("%d replies left for later", n)
	}
}

// TestFollowupsRunInlinePastTheBound proves a storm does not pile up goroutines: with
// MaxFollowups pending, further work runs on the caller's goroutine.
func TestFollowupsRunInlinePastTheBound(t *testing.T) {
	f := NewFollowups()
	gate := make(chan struct{})
	for i := range MaxFollowups {
		f.Go(context.Background(), "k"+strconv.Itoa(i%7), func(context.Context) { <-gate })
	}
	ran := false
	f.Go(context.Background(), "k0", func(context.Context) { ran = true })
	if !ran {
		t.Fatal("work past the bound went to a goroutine")
	}
	close(gate)
	if err := f.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}
