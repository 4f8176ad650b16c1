package threads

import (
	"context"
	"fmt"
	"time"
)

// Inbox is what the channels router needs from Redis besides threads proper: short-lived claims
// (inbound dedupe), marks (small values with a lifetime: threads the bot is in, partial form
// answers, the message a run answers), a runtime allow/deny list per platform, and Intake, which
// does the router's claim, reads and writes for one inbound event in one round trip. Its Redis
// commands are in redis_inbox.go (single commands, or one MULTI on one hash slot); its keys are
// listed in keys.go.
type Inbox struct{ *shared }

// maxClaimKeyLen bounds caller keys of claims and marks; they embed platform event ids.
const maxClaimKeyLen = 512

func checkClaimKey(key string) error {
	if key == "" || len(key) > maxClaimKeyLen {
		return invalid("key must be 1 to %d bytes", maxClaimKeyLen)
	}
	return nil
}

// Claim takes key for ttl if nobody holds it (SET NX PX under the store's prefix): true means
// this call took it, false that a live claim exists. It is how the router sees a platform event
// once. ttl must be positive.
func (in *Inbox) Claim(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	if err := checkClaimKey(key); err != nil {
		return false, fmt.Errorf("threads: claim: %w", err)
	}
	if ttl <= 0 {
		return false, fmt.Errorf("threads: claim: %w", invalid("ttl must be positive"))
	}
	ok, err := in.r.setNX(ctx, in.keys.claim(key), []byte("1"), ttl)
	if err != nil {
		return false, fmt.Errorf("threads: claim %q: %w", key, err)
	}
	return ok, nil
}

// Release drops a claim so the next Claim of key succeeds (a redelivery can then be handled).
// Releasing a key nobody holds is not an error.
func (in *Inbox) Release(ctx context.Context, key string) error {
	if err := checkClaimKey(key); err != nil {
		return fmt.Errorf("threads: release: %w", err)
	}
	if err := in.r.del(ctx, in.keys.claim(key)); err != nil {
		return fmt.Errorf("threads: release %q: %w", key, err)
	}
	return nil
}

// ReleaseClaim gives back a claim Intake took pending under token, so a redelivery of the event
// is handled afresh; a claim another attempt holds, or one completed, is left alone.
func (in *Inbox) ReleaseClaim(ctx context.Context, key, token string) error {
	if err := checkClaimKey(key); err != nil {
		return fmt.Errorf("threads: release claim: %w", err)
	}
	if err := in.r.releaseClaim(ctx, in.keys.claim(key), claimPendingPrefix+token); err != nil {
		return fmt.Errorf("threads: release claim %q: %w", key, err)
	}
	return nil
}

// CompleteClaim marks a claim Intake took pending under token as done for ttl: the event was
// handled, and a redelivery within ttl is a duplicate. A claim another attempt took meanwhile
// (this one's had expired) is left alone. ttl must be positive.
func (in *Inbox) CompleteClaim(ctx context.Context, key, token string, ttl time.Duration) error {
	if err := checkClaimKey(key); err != nil {
		return fmt.Errorf("threads: complete claim: %w", err)
	}
	if ttl <= 0 {
		return fmt.Errorf("threads: complete claim: %w", invalid("ttl must be positive"))
	}
	if err := in.r.completeClaim(ctx, in.keys.claim(key), claimPendingPrefix+token, ttl); err != nil {
		return fmt.Errorf("threads: complete claim %q: %w", key, err)
	}
	return nil
}

// Mark stores value under key for ttl, replacing any earlier value. ttl must be positive.
func (in *Inbox) Mark(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if err := checkClaimKey(key); err != nil {
		return fmt.Errorf("threads: mark: %w", err)
	}
	if ttl <= 0 {
		return fmt.Errorf("threads: mark: %w", invalid("ttl must be positive"))
	}
	if err := in.r.set(ctx, in.keys.mark(key), value, ttl); err != nil {
		return fmt.Errorf("threads: mark %q: %w", key, err)
	}
	return nil
}

// Marked returns the value Mark stored under key; found is false when there is none (never
// marked, unmarked, or expired).
func (in *Inbox) Marked(ctx context.Context, key string) (value []byte, found bool, err error) {
	if err := checkClaimKey(key); err != nil {
		return nil, false, fmt.Errorf("threads: marked: %w", err)
	}
	b, found, err := in.r.get(ctx, in.keys.mark(key))
	if err != nil {
		return nil, false, fmt.Errorf("threads: marked %q: %w", key, err)
	}
	return b, found, nil
}

// Unmark deletes a mark; deleting one that is not there is not an error.
func (in *Inbox) Unmark(ctx context.Context, key string) error {
	if err := checkClaimKey(key); err != nil {
		return fmt.Errorf("threads: unmark: %w", err)
	}
	if err := in.r.del(ctx, in.keys.mark(key)); err != nil {
		return fmt.Errorf("threads: unmark %q: %w", key, err)
	}
	return nil
}

func checkAccessArgs(platform, userID string) error {
	if platform == "" || len(platform) > 64 {
		return invalid("platform must be 1 to 64 bytes")
	}
	if userID == "" || len(userID) > 256 {
		return invalid("user id must be 1 to 256 bytes")
	}
	return nil
}

// AllowUser adds userID to platform's runtime allow list and takes it off the deny list, in one
// step. The lists have no expiry: they are operator decisions.
func (in *Inbox) AllowUser(ctx context.Context, platform, userID string) error {
	return in.setAccess(ctx, platform, userID, true)
}

// DenyUser adds userID to platform's runtime deny list and takes it off the allow list, in one
// step.
func (in *Inbox) DenyUser(ctx context.Context, platform, userID string) error {
	return in.setAccess(ctx, platform, userID, false)
}

func (in *Inbox) setAccess(ctx context.Context, platform, userID string, allow bool) error {
	if err := checkAccessArgs(platform, userID); err != nil {
		return fmt.Errorf("threads: access: %w", err)
	}
	allowKey, denyKey := in.keys.access(platform)
	add, rem := allowKey, denyKey
	if !allow {
		add, rem = denyKey, allowKey
	}
	if err := in.r.moveMember(ctx, add, rem, userID); err != nil {
		return fmt.Errorf("threads: access of %s on %s: %w", userID, platform, err)
	}
	return nil
}

// AccessOverride reports whether an admin allowed or denied userID on platform at runtime. At
// most one of allowed and denied is true.
func (in *Inbox) AccessOverride(ctx context.Context, platform, userID string) (allowed, denied bool, err error) {
	if err := checkAccessArgs(platform, userID); err != nil {
		return false, false, fmt.Errorf("threads: access override: %w", err)
	}
	allowKey, denyKey := in.keys.access(platform)
	allowed, denied, err = in.r.memberOfBoth(ctx, allowKey, denyKey, userID)
	if err != nil {
		return false, false, fmt.Errorf("threads: access override of %s on %s: %w", userID, platform, err)
	}
	return allowed, denied, nil
}

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
	// ConvKey, when set, reads the conversation's open clarification as Clarifications.Pending
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
// Clarifications.Pending, Marked, Mark); the parts touch different keys, so doing them together
// changes none of their results. An invalid request is ErrInvalidArgument and touches nothing.
// When any part fails, Intake returns an error and gives back a claim it took (best effort), so
// a redelivery of the event is handled afresh.
func (in *Inbox) Intake(ctx context.Context, req IntakeRequest) (IntakeResult, error) {
	ops, err := in.intakeOps(req)
	if err != nil {
		return IntakeResult{}, fmt.Errorf("threads: intake: %w", err)
	}
	rep, err := in.r.intake(ctx, ops)
	if err == nil {
		var res IntakeResult
		res, err = in.intakeResult(ops, rep)
		if err == nil {
			return res, nil
		}
	}
	if rep.claimed {
		if ops.pending != "" {
			_ = in.r.releaseClaim(context.WithoutCancel(ctx), ops.claimKey, ops.pending)
		} else {
			_ = in.r.del(context.WithoutCancel(ctx), ops.claimKey)
		}
	}
	return IntakeResult{}, fmt.Errorf("threads: intake of %q: %w", req.ClaimKey, err)
}

func (in *Inbox) intakeOps(req IntakeRequest) (intakeOps, error) {
	var ops intakeOps
	if req.ClaimKey != "" {
		if err := checkClaimKey(req.ClaimKey); err != nil {
			return ops, err
		}
		if req.ClaimTTL <= 0 {
			return ops, invalid("claim ttl must be positive")
		}
		ops.claimKey, ops.claimTTL = in.keys.claim(req.ClaimKey), req.ClaimTTL
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
		ops.allowKey, ops.denyKey = in.keys.access(req.Platform)
		ops.member = req.UserID
	}
	if req.ConvKey != "" {
		if err := checkConvKey(req.ConvKey); err != nil {
			return ops, err
		}
		ops.clarKey = in.keys.conv(req.ConvKey).clar
	}
	if req.MarkedKey != "" {
		if err := checkClaimKey(req.MarkedKey); err != nil {
			return ops, err
		}
		ops.markedKey = in.keys.mark(req.MarkedKey)
	}
	for _, m := range req.Marks {
		if err := checkClaimKey(m.Key); err != nil {
			return ops, err
		}
		if m.TTL <= 0 {
			return ops, invalid("mark ttl must be positive")
		}
		ops.marks = append(ops.marks, markOp{key: in.keys.mark(m.Key), value: m.Value, ttl: m.TTL})
	}
	return ops, nil
}

func (in *Inbox) intakeResult(ops intakeOps, rep intakeReply) (IntakeResult, error) {
	res := IntakeResult{Claimed: rep.claimed, ClaimPending: rep.claimPending, Seen: rep.seen, Allowed: rep.allowed, Denied: rep.denied, Marked: rep.marked, IsMarked: rep.isMarked}
	if ops.clarKey != "" {
		c, ok, err := openClarification(in.opts.Now(), ops.clarKey, rep.clar)
		if err != nil {
			return IntakeResult{}, err
		}
		res.Pending, res.HasPending = c, ok
	}
	return res, nil
}
