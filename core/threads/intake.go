package threads

import (
	"context"
	"fmt"
	"time"
)

// IntakeRequest is everything the router needs from Redis to route one inbound event, done by
// Intake in one pipelined round trip. Each part is optional: a part whose key is empty is left
// out.
type IntakeRequest struct {
	// ClaimKey, with ClaimTTL, is claimed as Claim does: it is how an event is seen once.
	ClaimKey string
	ClaimTTL time.Duration
	// ClaimToken, when set, takes the claim as pending under this token (for ClaimTTL) rather
	// than done: the caller then completes it (CompleteClaim) or gives it back (ReleaseClaim)
	// once the event is handled. A claim pending under the same token is taken again — the
	// retry of a caller whose release failed — and one pending under another token is reported
	// as ClaimPending, apart from a duplicate of an event handled already.
	ClaimToken string
	// SeenKey, when set, is a key of the run queue to test for existence (runs.Queue.SeenKey):
	// the mark of an event whose run is queued. Seen reports it.
	SeenKey string
	// Platform and UserID, when both are set, read the runtime access lists as AccessOverride
	// does.
	Platform string
	UserID   string
	// ConvKey, when set, reads the conversation's open clarification as PendingClarification
	// does.
	ConvKey string
	// MarkedKey, when set, is read as Marked does.
	MarkedKey string
	// Marks are written as Mark does, in the same round trip, whatever the claim's result: the
	// caller writes here only what is harmless for an event it then drops (a short-lived record
	// of a run that is never queued, say).
	Marks []MarkWrite
}

// MarkWrite is one Mark: value under Key for TTL.
type MarkWrite struct {
	Key   string
	Value []byte
	TTL   time.Duration
}

// IntakeResult is what Intake claimed and read. Fields of parts the request left out are zero.
type IntakeResult struct {
	// Claimed is true when this call took ClaimKey; false means a live claim exists (a
	// duplicate event) or no claim was asked for.
	Claimed bool
	// ClaimPending is true when ClaimKey was not taken because another attempt holds it pending
	// (ClaimToken): that event is being handled, or its handling failed and could not give the
	// claim back; it is not known to be handled.
	ClaimPending bool
	// Seen is true when SeenKey exists.
	Seen bool
	// Allowed and Denied are the runtime access decisions, as AccessOverride returns them.
	Allowed, Denied bool
	// Pending is the conversation's open clarification when HasPending is true.
	Pending    Clarification
	HasPending bool
	// Marked is the value under MarkedKey when IsMarked is true.
	Marked   []byte
	IsMarked bool
}

// Intake claims an inbound event and reads what routing it needs — runtime access decisions,
// the conversation's open clarification, a mark — and writes Marks, all in one pipelined round
// trip. Each part behaves as its single-call counterpart (Claim, AccessOverride,
// PendingClarification, Marked, Mark); the parts touch different keys, so doing them together
// changes none of their results. An invalid request is ErrInvalidArgument and touches nothing.
// When any part fails, Intake returns an error and gives back a claim it took (best effort), so
// a redelivery of the event is handled afresh.
func (s *Store) Intake(ctx context.Context, req IntakeRequest) (IntakeResult, error) {
	ops, err := s.intakeOps(req)
	if err != nil {
		return IntakeResult{}, fmt.Errorf("threads: intake: %w", err)
	}
	rep, err := s.r.intake(ctx, ops)
	if err == nil {
		var res IntakeResult
		res, err = s.intakeResult(ops, rep)
		if err == nil {
			return res, nil
		}
	}
	if rep.claimed {
		if ops.pending != "" {
			_ = s.r.releaseClaim(context.WithoutCancel(ctx), ops.claimKey, ops.pending)
		} else {
			_ = s.r.del(context.WithoutCancel(ctx), ops.claimKey)
		}
	}
	return IntakeResult{}, fmt.Errorf("threads: intake of %q: %w", req.ClaimKey, err)
}

func (s *Store) intakeOps(req IntakeRequest) (intakeOps, error) {
	var ops intakeOps
	if req.ClaimKey != "" {
		if err := checkClaimKey(req.ClaimKey); err != nil {
			return ops, err
		}
		if req.ClaimTTL <= 0 {
			return ops, invalid("claim ttl must be positive")
		}
		ops.claimKey, ops.claimTTL = s.keys.claim(req.ClaimKey), req.ClaimTTL
		if req.ClaimToken != "" {
			ops.pending = claimPendingPrefix + req.ClaimToken
		}
	}
	if req.SeenKey != "" {
		if len(req.SeenKey) > 2*maxClaimKeyLen {
			return ops, invalid("seen key must be at most %d bytes", 2*maxClaimKeyLen)
		}
		ops.seenKey = req.SeenKey
	}
	if req.Platform != "" || req.UserID != "" {
		if err := checkAccessArgs(req.Platform, req.UserID); err != nil {
			return ops, err
		}
		ops.allowKey, ops.denyKey = s.keys.access(req.Platform)
		ops.member = req.UserID
	}
	if req.ConvKey != "" {
		if err := checkConvKey(req.ConvKey); err != nil {
			return ops, err
		}
		ops.clarKey = s.keys.conv(req.ConvKey).clar
	}
	if req.MarkedKey != "" {
		if err := checkClaimKey(req.MarkedKey); err != nil {
			return ops, err
		}
		ops.markedKey = s.keys.mark(req.MarkedKey)
	}
	for _, m := range req.Marks {
		if err := checkClaimKey(m.Key); err != nil {
			return ops, err
		}
		if m.TTL <= 0 {
			return ops, invalid("mark ttl must be positive")
		}
		ops.marks = append(ops.marks, markOp{key: s.keys.mark(m.Key), value: m.Value, ttl: m.TTL})
	}
	return ops, nil
}

func (s *Store) intakeResult(ops intakeOps, rep intakeReply) (IntakeResult, error) {
	res := IntakeResult{Claimed: rep.claimed, ClaimPending: rep.claimPending, Seen: rep.seen, Allowed: rep.allowed, Denied: rep.denied, Marked: rep.marked, IsMarked: rep.isMarked}
	if ops.clarKey != "" {
		c, ok, err := s.openClarification(ops.clarKey, rep.clar)
		if err != nil {
			return IntakeResult{}, err
		}
		res.Pending, res.HasPending = c, ok
	}
	return res, nil
}
