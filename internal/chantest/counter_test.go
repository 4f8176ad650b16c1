package chantest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
)

func TestCounterClosesDoneAtWant(t *testing.T) {
	c := NewCounter(100)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 30 {
				_ = c.HandleInbound(context.Background(), nil, channels.Inbound{})
			}
		})
	}
	wg.Wait()
	select {
	case <-c.Done():
	default:
		t.Fatal("Done not closed after 120 messages, want closed at the 100th")
	}
	if c.Count() != 120 {
		t.Fatalf("Count = %d, want 120", c.Count())
	}
	only := NewCounter(0)
	_ = only.HandleInbound(context.Background(), nil, channels.Inbound{})
	select {
	case <-only.Done():
		t.Fatal("a counter that only counts closed Done")
	default:
	}
}

func TestWaitsRecordsInOrderAndHonoursTheContext(t *testing.T) {
	var w Waits
	if err := w.Wait(context.Background(), time.Second); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Wait(ctx, 2*time.Second); err != context.Canceled {
		t.Fatalf("Wait on an ended context: %v, want context.Canceled", err)
	}
	if got := w.All(); len(got) != 2 || got[0] != time.Second || got[1] != 2*time.Second {
		t.Fatalf("All = %v, want [1s 2s]", got)
	}
}
