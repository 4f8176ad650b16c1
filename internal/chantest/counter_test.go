package chantest

import (
	"context"
	"sync"
	"testing"

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
