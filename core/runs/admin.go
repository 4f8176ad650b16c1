package runs

import (
	"context"
	"fmt"
	"time"

	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/core/runs/internal/rdb"
)

// Depth is the queue's backlog as an admin sees it.
type Depth struct {
	// Pending is the number of admitted runs not yet finished, over all conversations.
	Pending int64
	// DeadLetters is the length of the dead-letter stream.
	DeadLetters int64
	// Conversations lists every scheduled conversation (queued or running).
	Conversations []ConvDepth
}

// ConvDepth is one conversation's backlog.
type ConvDepth struct {
	Conv conv.Key
	// Queued counts runs in the mailbox, the active one included.
	Queued int64
	// Active is the run a worker holds or last held, empty when none started.
	Active string
	// Running reports that a worker currently holds the conversation's lease.
	Running bool
}

// Depth reports pending totals and every scheduled conversation's depth. It scans the keyspace
// (every master on a cluster): an admin operation, not for hot paths.
func (q *Queue) Depth(ctx context.Context) (Depth, error) {
	var d Depth
	var err error
	if d.Pending, err = q.st.Admissions().Pending(ctx); err != nil {
		return Depth{}, fmt.Errorf("runs: depth: %w", err)
	}
	if d.DeadLetters, err = q.st.DeadLetters().Count(ctx); err != nil {
		return Depth{}, fmt.Errorf("runs: depth: %w", err)
	}
	err = q.st.Mailboxes().ScanConvs(ctx, func(tag string) error {
		cs, ok, err := q.st.Mailboxes().ConvState(ctx, tag)
		if err != nil || !ok {
			return err
		}
		k, _ := conv.ParseKey(cs.Conv)
		d.Conversations = append(d.Conversations, ConvDepth{Conv: k, Queued: cs.Queued, Active: cs.Active, Running: cs.Owner != ""})
		return nil
	})
	if err != nil {
		return Depth{}, fmt.Errorf("runs: depth: %w", err)
	}
	return d, nil
}

// ConvDepth reports one conversation's backlog (zero when it has none).
func (q *Queue) ConvDepth(ctx context.Context, conv conv.Key) (ConvDepth, error) {
	cs, _, err := q.st.Mailboxes().ConvState(ctx, conv.HashTag())
	if err != nil {
		return ConvDepth{}, fmt.Errorf("runs: depth of %s: %w", conv, err)
	}
	return ConvDepth{Conv: conv, Queued: cs.Queued, Active: cs.Active, Running: cs.Owner != ""}, nil
}

// QueuedRuns lists the run ids in a conversation's mailbox, head (the active or next run) first.
func (q *Queue) QueuedRuns(ctx context.Context, conv conv.Key) ([]string, error) {
	ids, err := q.st.Mailboxes().MailboxIDs(ctx, conv.HashTag())
	if err != nil {
		return nil, fmt.Errorf("runs: list %s: %w", conv, err)
	}
	return ids, nil
}

// DeadLetter is a run the queue gave up on, with why.
type DeadLetter struct {
	RunID string
	Conv  conv.Key
	// Reason is for operators: "signature: bad_signature", "attempts exhausted: …".
	Reason   string
	Attempts int
	At       time.Time
	// Envelope is the decoded envelope, nil when it could not be decoded; Raw is what was stored.
	Envelope *Envelope
	Raw      []byte
}

// DeadLetters lists up to limit dead letters, oldest first.
func (q *Queue) DeadLetters(ctx context.Context, limit int) ([]DeadLetter, error) {
	if limit <= 0 {
		limit = 100
	}
	ds, err := q.st.DeadLetters().List(ctx, limit)
	if err != nil {
		return nil, fmt.Errorf("runs: dead letters: %w", err)
	}
	out := make([]DeadLetter, len(ds))
	for i, d := range ds {
		out[i] = toDeadLetter(d)
	}
	return out, nil
}

func toDeadLetter(d rdb.DeadLetter) DeadLetter {
	k, _ := conv.ParseKey(d.Conv)
	env, _ := DecodeEnvelope(d.Envelope)
	return DeadLetter{RunID: d.RunID, Conv: k, Reason: d.Reason, Attempts: d.Attempts, At: d.At, Envelope: env, Raw: d.Envelope}
}

// Replay enqueues a dead-lettered run again as a new run, and removes the dead letter once
// queued; it returns the new run's id. The stored envelope must verify first: one that does not
// (forged, altered, or signed by a key since retired) is refused with the verification error and
// stays a dead letter, to be dropped. It is then signed again under a fresh run id, so the replay
// is a run of its own: the failed attempts' closing notice ("this request failed") and whatever
// else they delivered are recorded under the old id and do not stand in for its answer.
// Enqueue's errors (busy, paused) leave the dead letter in place. ErrNotFound when no dead letter
// has runID; a pool's Options.Signer is needed to re-sign.
func (q *Queue) Replay(ctx context.Context, runID string) (string, error) {
	if q.opt.Signer == nil {
		return "", fmt.Errorf("runs: replay %s: the queue has no Options.Signer to sign the replay with", runID)
	}
	d, ok, err := q.st.DeadLetters().Find(ctx, runID)
	if err != nil {
		return "", fmt.Errorf("runs: replay %s: %w", runID, err)
	}
	if !ok {
		return "", fmt.Errorf("runs: replay %s: %w", runID, ErrNotFound)
	}
	env, err := q.opt.Signer.Open(d.Envelope)
	if err != nil {
		return "", fmt.Errorf("runs: replay %s: %w", runID, err)
	}
	env.RunID, env.Attempt = NewRunID(), 0
	q.opt.Signer.Sign(env)
	if err := q.Enqueue(ctx, env); err != nil {
		return "", fmt.Errorf("runs: replay %s: %w", runID, err)
	}
	if _, err := q.st.DeadLetters().Delete(ctx, d.ID); err != nil {
		return env.RunID, fmt.Errorf("runs: replay %s: queued as %s, but removing the dead letter failed: %w", runID, env.RunID, err)
	}
	return env.RunID, nil
}

// Drop deletes a dead letter for good. ErrNotFound when no dead letter has runID.
func (q *Queue) Drop(ctx context.Context, runID string) error {
	d, ok, err := q.st.DeadLetters().Find(ctx, runID)
	if err != nil {
		return fmt.Errorf("runs: drop %s: %w", runID, err)
	}
	if !ok {
		return fmt.Errorf("runs: drop %s: %w", runID, ErrNotFound)
	}
	if _, err := q.st.DeadLetters().Delete(ctx, d.ID); err != nil {
		return fmt.Errorf("runs: drop %s: %w", runID, err)
	}
	return nil
}

// Cancelled is what Cancel did.
type Cancelled struct {
	// Active is the running (or about to run) run that was told to stop, empty if none matched.
	Active string
	// Removed are queued runs taken out of the mailbox; they end as cancelled without running.
	Removed []string
}

// Cancel cancels runID in conv, or every run of conv when runID is empty: queued runs are removed
// and the active run's context is cancelled (its outcome becomes cancelled). ErrNotFound when
// runID is given and matched nothing.
func (q *Queue) Cancel(ctx context.Context, conv conv.Key, runID string) (Cancelled, error) {
	active, removed, err := q.st.Mailboxes().Cancel(ctx, conv.HashTag(), runID)
	if err != nil {
		return Cancelled{}, fmt.Errorf("runs: cancel in %s: %w", conv, err)
	}
	if active != "" {
		if err := q.st.Mailboxes().PublishCancel(ctx, active); err != nil {
			q.log.Warn("runs: publish cancel failed; the heartbeat will deliver it", "run", active, "err", err)
		}
	}
	if len(removed) > 0 {
		q.unadmit(ctx, conv.HashTag(), removed, int64(len(removed)))
	}
	if runID != "" && active == "" && len(removed) == 0 {
		return Cancelled{}, fmt.Errorf("runs: cancel %s in %s: %w", runID, conv, ErrNotFound)
	}
	return Cancelled{Active: active, Removed: removed}, nil
}

// CancelWhere cancels every run of every scheduled conversation whose key match accepts, as
// Cancel(ctx, key, "") does for each (queued runs removed, the active one told to stop), and
// returns what it did by conversation; conversations with nothing to cancel are left out. It
// scans the keyspace like Depth: an admin operation (a workspace uninstalling the app), not for
// hot paths. A run enqueued into a conversation after the scan passed it is not cancelled, so
// the caller stops the conversations' intake first. On an error, the conversations cancelled
// before it are returned with it.
func (q *Queue) CancelWhere(ctx context.Context, match func(conv.Key) bool) (map[conv.Key]Cancelled, error) {
	var keys []conv.Key
	err := q.st.Mailboxes().ScanConvs(ctx, func(tag string) error {
		cs, ok, err := q.st.Mailboxes().ConvState(ctx, tag)
		if err != nil || !ok {
			return err
		}
		if k, ok := conv.ParseKey(cs.Conv); ok && match(k) {
			keys = append(keys, k)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("runs: cancel where: %w", err)
	}
	done := map[conv.Key]Cancelled{}
	for _, k := range keys {
		c, err := q.Cancel(ctx, k, "")
		if err != nil {
			return done, err
		}
		if c.Active != "" || len(c.Removed) > 0 {
			done[k] = c
		}
	}
	return done, nil
}

// Pause stops intake: Enqueue returns ErrPaused until Resume. Queued runs keep running.
func (q *Queue) Pause(ctx context.Context) error { return q.st.Admissions().Pause(ctx) }

// Resume restarts intake.
func (q *Queue) Resume(ctx context.Context) error { return q.st.Admissions().Resume(ctx) }

// Paused reports whether intake is paused.
func (q *Queue) Paused(ctx context.Context) (bool, error) { return q.st.Admissions().Paused(ctx) }

// Stats are the queue's counters since its keys were created, over all processes.
type Stats struct {
	Answered, Waiting, Cancelled, Failed int64
	// Retries counts transient failures that were retried.
	Retries int64
	// DeadLettered counts runs moved to the dead-letter stream, SignatureFailures those of them
	// that failed verification.
	DeadLettered, SignatureFailures int64
	// LeasesLost counts runs whose worker lost its lease (another worker took over).
	LeasesLost int64
}

// Stats reads the counters.
func (q *Queue) Stats(ctx context.Context) (Stats, error) {
	m, err := q.st.Counters().Stats(ctx)
	if err != nil {
		return Stats{}, fmt.Errorf("runs: stats: %w", err)
	}
	return Stats{
		Answered: m[string(OutcomeAnswered)], Waiting: m[string(OutcomeWaiting)],
		Cancelled: m[string(OutcomeCancelled)], Failed: m[string(OutcomeFailed)],
		Retries: m[statRetries], DeadLettered: m[statDeadLettered], SignatureFailures: m["signature_failures"],
		LeasesLost: m[statLeaseLost],
	}, nil
}

const (
	statRetries      = "retries"
	statLeaseLost    = "leases_lost"
	statDeadLettered = "dead_lettered"
)

// Recent is the queue's throughput over the last minute and the last hour, over all processes:
// whether the bot is busy now, where Stats says how much it did since the start.
//
// Runs are counted when their end is recorded (a worker's settler flushes within about 50 ms),
// in per-minute buckets on the clock of the Redis node holding the queue's global keys, which
// every process shares. A window is the current minute so far, the whole minutes before it, and
// the share of the oldest minute still inside it, prorated as if its runs were spread evenly:
// only that share is an estimate.
type Recent struct {
	LastMinute, LastHour Throughput
}

// Throughput counts runs finished in one window, by how they ended.
type Throughput struct {
	Answered, Waiting, Cancelled, Failed int64
	// Retries counts transient failures that were retried.
	Retries int64
	// DeadLettered counts runs moved to the dead-letter stream (attempts exhausted, signature
	// failures); they are not in Failed.
	DeadLettered int64
}

// Recent reads the throughput of the last minute and the last hour in one call.
func (q *Queue) Recent(ctx context.Context) (Recent, error) {
	r, err := q.st.Counters().Recent(ctx)
	if err != nil {
		return Recent{}, fmt.Errorf("runs: recent throughput: %w", err)
	}
	return recentOf(r), nil
}

func recentOf(r rdb.Recent) Recent {
	return Recent{LastMinute: throughputOf(r.Window(1)), LastHour: throughputOf(r.Window(rdb.RecentMinutes))}
}

func throughputOf(m map[string]int64) Throughput {
	return Throughput{
		Answered: m[string(OutcomeAnswered)], Waiting: m[string(OutcomeWaiting)],
		Cancelled: m[string(OutcomeCancelled)], Failed: m[string(OutcomeFailed)],
		Retries: m[statRetries], DeadLettered: m[statDeadLettered],
	}
}
