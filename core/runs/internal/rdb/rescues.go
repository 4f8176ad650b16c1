package rdb

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Rescues are the unhinted index and the checks that bring back a conversation its enqueuer
// never hinted (see scripts.go): listing and dropping index entries, and the rescue of one run
// or one stale conversation.
type Rescues struct{ *conn }

// UnhintedKey is the sorted set of runs whose conversation their enqueuer has not hinted yet
// (see scripts.go): "<tag>|<run id>" scored with the enqueuer's clock (ms).
func (s *Rescues) UnhintedKey() string { return s.unhintedKey() }

// Unhinted is one entry of the unhinted index.
type Unhinted struct {
	Member string // Member(tag, run id)
	At     int64  // ms, the enqueuer's clock when it indexed the run
}

// Unhinted lists up to limit entries of the unhinted index indexed at or before before (ms),
// oldest first: one range query, whatever the number of conversations.
func (s *Rescues) Unhinted(ctx context.Context, before int64, limit int) ([]Unhinted, error) {
	zs, err := s.c.ZRangeByScoreWithScores(ctx, s.unhintedKey(), &redis.ZRangeBy{
		Min: "-inf", Max: strconv.FormatInt(before, 10), Count: int64(limit),
	}).Result()
	if err != nil {
		return nil, fmt.Errorf("rdb: read unhinted runs: %w", err)
	}
	out := make([]Unhinted, len(zs))
	for i, z := range zs {
		m, _ := z.Member.(string)
		out[i] = Unhinted{Member: m, At: int64(z.Score)}
	}
	return out, nil
}

// Unindex removes members from the unhinted index: their conversation needs no hint from them
// (see scripts.go).
func (s *Rescues) Unindex(ctx context.Context, members ...string) error {
	if len(members) == 0 {
		return nil
	}
	a := make([]any, 0, 2+len(members))
	a = append(a, "zrem", s.unhintedKey())
	for _, m := range members {
		a = append(a, m)
	}
	cmd := redis.NewIntCmd(ctx, a...)
	s.pipe.Do(ctx, cmd)
	if err := cmd.Err(); err != nil {
		return fmt.Errorf("rdb: unindex %d runs: %w", len(members), err)
	}
	return nil
}

// Rescue statuses.
const (
	RescueAgain  = "again"
	RescueHeld   = "held"
	RescueAbsent = "absent"
	// RescueWaiting (RescueStale): the conversation's hint was asked for long ago and never
	// claimed, but is still in the ready stream, waiting for a free worker.
	RescueWaiting = "waiting"
	// RescueNone (RescueStale): nothing to rescue — the conversation is not stale, or a worker
	// holds it.
	RescueNone = "none"
)

// Rescue checks, on the conversation's slot, a run found in the unhinted index (see the rescue
// script): RescueAgain when the caller must hint its conversation — and count the run when queued
// reports it is in the mailbox —, RescueHeld when a worker holds the conversation, RescueAbsent
// when it is not scheduled.
func (s *Rescues) Rescue(ctx context.Context, tag, runID string, now int64) (status string, queued bool, err error) {
	v, err := s.eval(ctx, scriptRescue, []string{s.stKey(tag), s.qKey(tag)}, runID, now).Slice()
	if err != nil {
		return "", false, fmt.Errorf("rdb: rescue %s in %s: %w", runID, tag, err)
	}
	if len(v) < 2 {
		return "", false, fmt.Errorf("rdb: rescue %s in %s: short reply %v", runID, tag, v)
	}
	status, _ = v[0].(string)
	n, _ := v[1].(int64)
	return status, n == 1, nil
}

// RescueStale re-arms tag when its hint was asked for before staleBefore and never claimed, no
// worker holds it and, as the caller found (Hints.Queued), no hint of it is queued (the backstop
// scan; see the script): RescueAgain when the caller must hint the conversation again — head is
// then its mailbox head's run id ("" when the mailbox is empty), which the caller makes sure is
// counted (AdmitForce) —, RescueWaiting when it is stale but its hint is queued, RescueNone
// otherwise.
func (s *Rescues) RescueStale(ctx context.Context, tag string, now, staleBefore int64, queued bool) (status, head string, err error) {
	q := 0
	if queued {
		q = 1
	}
	v, err := s.eval(ctx, scriptRescueStale, []string{s.stKey(tag), s.qKey(tag)}, now, staleBefore, q).StringSlice()
	if err != nil {
		return "", "", fmt.Errorf("rdb: rescue %s: %w", tag, err)
	}
	if len(v) < 2 {
		return "", "", fmt.Errorf("rdb: rescue %s: short reply %v", tag, v)
	}
	return v[0], v[1], nil
}
