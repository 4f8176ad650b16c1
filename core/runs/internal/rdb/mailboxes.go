package rdb

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchboard-bot/switchboard/internal/redisscan"
)

// Mailboxes are the conversations' mailboxes (q, a list of entries, and the state hash st;
// see scripts.go): putting a run in (Enqueue, Retract), taking queued runs out and flagging the
// active one (Cancel, with its notice to every process), and reading them for the admin
// (ConvState, MailboxIDs, ScanConvs).
type Mailboxes struct{ *conn }

// CancelChannel is the pub/sub channel carrying ids of cancelled active runs.
func (s *Mailboxes) CancelChannel() string { return s.cancelChannel() }

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
func (s *Mailboxes) SeenKey(tag, event string) string { return s.prefix + tag + ":seen:" + event }

// Enqueue runs the enqueue script for r.Tag (see scripts.go).
func (s *Mailboxes) Enqueue(ctx context.Context, r EnqueueReq) (EnqueueResult, error) {
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
func (s *Mailboxes) evalIndexed(ctx context.Context, member string, at int64, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	zadd := redis.NewIntCmd(ctx, "zadd", s.unhintedKey(), at, member)
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

// Retract removes an entry a refused "new" enqueue put in, and its seen key when set; needHint
// reports that others queued behind it and the conversation must still be hinted.
func (s *Mailboxes) Retract(ctx context.Context, tag, entry, seen string) (needHint bool, err error) {
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

// Cancel removes queued runs of tag matching runID ("" for all) and flags the active one.
func (s *Mailboxes) Cancel(ctx context.Context, tag, runID string) (active string, removed []string, err error) {
	v, err := s.eval(ctx, scriptCancel, []string{s.stKey(tag), s.qKey(tag)}, runID).StringSlice()
	if err != nil {
		return "", nil, fmt.Errorf("rdb: cancel in %s: %w", tag, err)
	}
	if len(v) == 0 {
		return "", nil, fmt.Errorf("rdb: cancel in %s: empty reply", tag)
	}
	return v[0], v[1:], nil
}

// PublishCancel tells every worker process that runID was cancelled.
func (s *Mailboxes) PublishCancel(ctx context.Context, runID string) error {
	if err := s.c.Publish(ctx, s.cancelChannel(), runID).Err(); err != nil {
		return fmt.Errorf("rdb: publish cancel of %s: %w", runID, err)
	}
	return nil
}

// SubscribeCancels subscribes to cancel notices; the caller closes the returned PubSub.
func (s *Mailboxes) SubscribeCancels(ctx context.Context) (*redis.PubSub, error) {
	ps := s.c.Subscribe(ctx, s.cancelChannel())
	if _, err := ps.Receive(ctx); err != nil {
		_ = ps.Close()
		return nil, fmt.Errorf("rdb: subscribe to cancels: %w", err)
	}
	return ps, nil
}

// ConvState is one scheduled conversation as the admin sees it.
type ConvState struct {
	Tag     string
	Conv    string
	Queued  int64
	Active  string
	Owner   string
	Attempt int
}

// ConvState reads tag's state; ok is false when the conversation is not scheduled.
func (s *Mailboxes) ConvState(ctx context.Context, tag string) (st ConvState, ok bool, err error) {
	var h *redis.MapStringStringCmd
	var l *redis.IntCmd
	// One tag: both keys share a slot, so the pipeline is one round trip even on a cluster.
	_, err = s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		h = p.HGetAll(ctx, s.stKey(tag))
		l = p.LLen(ctx, s.qKey(tag))
		return nil
	})
	if err != nil {
		return ConvState{}, false, fmt.Errorf("rdb: read state of %s: %w", tag, err)
	}
	m := h.Val()
	if len(m) == 0 {
		return ConvState{Tag: tag, Queued: l.Val()}, l.Val() > 0, nil
	}
	n, _ := strconv.Atoi(m["n"])
	return ConvState{Tag: tag, Conv: m["k"], Queued: l.Val(), Active: m["a"], Owner: m["o"], Attempt: n}, true, nil
}

// MailboxIDs lists the run ids queued in tag, head first.
func (s *Mailboxes) MailboxIDs(ctx context.Context, tag string) ([]string, error) {
	es, err := s.c.LRange(ctx, s.qKey(tag), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("rdb: list mailbox of %s: %w", tag, err)
	}
	out := make([]string, len(es))
	for i, e := range es {
		out[i], _ = SplitEntry(e)
	}
	return out, nil
}

// ScanConvs calls fn with the tag of every scheduled conversation, on every master of a
// cluster, one call at a time.
func (s *Mailboxes) ScanConvs(ctx context.Context, fn func(tag string) error) error {
	err := redisscan.Each(ctx, s.c, s.prefix+"{conv:*}:st", func(key string) error {
		return fn(strings.TrimSuffix(strings.TrimPrefix(key, s.prefix), ":st"))
	})
	if err != nil {
		return fmt.Errorf("rdb: scan conversations: %w", err)
	}
	return nil
}
