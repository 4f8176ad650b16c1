package delivery

import (
	"context"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/internal/forms"
	"github.com/switchboard-bot/switchboard/core/runs"
)

// approvalCard posts the approval card of a call that waits inside its run, as a message of its
// own beside the run's card. A card that cannot be posted is logged: the call then waits until
// the approval expires.
func (d *Delivery) approvalCard(ctx context.Context, ch channels.Channel, c *runCard, ev runs.Event) {
	if ev.Form == nil || ev.Form.Approval == nil {
		return
	}
	card := forms.Card(*ev.Form, ev.Text, 0, forms.Partial{}, c.runID)
	err := channels.RetryRateLimited(ctx, time.Minute, 3, func(ctx context.Context) error {
		_, err := ch.Send(ctx, channels.Target{Conv: c.conv, ReplyTo: c.replyTo}, channels.Message{Card: &card})
		return err
	})
	if err != nil {
		d.m.OutboundError(c.conv.Platform, "send_failed")
		d.log.Warn("channels: posting an approval card failed; the call waits until the approval expires", "run", c.runID, "approval", ev.Form.ID, "err", err)
	}
}
