package runs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
)

// Pool runs envelopes from a Queue with Options.Workers goroutines. It is a handful of small
// components, each in its own file with a start and a shutdown: the fetcher reads hints, the
// processor's workers claim conversations and call the Handler, the heartbeat renews leases, the
// recoverer takes over conversations of dead workers, the canceller listens for cancels, and the
// settler flushes finished work in batches. The fetcher and the recoverer hand the hints they
// read to the workers through the process's hint slots (slots.go).
type Pool struct {
	q   *Queue
	opt Options
	log *slog.Logger

	processor *processor
	fetcher   *fetcher
	heartbeat *heartbeat
	recoverer *recoverer
	canceller *canceller
	settler   *settler

	mu      sync.Mutex
	started bool
	stopped bool

	// intakeWG waits for the fetcher and the recoverer, bgWG for the heartbeat, the canceller
	// and the settler.
	intakeWG, bgWG sync.WaitGroup
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
	log := q.log.With("consumer", q.opt.Consumer)
	held := newHeldSet()
	slots := newHintSlots(2*q.opt.Workers, held, &workQueue{})
	set := newSettler(q.st.Counters(), log)
	return &Pool{
		q: q, opt: q.opt, log: log,
		processor: newProcessor(q, log, h, sink, slots, set),
		fetcher:   &fetcher{hints: q.st.Hints(), consumer: q.opt.Consumer, workers: q.opt.Workers, log: log, slots: slots},
		heartbeat: &heartbeat{leases: q.st.Leases(), hints: q.st.Hints(), consumer: q.opt.Consumer, lease: q.opt.Lease, held: held, log: log},
		recoverer: newRecoverer(q, log, slots),
		canceller: &canceller{lease: q.opt.Lease, held: held, log: log},
		settler:   set,
	}, nil
}

// Start creates the consumer group if needed, subscribes to cancels and starts every component.
// ctx bounds only this setup; the pool runs until Shutdown.
func (p *Pool) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started {
		return errors.New("runs: pool already started")
	}
	if err := p.q.st.Hints().EnsureGroup(ctx); err != nil {
		return fmt.Errorf("runs: start pool: %w", err)
	}
	ps, err := p.q.st.Mailboxes().SubscribeCancels(ctx)
	if err != nil {
		return fmt.Errorf("runs: start pool: %w", err)
	}
	p.started = true
	bg := context.WithoutCancel(ctx)
	runs, stopRuns := context.WithCancelCause(bg)
	p.settler.start(bg, runs, &p.bgWG)
	p.heartbeat.start(bg, &p.bgWG)
	p.canceller.start(bg, ps, &p.bgWG)
	p.fetcher.start(bg, &p.intakeWG)
	p.recoverer.start(bg, &p.intakeWG)
	p.processor.start(bg, runs, stopRuns)
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
	p.processor.drain()
	p.mu.Unlock()

	if now {
		// First, so the release does not wait for the fetcher's blocked read to end; hints the
		// fetcher still hands over meanwhile are given back by the workers (draining).
		p.processor.handBack()
	}
	p.fetcher.shutdown()
	p.recoverer.shutdown()
	p.processor.stopIntake()
	p.intakeWG.Wait()
	p.processor.shutdown(ctx)
	p.settler.shutdown()
	p.heartbeat.shutdown()
	p.canceller.shutdown()
	p.bgWG.Wait()
	if n := p.processor.handedBack.Load(); n > 0 {
		p.log.Info("runs: worker pool stopped; runs handed back to other workers", "runs", n)
	} else {
		p.log.Info("runs: worker pool stopped")
	}
	return nil
}
