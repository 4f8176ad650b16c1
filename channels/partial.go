package channels

import (
	"context"
	"errors"
	"slices"
)

// A message of several pieces (Send splits a long one) can fail after the platform took some:
// sent again whole — by a rate limit's retry, or the run's next try — those pieces would show
// twice. So delivery withdraws them (deletes them) before it reports the failure; a channel
// whose resend returns the pieces already posted (KeyedSender) keeps them.

// partlyPosted is the error of a send that left pieces in the chat it could not withdraw: a
// later send of the message may show them twice, so it counts as one that may have posted
// (mayHavePosted), and a rate limit's retry does not resend it.
type partlyPosted struct {
	err error
}

func (e *partlyPosted) Error() string {
	return e.err.Error() + " (part of the message was posted and could not be withdrawn)"
}

func (e *partlyPosted) Unwrap() error { return e.err }

// isPartlyPosted reports whether err is, or wraps, a *partlyPosted.
func isPartlyPosted(err error) bool {
	_, ok := errors.AsType[*partlyPosted](err)
	return ok
}

// sendWhole sends m as ch.Send does, and when the send failed after the platform took some of
// its pieces, withdraws them (see above) and returns the error with an empty ref; pieces it
// cannot withdraw are returned with a *partlyPosted error.
func (d *Delivery) sendWhole(ctx context.Context, ch Channel, to Target, m Message) (MessageRef, error) {
	ref, err := ch.Send(ctx, to, m)
	if err == nil || len(ref.IDs) == 0 {
		return ref, err
	}
	return d.withdraw(ctx, ch, ref, err)
}

// withdraw deletes ref, the pieces a send that failed with err posted, unless the channel's
// resend returns them (KeyedSender), and returns what is left of the send.
func (d *Delivery) withdraw(ctx context.Context, ch Channel, ref MessageRef, err error) (MessageRef, error) {
	if _, keyed := ch.(KeyedSender); keyed {
		return ref, err
	}
	if del, ok := ch.(Deleter); ok {
		// The send's own context may be what ended it: the pieces still go.
		dctx, cancel := outlive(ctx, recordGrace)
		derr := del.Delete(dctx, ref)
		cancel()
		if derr == nil {
			d.m.OutboundError(ref.Conv.Platform, "partial_withdrawn")
			d.log.Warn("channels: a message failed part-way; the pieces posted were deleted so that it is sent whole again", "conv", ref.Conv.String(), "pieces", len(ref.IDs), "err", err)
			return MessageRef{Conv: ref.Conv}, err
		}
		err = errors.Join(err, derr)
	}
	d.m.OutboundError(ref.Conv.Platform, "partial_left")
	d.log.Warn("channels: a message failed part-way and its posted pieces could not be deleted; sent again, they may show twice", "conv", ref.Conv.String(), "pieces", len(ref.IDs), "err", err)
	return ref, &partlyPosted{err: err}
}

// withdrawAdded is withdraw for an edit of ref that failed with err after it sent pieces as new
// messages (out holds them after ref's own): those are deleted, so that the edit tried again,
// or the message sent anew, does not show them twice. ref's own messages stay.
func (d *Delivery) withdrawAdded(ctx context.Context, ch Channel, ref, out MessageRef, err error) (MessageRef, error) {
	added := MessageRef{Conv: ref.Conv}
	for _, id := range out.IDs {
		if !slices.Contains(ref.IDs, id) {
			added.IDs = append(added.IDs, id)
		}
	}
	if len(added.IDs) == 0 {
		return out, err
	}
	if _, werr := d.withdraw(ctx, ch, added, err); isPartlyPosted(werr) {
		return out, werr
	}
	return ref, err
}
