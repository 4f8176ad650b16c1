package runs

import (
	"context"
	"errors"
	"time"

	"github.com/switchboard-bot/switchboard/core/runs/internal/rdb"
)

// Causes set on a handler's context.
var (
	errCancelled = errors.New("runs: run cancelled")
	errLeaseLost = errors.New("runs: lease lost to another worker")
)

// heartbeat is the heartbeat component: every third of a lease it extends the lease of every run
// this process executes and resets the idle time of every hint it holds, in two round trips. A
// run whose lease was lost, or whose conversation flagged it cancelled, has its context cancelled
// (the poll that backs up the canceller's pub/sub).
//
// While Redis fails, each beat still tries (a third of a lease is already a slow pace) and the
// failures are logged a few times, not per beat.
func (p *Pool) heartbeat(ctx context.Context) {
	t := time.NewTicker(p.opt.Lease / 3)
	defer t.Stop()
	renew := newFailureLog(p.log, "heartbeat's lease renewal", "runs: renewing leases failed")
	touch := newFailureLog(p.log, "heartbeat's hint touch", "runs: touching held hints failed")
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			p.beat(ctx, renew, touch)
		}
	}
}

func (p *Pool) beat(ctx context.Context, renewLog, touchLog *failureLog) {
	runs, hints := p.held.snapshot()
	deadline := time.Now().Add(p.opt.Lease).UnixMilli()
	// Hints first, then leases: the recoverer takes a hint over once it has been idle a lease
	// and a tick, and the worker it hands it to claims the conversation only if its lease has
	// run out by then. The new deadline is read before the touch, so it always falls before the
	// takeover; renewing first would let a process that dies between the two leave a lease
	// running past its hint's takeover, whose claim would find it held and wait a lease more.
	switch err := p.st.Hints().Touch(ctx, p.opt.Consumer, hints); {
	case err == nil:
		touchLog.ok()
	case ctx.Err() == nil:
		touchLog.fail(err, "hints", len(hints))
	}
	reqs := make([]rdb.RenewReq, len(runs))
	for i, r := range runs {
		reqs[i] = rdb.RenewReq{Tag: r.tag, Owner: r.owner, RunID: r.runID, Deadline: deadline}
	}
	res, err := p.st.Leases().RenewMany(ctx, reqs)
	switch {
	case err == nil:
		renewLog.ok()
	case ctx.Err() == nil:
		renewLog.fail(err, "leases", len(reqs))
	}
	for i, r := range res {
		switch {
		case r.Lost:
			p.log.Warn("runs: lease lost; cancelling the run", "run", runs[i].runID)
			runs[i].cancel(errLeaseLost)
		case r.Cancelled:
			runs[i].cancel(errCancelled)
		}
	}
}
