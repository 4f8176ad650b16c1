package rdb

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Admissions are the global gate (the admitted set and the pause flag; see scripts.go): admitting
// a run under the global limit unless intake is paused, then hinting its conversation (Ready),
// the pending count, the pause itself, and the reconciliation that forgets what a crash left
// counted.
type Admissions struct{ *conn }

// Member names a run in the admitted set: "<tag>|<run id>" (a tag holds no '|').
func Member(tag, runID string) string { return tag + "|" + runID }

// SplitMember is Member's inverse; ok is false for a malformed member.
func SplitMember(m string) (tag, runID string, ok bool) {
	tag, runID, ok = strings.Cut(m, "|")
	return tag, runID, ok && tag != "" && runID != ""
}

// Ready statuses.
const (
	ReadyOK     = "ok"
	ReadyPaused = "paused"
	ReadyBusy   = "busy"
)

// Admission modes of Ready.
const (
	// AdmitNone only hints.
	AdmitNone = ""
	// AdmitCheck refuses when intake is paused or the global limit is reached, and otherwise
	// counts the run.
	AdmitCheck = "check"
	// AdmitForce counts the run unless it is counted already, whatever the limit (a run found in
	// its mailbox uncounted).
	AdmitForce = "force"
)

// ReadyReq is one call of the ready script: an admission, a hint, or both.
type ReadyReq struct {
	Admit      string // AdmitNone, AdmitCheck or AdmitForce
	Member     string // the run to admit (Member)
	MaxPending int64  // the global limit for AdmitCheck; 0 for none
	Hint       string // conversation tag to hint; empty for none
	// Unindex removes Member from the unhinted index unless the admission is refused: set it
	// when this call hints the conversation a run's Intent indexed, or admits such a run into a
	// scheduled conversation.
	Unindex bool
}

// Ready admits r.Member (see ReadyReq) and then hints r.Hint. at is the admission time (ms,
// Redis's clock), 0 when nothing was admitted.
func (s *Admissions) Ready(ctx context.Context, r ReadyReq) (status string, at int64, err error) {
	mode := r.Admit
	if mode == AdmitNone {
		mode = "none"
	}
	v, err := s.eval(ctx, scriptReady, []string{s.g("paused"), s.admittedKey(), s.readyKey(), s.unhintedKey()},
		mode, r.Member, r.MaxPending, r.Hint, b2s(r.Unindex)).Slice()
	if err != nil {
		return "", 0, fmt.Errorf("rdb: ready %s: %w", r.Hint, err)
	}
	if len(v) < 2 {
		return "", 0, fmt.Errorf("rdb: ready %s: short reply %v", r.Hint, v)
	}
	status, _ = v[0].(string)
	at, _ = v[1].(int64)
	return status, at, nil
}

// IsAdmitted reports whether the run of conversation tag counts as pending.
func (s *Admissions) IsAdmitted(ctx context.Context, tag, runID string) (bool, error) {
	ok, err := s.c.HExists(ctx, s.admittedKey(), Member(tag, runID)).Result()
	if err != nil {
		return false, fmt.Errorf("rdb: read admission of %s: %w", runID, err)
	}
	return ok, nil
}

// Pending is the global count of admitted runs not yet finished.
func (s *Admissions) Pending(ctx context.Context) (int64, error) {
	n, err := s.c.HLen(ctx, s.admittedKey()).Result()
	if err != nil {
		return 0, fmt.Errorf("rdb: read pending count: %w", err)
	}
	return n, nil
}

// Pause stops intake: the ready script refuses new runs until Resume.
func (s *Admissions) Pause(ctx context.Context) error {
	if err := s.c.Set(ctx, s.g("paused"), "1", 0).Err(); err != nil {
		return fmt.Errorf("rdb: pause: %w", err)
	}
	return nil
}

// Resume restarts intake.
func (s *Admissions) Resume(ctx context.Context) error {
	if err := s.c.Del(ctx, s.g("paused")).Err(); err != nil {
		return fmt.Errorf("rdb: resume: %w", err)
	}
	return nil
}

// Paused reports whether intake is paused.
func (s *Admissions) Paused(ctx context.Context) (bool, error) {
	n, err := s.c.Exists(ctx, s.g("paused")).Result()
	if err != nil {
		return false, fmt.Errorf("rdb: read pause flag: %w", err)
	}
	return n == 1, nil
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
func (s *Admissions) Reconcile(ctx context.Context, age time.Duration, page int) (removed int, err error) {
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
func (s *Admissions) reconcilePage(ctx context.Context, members []string, age time.Duration, before int64) (int, error) {
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
