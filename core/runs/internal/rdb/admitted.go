package rdb

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// admittedKey is the hash of admitted, unfinished runs (see scripts.go).
func (s *Store) admittedKey() string { return s.g("admitted") }

// Member names a run in the admitted set: "<tag>|<run id>" (a tag holds no '|').
func Member(tag, runID string) string { return tag + "|" + runID }

// SplitMember is Member's inverse; ok is false for a malformed member.
func SplitMember(m string) (tag, runID string, ok bool) {
	tag, runID, ok = strings.Cut(m, "|")
	return tag, runID, ok && tag != "" && runID != ""
}

// IsAdmitted reports whether the run of conversation tag counts as pending.
func (s *Store) IsAdmitted(ctx context.Context, tag, runID string) (bool, error) {
	ok, err := s.c.HExists(ctx, s.admittedKey(), Member(tag, runID)).Result()
	if err != nil {
		return false, fmt.Errorf("rdb: read admission of %s: %w", runID, err)
	}
	return ok, nil
}

// Reconcile removes from the admitted set the runs that were admitted more than age ago and are
// no longer in their conversation's mailbox: what a crash left counted — a worker acknowledged
// the run but died before its settler flushed, or an enqueuer admitted the run and died before
// pushing it. It reads the whole set (HSCAN, page members a call; the set is bounded by the
// global limit), checks the old members page at a time, and returns how many it removed.
//
// It never removes a live run's member. For each conversation it first finds, in one script on
// the conversation's slot, which runs are absent from the mailbox, at time t on Redis's clock;
// then one script on the global slot removes each absent run's member only if it was admitted
// at or before t − age. A run absent at t is finished and never returns to a mailbox, except a
// run admitted before its push (Enqueue's scheduled order) whose push is still to come; that
// push is refused once the admission is older than the enqueue window, which the caller keeps
// well under age, so no push can land after t for a member admitted before t − age. A replayed
// dead letter is admitted anew, after its old member was removed, and its new member is younger.
func (s *Store) Reconcile(ctx context.Context, age time.Duration, page int) (removed int, err error) {
	// Preselect with the caller's clock; the removal compares with Redis's.
	before := time.Now().Add(-age).UnixMilli()
	var old []string
	flush := func() error {
		n, err := s.reconcilePage(ctx, old, age, before)
		removed += n
		old = old[:0]
		return err
	}
	var cursor uint64
	for {
		kv, next, err := s.c.HScan(ctx, s.admittedKey(), cursor, "", int64(page)).Result()
		if err != nil {
			return removed, fmt.Errorf("rdb: reconcile: read admitted runs: %w", err)
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if at, err := strconv.ParseInt(kv[i+1], 10, 64); err != nil || at <= before {
				old = append(old, kv[i])
			}
		}
		if len(old) >= page {
			if err := flush(); err != nil {
				return removed, err
			}
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	if len(old) > 0 {
		if err := flush(); err != nil {
			return removed, err
		}
	}
	return removed, nil
}

// reconcilePage checks one page of admitted members and removes those of finished runs.
func (s *Store) reconcilePage(ctx context.Context, members []string, age time.Duration, before int64) (int, error) {
	var tags []string
	byTag := map[string][]any{}
	var forget []any
	for _, m := range members {
		tag, runID, ok := SplitMember(m)
		if !ok {
			// Not written by this package: no mailbox to check, and no worker will remove it.
			forget = append(forget, m, before)
			continue
		}
		if _, seen := byTag[tag]; !seen {
			tags = append(tags, tag)
		}
		byTag[tag] = append(byTag[tag], runID)
	}
	cmds := make([]*redis.Cmd, len(tags))
	_, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, tag := range tags {
			cmds[i] = scriptAbsent.EvalSha(ctx, p, []string{s.qKey(tag)}, byTag[tag]...)
		}
		return nil
	})
	if err != nil && !isNoScript(err) {
		return 0, fmt.Errorf("rdb: reconcile: check %d mailboxes: %w", len(tags), err)
	}
	for i, c := range cmds {
		v, err := c.Slice()
		if isNoScript(err) {
			v, err = scriptAbsent.Eval(ctx, s.c, []string{s.qKey(tags[i])}, byTag[tags[i]]...).Slice()
		}
		if err != nil {
			return 0, fmt.Errorf("rdb: reconcile: check mailbox of %s: %w", tags[i], err)
		}
		if len(v) == 0 {
			return 0, fmt.Errorf("rdb: reconcile: check mailbox of %s: empty reply", tags[i])
		}
		at, _ := v[0].(int64)
		cutoff := at - age.Milliseconds()
		for _, id := range v[1:] {
			runID, _ := id.(string)
			forget = append(forget, Member(tags[i], runID), cutoff)
		}
	}
	if len(forget) == 0 {
		return 0, nil
	}
	n, err := s.eval(ctx, scriptForget, []string{s.admittedKey()}, forget...).Int()
	if err != nil {
		return 0, fmt.Errorf("rdb: reconcile: forget %d finished runs: %w", len(forget)/2, err)
	}
	return n, nil
}
