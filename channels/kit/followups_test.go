package kit

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/poll"
)

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
	poll.Until(t, "a's two works pending, b's done", func() bool { return f.Pending() == 2 })
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
