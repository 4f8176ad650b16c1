package runs

import (
	"context"
	"errors"
	"log/slog"
	"sync"
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
type heartbeat struct {
	leases   *rdb.Leases
	hints    *rdb.Hints
	consumer string
	lease    time.Duration
	held     *heldSet
	log      *slog.Logger
	stop     context.CancelFunc
}

// start runs the heartbeat in a goroutine of wg until shutdown.
func (b *heartbeat) start(ctx context.Context, wg *sync.WaitGroup) {
	ctx, b.stop = context.WithCancel(ctx)
	wg.Go(func() { b.run(ctx) })
}

// shutdown stops the heartbeat; wait on start's group for it.
func (b *heartbeat) shutdown() { b.stop() }

func (b *heartbeat) run(ctx context.Context) {
	t := time.NewTicker(b.lease / 3)
	defer t.Stop()
	renew := newFailureLog(b.log, "heartbeat's lease renewal", "runs: renewing leases failed")
	touch := newFailureLog(b.log, "heartbeat's hint touch", "runs: touching held hints failed")
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			b.beat(ctx, renew, touch)
		}
	}
}

func (b *heartbeat) beat(ctx context.Context, renewLog, touchLog *failureLog) {
	runs, hints := b.held.snapshot()
	deadline := time.Now().Add(b.lease).UnixMilli()
	// Hints first, then leases: the recoverer takes a hint over once it has been idle a lease
	// and a tick, and the worker it hands it to claims the conversation only if its lease has
	// run out by then. The new deadline is read before the touch, so it always falls before the
	// takeover; renewing first would let a process that dies between the two leave a lease
	// running past its hint's takeover, whose claim would find it held and wait a lease more.
	switch err := b.hints.Touch(ctx, b.consumer, hints); {
	case err == nil:
		touchLog.ok()
	case ctx.Err() == nil:
		touchLog.fail(err, "hints", len(hints))
	}
	reqs := make([]rdb.RenewReq, len(runs))
	for i, r := range runs {
		reqs[i] = rdb.RenewReq{Tag: r.tag, Owner: r.owner, RunID: r.runID, Deadline: deadline}
	}
	res, err := b.leases.RenewMany(ctx, reqs)
	switch {
	case err == nil:
		renewLog.ok()
	case ctx.Err() == nil:
		renewLog.fail(err, "leases", len(reqs))
	}
	for i, r := range res {
		switch {
		case r.Lost:
			b.log.Warn("runs: lease lost; cancelling the run", "run", runs[i].runID)
			runs[i].cancel(errLeaseLost)
		case r.Cancelled:
			runs[i].cancel(errCancelled)
		}
	}
}
