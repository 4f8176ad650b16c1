package delivery

import (
	"context"
	"errors"
	"slices"

	"github.com/switchboard-bot/switchboard/channels"
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

// Is makes a partly posted send match channels.ErrPartlyPosted.
func (e *partlyPosted) Is(target error) bool { return target == channels.ErrPartlyPosted }

// isPartlyPosted reports whether err is, or wraps, a *partlyPosted.
func isPartlyPosted(err error) bool {
	_, ok := errors.AsType[*partlyPosted](err)
	return ok
}

// sendWhole sends m as ch.Send does, and when the send failed after the platform took some of
// its pieces, withdraws them (see above) and returns the error with an empty ref; pieces it
// cannot withdraw are returned with a *partlyPosted error.
func (sn *sender) sendWhole(ctx context.Context, ch channels.Channel, to channels.Target, m channels.Message) (channels.MessageRef, error) {
	ref, err := ch.Send(ctx, to, m)
	if err == nil || len(ref.IDs) == 0 {
		return ref, err
	}
	return sn.withdraw(ctx, ch, ref, err)
}

// withdraw deletes ref, the pieces a send that failed with err posted, unless the channel's
// resend returns them (KeyedSender), and returns what is left of the send.
func (sn *sender) withdraw(ctx context.Context, ch channels.Channel, ref channels.MessageRef, err error) (channels.MessageRef, error) {
	if _, keyed := ch.(channels.KeyedSender); keyed {
		return ref, err
	}
	if del, ok := ch.(channels.Deleter); ok {
		// The send's own context may be what ended it: the pieces still go.
		dctx, cancel := outlive(ctx, recordGrace)
		derr := del.Delete(dctx, ref)
		cancel()
		if derr == nil {
			sn.m.OutboundError(ref.Conv.Platform, "partial_withdrawn")
			sn.log.Warn("channels: a message failed part-way; the pieces posted were deleted so that it is sent whole again", "conv", ref.Conv.String(), "pieces", len(ref.IDs), "err", err)
			return channels.MessageRef{Conv: ref.Conv}, err
		}
		err = errors.Join(err, derr)
	}
	sn.m.OutboundError(ref.Conv.Platform, "partial_left")
	sn.log.Warn("channels: a message failed part-way and its posted pieces could not be deleted; sent again, they may show twice", "conv", ref.Conv.String(), "pieces", len(ref.IDs), "err", err)
	return ref, &partlyPosted{err: err}
}

// withdrawAdded is withdraw for an edit of ref that failed with err after it sent pieces as new
// messages (out holds them after ref's own): those are deleted, so that the edit tried again,
// or the message sent anew, does not show them twice. ref's own messages stay.
func (sn *sender) withdrawAdded(ctx context.Context, ch channels.Channel, ref, out channels.MessageRef, err error) (channels.MessageRef, error) {
	added := channels.MessageRef{Conv: ref.Conv}
	for _, id := range out.IDs {
		if !slices.Contains(ref.IDs, id) {
			added.IDs = append(added.IDs, id)
		}
	}
	if len(added.IDs) == 0 {
		return out, err
	}
	if _, werr := sn.withdraw(ctx, ch, added, err); isPartlyPosted(werr) {
		return out, werr
	}
	return ref, err
}
