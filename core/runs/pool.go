package runs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-bot/switchboard/core/runs/internal/rdb"
)

// Pool runs envelopes from a Queue with Options.Workers goroutines. It is a handful of small
// components, each in its own file: the fetcher reads hints, workers (processor.go) claim
// conversations and call the Handler, the heartbeat renews leases, the recoverer takes over
// conversations of dead workers, the canceller listens for cancels, and the settler flushes
// finished work in batches.
type Pool struct {
	q    *Queue
	st   *rdb.Store
	opt  Options
	log  *slog.Logger
	h    Handler
	sink Sink

	// consumerIdle is how long an idle consumer without pending hints lives (consumerIdle).
	consumerIdle time.Duration
	// outage logs the workers' Redis calls that fail while Redis is unreachable, a few lines
	// for all workers together.
	outage struct{ claim, ack, renew, handler, unavailable *failureLog }
	// rescues log the recoverer's rescues per incident: of the unhinted index, and of the scan.
	rescues struct{ index, scan *rescueLog }

	work   workQueue          // hints fetched, waiting for a worker
	slots  chan struct{}      // one token per hint this process may hold (fetched or in work)
	held   *heldSet           // what this process holds, for the heartbeat and the canceller
	set    *settler           // batched acknowledgements and counters
	intake context.CancelFunc // stops fetcher and recoverer
	// intakeCtx ends when the drain begins; a run waiting out an outage stops waiting then.
	intakeCtx context.Context
	runs      context.Context // parent of every handler ctx; cancelled at the drain deadline
	stopRuns  context.CancelCauseFunc
	bg        context.Context // context of background components
	stopBg    context.CancelFunc

	// handedBack counts the runs released unfinished at shutdown, for the last log line.
	handedBack atomic.Int64

	mu       sync.Mutex
	started  bool
	stopped  bool
	draining bool

	intakeWG, workersWG, bgWG sync.WaitGroup
}

// errShutdown is the cause set on handler contexts when their runs are handed back (HandBack,
// or the drain deadline of Shutdown).
var errShutdown = errors.New("runs: worker shutting down")

// NewPool returns a pool that runs q's envelopes with h, delivering events to sink (nil discards
// them). Options.Signer must be set: nothing runs unverified.
func (q *Queue) NewPool(h Handler, sink Sink) (*Pool, error) {
	if q.opt.Signer == nil {
		return nil, errors.New("runs: a pool needs Options.Signer to verify envelopes")
	}
	if h == nil {
		return nil, errors.New("runs: a pool needs a handler")
	}
	w := q.opt.Workers
	p := &Pool{
		q: q, st: q.st, opt: q.opt, log: q.log.With("consumer", q.opt.Consumer), h: h, sink: sink,
		slots: make(chan struct{}, 2*w), held: newHeldSet(),
		consumerIdle: consumerIdle(q.opt.Lease),
	}
	p.outage.claim = newFailureLog(p.log, "workers' claims", "runs: claiming a conversation failed; retrying")
	p.outage.ack = newFailureLog(p.log, "workers' acknowledgements", "runs: acknowledging a finished run failed; retrying")
	p.outage.renew = newFailureLog(p.log, "workers' renewals", "runs: renewing a lease before a retry failed; retrying")
	p.outage.handler = newFailureLog(p.log, "handler", "runs: transient failure, Redis unreachable; retrying")
	p.rescues.index = newRescueLog(p.log, "runs: rescued conversations queued but never scheduled (their enqueuer stopped between two steps)")
	p.rescues.scan = newRescueLog(p.log, "runs: rescued conversations that were queued but never scheduled")
	p.outage.unavailable = newFailureLog(p.log, "runs waiting on an unavailable service", "runs: a service runs need (the model, or the platform for their answers) is unavailable; retrying them later")
	return p, nil
}

// Start creates the consumer group if needed, subscribes to cancels and starts every component.
// ctx bounds only this setup; the pool runs until Shutdown.
func (p *Pool) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started {
		return errors.New("runs: pool already started")
	}
	if err := p.st.Hints().EnsureGroup(ctx); err != nil {
		return fmt.Errorf("runs: start pool: %w", err)
	}
	ps, err := p.st.Mailboxes().SubscribeCancels(ctx)
	if err != nil {
		return fmt.Errorf("runs: start pool: %w", err)
	}
	p.started = true
	for range cap(p.slots) {
		p.slots <- struct{}{}
	}
	p.bg, p.stopBg = context.WithCancel(context.WithoutCancel(ctx))
	p.runs, p.stopRuns = context.WithCancelCause(context.WithoutCancel(ctx))
	intakeCtx, intake := context.WithCancel(p.bg)
	p.intake, p.intakeCtx = intake, intakeCtx

	p.set = newSettler(p.st, p.log, p.runs)
	p.bgWG.Add(3)
	go func() { defer p.bgWG.Done(); p.set.run(p.bg) }()
	go func() { defer p.bgWG.Done(); p.heartbeat(p.bg) }()
	go func() { defer p.bgWG.Done(); p.listenCancels(p.bg, ps) }()

	p.intakeWG.Add(2)
	go func() { defer p.intakeWG.Done(); p.fetch(intakeCtx) }()
	go func() { defer p.intakeWG.Done(); p.recover(intakeCtx) }()

	p.workersWG.Add(p.opt.Workers)
	for i := range p.opt.Workers {
		go func() { defer p.workersWG.Done(); p.worker(i) }()
	}
	p.log.Info("runs: worker pool started", "workers", p.opt.Workers, "lease", p.opt.Lease)
	return nil
}

// Shutdown drains the pool in order: it stops taking new runs, lets in-flight runs finish until
// ctx is done, then hands the rest back — cancels them and releases their leases with a fresh
// hint, so another process takes them over at once and shows them working again — re-hints
// fetched work nobody started, flushes acknowledgements and stops every goroutine. No run is
// lost, and a hand-back is not a failure: it returns nil. Use it when no other process may be
// there to take runs over (the embedded store); with a shared Redis, HandBack does not keep
// the chats of long runs waiting out the deadline first.
func (p *Pool) Shutdown(ctx context.Context) error { return p.stop(ctx, false) }

// HandBack stops the pool as Shutdown does, except that it hands every in-flight run back at
// once instead of letting it finish: a process leaving a shared Redis (SIGTERM, a rolling
// restart) frees its conversations for the other processes within a round trip, rather than
// holding them — and the work stream still — for a whole drain deadline. The runs handed back
// start again elsewhere as their next attempt, and their answer is delivered once (see the
// replays in delivery). It returns nil; ctx is the drain deadline Shutdown would have had, and
// bounds nothing here but is kept for symmetry.
func (p *Pool) HandBack(ctx context.Context) error { return p.stop(ctx, true) }

func (p *Pool) stop(ctx context.Context, now bool) error {
	p.mu.Lock()
	if !p.started || p.stopped {
		p.mu.Unlock()
		return nil
	}
	p.stopped = true
	p.draining = true
	p.mu.Unlock()

	if now {
		// First, so the release does not wait for the fetcher's blocked read to end; hints the
		// fetcher still hands over meanwhile are given back by the workers (draining).
		p.stopRuns(errShutdown)
	}
	p.intake()
	p.intakeWG.Wait()
	p.work.close()

	done := make(chan struct{})
	go func() { p.workersWG.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		p.log.Info("runs: drain deadline passed; handing in-flight runs back to other workers")
		p.stopRuns(errShutdown)
		<-done
	}
	p.stopRuns(errShutdown)
	p.stopBg()
	p.bgWG.Wait()
	if n := p.handedBack.Load(); n > 0 {
		p.log.Info("runs: worker pool stopped; runs handed back to other workers", "runs", n)
	} else {
		p.log.Info("runs: worker pool stopped")
	}
	return nil
}

func (p *Pool) isDraining() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.draining
}
