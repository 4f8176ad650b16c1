package router

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/core/runs"
)

// memQueue is router.Queue in memory, as *runs.Queue keeps it in Redis: per-conversation
// mailboxes of encoded envelopes, the event marks of EnqueueOnce, the pause flag, the limits, the
// counters and the dead letters. There is no pool: work hands the oldest queued run to the test,
// verified as a worker verifies it, and counts it answered.
type memQueue struct {
	db     *memDB
	signer *runs.Signer
	// maxConv and maxAll are the limits (0: none), defaulted as runs.Options documents.
	maxConv int
	maxAll  int64
}

var _ Queue = (*memQueue)(nil)

// memMailbox is one conversation's queued runs, head first.
type memMailbox struct {
	conv    conv.Key
	entries []memEntry
}

type memEntry struct {
	runID   string
	payload []byte // the envelope as the queue stores it (Attempt 0)
	seq     int64
}

// memCount is one counter's increment at a time, for Recent.
type memCount struct {
	at   time.Time
	name string
	n    int64
}

// newMemQueue returns a queue with opt's limits and signer. Options that only a pool or the
// interrupt policy would act on are refused: a test that needs them runs on Redis.
func newMemQueue(db *memDB, opt runs.Options) (*memQueue, error) {
	switch {
	case opt.Followup == runs.FollowupInterrupt || opt.FollowupFor != nil:
		return nil, errors.New("memQueue: the interrupt follow-up policy is not modelled; use newRedisHarness")
	case opt.MaxAttempts != 0 || opt.RetryBase != 0 || opt.RetryMax != 0 || opt.OutageRetryBase != 0 || opt.OnRecovery != nil:
		return nil, errors.New("memQueue: retries and recoveries are the pool's; use newRedisHarness")
	}
	q := &memQueue{db: db, signer: opt.Signer, maxConv: opt.MaxPerConversation, maxAll: opt.MaxPending}
	if q.maxConv == 0 {
		q.maxConv = 50
	}
	if q.maxAll == 0 {
		q.maxAll = 10000
	}
	q.maxConv, q.maxAll = max(q.maxConv, 0), max(q.maxAll, 0)
	return q, nil
}

// SeenKey is the key EnqueueOnce marks event with in conversation c; Intake reads it.
func (q *memQueue) SeenKey(c conv.Key, event string) string {
	return "mem:" + c.HashTag() + ":seen:" + event
}

// Enqueue appends env to its conversation's mailbox.
func (q *memQueue) Enqueue(ctx context.Context, env *runs.Envelope) error {
	return q.EnqueueOnce(ctx, env, "", 0)
}

// EnqueueOnce appends env to its conversation's mailbox and marks event (when set) for ttl in the
// same step. Refusals queue nothing and leave no mark: runs.ErrDuplicate when event is marked,
// a *runs.BusyError at the conversation's limit, runs.ErrPaused while paused, a *runs.BusyError
// at the global limit — checked in this order, the order of an idle conversation's enqueue
// (a scheduled one may meet the global refusals first; the router answers each the same
// whichever comes first).
func (q *memQueue) EnqueueOnce(ctx context.Context, env *runs.Envelope, event string, ttl time.Duration) error {
	if err := env.Validate(); err != nil {
		return fmt.Errorf("runs: enqueue: %w", err)
	}
	stored := *env
	stored.Attempt = 0
	payload, err := stored.Encode()
	if err != nil {
		return err
	}
	var seen string
	if event != "" {
		if ttl <= 0 {
			return fmt.Errorf("runs: enqueue %s: the ttl of event %q is not positive", env.RunID, event)
		}
		seen = q.SeenKey(env.Conv, event)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("runs: enqueue %s: %w", env.RunID, err)
	}
	q.db.mu.Lock()
	defer q.db.mu.Unlock()
	tag := env.Conv.HashTag()
	mb := q.db.mailboxes[tag]
	if seen != "" {
		if _, marked := q.db.get(seen); marked {
			return runs.ErrDuplicate
		}
	}
	switch {
	case mb != nil && q.maxConv > 0 && len(mb.entries) >= q.maxConv:
		return &runs.BusyError{Scope: runs.ScopeConversation, Limit: int64(q.maxConv)}
	case q.db.paused:
		return runs.ErrPaused
	case q.maxAll > 0 && q.pending() >= q.maxAll:
		return &runs.BusyError{Scope: runs.ScopeGlobal, Limit: q.maxAll}
	}
	if mb == nil {
		mb = &memMailbox{conv: env.Conv}
		q.db.mailboxes[tag] = mb
	}
	q.db.seq++
	mb.entries = append(mb.entries, memEntry{runID: env.RunID, payload: payload, seq: q.db.seq})
	if seen != "" {
		q.db.set(seen, []byte(env.RunID), ttl)
	}
	return nil
}

// pending counts the admitted, unfinished runs: every queued one. The caller holds mu.
func (q *memQueue) pending() int64 {
	var n int64
	for _, mb := range q.db.mailboxes {
		n += int64(len(mb.entries))
	}
	return n
}

// count adds n to counter name, in the totals and in Recent's record. The caller holds mu.
func (q *memQueue) count(name string, n int64) {
	if n == 0 {
		return
	}
	q.db.counters[name] += n
	q.db.recent = append(q.db.recent, memCount{at: time.Now(), name: name, n: n})
}

// work hands over the oldest queued run of all conversations (so each conversation's runs in
// their order), as a pool whose handler answers every run would: it is verified first (Open,
// and its run id checked against the mailbox's) and one that fails is dead-lettered, never
// handed over; a handed-over run leaves its mailbox counted answered. It returns nil when
// nothing is queued.
func (q *memQueue) work() (*runs.Envelope, error) {
	if q.signer == nil {
		return nil, errors.New("memQueue: a worker needs Options.Signer")
	}
	q.db.mu.Lock()
	defer q.db.mu.Unlock()
	for {
		var head *memMailbox
		for _, mb := range q.db.mailboxes {
			if head == nil || mb.entries[0].seq < head.entries[0].seq {
				head = mb
			}
		}
		if head == nil {
			return nil, nil
		}
		e := head.entries[0]
		q.remove(head, 0)
		env, err := q.signer.Open(e.payload)
		if err == nil && env.RunID != e.runID {
			err = fmt.Errorf("runs: mailbox run id %s differs from the envelope's: %w", e.runID, runs.ErrBadSignature)
		}
		if err != nil {
			q.db.dead = append(q.db.dead, runs.DeadLetter{RunID: e.runID, Conv: head.conv, Reason: "signature: " + runs.VerifyReason(err),
				Attempts: 1, At: time.Now(), Envelope: env, Raw: e.payload})
			q.count("dead_lettered", 1)
			q.count("signature_failures", 1)
			continue
		}
		env.Attempt = 1
		q.count(string(runs.OutcomeAnswered), 1)
		return env, nil
	}
}

// remove takes entry i out of mb, and mb out of the queue once empty. The caller holds mu.
func (q *memQueue) remove(mb *memMailbox, i int) {
	mb.entries = slices.Delete(mb.entries, i, i+1)
	if len(mb.entries) == 0 {
		delete(q.db.mailboxes, mb.conv.HashTag())
	}
}

// QueuedRuns lists the run ids in a conversation's mailbox, head first (the tests read it).
func (q *memQueue) QueuedRuns(_ context.Context, c conv.Key) ([]string, error) {
	q.db.mu.Lock()
	defer q.db.mu.Unlock()
	var ids []string
	if mb := q.db.mailboxes[c.HashTag()]; mb != nil {
		for _, e := range mb.entries {
			ids = append(ids, e.runID)
		}
	}
	return ids, nil
}

// Paused reports whether intake is paused.
func (q *memQueue) Paused(context.Context) (bool, error) {
	q.db.mu.Lock()
	defer q.db.mu.Unlock()
	return q.db.paused, nil
}

// Pause makes Enqueue refuse with runs.ErrPaused until Resume.
func (q *memQueue) Pause(context.Context) error {
	q.db.mu.Lock()
	defer q.db.mu.Unlock()
	q.db.paused = true
	return nil
}

// Resume restarts intake.
func (q *memQueue) Resume(context.Context) error {
	q.db.mu.Lock()
	defer q.db.mu.Unlock()
	q.db.paused = false
	return nil
}

// Cancel removes c's queued runs matching runID (every one when empty), counting them cancelled.
// No run is ever active (work finishes what it hands over), so Active stays empty.
// runs.ErrNotFound when runID is given and matched nothing.
func (q *memQueue) Cancel(_ context.Context, c conv.Key, runID string) (runs.Cancelled, error) {
	q.db.mu.Lock()
	defer q.db.mu.Unlock()
	var out runs.Cancelled
	if mb := q.db.mailboxes[c.HashTag()]; mb != nil {
		for i := 0; i < len(mb.entries); {
			if id := mb.entries[i].runID; runID == "" || id == runID {
				out.Removed = append(out.Removed, id)
				q.remove(mb, i)
				continue
			}
			i++
		}
	}
	q.count(string(runs.OutcomeCancelled), int64(len(out.Removed)))
	if runID != "" && len(out.Removed) == 0 {
		return runs.Cancelled{}, fmt.Errorf("runs: cancel %s in %s: %w", runID, c, runs.ErrNotFound)
	}
	return out, nil
}

// ConvDepth reports c's queued runs.
func (q *memQueue) ConvDepth(_ context.Context, c conv.Key) (runs.ConvDepth, error) {
	q.db.mu.Lock()
	defer q.db.mu.Unlock()
	d := runs.ConvDepth{Conv: c}
	if mb := q.db.mailboxes[c.HashTag()]; mb != nil {
		d.Queued = int64(len(mb.entries))
	}
	return d, nil
}

// Depth reports the pending total, the dead letters and every conversation with queued runs.
func (q *memQueue) Depth(context.Context) (runs.Depth, error) {
	q.db.mu.Lock()
	defer q.db.mu.Unlock()
	d := runs.Depth{Pending: q.pending(), DeadLetters: int64(len(q.db.dead))}
	for _, mb := range q.db.mailboxes {
		d.Conversations = append(d.Conversations, runs.ConvDepth{Conv: mb.conv, Queued: int64(len(mb.entries))})
	}
	slices.SortFunc(d.Conversations, func(a, b runs.ConvDepth) int { return cmp.Compare(a.Conv.String(), b.Conv.String()) })
	return d, nil
}

// Stats reads the counters.
func (q *memQueue) Stats(context.Context) (runs.Stats, error) {
	q.db.mu.Lock()
	defer q.db.mu.Unlock()
	m := q.db.counters
	return runs.Stats{
		Answered: m[string(runs.OutcomeAnswered)], Waiting: m[string(runs.OutcomeWaiting)],
		Cancelled: m[string(runs.OutcomeCancelled)], Failed: m[string(runs.OutcomeFailed)],
		Retries: m["retries"], DeadLettered: m["dead_lettered"], SignatureFailures: m["signature_failures"],
		LeasesLost: m["leases_lost"],
	}, nil
}

// Recent counts the last minute's and the last hour's increments exactly (Redis buckets them by
// minute and prorates the oldest).
func (q *memQueue) Recent(context.Context) (runs.Recent, error) {
	q.db.mu.Lock()
	defer q.db.mu.Unlock()
	now := time.Now()
	var r runs.Recent
	for _, c := range q.db.recent {
		if now.Sub(c.at) < time.Minute {
			addThroughput(&r.LastMinute, c)
		}
		if now.Sub(c.at) < time.Hour {
			addThroughput(&r.LastHour, c)
		}
	}
	return r, nil
}

func addThroughput(t *runs.Throughput, c memCount) {
	switch c.name {
	case string(runs.OutcomeAnswered):
		t.Answered += c.n
	case string(runs.OutcomeWaiting):
		t.Waiting += c.n
	case string(runs.OutcomeCancelled):
		t.Cancelled += c.n
	case string(runs.OutcomeFailed):
		t.Failed += c.n
	case "retries":
		t.Retries += c.n
	case "dead_lettered":
		t.DeadLettered += c.n
	}
}

// DeadLetters lists up to limit dead letters (100 when not positive), oldest first.
func (q *memQueue) DeadLetters(_ context.Context, limit int) ([]runs.DeadLetter, error) {
	if limit <= 0 {
		limit = 100
	}
	q.db.mu.Lock()
	defer q.db.mu.Unlock()
	out := slices.Clone(q.db.dead[:min(limit, len(q.db.dead))])
	for i := range out {
		out[i].Raw = bytes.Clone(out[i].Raw)
	}
	return out, nil
}

// deadLetter finds runID's dead letter; the caller holds mu.
func (q *memQueue) deadLetter(runID string) (int, bool) {
	i := slices.IndexFunc(q.db.dead, func(d runs.DeadLetter) bool { return d.RunID == runID })
	return i, i >= 0
}

// Replay queues dead letter runID again as a new run, signed afresh once its stored envelope
// verifies, and removes the dead letter; runs.ErrNotFound when there is none, the verification
// error (the dead letter kept) when it does not verify, Enqueue's refusals (kept too).
func (q *memQueue) Replay(ctx context.Context, runID string) (string, error) {
	if q.signer == nil {
		return "", fmt.Errorf("runs: replay %s: the queue has no Options.Signer to sign the replay with", runID)
	}
	q.db.mu.Lock()
	i, ok := q.deadLetter(runID)
	var raw []byte
	if ok {
		raw = q.db.dead[i].Raw
	}
	q.db.mu.Unlock()
	if !ok {
		return "", fmt.Errorf("runs: replay %s: %w", runID, runs.ErrNotFound)
	}
	env, err := q.signer.Open(raw)
	if err != nil {
		return "", fmt.Errorf("runs: replay %s: %w", runID, err)
	}
	env.RunID, env.Attempt = runs.NewRunID(), 0
	q.signer.Sign(env)
	if err := q.Enqueue(ctx, env); err != nil {
		return "", fmt.Errorf("runs: replay %s: %w", runID, err)
	}
	if err := q.Drop(ctx, runID); err != nil {
		return env.RunID, fmt.Errorf("runs: replay %s: queued as %s, but removing the dead letter failed: %w", runID, env.RunID, err)
	}
	return env.RunID, nil
}

// Drop deletes dead letter runID; runs.ErrNotFound when there is none.
func (q *memQueue) Drop(_ context.Context, runID string) error {
	q.db.mu.Lock()
	defer q.db.mu.Unlock()
	i, ok := q.deadLetter(runID)
	if !ok {
		return fmt.Errorf("runs: drop %s: %w", runID, runs.ErrNotFound)
	}
	q.db.dead = slices.Delete(q.db.dead, i, i+1)
	return nil
}
