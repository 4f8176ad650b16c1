package rdb

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Leases are the workers' hold on a conversation (the lease fields of its state hash; see
// scripts.go): claiming it for its head run, acknowledging a finished run for the next one,
// renewing (the heartbeat, and each retry) and releasing it.
type Leases struct{ *conn }

// Claim statuses.
const (
	ClaimRun   = "run"
	ClaimNext  = "next"
	ClaimHeld  = "held"
	ClaimEmpty = "empty"
	ClaimIdle  = "idle"
	ClaimLost  = "lost"
)

// Claim is the answer of claim and ack: a run to execute (Run/Next), or why there is none.
type Claim struct {
	Status    string
	Entry     string
	Attempt   int
	Cancelled bool
	// HandedBack is how many of the Attempt attempts were handed back unfinished (Release):
	// they do not count against the attempt limit.
	HandedBack int
}

func parseClaim(v []any) (Claim, error) {
	if len(v) == 0 {
		return Claim{}, errors.New("empty reply")
	}
	c := Claim{Status: fmt.Sprint(v[0])}
	if c.Status == ClaimRun || c.Status == ClaimNext {
		if len(v) < 4 {
			return Claim{}, fmt.Errorf("short reply %v", v)
		}
		c.Entry, _ = v[1].(string)
		n, _ := v[2].(int64)
		c.Attempt = int(n)
		cc, _ := v[3].(int64)
		c.Cancelled = cc == 1
		if len(v) > 4 {
			h, _ := v[4].(int64)
			c.HandedBack = int(h)
		}
	}
	return c, nil
}

// Claim takes tag's lease for owner until deadline (ms) if it is free or expired at now (ms).
func (s *Leases) Claim(ctx context.Context, tag, owner string, now, deadline int64) (Claim, error) {
	v, err := s.eval(ctx, scriptClaim, []string{s.stKey(tag), s.qKey(tag)}, owner, now, deadline).Slice()
	if err != nil {
		return Claim{}, fmt.Errorf("rdb: claim %s: %w", tag, err)
	}
	c, err := parseClaim(v)
	if err != nil {
		return Claim{}, fmt.Errorf("rdb: claim %s: %w", tag, err)
	}
	return c, nil
}

// Ack removes the finished run and returns the next one under the same lease, or ClaimIdle.
func (s *Leases) Ack(ctx context.Context, tag, owner, runID string, deadline int64) (Claim, error) {
	v, err := s.eval(ctx, scriptAck, []string{s.stKey(tag), s.qKey(tag)}, owner, runID, deadline).Slice()
	if err != nil {
		return Claim{}, fmt.Errorf("rdb: ack %s in %s: %w", runID, tag, err)
	}
	c, err := parseClaim(v)
	if err != nil {
		return Claim{}, fmt.Errorf("rdb: ack %s in %s: %w", runID, tag, err)
	}
	return c, nil
}

// Renewal is the answer of renew.
type Renewal struct {
	Lost      bool
	Attempt   int
	Cancelled bool
}

// RenewReq asks to extend one lease.
type RenewReq struct {
	Tag, Owner, RunID string
	Deadline          int64
	Bump              bool
}

// Renew extends one lease (and counts a new attempt when Bump).
func (s *Leases) Renew(ctx context.Context, r RenewReq) (Renewal, error) {
	out, err := s.RenewMany(ctx, []RenewReq{r})
	if err != nil {
		return Renewal{}, err
	}
	return out[0], nil
}

// RenewMany extends several leases in one pipeline (the heartbeat).
func (s *Leases) RenewMany(ctx context.Context, reqs []RenewReq) ([]Renewal, error) {
	if len(reqs) == 0 {
		return nil, nil
	}
	cmds := make([]*redis.Cmd, len(reqs))
	_, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, r := range reqs {
			cmds[i] = scriptRenew.Run(ctx, p, []string{s.stKey(r.Tag)}, r.Owner, r.RunID, r.Deadline, b2s(r.Bump))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		// Pipelined EVALSHA falls back per command; retry with EVAL once on NOSCRIPT.
		if !isNoScript(err) {
			return nil, fmt.Errorf("rdb: renew %d leases: %w", len(reqs), err)
		}
	}
	out := make([]Renewal, len(reqs))
	for i, c := range cmds {
		v, err := c.Slice()
		if isNoScript(err) {
			v, err = scriptRenew.Eval(ctx, s.c, []string{s.stKey(reqs[i].Tag)}, reqs[i].Owner, reqs[i].RunID, reqs[i].Deadline, b2s(reqs[i].Bump)).Slice()
		}
		if err != nil {
			return nil, fmt.Errorf("rdb: renew lease of %s: %w", reqs[i].Tag, err)
		}
		if len(v) == 0 || v[0] != "ok" {
			out[i] = Renewal{Lost: true}
			continue
		}
		n, _ := v[1].(int64)
		c, _ := v[2].(int64)
		out[i] = Renewal{Attempt: int(n), Cancelled: c == 1}
	}
	return out, nil
}

// Release gives up owner's lease on tag; needHint reports the mailbox still holds work.
func (s *Leases) Release(ctx context.Context, tag, owner string, now int64) (needHint bool, err error) {
	n, err := s.eval(ctx, scriptRelease, []string{s.stKey(tag), s.qKey(tag)}, owner, now).Int()
	if err != nil {
		return false, fmt.Errorf("rdb: release %s: %w", tag, err)
	}
	return n == 1, nil
}
