package runs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/core/runs/internal/rdb"
)

// Queue is the Redis run queue: Enqueue on the intake side, admin operations, and the source of
// Pools on the worker side. It is safe for concurrent use; any number of Queues in any number of
// processes may share one Redis and prefix.
type Queue struct {
	st    *rdb.Store
	opt   Options
	log   *slog.Logger
	sched *scheduledSet
	// outage logs the enqueues' retries while Redis is unreachable.
	outage *failureLog
	// reconcileAge is how old an admission must be before the periodic scan may forget it when
	// its run is not in its mailbox; pushes of admitted runs are refused past half of it.
	reconcileAge time.Duration
	// betweenSteps, when set (tests), is called after an idle enqueue's push and before its
	// hint: a test kills the process there.
	betweenSteps func()
}

// reconcileAge is the age past which an admitted run absent from its mailbox is forgotten (see
// rdb.Admissions.Reconcile): several leases, and at least a minute, far beyond what one Enqueue
// takes (enqueueTimeout plus the client's timeouts). The clocks of the Redis nodes must agree
// within half of it.
func reconcileAge(lease time.Duration) time.Duration { return max(4*lease, time.Minute) }

// New returns a queue on client with opt. It does not talk to Redis.
func New(client redis.UniversalClient, opt Options) (*Queue, error) {
	opt, err := opt.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Queue{st: rdb.New(client, opt.Prefix), opt: opt, log: opt.Logger, sched: newScheduledSet(),
		reconcileAge: reconcileAge(opt.Lease),
		outage:       newFailureLog(opt.Logger, "enqueue", "runs: scheduling a queued run failed; retrying until the enqueue's deadline")}, nil
}

// Open is New plus a check that Redis answers and the workers' consumer group exists.
func Open(ctx context.Context, client redis.UniversalClient, opt Options) (*Queue, error) {
	q, err := New(client, opt)
	if err != nil {
		return nil, err
	}
	if err := q.st.Hints().EnsureGroup(ctx); err != nil {
		return nil, fmt.Errorf("runs: open queue: %w", err)
	}
	return q, nil
}

// SeenKey is the key EnqueueOnce sets to mark event as queued in conversation c (it shares the
// conversation's hash slot). The router reads it at intake to see a redelivered event as a
// duplicate even when the claim it took for it could not be given back.
func (q *Queue) SeenKey(c conv.Key, event string) string {
	return q.st.Mailboxes().SeenKey(c.HashTag(), event)
}

// Options returns the queue's options with defaults applied.
func (q *Queue) Options() Options { return q.opt }

// Enqueue stores a signed envelope at the tail of its conversation's mailbox. It returns nil once
// the run is durably queued; ErrPaused while intake is paused; a *BusyError when the
// conversation's or the global limit is reached. On any error nothing was queued (a Redis failure
// in the middle of the two steps leaves at worst a run that the recoverer's rescue schedules
// within seconds).
// Enqueue does not sign: the router signs, workers verify. Under the interrupt policy it also
// cancels the conversation's active run and drops its queued ones.
//
// It costs two round trips when its guess of whether the conversation is scheduled (see
// scheduledSet) is right, three when it is wrong; concurrent calls share pipelines.
func (q *Queue) Enqueue(ctx context.Context, env *Envelope) error {
	return q.EnqueueOnce(ctx, env, "", 0)
}

// EnqueueOnce is Enqueue for the run that answers inbound event (the caller's id of it, such as
// "event:<platform>:<id>"; empty: Enqueue): it returns ErrDuplicate, queueing nothing, when a
// run for event was queued in the conversation within ttl; otherwise the run is queued as
// Enqueue does, and event marked as queued (SeenKey) in the same step that puts the run in its
// mailbox. So the mark never exists without its run: an error from EnqueueOnce may still have
// queued the run (Redis failed between the two steps; the recoverer schedules it), and then the
// mark is there too and a redelivery of the event is a duplicate — never a second run.
func (q *Queue) EnqueueOnce(ctx context.Context, env *Envelope, event string, ttl time.Duration) error {
	if err := env.Validate(); err != nil {
		return fmt.Errorf("runs: enqueue: %w", err)
	}
	stored := *env
	stored.Attempt = 0
	payload, err := stored.Encode()
	if err != nil {
		return err
	}
	e := enqueue{
		entry:     rdb.Entry(env.RunID, payload),
		tag:       env.Conv.HashTag(),
		conv:      env.Conv.String(),
		runID:     env.RunID,
		interrupt: q.opt.followupFor(env.Conv) == FollowupInterrupt,
		maxConv:   limitOrZero(q.opt.MaxPerConversation),
		maxAll:    limitOrZero(q.opt.MaxPending),
		now:       time.Now(),
	}
	if event != "" {
		if ttl <= 0 {
			return fmt.Errorf("runs: enqueue %s: the ttl of event %q is not positive", env.RunID, event)
		}
		e.seen, e.seenTTL = q.st.Mailboxes().SeenKey(e.tag, event), ttl
	}
	// Once started, the steps run to the end even if the caller's ctx ends (a platform
	// connection closing at shutdown): a run left half-queued — in its mailbox but not hinted —
	// would wait for the recoverer's rescue, and the caller, seeing an error, would have the
	// platform redeliver it as a second run.
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("runs: enqueue %s: %w", env.RunID, err)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), enqueueTimeout)
	defer cancel()
	if q.sched.likely(e.tag, e.now) {
		err = q.enqueueScheduled(ctx, e)
	} else {
		err = q.enqueueIdle(ctx, e)
	}
	var busy *BusyError
	switch {
	case errors.Is(err, ErrPaused) || errors.Is(err, ErrDuplicate) || errors.As(err, &busy):
		return err // nothing was queued: the conversation's state did not change
	case err != nil:
		return fmt.Errorf("runs: enqueue %s: %w", env.RunID, err)
	}
	q.sched.saw(e.tag, e.now)
	return nil
}

// enqueueTimeout bounds one Enqueue's Redis steps once they have started.
const enqueueTimeout = 10 * time.Second

// enqueue is one Enqueue call's arguments.
type enqueue struct {
	entry, tag, conv, runID string
	interrupt               bool
	maxConv                 int
	maxAll                  int64
	now                     time.Time
	seen                    string // the event's seen key, when EnqueueOnce
	seenTTL                 time.Duration
	// indexed: the run is in the unhinted index (rdb.EnqueueReq.Intent) and the next global
	// step must take it out.
	indexed bool
}

// req is e's call of the enqueue script: probe or push, with its admission time when admitted.
func (e enqueue) req(probe bool, admittedAt int64) rdb.EnqueueReq {
	return rdb.EnqueueReq{Tag: e.tag, Probe: probe, Entry: e.entry, MaxPerConv: e.maxConv, Interrupt: e.interrupt,
		Now: e.now.UnixMilli(), ConvKey: e.conv, AdmittedAt: admittedAt, Seen: e.seen, SeenTTL: e.seenTTL}
}

// member names e's run in the admitted set.
func (e enqueue) member() string { return rdb.Member(e.tag, e.runID) }

// enqueueIdle is the order for a conversation believed idle. Step 1 (conversation slot): an idle
// conversation gets the entry at once, still invisible to workers because no hint exists yet; a
// scheduled one is only probed. The run is indexed as unhinted first (rdb.EnqueueReq.Intent, in
// the same round trip on one node), so that if this process dies before step 2 the recoverer's
// rescue hints the conversation within seconds. Step 2 (global slot): admit against pause and
// the global limit, hint workers and take the run out of the index. A scheduled conversation
// then takes enqueueScheduled's two steps.
func (q *Queue) enqueueIdle(ctx context.Context, e enqueue) error {
	req := e.req(true, 0)
	req.Intent = true
	r, err := q.st.Mailboxes().Enqueue(ctx, req)
	if err != nil {
		// The push may have happened: the index entry stays for the rescue to decide.
		return err
	}
	e.indexed = true
	switch r.Status {
	case rdb.StatusDuplicate:
		q.unindex(ctx, e)
		return ErrDuplicate
	case rdb.StatusBusy:
		q.unindex(ctx, e)
		return &BusyError{Scope: ScopeConversation, Limit: int64(e.maxConv)}
	case rdb.StatusScheduled:
		return q.enqueueScheduled(ctx, e)
	}
	if q.betweenSteps != nil {
		q.betweenSteps()
	}
	// The run is in its mailbox (with its mark): while Redis is unreachable, keep trying to
	// admit and hint it until the enqueue's deadline rather than leave it to the rescue.
	var status string
	err = retryRedis(ctx, q.outage, func() error {
		var err error
		status, _, err = q.st.Admissions().Ready(ctx, rdb.ReadyReq{Admit: rdb.AdmitCheck, Member: e.member(), MaxPending: e.maxAll, Hint: e.tag, Unindex: true})
		return err
	}, "run", e.runID)
	if err != nil {
		return err
	}
	if status == rdb.ReadyOK {
		return nil
	}
	needHint, err := q.st.Mailboxes().Retract(ctx, e.tag, e.entry, e.seen)
	if err != nil {
		return fmt.Errorf("undo after refusal: %w", err)
	}
	// Others queued behind the retracted run need the hint it was to bring; either way the
	// run leaves the index.
	r2 := rdb.ReadyReq{Member: e.member(), Unindex: true}
	if needHint {
		r2.Hint = e.tag
	}
	if _, _, err := q.st.Admissions().Ready(ctx, r2); err != nil {
		return fmt.Errorf("hint: %w", err)
	}
	return q.refusal(status, e.maxAll)
}

// unindex takes a refused run out of the unhinted index; when that fails the rescue drops the
// entry once it is old (the run is in no mailbox).
func (q *Queue) unindex(ctx context.Context, e enqueue) {
	if err := q.st.Rescues().Unindex(context.WithoutCancel(ctx), e.member()); err != nil {
		q.log.Debug("runs: taking a refused run out of the unhinted index failed; the rescue will", "run", e.runID, "err", err)
	}
}

// enqueueScheduled is the order for a conversation believed scheduled: admit first, then append
// (the active worker may take it at once, so it must be counted before). The append is refused
// when the admission is older than half the reconciliation age, which may by then have forgotten
// it, and when the conversation turns out idle: then the run is indexed as unhinted, pushed and
// the conversation hinted, as enqueueIdle does (the admission already made), so that no
// conversation is ever scheduled without a hint or an index entry that brings one.
func (q *Queue) enqueueScheduled(ctx context.Context, e enqueue) error {
	status, at, err := q.st.Admissions().Ready(ctx, rdb.ReadyReq{Admit: rdb.AdmitCheck, Member: e.member(), MaxPending: e.maxAll, Unindex: e.indexed})
	if err != nil {
		return err // an index entry left behind is dropped by the rescue: the run is in no mailbox
	}
	if status != rdb.ReadyOK {
		if e.indexed {
			q.unindex(ctx, e)
		}
		return q.refusal(status, e.maxAll)
	}
	e.indexed = false
	req := e.req(false, at)
	req.Append = true
	req.Window = q.reconcileAge / 2
	r, err := q.st.Mailboxes().Enqueue(ctx, req)
	if err == nil && r.Status == rdb.StatusIdle {
		// The conversation went idle meanwhile: index the run, then push it.
		req.Append, req.Intent = false, true
		e.indexed = true
		r, err = q.st.Mailboxes().Enqueue(ctx, req)
	}
	if err != nil {
		// The push may have happened: the rescue finds an indexed run and counts it again.
		q.unadmit(ctx, e.tag, []string{e.runID}, 0)
		return err
	}
	if r.Status != rdb.StatusNew && r.Status != rdb.StatusQueued {
		q.unadmit(ctx, e.tag, []string{e.runID}, 0)
		if e.indexed {
			q.unindex(ctx, e)
		}
	}
	switch r.Status {
	case rdb.StatusDuplicate:
		return ErrDuplicate
	case rdb.StatusBusy:
		return &BusyError{Scope: ScopeConversation, Limit: int64(e.maxConv)}
	case rdb.StatusLate:
		return fmt.Errorf("the run reached its mailbox more than %s after its admission; not queued", req.Window)
	case rdb.StatusNew:
		// The conversation was idle: it needs a hint now (retried as in enqueueIdle).
		if err := retryRedis(ctx, q.outage, func() error {
			_, _, err := q.st.Admissions().Ready(ctx, rdb.ReadyReq{Hint: e.tag, Member: e.member(), Unindex: true})
			return err
		}, "run", e.runID); err != nil {
			return fmt.Errorf("hint: %w", err)
		}
		return nil
	}
	if e.indexed {
		// Queued behind work scheduled meanwhile: its worker reaches the run; no hint needed.
		q.unindex(ctx, e)
	}
	if r.Interrupted != "" {
		q.log.Info("runs: interrupting the active run", "run", r.Interrupted, "conv", e.conv, "by", e.runID)
		if err := q.st.Mailboxes().PublishCancel(ctx, r.Interrupted); err != nil {
			// The worker's heartbeat still sees the cancel flag within a third of a lease.
			q.log.Warn("runs: publish cancel failed", "run", r.Interrupted, "err", err)
		}
	}
	if len(r.Removed) > 0 {
		q.unadmit(ctx, e.tag, r.Removed, int64(len(r.Removed)))
	}
	return nil
}

// unadmit returns runIDs of conversation tag to the global budget, counting cancelled of them as
// cancelled. When it fails, the periodic reconciliation returns them later.
func (q *Queue) unadmit(ctx context.Context, tag string, runIDs []string, cancelled int64) {
	var counters map[string]int64
	if cancelled > 0 {
		counters = map[string]int64{string(OutcomeCancelled): cancelled}
	}
	done := make([]string, len(runIDs))
	for i, id := range runIDs {
		done[i] = rdb.Member(tag, id)
	}
	if err := q.st.Counters().AddStats(context.WithoutCancel(ctx), counters, done); err != nil {
		q.log.Warn("runs: returning admitted runs to the global budget failed; the periodic reconciliation will", "runs", len(runIDs), "err", err)
	}
}

func (q *Queue) refusal(status string, maxAll int64) error {
	if status == rdb.ReadyPaused {
		return ErrPaused
	}
	return &BusyError{Scope: ScopeGlobal, Limit: maxAll}
}
