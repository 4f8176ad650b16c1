// Package rdb holds every Redis command and Lua script of the run queue, and nothing else: the
// key layout, the scripts (scripts.go) and one typed method per operation. It knows entries as
// opaque bytes; envelopes, signatures and workers live in package runs.
package rdb

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchboard-bot/switchboard/internal/redisbatch"
)

// Store is the queue's view of Redis. All keys start with Prefix; conversation keys carry the
// conversation's hash tag, global keys the tag {global}.
type Store struct {
	c      redis.UniversalClient
	pipe   *redisbatch.Batcher
	prefix string
	group  string
	// clock, when set (tests), replaces Redis's clock for the recent-throughput buckets: ms.
	clock func() int64
}

// New returns a store on client c under prefix.
func New(c redis.UniversalClient, prefix string) *Store {
	return &Store{c: c, pipe: redisbatch.New(c), prefix: prefix, group: "workers"}
}

// Client is the underlying client.
func (s *Store) Client() redis.UniversalClient { return s.c }

func (s *Store) stKey(tag string) string { return s.prefix + tag + ":st" }
func (s *Store) qKey(tag string) string  { return s.prefix + tag + ":q" }
func (s *Store) g(name string) string    { return s.prefix + "{global}:" + name }

// ReadyKey is the stream of hints: "conversation <tag> may have work".
func (s *Store) ReadyKey() string { return s.g("ready") }

// DeadKey is the dead-letter stream.
func (s *Store) DeadKey() string { return s.g("dead") }

// CancelChannel is the pub/sub channel carrying ids of cancelled active runs.
func (s *Store) CancelChannel() string { return s.prefix + "cancel" }

// Entry joins a run id and its envelope into a mailbox entry.
func Entry(runID string, payload []byte) string { return runID + "\n" + string(payload) }

// SplitEntry is Entry's inverse.
func SplitEntry(e string) (runID string, payload []byte) {
	id, rest, _ := strings.Cut(e, "\n")
	return id, []byte(rest)
}

// Enqueue statuses.
const (
	StatusNew       = "new"
	StatusScheduled = "scheduled"
	StatusQueued    = "queued"
	StatusBusy      = "busy"
	// StatusDuplicate: the request's seen key exists; the event's run was queued before.
	StatusDuplicate = "duplicate"
	// StatusLate refuses an admitted run whose admission is older than the window (see
	// scripts.go); nothing was pushed.
	StatusLate = "late"
	// StatusIdle answers an Append to a conversation that is not scheduled; nothing was pushed.
	StatusIdle = "idle"
)

// EnqueueResult is what the enqueue script did.
type EnqueueResult struct {
	Status string
	// Interrupted is the active run flagged cancelled by the interrupt policy, if any.
	Interrupted string
	// Removed are queued runs the interrupt policy dropped.
	Removed []string
}

// EnqueueReq is one call of the enqueue script.
type EnqueueReq struct {
	Tag   string
	Probe bool // probe mode: only an unscheduled conversation receives the entry
	// Append mode: only a scheduled conversation receives the entry (StatusIdle otherwise).
	Append bool
	// Intent adds the run to the unhinted index (UnhintedKey) before the script runs, so that a
	// conversation this call schedules is found by the rescue if the caller dies before it
	// hints it: on a cluster the index write is acknowledged first (one more round trip), on one
	// node it leaves ahead of the script in the same pipeline. The caller removes the entry with
	// its next Ready (Unindex), or with Unindex when nothing needs a hint.
	Intent     bool
	Entry      string
	MaxPerConv int
	Interrupt  bool
	Now        int64 // ms, the caller's clock (rescue compares it)
	ConvKey    string
	// AdmittedAt is the run's admission time (Ready's answer) when it was admitted before this
	// push, else 0; the push is refused (StatusLate) when it is more than Window old.
	AdmittedAt int64
	Window     time.Duration
	// Seen, when set, is the key marking the inbound event the run answers (SeenKey): an
	// existing mark makes the call StatusDuplicate, and a push sets it for SeenTTL.
	Seen    string
	SeenTTL time.Duration
}

// SeenKey is the key that marks inbound event (a caller's id of it, e.g. "event:<platform>:<id>")
// as queued in conversation tag: it shares the conversation's slot, so the enqueue script sets it
// together with the entry.
func (s *Store) SeenKey(tag, event string) string { return s.prefix + tag + ":seen:" + event }

// Enqueue runs the enqueue script for r.Tag (see scripts.go).
func (s *Store) Enqueue(ctx context.Context, r EnqueueReq) (EnqueueResult, error) {
	mode := "push"
	switch {
	case r.Probe:
		mode = "probe"
	case r.Append:
		mode = "append"
	}
	tag := r.Tag
	keys := []string{s.stKey(tag), s.qKey(tag)}
	if r.Seen != "" {
		keys = append(keys, r.Seen)
	}
	args := []any{mode, r.Entry, r.MaxPerConv, b2s(r.Interrupt), r.Now, r.ConvKey, r.AdmittedAt, r.Window.Milliseconds(), max(r.SeenTTL.Milliseconds(), 1)}
	var cmd *redis.Cmd
	if r.Intent {
		runID, _ := SplitEntry(r.Entry)
		cmd = s.evalIndexed(ctx, Member(tag, runID), r.Now, scriptEnqueue, keys, args...)
	} else {
		cmd = s.eval(ctx, scriptEnqueue, keys, args...)
	}
	v, err := cmd.StringSlice()
	if err != nil {
		return EnqueueResult{}, fmt.Errorf("rdb: enqueue into %s: %w", tag, err)
	}
	if len(v) < 2 {
		return EnqueueResult{}, fmt.Errorf("rdb: enqueue into %s: short reply %q", tag, v)
	}
	return EnqueueResult{Status: v[0], Interrupted: v[1], Removed: v[2:]}, nil
}

// evalIndexed adds member to the unhinted index at (ms) and then runs script, in that order
// even if the process dies in between: on one node both leave in one pipeline, which Redis runs
// in order; a cluster runs a pipeline's parts for different nodes concurrently, so there the
// index write is acknowledged before the script is sent. On one node a failed index write does
// not stop the script: the caller's next step hints the conversation all the same, and only a
// crash right then would leave it to the backstop scan.
func (s *Store) evalIndexed(ctx context.Context, member string, at int64, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	zadd := redis.NewIntCmd(ctx, "zadd", s.UnhintedKey(), at, member)
	if _, cluster := s.c.(*redis.ClusterClient); cluster {
		s.pipe.Do(ctx, zadd)
		if err := zadd.Err(); err != nil {
			cmd := redis.NewCmd(ctx)
			cmd.SetErr(fmt.Errorf("index the run: %w", err))
			return cmd
		}
		return s.eval(ctx, script, keys, args...)
	}
	a := make([]any, 0, 3+len(keys)+len(args))
	a = append(a, "evalsha", script.Hash(), len(keys))
	for _, k := range keys {
		a = append(a, k)
	}
	a = append(a, args...)
	cmd := redis.NewCmd(ctx, a...)
	cmd.SetFirstKeyPos(3)
	s.pipe.Do(ctx, zadd, cmd)
	if isNoScript(cmd.Err()) {
		// The script ran nothing; the index write before it did, as it must.
		return script.Eval(ctx, s.c, keys, args...)
	}
	return cmd
}

// UnhintedKey is the sorted set of runs whose conversation their enqueuer has not hinted yet
// (see scripts.go): "<tag>|<run id>" scored with the enqueuer's clock (ms).
func (s *Store) UnhintedKey() string { return s.g("unhinted") }

// Unhinted is one entry of the unhinted index.
type Unhinted struct {
	Member string // Member(tag, run id)
	At     int64  // ms, the enqueuer's clock when it indexed the run
}

// Unhinted lists up to limit entries of the unhinted index indexed at or before before (ms),
// oldest first: one range query, whatever the number of conversations.
func (s *Store) Unhinted(ctx context.Context, before int64, limit int) ([]Unhinted, error) {
	zs, err := s.c.ZRangeByScoreWithScores(ctx, s.UnhintedKey(), &redis.ZRangeBy{
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
func (s *Store) Unindex(ctx context.Context, members ...string) error {
	if len(members) == 0 {
		return nil
	}
	a := make([]any, 0, 2+len(members))
	a = append(a, "zrem", s.UnhintedKey())
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

// Retract removes an entry a refused "new" enqueue put in, and its seen key when set; needHint
// reports that others queued behind it and the conversation must still be hinted.
func (s *Store) Retract(ctx context.Context, tag, entry, seen string) (needHint bool, err error) {
	keys := []string{s.stKey(tag), s.qKey(tag)}
	if seen != "" {
		keys = append(keys, seen)
	}
	n, err := s.eval(ctx, scriptRetract, keys, entry).Int()
	if err != nil {
		return false, fmt.Errorf("rdb: retract from %s: %w", tag, err)
	}
	return n == 1, nil
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
func (s *Store) Ready(ctx context.Context, r ReadyReq) (status string, at int64, err error) {
	mode := r.Admit
	if mode == AdmitNone {
		mode = "none"
	}
	v, err := s.eval(ctx, scriptReady, []string{s.g("paused"), s.admittedKey(), s.ReadyKey(), s.UnhintedKey()},
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
func (s *Store) Claim(ctx context.Context, tag, owner string, now, deadline int64) (Claim, error) {
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
func (s *Store) Ack(ctx context.Context, tag, owner, runID string, deadline int64) (Claim, error) {
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
func (s *Store) Renew(ctx context.Context, r RenewReq) (Renewal, error) {
	out, err := s.RenewMany(ctx, []RenewReq{r})
	if err != nil {
		return Renewal{}, err
	}
	return out[0], nil
}

// RenewMany extends several leases in one pipeline (the heartbeat).
func (s *Store) RenewMany(ctx context.Context, reqs []RenewReq) ([]Renewal, error) {
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

func isNoScript(err error) bool {
	return redis.HasErrorPrefix(err, "NOSCRIPT")
}

// Release gives up owner's lease on tag; needHint reports the mailbox still holds work.
func (s *Store) Release(ctx context.Context, tag, owner string, now int64) (needHint bool, err error) {
	n, err := s.eval(ctx, scriptRelease, []string{s.stKey(tag), s.qKey(tag)}, owner, now).Int()
	if err != nil {
		return false, fmt.Errorf("rdb: release %s: %w", tag, err)
	}
	return n == 1, nil
}

// Cancel removes queued runs of tag matching runID ("" for all) and flags the active one.
func (s *Store) Cancel(ctx context.Context, tag, runID string) (active string, removed []string, err error) {
	v, err := s.eval(ctx, scriptCancel, []string{s.stKey(tag), s.qKey(tag)}, runID).StringSlice()
	if err != nil {
		return "", nil, fmt.Errorf("rdb: cancel in %s: %w", tag, err)
	}
	if len(v) == 0 {
		return "", nil, fmt.Errorf("rdb: cancel in %s: empty reply", tag)
	}
	return v[0], v[1:], nil
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
func (s *Store) Rescue(ctx context.Context, tag, runID string, now int64) (status string, queued bool, err error) {
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
// worker holds it and, as the caller found (QueuedHints), no hint of it is queued (the backstop
// scan; see the script): RescueAgain when the caller must hint the conversation again — head is
// then its mailbox head's run id ("" when the mailbox is empty), which the caller makes sure is
// counted (AdmitForce) —, RescueWaiting when it is stale but its hint is queued, RescueNone
// otherwise.
func (s *Store) RescueStale(ctx context.Context, tag string, now, staleBefore int64, queued bool) (status, head string, err error) {
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

// hintsPage is how many ready-stream entries one read of QueuedHints takes.
const hintsPage = 1000

// QueuedHints returns the conversation tags of every hint in the ready stream. Spent hints are
// acknowledged and deleted together, so these are the hints not yet read, or read and not yet
// spent: each conversation named is scheduled to be served, however long it waits for a worker.
// It reads the whole stream (in pages), which holds about one hint per scheduled conversation:
// for the backstop scan, which visits every conversation anyway.
func (s *Store) QueuedHints(ctx context.Context) (map[string]struct{}, error) {
	tags := map[string]struct{}{}
	start := "-"
	for {
		msgs, err := s.c.XRangeN(ctx, s.ReadyKey(), start, "+", hintsPage).Result()
		if err != nil {
			return nil, fmt.Errorf("rdb: read the queued hints: %w", err)
		}
		for _, h := range toHints(msgs) {
			tags[h.Tag] = struct{}{}
		}
		if len(msgs) < hintsPage {
			return tags, nil
		}
		start = "(" + msgs[len(msgs)-1].ID
	}
}

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
func (s *Store) Settle(ctx context.Context, st Settlement) error {
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
	if err := s.eval(ctx, scriptSettle, []string{s.ReadyKey(), s.admittedKey(), s.g("stats"), s.recentKey()}, args...).Err(); err != nil {
		return fmt.Errorf("rdb: settle %d acks: %w", len(st.Acks), err)
	}
	return nil
}

// DeadLetter is one entry of the dead-letter stream.
type DeadLetter struct {
	ID       string // stream id
	RunID    string
	Reason   string
	Envelope []byte
	Conv     string
	Attempts int
	At       time.Time
}

// AddDeadLetter records d (its ID is assigned), counts it, as a signature failure too when
// sigFailure, and removes the run of conversation tag from the admitted set.
func (s *Store) AddDeadLetter(ctx context.Context, tag string, d DeadLetter, sigFailure bool) (string, error) {
	id, err := s.eval(ctx, scriptDead, []string{s.DeadKey(), s.admittedKey(), s.g("stats"), s.recentKey()},
		d.RunID, d.Reason, string(d.Envelope), d.Conv, d.Attempts, d.At.UnixMilli(), b2s(sigFailure), Member(tag, d.RunID), s.recentNow()).Text()
	if err != nil {
		return "", fmt.Errorf("rdb: dead-letter %s: %w", d.RunID, err)
	}
	return id, nil
}

// DeadLetters lists up to limit dead letters, oldest first.
func (s *Store) DeadLetters(ctx context.Context, limit int) ([]DeadLetter, error) {
	msgs, err := s.c.XRangeN(ctx, s.DeadKey(), "-", "+", int64(limit)).Result()
	if err != nil {
		return nil, fmt.Errorf("rdb: list dead letters: %w", err)
	}
	out := make([]DeadLetter, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, parseDead(m))
	}
	return out, nil
}

// FindDeadLetter returns the dead letter of runID, scanning the stream.
func (s *Store) FindDeadLetter(ctx context.Context, runID string) (DeadLetter, bool, error) {
	start := "-"
	for {
		msgs, err := s.c.XRangeN(ctx, s.DeadKey(), start, "+", 500).Result()
		if err != nil {
			return DeadLetter{}, false, fmt.Errorf("rdb: find dead letter %s: %w", runID, err)
		}
		for _, m := range msgs {
			if d := parseDead(m); d.RunID == runID {
				return d, true, nil
			}
		}
		if len(msgs) < 500 {
			return DeadLetter{}, false, nil
		}
		start = "(" + msgs[len(msgs)-1].ID
	}
}

// DeleteDeadLetter removes one dead letter by stream id; it reports whether one was there.
func (s *Store) DeleteDeadLetter(ctx context.Context, id string) (bool, error) {
	n, err := s.c.XDel(ctx, s.DeadKey(), id).Result()
	if err != nil {
		return false, fmt.Errorf("rdb: delete dead letter %s: %w", id, err)
	}
	return n == 1, nil
}

// DeadCount is the length of the dead-letter stream.
func (s *Store) DeadCount(ctx context.Context) (int64, error) {
	n, err := s.c.XLen(ctx, s.DeadKey()).Result()
	if err != nil {
		return 0, fmt.Errorf("rdb: count dead letters: %w", err)
	}
	return n, nil
}

func parseDead(m redis.XMessage) DeadLetter {
	str := func(k string) string { v, _ := m.Values[k].(string); return v }
	attempts, _ := strconv.Atoi(str("attempts"))
	at, _ := strconv.ParseInt(str("at"), 10, 64)
	return DeadLetter{ID: m.ID, RunID: str("run"), Reason: str("reason"), Envelope: []byte(str("env")),
		Conv: str("conv"), Attempts: attempts, At: time.UnixMilli(at)}
}

func b2s(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
