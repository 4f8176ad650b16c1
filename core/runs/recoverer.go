package runs

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/switchboard-bot/switchboard/core/runs/internal/rdb"
)

// The recoverer's pace. It ticks every recoverTick (a tenth of a lease, between 100 ms and 1 s):
// each tick it reclaims hints idle for longer than a lease (takeover) and rescues runs indexed as
// unhinted for longer than rescueAge (one range query). Every sweepEvery leases it also
// reconciles the admitted set and prunes dead consumers, and every scanEvery (and at its first
// sweep) it scans every conversation for ones no index entry will bring back (rescueScan).
const (
	sweepEvery = 5
	scanEvery  = time.Hour
	// rescueAge is how long an enqueuer may take between indexing a run and hinting its
	// conversation before the rescue does it: far longer than the two steps take (milliseconds),
	// short enough that a chat whose enqueuer died is answered within seconds. A rescue of a run
	// whose enqueuer is only slow costs a second hint, which the claim script makes harmless.
	rescueAge = 2 * time.Second
	// rescueForget is how old an index entry whose run is in no mailbox must be before the
	// rescue drops it: older than any enqueue's steps can be (enqueueTimeout and the client's
	// timeouts), so a push still on its way is never left unindexed.
	rescueForget = time.Minute
	// rescuePage bounds the entries one rescue handles.
	rescuePage = 100
)

func recoverTick(lease time.Duration) time.Duration {
	return min(max(lease/10, 100*time.Millisecond), time.Second)
}

// reconcilePage is how many admitted runs one reconciliation step reads.
const reconcilePage = 200

// pruneMax bounds the consumers one sweep deletes (the first sweep after an upgrade may find
// many).
const pruneMax = 1000

// consumerIdle is how long a consumer without pending hints must have been idle before a sweep
// deletes it: far longer than the lease after which its hints are reclaimed.
func consumerIdle(lease time.Duration) time.Duration { return 10 * lease }

// recoverer is the recoverer component. Every tick it claims hints idle for longer than a lease —
// their holder stopped heartbeating (every third of a lease), so it is dead or cut off — and
// hands them to the workers, which take the conversation over once its lease has expired: a dead
// process's conversations move on about one lease after its last heartbeat. The same tick
// rescues runs whose enqueuer died before hinting their conversation. Every few leases it
// sweeps: it forgets admitted runs a crash left counted and deletes the consumers of dead
// processes. While Redis is unreachable it logs that a few times, not per tick, and puts the
// rescue and the sweep off to a tick where Redis answers; the first tick after an outage sweeps.
type recoverer struct {
	st    *rdb.Store
	q     *Queue // whose admitted runs it reconciles
	opt   Options
	log   *slog.Logger
	slots *hintSlots
	// consumerIdle is how long an idle consumer without pending hints lives (consumerIdle).
	consumerIdle time.Duration
	// rescues log the rescues per incident: of the unhinted index, and of the scan.
	rescues struct{ index, scan *rescueLog }
	stop    context.CancelFunc
}

func newRecoverer(q *Queue, log *slog.Logger, slots *hintSlots) *recoverer {
	r := &recoverer{st: q.st, q: q, opt: q.opt, log: log, slots: slots, consumerIdle: consumerIdle(q.opt.Lease)}
	r.rescues.index = newRescueLog(log, "runs: rescued conversations queued but never scheduled (their enqueuer stopped between two steps)")
	r.rescues.scan = newRescueLog(log, "runs: rescued conversations that were queued but never scheduled")
	return r
}

// start runs the recoverer in a goroutine of wg until shutdown.
func (r *recoverer) start(ctx context.Context, wg *sync.WaitGroup) {
	ctx, r.stop = context.WithCancel(ctx)
	wg.Go(func() { r.run(ctx) })
}

// shutdown stops the recoverer; wait on start's group for it.
func (r *recoverer) shutdown() { r.stop() }

func (r *recoverer) run(ctx context.Context) {
	tick := recoverTick(r.opt.Lease)
	t := time.NewTicker(tick)
	defer t.Stop()
	fl := newFailureLog(r.log, "recoverer", "runs: reclaiming idle hints failed")
	sweepDue := false
	lastSweep, lastScan := time.Now(), time.Time{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		down := false
		if n, ok := r.slots.take(ctx, false, r.opt.Workers); ok {
			hints, err := r.st.Hints().AutoClaim(ctx, r.opt.Consumer, r.opt.Lease+tick, n)
			switch {
			case err == nil:
				// Back after an outage: sweep now, for the conversations an enqueue cut off by
				// it left unscheduled, rather than up to sweepEvery leases later.
				sweepDue = sweepDue || fl.failing()
				fl.ok()
			case ctx.Err() == nil:
				fl.fail(err)
				down = unreachable(err)
			}
			if len(hints) > 0 {
				r.log.Info("runs: taking over conversations of a silent worker", "hints", len(hints))
				r.opt.recovered(RecoveryTakeover, len(hints))
			}
			r.slots.dispatch(hints, n)
		}
		if down {
			continue
		}
		r.rescue(ctx)
		now := time.Now()
		if sweepDue || now.Sub(lastSweep) >= sweepEvery*r.opt.Lease {
			sweepDue, lastSweep = false, now
			if now.Sub(lastScan) >= scanEvery {
				lastScan = now
				r.rescueScan(ctx)
			}
			r.q.reconcile(ctx)
			r.pruneConsumers(ctx)
		}
	}
}

// rescue hints the conversations of runs indexed as unhinted more than rescueAge ago — their
// enqueuer died between its two steps — and counts those runs, which it may not have admitted.
// It costs one range query on the global slot when there is nothing to rescue, whatever the
// number of conversations. A conversation a worker holds is never hinted again (its run is
// running, waiting on a platform, or waiting out a retry): the entry is dropped. The rescues are
// logged per incident (rescueLog).
func (r *recoverer) rescue(ctx context.Context) {
	now := time.Now()
	items, err := r.st.Rescues().Unhinted(ctx, now.Add(-rescueAge).UnixMilli(), rescuePage)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Warn("runs: reading the unhinted index failed", "err", err)
		}
		return
	}
	var rescued []string
	defer func() { r.rescues.index.pass(rescued) }()
	for _, it := range items {
		again, err := r.rescueRun(ctx, it, now)
		if err != nil {
			if ctx.Err() == nil {
				r.log.Warn("runs: rescuing an unhinted run failed; trying again next tick", "member", it.Member, "err", err)
			}
			return
		}
		if again != "" {
			rescued = append(rescued, again)
		}
	}
}

// rescueRun rescues the run of one index entry if it needs it, and returns its conversation's
// tag when it hinted it.
func (r *recoverer) rescueRun(ctx context.Context, it rdb.Unhinted, now time.Time) (string, error) {
	tag, runID, ok := rdb.SplitMember(it.Member)
	if !ok {
		return "", r.st.Rescues().Unindex(ctx, it.Member) // not written by this package
	}
	status, queued, err := r.st.Rescues().Rescue(ctx, tag, runID, now.UnixMilli())
	if err != nil {
		return "", err
	}
	switch status {
	case rdb.RescueAgain:
		r.log.Debug("runs: rescuing a conversation queued but never scheduled (its enqueuer stopped between two steps)",
			"tag", tag, "run", runID, "waited", now.Sub(time.UnixMilli(it.At)).Round(time.Millisecond))
		req := rdb.ReadyReq{Member: it.Member, Hint: tag, Unindex: true}
		if queued {
			req.Admit = rdb.AdmitForce
		}
		if _, _, err = r.st.Admissions().Ready(ctx, req); err != nil {
			return "", err
		}
		r.opt.recovered(RecoveryRescue, 1)
		return tag, nil
	case rdb.RescueHeld:
		return "", r.st.Rescues().Unindex(ctx, it.Member)
	default: // absent: not scheduled — ran, refused or retracted, or its push is still on its way
		if now.Sub(time.UnixMilli(it.At)) >= rescueForget {
			return "", r.st.Rescues().Unindex(ctx, it.Member)
		}
		return "", nil
	}
}

// rescueScan is the unhinted index's backstop, at a pool's first sweep and hourly: a scan of
// every scheduled conversation (SCAN, so it costs a pass over the keyspace) for one whose hint
// was asked for two leases ago and never claimed, left by a version that did not index its
// runs. It re-hints those and counts their head run, and logs them as one incident (rescueLog).
//
// It leaves alone what is merely waiting: a conversation a worker holds (its run running,
// waiting on a platform's pacer, or waiting out a retry), and one whose hint is still in the
// ready stream — under a backlog (every worker busy through a burst, say) a hint waits for a
// free worker longer than two leases, and is served all the same. It returns how many stale
// conversations it left waiting so.
func (r *recoverer) rescueScan(ctx context.Context) (waiting int) {
	now := time.Now()
	stale := now.Add(-2 * r.opt.Lease).UnixMilli()
	// Read before the scan: a hint added since is a conversation's whose request for it is
	// fresh (hs), which the scan leaves alone anyway.
	queued, err := r.st.Hints().Queued(ctx)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Warn("runs: rescue scan failed", "err", err)
		}
		return 0
	}
	var rescued []string
	err = r.st.Mailboxes().ScanConvs(ctx, func(tag string) error {
		_, hinted := queued[tag]
		status, head, err := r.st.Rescues().RescueStale(ctx, tag, now.UnixMilli(), stale, hinted)
		switch {
		case err != nil:
			return err
		case status == rdb.RescueWaiting:
			waiting++
			return nil
		case status != rdb.RescueAgain:
			return nil
		}
		r.log.Debug("runs: rescuing a conversation that was queued but never scheduled", "tag", tag)
		req := rdb.ReadyReq{Hint: tag}
		if head != "" {
			req.Admit, req.Member = rdb.AdmitForce, rdb.Member(tag, head)
		}
		if _, _, err = r.st.Admissions().Ready(ctx, req); err != nil {
			return err
		}
		r.opt.recovered(RecoveryRescue, 1)
		rescued = append(rescued, tag)
		return nil
	})
	r.rescues.scan.pass(rescued)
	if err != nil && ctx.Err() == nil {
		r.log.Warn("runs: rescue scan failed", "err", err)
	}
	if waiting > 0 {
		r.log.Debug("runs: conversations wait long for a free worker; their hints are queued, so none is rescued", "conversations", waiting)
	}
	return waiting
}

// reconcile forgets admitted runs that are no longer in their mailboxes and were admitted more
// than reconcileAge ago: a process died after acknowledging them and before its settler flushed,
// or after admitting them and before pushing them. Without it the pending count would only grow
// across crashes until the global limit refused every message.
func (q *Queue) reconcile(ctx context.Context) {
	n, err := q.st.Admissions().Reconcile(ctx, q.reconcileAge, reconcilePage)
	if err != nil && ctx.Err() == nil {
		q.log.Warn("runs: reconciling the pending count failed", "err", err)
	}
	if n > 0 {
		q.log.Warn("runs: the pending count held finished runs (a process died before settling them); forgot them", "runs", n)
	}
}

// pruneConsumers deletes the ready stream's consumers that hold nothing and have been idle far
// longer than a lease: the names of dead processes, one per process start.
func (r *recoverer) pruneConsumers(ctx context.Context) {
	names, err := r.st.Hints().PruneConsumers(ctx, r.opt.Consumer, r.consumerIdle, pruneMax)
	if err != nil && ctx.Err() == nil {
		r.log.Warn("runs: pruning idle consumers failed", "err", err)
	}
	if len(names) > 0 {
		r.log.Info("runs: removed idle consumers of stopped processes", "consumers", len(names))
	}
}
