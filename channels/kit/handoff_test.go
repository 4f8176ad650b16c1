package kit

import (
	"context"
	"sync"
	"testing"

	"github.com/switchboard-bot/switchboard/channels"
)

func TestHandoffHoldsNothingUntilBegin(t *testing.T) {
	var o Handoff[string]
	if h, self := o.State(); h != nil || self != "" {
		t.Fatalf("State before Begin = %v, %q; want nil, \"\"", h, self)
	}
}

func TestHandoffStateIsWhatBeginTookFromAnyGoroutine(t *testing.T) {
	var o Handoff[string]
	called := false
	o.Begin(channels.HandlerFunc(func(context.Context, channels.Channel, channels.Inbound) error { called = true; return nil }), "bot-1")
	var wg sync.WaitGroup
	selves := make([]string, 8)
	for i := range selves {
		wg.Go(func() { _, selves[i] = o.State() })
	}
	wg.Wait()
	for i, s := range selves {
		if s != "bot-1" {
			t.Fatalf("reader %d saw self %q, want bot-1", i, s)
		}
	}
	h, _ := o.State()
	if err := h.HandleInbound(context.Background(), nil, channels.Inbound{}); err != nil || !called {
		t.Fatalf("the Handler taken is not the one given (err %v, called %v)", err, called)
	}
}
