package delivery

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/runs"
)

// TestMessageFailingPartWayIsSentWhole proves a closing message of several pieces that fails
// after the platform took some is not shown in part and then again whole: the pieces posted
// are withdrawn before the send is tried again — by the rate limit's wait, or by the run's next
// try — so every piece shows once; and where they cannot be withdrawn, the next try's resend is
// counted as a possible double.
func TestMessageFailingPartWayIsSentWhole(t *testing.T) {
	answer, ps := paragraphs(12) // ~700 characters: several pieces of 100
	opts := func(o *Options) { o.PlaceholderAfter = time.Hour }
	shown := func(h *deliveryHarness) string { return strings.Join(h.ch.Visible(), "") }

	t.Run("rate limited part-way", func(t *testing.T) {
		h := newDeliveryHarness(t)
		h.ch.PieceLen = 100
		h.ch.PartN, h.ch.PartAt, h.ch.PartErr = 1, 3, &channels.RateLimitError{RetryAfter: 10 * time.Millisecond}
		h.deliver(h.delivery(h.ch, opts), attempt(1, "", started("r1"), final("r1", answer))...)
		inOrderOnce(t, shown(h), ps)
		if got := h.metrics.Get("outbound/test/partial_withdrawn"); got != 1 {
			t.Errorf("partial_withdrawn counted %d, want 1", got)
		}
		h.ch.Mu.Lock()
		deleted := len(h.ch.Deletes)
		h.ch.Mu.Unlock()
		if deleted != 3 {
			t.Errorf("%d pieces deleted, want the 3 posted before the rate limit", deleted)
		}
	})

	t.Run("refused part-way, then the next try", func(t *testing.T) {
		h := newDeliveryHarness(t)
		h.ch.PieceLen = 100
		h.ch.PartN, h.ch.PartAt = 1, 2
		d := h.delivery(h.ch, opts)
		h.deliver(d, attempt(1, "", started("r1"))...)
		err := d.Deliver(h.ctx, runs.Event{RunID: "r1", Conv: deliveryConv, Kind: runs.EventFinal, Text: answer, Attempt: 1})
		if err == nil {
			t.Fatal("the closing message failed part-way and Deliver returned no error")
		}
		if n := len(h.ch.Visible()); n != 0 {
			t.Fatalf("%d pieces of the failed message still shown, want them withdrawn", n)
		}
		h.deliver(d, attempt(2, "", final("r1", answer))...)
		inOrderOnce(t, shown(h), ps)
		if got := h.metrics.Get("outbound/test/possible_double"); got != 0 {
			t.Errorf("possible_double counted %d, want 0: nothing of the first try is left", got)
		}
	})

	t.Run("pieces that cannot be withdrawn", func(t *testing.T) {
		h := newDeliveryHarness(t)
		h.ch.PieceLen = 100
		h.ch.PartN, h.ch.PartAt, h.ch.FailDeletes = 1, 2, true
		d := h.delivery(h.ch, opts)
		h.deliver(d, attempt(1, "", started("r1"))...)
		err := d.Deliver(h.ctx, runs.Event{RunID: "r1", Conv: deliveryConv, Kind: runs.EventFinal, Text: answer, Attempt: 1})
		var pp *partlyPosted
		if !errors.As(err, &pp) || !mayHavePosted(err) {
			t.Fatalf("Deliver returned %v, want a partly posted error that may have posted", err)
		}
		if got := h.metrics.Get("outbound/test/partial_left"); got != 1 {
			t.Errorf("partial_left counted %d, want 1", got)
		}
		h.deliver(d, attempt(2, "", final("r1", answer))...)
		if got := h.metrics.Get("outbound/test/possible_double"); got != 1 {
			t.Errorf("possible_double counted %d, want 1: the first try's pieces still show", got)
		}
	})

	t.Run("keyed sends keep their pieces", func(t *testing.T) {
		h := newDeliveryHarness(t)
		h.ch.PieceLen = 100
		h.ch.PartN, h.ch.PartAt = 1, 2
		d := h.delivery(keyedChannel{h.ch, map[string]channels.MessageRef{}}, opts)
		h.deliver(d, attempt(1, "", started("r1"))...)
		if err := d.Deliver(h.ctx, runs.Event{RunID: "r1", Conv: deliveryConv, Kind: runs.EventFinal, Text: answer, Attempt: 1}); err == nil {
			t.Fatal("want the failure reported")
		}
		if n := len(h.ch.Visible()); n != 2 {
			t.Errorf("%d pieces shown, want the 2 posted kept (the resend returns them)", n)
		}
		if got := h.metrics.Get("outbound/test/partial_withdrawn") + h.metrics.Get("outbound/test/partial_left"); got != 0 {
			t.Errorf("partial sends counted %d on a keyed channel, want 0", got)
		}
	})
}
