package rdb

import (
	"context"
	"fmt"
	"strconv"
)

// Counters are the queue's totals (the stats hash) and their recent per-minute buckets (see
// recent.go), and the settlement that adds to them: a worker's batch of finished runs, counters,
// spent hints and re-hints, flushed in one call.
type Counters struct{ *conn }

// Settlement is a batch of finished work to flush in one call.
type Settlement struct {
	// Done are finished runs (Member) to remove from the admitted set.
	Done []string
	// Counters are added to the stats hash and to the current minute's recent bucket.
	Counters map[string]int64
	// Hints are conversation tags to hint again.
	Hints []string
	// Acks are spent hint ids to acknowledge and delete.
	Acks []string
}

// Empty reports whether the settlement has nothing to do.
func (st *Settlement) Empty() bool {
	return len(st.Done) == 0 && len(st.Counters) == 0 && len(st.Hints) == 0 && len(st.Acks) == 0
}

// Settle flushes st.
func (s *Counters) Settle(ctx context.Context, st Settlement) error {
	if st.Empty() {
		return nil
	}
	args := make([]any, 0, 4+len(st.Done)+2*len(st.Counters)+len(st.Hints)+len(st.Acks))
	args = append(args, s.group, s.recentNow(), len(st.Done))
	for _, m := range st.Done {
		args = append(args, m)
	}
	args = append(args, len(st.Counters))
	for k, v := range st.Counters {
		args = append(args, k, v)
	}
	args = append(args, len(st.Hints))
	for _, h := range st.Hints {
		args = append(args, h)
	}
	for _, a := range st.Acks {
		args = append(args, a)
	}
	if err := s.eval(ctx, scriptSettle, []string{s.readyKey(), s.admittedKey(), s.g("stats"), s.recentKey()}, args...).Err(); err != nil {
		return fmt.Errorf("rdb: settle %d acks: %w", len(st.Acks), err)
	}
	return nil
}

// AddStats adds to counters and removes done (Member) from the admitted set directly (paths
// outside a worker's settle batch).
func (s *Counters) AddStats(ctx context.Context, counters map[string]int64, done []string) error {
	return s.Settle(ctx, Settlement{Counters: counters, Done: done})
}

// Stats reads the counters hash.
func (s *Counters) Stats(ctx context.Context) (map[string]int64, error) {
	m, err := s.c.HGetAll(ctx, s.g("stats")).Result()
	if err != nil {
		return nil, fmt.Errorf("rdb: read stats: %w", err)
	}
	out := make(map[string]int64, len(m))
	for k, v := range m {
		n, _ := strconv.ParseInt(v, 10, 64)
		out[k] = n
	}
	return out, nil
}

// Recent reads the recent hash and the time on Redis's clock, in one call.
func (s *Counters) Recent(ctx context.Context) (Recent, error) {
	v, err := s.eval(ctx, scriptRecent, []string{s.recentKey()}, s.recentNow()).Slice()
	if err != nil {
		return Recent{}, fmt.Errorf("rdb: read recent counters: %w", err)
	}
	return parseRecent(v)
}
