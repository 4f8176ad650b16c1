package delivery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/render"
)

// sender sends and edits messages within the platforms' limits: rate limits waited out (up to
// maxWait a wait, attempts tries), refused cards sent as plain text, a message that failed
// part-way withdrawn, a message an earlier attempt sent found instead of sent again.
type sender struct {
	maxWait  time.Duration
	attempts int
	log      *slog.Logger
	m        Metrics
	now      func() time.Time
}

// dropSecond deletes ref, a message of step that another attempt of the run posted too and
// recorded first (an attempt taken over while it still ran); it reports whether ref is gone.
func (sn *sender) dropSecond(ctx context.Context, ch channels.Channel, c *runCard, step string, ref channels.MessageRef) bool {
	del, ok := ch.(channels.Deleter)
	if !ok {
		return false
	}
	err := channels.RetryRateLimited(ctx, sn.maxWait, sn.attempts, func(ctx context.Context) error {
		return del.Delete(ctx, ref)
	})
	if err != nil && !errors.Is(err, channels.ErrMessageGone) {
		sn.m.OutboundError(c.conv.Platform, "delete_failed")
		sn.log.Warn("channels: deleting a message another attempt of the run also posted failed; it shows twice", "run", c.runID, "step", step, "err", err)
		return false
	}
	sn.log.Info("channels: deleted a message another attempt of the run had posted first", "run", c.runID, "step", step)
	return true
}

// sentFindMargin widens the look-up of an earlier attempt's message (SentFinder) for the
// difference between this process's clock, which stamped the intent, and the platform's.
const sentFindMargin = time.Minute

// sendAnew sends card as a new message with key, unless the channel can find it already sent
// by the earlier attempt that intended the same send at earlier (non-zero; SentFinder): then it
// returns that message, found true. A failed look-up is logged and the card sent.
func (sn *sender) sendAnew(ctx context.Context, ch channels.Channel, c *runCard, to channels.Target, card render.Card, key string, earlier time.Time) (ref channels.MessageRef, found bool, err error) {
	if f, ok := ch.(channels.SentFinder); ok && !earlier.IsZero() {
		ref, found, err := f.FindSent(ctx, to, key, earlier.Add(-sentFindMargin))
		switch {
		case err != nil:
			sn.log.Warn("channels: looking for the message an earlier attempt may have sent failed; sending it again", "run", c.runID, "key", key, "err", err)
		case found:
			sn.log.Info("channels: found the message an earlier attempt sent but never recorded; not sending it again", "run", c.runID, "key", key)
			return ref, true, nil
		}
	}
	ref, err = sn.sendKeyed(ctx, ch, to, card, key)
	return ref, false, err
}

// send posts a card; a refused card is sent again as plain text.
func (sn *sender) send(ctx context.Context, ch channels.Channel, to channels.Target, card render.Card) (channels.MessageRef, error) {
	return sn.sendKeyed(ctx, ch, to, card, "")
}

// sendKeyed is send with the message's idempotency key (Message.Key).
func (sn *sender) sendKeyed(ctx context.Context, ch channels.Channel, to channels.Target, card render.Card, key string) (channels.MessageRef, error) {
	var ref channels.MessageRef
	err := channels.RetryRateLimited(ctx, sn.maxWait, sn.attempts, func(ctx context.Context) error {
		var err error
		ref, err = sn.sendWhole(ctx, ch, to, channels.Message{Card: &card, Key: key})
		return err
	})
	if !errors.Is(err, channels.ErrCardRefused) {
		return ref, err
	}
	sn.m.OutboundError(to.Conv.Platform, "card_refused")
	sn.log.Warn("channels: the platform refused a card; sending plain text", "conv", to.Conv.String(), "title", card.Title)
	out := channels.MessageRef{Conv: to.Conv}
	for i, piece := range render.Plain(card) {
		if i > 0 {
			to.ReplyTo = ""
		}
		var r channels.MessageRef
		err := channels.RetryRateLimited(ctx, sn.maxWait, sn.attempts, func(ctx context.Context) error {
			var err error
			r, err = sn.sendWhole(ctx, ch, to, channels.Message{Text: piece, Key: pieceKey(key, i)})
			return err
		})
		if err != nil {
			if len(out.IDs) > 0 {
				return sn.withdraw(ctx, ch, out, fmt.Errorf("channels: sending plain text part %d: %w", i+1, err))
			}
			return out, err
		}
		out.IDs = append(out.IDs, r.IDs...)
	}
	return out, nil
}

// pieceKey is the key of plain-text piece i of a refused card keyed key ("" for none).
func pieceKey(key string, i int) string {
	if key == "" {
		return ""
	}
	return key + ".text" + strconv.Itoa(i)
}

// edit edits ref with card (EditFinal where the channel has it); a refused card is edited in
// as plain text.
func (sn *sender) edit(ctx context.Context, ed channels.Editor, ch channels.Channel, ref channels.MessageRef, card render.Card) (channels.MessageRef, error) {
	do := ed.Edit
	if fe, ok := ch.(channels.FinalEditor); ok {
		do = fe.EditFinal
	}
	call := func(m channels.Message) (channels.MessageRef, error) {
		var out channels.MessageRef
		err := channels.RetryRateLimited(ctx, sn.maxWait, sn.attempts, func(ctx context.Context) error {
			var err error
			out, err = do(ctx, ref, m)
			if err != nil {
				out, err = sn.withdrawAdded(ctx, ch, ref, out, err)
			}
			return err
		})
		return out, err
	}
	out, err := call(channels.Message{Card: &card})
	if errors.Is(err, channels.ErrCardRefused) {
		sn.m.OutboundError(ref.Conv.Platform, "card_refused")
		out, err = call(channels.Message{Text: strings.Join(render.Plain(card), "\n\n")})
	}
	if errors.Is(err, channels.ErrNotModified) {
		return ref, nil
	}
	if err == nil && len(out.IDs) == 0 {
		out = ref
	}
	return out, err
}
