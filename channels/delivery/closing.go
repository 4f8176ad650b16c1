package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/internal/forms"
	"github.com/switchboard-bot/switchboard/core/runs"
	"github.com/switchboard-bot/switchboard/render"
)

// closer delivers a run's closing message — the answer, the question, the failure or the
// cancellation: edited into the placeholder or sent anew, recorded, a long answer's rest sent
// as a file or as more messages, a stray placeholder of another attempt removed.
type closer struct{ d *Delivery }

// closingCard is the card a terminal event leaves.
func (cl closer) closingCard(c *runCard, ev runs.Event) render.Card {
	subs := append([]render.SubagentResult(nil), c.subagents...)
	switch ev.Kind {
	case runs.EventFinal:
		body := ev.Text
		if strings.TrimSpace(body) == "" {
			body = "_(No answer.)_"
		}
		return render.Card{Title: "Answer", Status: render.StatusDone, Body: body, Subagents: subs, Footer: cl.d.footer(c)}
	case runs.EventClarification:
		if ev.Form == nil {
			return render.Card{Title: "Question", Status: render.StatusWaiting, Body: ev.Text, Subagents: subs, Footer: cl.d.footer(c)}
		}
		f := *ev.Form
		if _, err := render.EncodeAction(cl.d.opt.ActionKey, render.ActionID{Kind: render.ActionChoose, Token: f.ID}); err != nil && !errors.Is(err, render.ErrNoKey) {
			f.Fields = nil // ids cannot be signed: show it as text, answered by typing
			f.Question = forms.TextAll(*ev.Form)
		}
		card := forms.Card(f, ev.Text, 0, forms.Partial{}, c.runID)
		card.Subagents, card.Footer = subs, cl.d.footer(c)
		return card
	case runs.EventCancelled:
		return render.Card{Title: "Cancelled", Status: render.StatusCancelled, Body: orDefault(ev.Reason, "Cancelled."), Subagents: subs, Footer: cl.d.footer(c)}
	}
	return render.Card{Title: "Something went wrong", Status: render.StatusFailed, Body: orDefault(ev.Reason, "Sorry, this could not be completed."), Subagents: subs, Footer: cl.d.footer(c)}
}

func orDefault(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

// unreachable gives a run's closing message up: the bot can no longer write to the
// conversation, and retrying the run would only fail again.
func (cl closer) unreachable(c *runCard, ev runs.Event, err error) {
	cl.d.m.OutboundError(c.conv.Platform, "unreachable")
	cl.d.log.Warn("channels: the conversation cannot be reached; the run's closing message is given up", "run", c.runID, "kind", ev.Kind, "conv", c.conv.String(), "err", err)
}

// finish delivers the closing message: edited into the placeholder where possible, else sent
// anew with the placeholder removed; then recorded so a replay skips it.
func (cl closer) finish(ctx context.Context, ch channels.Channel, c *runCard, ev runs.Event) error {
	// The run's work is done: a cancel or hand-back arriving now (shutdown) must not cut its
	// closing message off mid-send, which could leave it posted but unrecorded, to be posted
	// again by the next attempt. It gets closingGrace past the run's context.
	ctx, cancel := outlive(ctx, closingGrace)
	defer cancel()
	if c.head.Ref.ID() != "" {
		return cl.finishRest(ctx, ch, c, ev)
	}
	if c.streaming() {
		shown := c.answer
		if cl.d.sm.finishStream(ctx, ch, c, ev) {
			return nil
		}
		if c.stream == nil && c.ref.ID() == "" && ev.Kind == runs.EventClarification && strings.TrimSpace(ev.Text) != "" &&
			strings.Contains(shown, strings.TrimSpace(ev.Text)) {
			ev.Text = "" // the stopped stream shows it, just above the question
		}
	}
	x := &closing{ch: ch, c: c, ev: ev, own: c.ref.ID()}
	x.card = cl.closingCard(c, ev)
	if ev.Kind == runs.EventFinal {
		x.card, x.rest = splitAnswer(ch, x.card, cl.d.opt.MaxAnswerMessages)
	}
	if given := cl.editIn(ctx, x); given {
		return nil
	}
	if !x.edited {
		if given, err := cl.sendNew(ctx, x); given || err != nil {
			return err
		}
	}
	return cl.settle(ctx, x)
}

// closing is one try of a run's closing message: what it shows, and how it went.
type closing struct {
	ch   channels.Channel
	c    *runCard
	ev   runs.Event
	card render.Card
	rest string // a long answer's rest, which follows the card
	// ref is the message that shows the card: the placeholder it was edited into (edited), or
	// the message sent anew.
	ref    channels.MessageRef
	edited bool
	// keep: the placeholder stays, showing the streamed text the new message continues.
	keep bool
	// earlier is when an earlier attempt intended to send the closing message anew, while that
	// message may still show next to this one (zero: it cannot).
	earlier time.Time
	own     string // the placeholder this attempt knows: edited, removed or found gone
}

// editIn edits the closing card into the placeholder, where there is one to edit and no earlier
// attempt's message is to be found instead; given reports that the conversation cannot be
// reached and the closing message is given up.
func (cl closer) editIn(ctx context.Context, x *closing) (given bool) {
	c, ch := x.c, x.ch
	_, keyed := ch.(channels.KeyedSender)
	_, finds := ch.(channels.SentFinder)
	resend := !c.finalIntent.IsZero() && (keyed || finds) // the earlier attempt's message comes back
	ed, ok := ch.(channels.Editor)
	if !ok || c.ref.ID() == "" || resend {
		return false
	}
	out, err := cl.d.sn.edit(ctx, ed, ch, c.ref, x.card)
	switch {
	case err == nil:
		x.ref, x.edited = out, true
	case errors.Is(err, channels.ErrMessageGone):
		cl.d.m.OutboundError(c.conv.Platform, "message_gone")
		c.ref = channels.MessageRef{} // nothing left behind to remove
	case errors.Is(err, channels.ErrUnreachable):
		cl.unreachable(c, x.ev, err)
		return true
	default:
		cl.d.m.OutboundError(c.conv.Platform, "edit_failed")
		cl.d.log.Warn("channels: editing the closing message into the placeholder failed; sending it anew", "run", c.runID, "err", err)
		if c.stream != nil && c.stream.sent > 0 && x.ev.Kind == runs.EventFinal {
			// The message still shows the streamed text: the new one carries only the rest.
			rest := x.ev
			rest.Text = c.unseen(x.ev.Text)
			x.card, _ = splitAnswer(ch, cl.closingCard(c, rest), cl.d.opt.MaxAnswerMessages)
			x.keep = true
		}
	}
	return false
}

// sendNew sends the closing card as a new message, after its write-ahead intent, and removes
// the placeholder it replaces. given reports an unreachable conversation (the closing message
// given up); an error, a send that failed, which the run's next try repeats.
func (cl closer) sendNew(ctx context.Context, x *closing) (given bool, err error) {
	c := x.c
	x.earlier = cl.d.rs.intend(ctx, c, StepFinalIntent)
	if c.finalRefused {
		x.earlier = time.Time{}
	}
	out, found, err := cl.d.sn.sendAnew(ctx, x.ch, c, channels.Target{Conv: c.conv, ReplyTo: c.replyTo}, x.card, c.runID+":"+StepFinal, x.earlier)
	if found {
		x.earlier = time.Time{} // the earlier attempt's message is the one shown: no double
	}
	if errors.Is(err, channels.ErrUnreachable) {
		cl.unreachable(c, x.ev, err)
		return true, nil
	}
	if err != nil {
		// Returned to the run, which is tried again (and re-emits this event) on the outage
		// schedule, then dead-lettered: not lost silently.
		c.finalRefused = !mayHavePosted(err)
		cl.d.m.OutboundError(c.conv.Platform, "final_failed")
		cl.d.log.Debug("channels: the run's closing message could not be delivered", "run", c.runID, "kind", x.ev.Kind, "conv", c.conv.String(), "err", err)
		return false, fmt.Errorf("channels: delivering %s of run %s: %w", x.ev.Kind, c.runID, err)
	}
	x.ref = out
	if c.ref.ID() != "" && !x.keep {
		cl.d.ph.removePlaceholder(ctx, x.ch, c, c.ref)
	}
	return false, nil
}

// settle follows the closing message shown: a long answer's rest, the record a replay finds,
// a second message of another attempt deleted, a possible double counted, a stray placeholder
// removed.
func (cl closer) settle(ctx context.Context, x *closing) error {
	c, ch := x.c, x.ch
	if x.rest != "" && !c.fileSent {
		// Recorded before the rest is tried: a try after the rest was refused sends only the
		// rest, the closing message being in the chat already.
		c.head = answerHead{Ref: x.ref, Rest: x.rest}
		cl.recordHead(ctx, c)
	}
	if err := cl.sendRest(ctx, ch, c, x.rest); err != nil {
		// The head is in the chat now: whether it may show twice is known now, not at the try
		// that sends the rest (finishRest).
		cl.countClosingDouble(ch, c, x.edited, x.earlier)
		return fmt.Errorf("channels: delivering the rest of run %s's answer: %w", c.runID, err)
	}
	_, second := cl.d.rs.record(ctx, c.runID, StepFinal, x.ref)
	if x.edited {
		cl.countClosingDouble(ch, c, x.edited, x.earlier)
		return nil // edited into the placeholder: a replay edits the same message
	}
	if second && cl.d.sn.dropSecond(ctx, ch, c, StepFinal, x.ref) {
		return nil // another attempt's closing message, recorded first, is the one shown
	}
	cl.countClosingDouble(ch, c, x.edited, x.earlier)
	cl.dropStrayCard(ctx, ch, c, x.ref, x.own)
	return nil
}

// countClosingDouble counts the closing message just shown as a possible double where an
// earlier attempt may have shown it too: sent anew after that attempt's intent
// (countPossibleDouble), or edited into the placeholder (delivered) while the closing message
// that attempt may have sent anew cannot be recognised on this platform.
func (cl closer) countClosingDouble(ch channels.Channel, c *runCard, delivered bool, earlier time.Time) {
	if !delivered {
		cl.d.rs.countPossibleDouble(ch, c, StepFinal, earlier)
		return
	}
	if !c.finalIntent.IsZero() {
		cl.d.m.OutboundError(c.conv.Platform, "possible_double")
		cl.d.log.Warn("channels: an earlier attempt of the run may have sent its closing message too; it may show twice", "run", c.runID)
	}
}

// dropStrayCard removes a placeholder another attempt of the run recorded while this one sent
// the closing message anew (ref): an attempt taken over while its placeholder was due posts it
// when this one has not read the card record yet. Each side writes its record, then reads the
// other's (postPlaceholder reads the final), so at least one of them sees the other and removes
// the placeholder. own, the placeholder this attempt knew of, is left alone. Skipped for a run younger than the placeholder's grace period, which no
// attempt can have posted a placeholder for.
func (cl closer) dropStrayCard(ctx context.Context, ch channels.Channel, c *runCard, ref channels.MessageRef, own string) {
	if cl.d.opt.PlaceholderAfter > 0 && !cl.d.ph.receiptOlderThan(c.runID, cl.d.opt.PlaceholderAfter) {
		return
	}
	ctx, cancel := outlive(ctx, recordGrace)
	defer cancel()
	b, found, err := cl.d.rs.store.Outbound(ctx, c.runID, StepCard)
	if err != nil || !found {
		return
	}
	var card channels.MessageRef
	if json.Unmarshal(b, &card) != nil || card.ID() == "" || card.ID() == own || slices.Contains(ref.IDs, card.ID()) {
		return
	}
	if card.Conv.IsZero() {
		card.Conv = c.conv
	}
	cl.d.ph.removePlaceholder(ctx, ch, c, card)
}

// mayHavePosted reports whether a send that failed with err may still have reached the
// platform: it timed out, or the connection broke, after the request may have gone out. A
// platform's answer (an error status) or a connection never made says it did not.
func mayHavePosted(err error) bool {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return false
	}
	if isPartlyPosted(err) {
		return true // it posted pieces that are still in the chat
	}
	// A timeout (context.DeadlineExceeded included) or a transport error (*url.Error) is a
	// net.Error; an answer cut short wraps io.ErrUnexpectedEOF or io.EOF.
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}
