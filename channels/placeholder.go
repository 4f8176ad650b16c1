package channels

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/switchboard-bot/switchboard/core/runs"
	"github.com/switchboard-bot/switchboard/render"
)

// typingLasts is how long a platform's typing indicator shows after one signal — Telegram's,
// the shortest, lasts about 5 s — less a margin. The router signals typing at receipt; a run
// started later than this after its receipt signals it again (with a grace period, it is the
// only working signal until the placeholder).
const typingLasts = 4 * time.Second

// start shows the "working" signal on a run's started event: typing (when the receipt's may have
// expired), a reaction on the message answered, and the placeholder card — posted at once, or
// owed until the grace period ends — or, on a replay, the placeholder an earlier attempt posted.
func (d *Delivery) start(ctx context.Context, ch Channel, c *runCard, ev runs.Event) {
	c.started = ev.At
	if c.started.IsZero() {
		c.started = d.now()
	}
	lazy := d.opt.PlaceholderAfter > 0
	if t, ok := ch.(Typer); ok && (!lazy || d.receiptTypingExpired(c.runID)) {
		if err := t.Typing(ctx, Target{Conv: c.conv, ReplyTo: c.replyTo}); err != nil {
			d.log.Debug("channels: typing signal failed", "run", c.runID, "err", err)
		}
	}
	d.keepTyping(ch, c)
	if rx, ok := ch.(Reactor); ok && c.replyTo != "" {
		if err := rx.React(ctx, MessageRef{Conv: c.conv, IDs: []string{c.replyTo}}, "👀"); err != nil {
			d.log.Debug("channels: reaction failed", "run", c.runID, "err", err)
		}
	}
	switch {
	case c.ref.ID() != "":
		d.editProgress(ctx, ch, c) // a replay: reuse the placeholder
	case !c.finalIntent.IsZero():
		// An earlier attempt may have sent the closing message: no placeholder before it.
	case c.owed:
		// Another attempt of the run in this process already started the grace period.
	case lazy && d.oweGrace(ch, c):
	default:
		// A first attempt's placeholder at its start cannot follow another attempt's answer.
		d.postPlaceholder(ctx, ch, c, ev.Attempt > 1)
	}
}

// keepTyping signals typing again every typingLasts while c's run works, so that the platform's
// indicator (Telegram's shows about 5 s, Discord's 10 s) does not lapse before the answer: the
// adapter's TypingSignals skip a signal still showing. A closing event, Close and forgetting
// the card stop it (stopTimers). The caller holds c.mu.
func (d *Delivery) keepTyping(ch Channel, c *runCard) {
	t, ok := ch.(Typer)
	if !ok || c.done {
		return
	}
	d.stopTyping(c)
	gen := c.typingGen
	s, ok := d.scheduleWith(d.typingAfterFunc, c, typingLasts, func() {
		if gen != c.typingGen || c.done {
			return // stopped, or a later refresh owns c
		}
		c.typing = nil
		ctx, cancel := context.WithTimeout(d.closing, typingLasts)
		defer cancel()
		if err := t.Typing(ctx, Target{Conv: c.conv, ReplyTo: c.replyTo}); err != nil {
			d.log.Debug("channels: typing signal failed", "run", c.runID, "err", err)
		}
		d.keepTyping(ch, c)
	})
	if ok {
		c.typing = s
	}
}

// stopTyping cancels c's next typing refresh; the caller holds c.mu.
func (d *Delivery) stopTyping(c *runCard) {
	c.typingGen++
	if c.typing != nil && c.typing.Stop() {
		d.wg.Done() // the callback will never run
	}
	c.typing = nil
}

// receiptTypingExpired reports whether the typing signal the router sent at the run's receipt may
// have stopped showing. Run ids are ULIDs made at receipt, so their time is the receipt's; an id
// that is not one (or a dead letter replayed long after) counts as expired.
func (d *Delivery) receiptTypingExpired(runID string) bool {
	return d.receiptOlderThan(runID, typingLasts)
}

// receiptOlderThan reports whether the run was received at least age ago (run ids are ULIDs
// made at receipt); an id that is not a ULID counts as older.
func (d *Delivery) receiptOlderThan(runID string, age time.Duration) bool {
	id, err := ulid.ParseStrict(runID)
	if err != nil {
		return true
	}
	return d.now().Sub(ulid.Time(id.Time())) >= age
}

// oweGrace defers c's placeholder by the grace period; it reports false after Close (the
// placeholder is then posted at once, as Close stops timers).
func (d *Delivery) oweGrace(ch Channel, c *runCard) bool {
	c.graceGen++
	gen := c.graceGen
	t, ok := d.schedule(c, d.opt.PlaceholderAfter, func() {
		if gen != c.graceGen || !c.owed || c.done {
			return // a closing event came first (or Close, or a later grace period owns c)
		}
		c.grace = nil
		c.owed = false
		ctx, cancel := context.WithTimeout(d.closing, d.opt.MaxRetryWait)
		defer cancel()
		d.placeholderDue(ctx, ch, c)
	})
	if ok {
		c.owed, c.grace = true, t
	}
	return ok
}

// stopGrace cancels c's owed placeholder; the caller holds c.mu.
func (d *Delivery) stopGrace(c *runCard) {
	c.owed = false
	c.graceGen++
	if c.grace != nil && c.grace.Stop() {
		d.wg.Done() // the callback will never run
	}
	c.grace = nil
}

// placeholderDue posts the placeholder of a run that outlasted the grace period, with the
// progress and subagent results kept meanwhile. It first reads the run's records again (one
// round trip, only for runs this slow): an attempt of the run in another process may have
// delivered its closing message (nothing is posted, and this attempt's events are skipped) or
// posted a placeholder (it is edited instead).
func (d *Delivery) placeholderDue(ctx context.Context, ch Channel, c *runCard) {
	d.load(ctx, c)
	switch {
	case c.done:
		d.log.Debug("channels: another attempt delivered the run during the grace period", "run", c.runID)
	case !c.finalIntent.IsZero() && c.ref.ID() == "":
		d.log.Debug("channels: another attempt is sending the run's closing message; no placeholder", "run", c.runID)
	case c.ref.ID() != "":
		d.editProgress(ctx, ch, c)
	default:
		d.postPlaceholder(ctx, ch, c, true)
	}
}

// postPlaceholder sends the working card, in reply to the message the run answers, and records
// it so a replay edits it instead of posting another; its write-ahead intent, before the send,
// lets a replay count a placeholder an earlier attempt may have left (countPossibleDouble).
// With late set — the placeholder follows a read of the run's records, which another attempt
// may have outdated since — the final record is read once more after the card's (see
// dropStrayCard), and the placeholder removed if the run was answered meanwhile. Where the
// answer streams, its stream is the working message instead.
func (d *Delivery) postPlaceholder(ctx context.Context, ch Channel, c *runCard, late bool) {
	if _, ok := d.streamer(ch, c); ok && (c.stream == nil || c.stream.ref.ID() == "") {
		if c.stream == nil {
			c.stream = &runStream{}
		}
		d.startStream(ctx, ch, c)
		return
	}
	earlier := d.intend(ctx, c, StepCardIntent)
	ref, found, err := d.sendAnew(ctx, ch, c, Target{Conv: c.conv, ReplyTo: c.replyTo}, d.workingCard(c), c.runID+":"+StepCard, earlier)
	if found {
		earlier = time.Time{}
	}
	if err != nil {
		d.m.OutboundError(c.conv.Platform, "send_failed")
		d.log.Warn("channels: posting the placeholder failed; the answer will be sent as a new message", "run", c.runID, "err", err)
		return
	}
	c.ref, c.lastEdit = ref, d.now()
	if other, found := d.record(ctx, c.runID, StepCard, ref); found {
		// Another attempt of the run posted its placeholder first: this one is a second. It is
		// deleted and the first one edited from now on.
		if d.dropSecond(ctx, ch, c, StepCard, ref) {
			c.ref = other
		}
	} else {
		d.countPossibleDouble(ch, c, StepCard, earlier)
	}
	if !late {
		return
	}
	// An attempt that sent the closing message anew meanwhile may not have seen this card's
	// record (dropStrayCard): the placeholder is removed here then.
	b, found, err := d.opt.Threads.Outbound(ctx, c.runID, StepFinal)
	if err != nil || !found {
		return
	}
	var final MessageRef
	if json.Unmarshal(b, &final) == nil && final.ID() != c.ref.ID() {
		d.removePlaceholder(ctx, ch, c, c.ref)
	}
	c.done = true
}

// removePlaceholder deletes ref, a placeholder of c the closing message did not replace, or
// where the platform cannot delete, turns it into a pointer to the answer.
func (d *Delivery) removePlaceholder(ctx context.Context, ch Channel, c *runCard, ref MessageRef) {
	platform := c.conv.Platform
	if del, ok := ch.(Deleter); ok {
		err := withRateLimit(ctx, d.opt.MaxRetryWait, d.opt.RateLimitAttempts, func(ctx context.Context) error {
			return del.Delete(ctx, ref)
		})
		if err == nil || errors.Is(err, ErrMessageGone) {
			return
		}
		d.m.OutboundError(platform, "delete_failed")
		d.log.Warn("channels: deleting the placeholder failed", "run", c.runID, "err", err)
	}
	if ed, ok := ch.(Editor); ok {
		card := render.Card{Title: "Done", Status: render.StatusDone, Body: "_The answer is below._", Footer: d.footer(c)}
		if _, err := ed.Edit(ctx, ref, Message{Card: &card}); err != nil && !errors.Is(err, ErrNotModified) {
			d.log.Warn("channels: the placeholder could not be removed or updated", "run", c.runID, "err", err)
		}
	}
}
