package runs

import (
	"context"
	"time"

	"github.com/switchboard-bot/switchboard/core/runs/internal/rdb"
)

// sweepEvery is how many recoverer ticks (half a lease each) pass between sweeps: the rescue scan
// for conversations whose enqueuer died before hinting them, the reconciliation of the admitted
// set and the pruning of dead consumers.
const sweepEvery = 10

// reconcilePage is how many admitted runs one reconciliation step reads.
const reconcilePage = 200

// pruneMax bounds the consumers one sweep deletes (the first sweep after an upgrade may find
// many).
const pruneMax = 1000

// consumerIdle is how long a consumer without pending hints must have been idle before a sweep
// deletes it: far longer than the lease after which its hints are reclaimed.
func consumerIdle(lease time.Duration) time.Duration { return 10 * lease }

// recover is the recoverer component. Every half lease it claims hints idle for a whole lease —
// their holder stopped heartbeating, so it is dead or cut off — and hands them to the workers,
// which take the conversation over once its lease has expired. Every few ticks it sweeps: it
// rescues conversations queued but never hinted, forgets admitted runs a crash left counted, and
// deletes the consumers of dead processes. While Redis is unreachable it logs that a few times,
// not per tick, and puts the sweep off to a tick where Redis answers; the first tick after an
// outage sweeps.
func (p *Pool) recover(ctx context.Context) {
	t := time.NewTicker(p.opt.Lease / 2)
	defer t.Stop()
	fl := newFailureLog(p.log, "recoverer", "runs: reclaiming idle hints failed")
	sweepDue := false
	for tick := 1; ; tick++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		down := false
		if n, ok := p.takeSlots(ctx, false, p.opt.Workers); ok {
			hints, err := p.st.AutoClaim(ctx, p.opt.Consumer, p.opt.Lease, n)
			switch {
			case err == nil:
				// Back after an outage: sweep now, for the conversations an enqueue cut off by
				// it left unscheduled, rather than up to sweepEvery ticks later.
				sweepDue = sweepDue || fl.failing()
				fl.ok()
			case ctx.Err() == nil:
				fl.fail(err)
				down = unreachable(err)
			}
			if len(hints) > 0 {
				p.log.Info("runs: taking over conversations of a silent worker", "hints", len(hints))
			}
			p.dispatch(hints, n)
		}
		sweepDue = sweepDue || tick%sweepEvery == 0
		if sweepDue && !down {
			sweepDue = false
			p.rescue(ctx)
			p.q.reconcile(ctx)
			p.pruneConsumers(ctx)
		}
	}
}

// rescue re-hints conversations whose hint was asked for two leases ago and never claimed, and
// counts their head run, which the dead enqueuer may not have admitted.
func (p *Pool) rescue(ctx context.Context) {
	now := time.Now()
	stale := now.Add(-2 * p.opt.Lease).UnixMilli()
	err := p.st.ScanConvs(ctx, func(tag string) error {
		again, head, err := p.st.Rescue(ctx, tag, now.UnixMilli(), stale)
		if err != nil || !again {
			return err
		}
		p.log.Warn("runs: rescuing a conversation that was queued but never scheduled", "tag", tag)
		r := rdb.ReadyReq{Hint: tag}
		if head != "" {
			r.Admit, r.Member = rdb.AdmitForce, rdb.Member(tag, head)
		}
		_, _, err = p.st.Ready(ctx, r)
		return err
	})
	if err != nil && ctx.Err() == nil {
		p.log.Warn("runs: rescue scan failed", "err", err)
	}
}

// reconcile forgets admitted runs that are no longer in their mailboxes and were admitted more
// than reconcileAge ago: a process died after acknowledging them and before its settler flushed,
// or after admitting them and before pushing them. Without it the pending count would only grow
// across crashes until the global limit refused every message.
func (q *Queue) reconcile(ctx context.Context) {
	n, err := q.st.Reconcile(ctx, q.reconcileAge, reconcilePage)
	if err != nil && ctx.Err() == nil {
		q.log.Warn("runs: reconciling the pending count failed", "err", err)
	}
	if n > 0 {
		q.log.Warn("runs: the pending count held finished runs (a process died before settling them); forgot them", "runs", n)
	}
}

// pruneConsumers deletes the ready stream's consumers that hold nothing and have been idle far
// longer than a lease: the names of dead processes, one per process start.
func (p *Pool) pruneConsumers(ctx context.Context) {
	names, err := p.st.PruneConsumers(ctx, p.opt.Consumer, p.consumerIdle, pruneMax)
	if err != nil && ctx.Err() == nil {
		p.log.Warn("runs: pruning idle consumers failed", "err", err)
	}
	if len(names) > 0 {
		p.log.Info("runs: removed idle consumers of stopped processes", "consumers", len(names))
	}
}
