package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/runs"
	"github.com/switchboard-bot/switchboard/render"
)

// placeholders shows that a run works: typing signals while it does, a reaction on the message
// answered, and the "working" card — posted when the grace period ends, edited with progress,
// removed when the closing message is sent anew.
type placeholders struct{ d *Delivery }

// typingLasts is how long a platform's typing indicator shows after one signal — Telegram's,
// the shortest, lasts about 5 s — less a margin. The router signals typing at receipt; a run
// started later than this after its receipt signals it again (with a grace period, it is the
// only working signal until the placeholder).
const typingLasts = 4 * time.Second

// start shows the "working" signal on a run's started event: typing (when the receipt's may have
// expired), a reaction on the message answered, and the placeholder card — posted at once, or
// owed until the grace period ends — or, on a replay, the placeholder an earlier attempt posted.
func (ph placeholders) start(ctx context.Context, ch channels.Channel, c *runCard, ev runs.Event) {
	c.started = ev.At
	if c.started.IsZero() {
		c.started = ph.d.now()
	}
	lazy := ph.d.opt.PlaceholderAfter > 0
	if t, ok := ch.(channels.Typer); ok && (!lazy || ph.receiptTypingExpired(c.runID)) {
		if err := t.Typing(ctx, channels.Target{Conv: c.conv, ReplyTo: c.replyTo}); err != nil {
			ph.d.log.Debug("channels: typing signal failed", "run", c.runID, "err", err)
		}
	}
	ph.keepTyping(ch, c)
	if rx, ok := ch.(channels.Reactor); ok && c.replyTo != "" {
		if err := rx.React(ctx, channels.MessageRef{Conv: c.conv, IDs: []string{c.replyTo}}, "👀"); err != nil {
			ph.d.log.Debug("channels: reaction failed", "run", c.runID, "err", err)
		}
	}
	switch {
	case c.ref.ID() != "":
		ph.d.editProgress(ctx, ch, c) // a replay: reuse the placeholder
	case !c.finalIntent.IsZero():
		// An earlier attempt may have sent the closing message: no placeholder before it.
	case c.owed:
		// Another attempt of the run in this process already started the grace period.
	case lazy && ph.oweGrace(ch, c):
	default:
		// A first attempt's placeholder at its start cannot follow another attempt's answer.
		ph.postPlaceholder(ctx, ch, c, ev.Attempt > 1)
	}
}

// keepTyping signals typing again every typingLasts while c's run works, so that the platform's
// indicator (Telegram's shows about 5 s, Discord's 10 s) does not lapse before the answer: the
// adapter's TypingSignals skip a signal still showing. A closing event, Close and forgetting
// the card stop it (stopTimers). The caller holds c.mu.
func (ph placeholders) keepTyping(ch channels.Channel, c *runCard) {
	t, ok := ch.(channels.Typer)
	if !ok || c.done {
		return
	}
	ph.stopTyping(c)
	gen := c.typingGen
	s, ok := ph.d.scheduleWith(ph.d.typingAfterFunc, c, typingLasts, func() {
		if gen != c.typingGen || c.done {
			return // stopped, or a later refresh owns c
		}
		c.typing = nil
		ctx, cancel := context.WithTimeout(ph.d.closing, typingLasts)
		defer cancel()
		if err := t.Typing(ctx, channels.Target{Conv: c.conv, ReplyTo: c.replyTo}); err != nil {
			ph.d.log.Debug("channels: typing signal failed", "run", c.runID, "err", err)
		}
		ph.keepTyping(ch, c)
	})
	if ok {
		c.typing = s
	}
}

// stopTyping cancels c's next typing refresh; the caller holds c.mu.
func (ph placeholders) stopTyping(c *runCard) {
	c.typingGen++
	if c.typing != nil && c.typing.Stop() {
		ph.d.wg.Done() // the callback will never run
	}
	c.typing = nil
}

// receiptTypingExpired reports whether the typing signal the router sent at the run's receipt may
// have stopped showing. Run ids are ULIDs made at receipt, so their time is the receipt's; an id
// that is not one (or a dead letter replayed long after) counts as expired.
func (ph placeholders) receiptTypingExpired(runID string) bool {
	return ph.receiptOlderThan(runID, typingLasts)
}

// receiptOlderThan reports whether the run was received at least age ago (run ids are ULIDs
// made at receipt); an id that is not a ULID counts as older.
func (ph placeholders) receiptOlderThan(runID string, age time.Duration) bool {
	id, err := ulid.ParseStrict(runID)
	if err != nil {
		return true
	}
	return ph.d.now().Sub(ulid.Time(id.Time())) >= age
}

// oweGrace defers c's placeholder by the grace period; it reports false after Close (the
// placeholder is then posted at once, as Close stops timers).
func (ph placeholders) oweGrace(ch channels.Channel, c *runCard) bool {
	c.graceGen++
	gen := c.graceGen
	t, ok := ph.d.schedule(c, ph.d.opt.PlaceholderAfter, func() {
		if gen != c.graceGen || !c.owed || c.done {
			return // a closing event came first (or Close, or a later grace period owns c)
		}
		c.grace = nil
		c.owed = false
		ctx, cancel := context.WithTimeout(ph.d.closing, ph.d.opt.MaxRetryWait)
		defer cancel()
		ph.placeholderDue(ctx, ch, c)
	})
	if ok {
		c.owed, c.grace = true, t
	}
	return ok
}

// stopGrace cancels c's owed placeholder; the caller holds c.mu.
func (ph placeholders) stopGrace(c *runCard) {
	c.owed = false
	c.graceGen++
	if c.grace != nil && c.grace.Stop() {
		ph.d.wg.Done() // the callback will never run
	}
	c.grace = nil
}

// placeholderDue posts the placeholder of a run that outlasted the grace period, with the
// progress and subagent results kept meanwhile. It first reads the run's records again (one
// round trip, only for runs this slow): an attempt of the run in another process may have
// delivered its closing message (nothing is posted, and this attempt's events are skipped) or
// posted a placeholder (it is edited instead).
func (ph placeholders) placeholderDue(ctx context.Context, ch channels.Channel, c *runCard) {
	ph.d.rs.load(ctx, c)
	switch {
	case c.done:
		ph.d.log.Debug("channels: another attempt delivered the run during the grace period", "run", c.runID)
	case !c.finalIntent.IsZero() && c.ref.ID() == "":
		ph.d.log.Debug("channels: another attempt is sending the run's closing message; no placeholder", "run", c.runID)
	case c.ref.ID() != "":
		ph.d.editProgress(ctx, ch, c)
	default:
		ph.postPlaceholder(ctx, ch, c, true)
	}
}

// postPlaceholder sends the working card, in reply to the message the run answers, and records
// it so a replay edits it instead of posting another; its write-ahead intent, before the send,
// lets a replay count a placeholder an earlier attempt may have left (countPossibleDouble).
// With late set — the placeholder follows a read of the run's records, which another attempt
// may have outdated since — the final record is read once more after the card's (see
// dropStrayCard), and the placeholder removed if the run was answered meanwhile. Where the
// answer streams, its stream is the working message instead.
func (ph placeholders) postPlaceholder(ctx context.Context, ch channels.Channel, c *runCard, late bool) {
	if _, ok := ph.d.sm.streamer(ch, c); ok && (c.stream == nil || c.stream.ref.ID() == "") {
		if c.stream == nil {
			c.stream = &runStream{}
		}
		ph.d.sm.startStream(ctx, ch, c)
		return
	}
	earlier := ph.d.rs.intend(ctx, c, StepCardIntent)
	ref, found, err := ph.d.sn.sendAnew(ctx, ch, c, channels.Target{Conv: c.conv, ReplyTo: c.replyTo}, ph.d.workingCard(c), c.runID+":"+StepCard, earlier)
	if found {
		earlier = time.Time{}
	}
	if err != nil {
		ph.d.m.OutboundError(c.conv.Platform, "send_failed")
		ph.d.log.Warn("channels: posting the placeholder failed; the answer will be sent as a new message", "run", c.runID, "err", err)
		return
	}
	c.ref, c.lastEdit = ref, ph.d.now()
	if other, found := ph.d.rs.record(ctx, c.runID, StepCard, ref); found {
		// Another attempt of the run posted its placeholder first: this one is a second. It is
		// deleted and the first one edited from now on.
		if ph.d.sn.dropSecond(ctx, ch, c, StepCard, ref) {
			c.ref = other
		}
	} else {
		ph.d.rs.countPossibleDouble(ch, c, StepCard, earlier)
	}
	if !late {
		return
	}
	// An attempt that sent the closing message anew meanwhile may not have seen this card's
	// record (dropStrayCard): the placeholder is removed here then.
	b, found, err := ph.d.rs.store.Outbound(ctx, c.runID, StepFinal)
	if err != nil || !found {
		return
	}
	var final channels.MessageRef
	if json.Unmarshal(b, &final) == nil && final.ID() != c.ref.ID() {
		ph.removePlaceholder(ctx, ch, c, c.ref)
	}
	c.done = true
}

// removePlaceholder deletes ref, a placeholder of c the closing message did not replace, or
// where the platform cannot delete, turns it into a pointer to the answer.
func (ph placeholders) removePlaceholder(ctx context.Context, ch channels.Channel, c *runCard, ref channels.MessageRef) {
	platform := c.conv.Platform
	if del, ok := ch.(channels.Deleter); ok {
		err := channels.RetryRateLimited(ctx, ph.d.opt.MaxRetryWait, ph.d.opt.RateLimitAttempts, func(ctx context.Context) error {
			return del.Delete(ctx, ref)
		})
		if err == nil || errors.Is(err, channels.ErrMessageGone) {
			return
		}
		ph.d.m.OutboundError(platform, "delete_failed")
		ph.d.log.Warn("channels: deleting the placeholder failed", "run", c.runID, "err", err)
	}
	if ed, ok := ch.(channels.Editor); ok {
		card := render.Card{Title: "Done", Status: render.StatusDone, Body: "_The answer is below._", Footer: ph.d.footer(c)}
		if _, err := ed.Edit(ctx, ref, channels.Message{Card: &card}); err != nil && !errors.Is(err, channels.ErrNotModified) {
			ph.d.log.Warn("channels: the placeholder could not be removed or updated", "run", c.runID, "err", err)
		}
	}
}
