package threads

import (
	"context"
	"fmt"
	"time"
)

// This file holds what the channels router and delivery need from Redis besides threads proper:
// short-lived claims (inbound dedupe), marks (small values with a lifetime: threads the bot is in,
// partial form answers, the message a run answers), a runtime allow/deny list per platform, and a
// read of outbound records. Their Redis commands are in redis.go (single commands, or one MULTI
// on one hash slot), each tested in claim_test.go; intake.go batches the router's reads. Their
// keys are listed in keys.go.

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
func (s *Store) Claim(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	if err := checkClaimKey(key); err != nil {
		return false, fmt.Errorf("threads: claim: %w", err)
	}
	if ttl <= 0 {
		return false, fmt.Errorf("threads: claim: %w", invalid("ttl must be positive"))
	}
	ok, err := s.r.setNX(ctx, s.keys.claim(key), []byte("1"), ttl)
	if err != nil {
		return false, fmt.Errorf("threads: claim %q: %w", key, err)
	}
	return ok, nil
}

// Release drops a claim so the next Claim of key succeeds (a redelivery can then be handled).
// Releasing a key nobody holds is not an error.
func (s *Store) Release(ctx context.Context, key string) error {
	if err := checkClaimKey(key); err != nil {
		return fmt.Errorf("threads: release: %w", err)
	}
	if err := s.r.del(ctx, s.keys.claim(key)); err != nil {
		return fmt.Errorf("threads: release %q: %w", key, err)
	}
	return nil
}

// ReleaseClaim gives back a claim Intake took pending under token, so a redelivery of the event
// is handled afresh; a claim another attempt holds, or one completed, is left alone.
func (s *Store) ReleaseClaim(ctx context.Context, key, token string) error {
	if err := checkClaimKey(key); err != nil {
		return fmt.Errorf("threads: release claim: %w", err)
	}
	if err := s.r.releaseClaim(ctx, s.keys.claim(key), claimPendingPrefix+token); err != nil {
		return fmt.Errorf("threads: release claim %q: %w", key, err)
	}
	return nil
}

// CompleteClaim marks a claim Intake took pending under token as done for ttl: the event was
// handled, and a redelivery within ttl is a duplicate. A claim another attempt took meanwhile
// (this one's had expired) is left alone. ttl must be positive.
func (s *Store) CompleteClaim(ctx context.Context, key, token string, ttl time.Duration) error {
	if err := checkClaimKey(key); err != nil {
		return fmt.Errorf("threads: complete claim: %w", err)
	}
	if ttl <= 0 {
		return fmt.Errorf("threads: complete claim: %w", invalid("ttl must be positive"))
	}
	if err := s.r.completeClaim(ctx, s.keys.claim(key), claimPendingPrefix+token, ttl); err != nil {
		return fmt.Errorf("threads: complete claim %q: %w", key, err)
	}
	return nil
}

// Mark stores value under key for ttl, replacing any earlier value. ttl must be positive.
func (s *Store) Mark(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if err := checkClaimKey(key); err != nil {
		return fmt.Errorf("threads: mark: %w", err)
	}
	if ttl <= 0 {
		return fmt.Errorf("threads: mark: %w", invalid("ttl must be positive"))
	}
	if err := s.r.set(ctx, s.keys.mark(key), value, ttl); err != nil {
		return fmt.Errorf("threads: mark %q: %w", key, err)
	}
	return nil
}

// Marked returns the value Mark stored under key; found is false when there is none (never
// marked, unmarked, or expired).
func (s *Store) Marked(ctx context.Context, key string) (value []byte, found bool, err error) {
	if err := checkClaimKey(key); err != nil {
		return nil, false, fmt.Errorf("threads: marked: %w", err)
	}
	b, found, err := s.r.get(ctx, s.keys.mark(key))
	if err != nil {
		return nil, false, fmt.Errorf("threads: marked %q: %w", key, err)
	}
	return b, found, nil
}

// Unmark deletes a mark; deleting one that is not there is not an error.
func (s *Store) Unmark(ctx context.Context, key string) error {
	if err := checkClaimKey(key); err != nil {
		return fmt.Errorf("threads: unmark: %w", err)
	}
	if err := s.r.del(ctx, s.keys.mark(key)); err != nil {
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
func (s *Store) AllowUser(ctx context.Context, platform, userID string) error {
	return s.setAccess(ctx, platform, userID, true)
}

// DenyUser adds userID to platform's runtime deny list and takes it off the allow list, in one
// step.
func (s *Store) DenyUser(ctx context.Context, platform, userID string) error {
	return s.setAccess(ctx, platform, userID, false)
}

func (s *Store) setAccess(ctx context.Context, platform, userID string, allow bool) error {
	if err := checkAccessArgs(platform, userID); err != nil {
		return fmt.Errorf("threads: access: %w", err)
	}
	allowKey, denyKey := s.keys.access(platform)
	add, rem := allowKey, denyKey
	if !allow {
		add, rem = denyKey, allowKey
	}
	if err := s.r.moveMember(ctx, add, rem, userID); err != nil {
		return fmt.Errorf("threads: access of %s on %s: %w", userID, platform, err)
	}
	return nil
}

// AccessOverride reports whether an admin allowed or denied userID on platform at runtime. At
// most one of allowed and denied is true.
func (s *Store) AccessOverride(ctx context.Context, platform, userID string) (allowed, denied bool, err error) {
	if err := checkAccessArgs(platform, userID); err != nil {
		return false, false, fmt.Errorf("threads: access override: %w", err)
	}
	allowKey, denyKey := s.keys.access(platform)
	allowed, denied, err = s.r.memberOfBoth(ctx, allowKey, denyKey, userID)
	if err != nil {
		return false, false, fmt.Errorf("threads: access override of %s on %s: %w", userID, platform, err)
	}
	return allowed, denied, nil
}

// Outbound returns what RecordOutbound stored for run runID and step, without writing; found is
// false when nothing is recorded.
func (s *Store) Outbound(ctx context.Context, runID, step string) (value []byte, found bool, err error) {
	if err := checkRunID(runID); err != nil {
		return nil, false, fmt.Errorf("threads: outbound: %w", err)
	}
	if step == "" || len(step) > 256 {
		return nil, false, fmt.Errorf("threads: outbound of run %s: %w", runID, invalid("step must be 1 to 256 bytes"))
	}
	b, found, err := s.r.get(ctx, s.keys.outbound(runID, step))
	if err != nil {
		return nil, false, fmt.Errorf("threads: outbound of run %s step %q: %w", runID, step, err)
	}
	return b, found, nil
}
