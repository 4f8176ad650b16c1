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
	reqs := make([]rdb.RenewReq, len(runs))
	for i, r := range runs {
		reqs[i] = rdb.RenewReq{Tag: r.tag, Owner: r.owner, RunID: r.runID, Deadline: deadline}
	}
	res, err := p.st.RenewMany(ctx, reqs)
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
	switch err := p.st.Touch(ctx, p.opt.Consumer, hints); {
	case err == nil:
		touchLog.ok()
	case ctx.Err() == nil:
		touchLog.fail(err, "hints", len(hints))
	}
}
