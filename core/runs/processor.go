package runs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-bot/switchboard/core/runs/internal/rdb"
)

// processor is the processor component: Options.Workers goroutines, each taking a fetched hint,
// claiming its conversation and running the mailbox in order while it holds the lease — the
// Handler called with retries, a run that must not run again dead-lettered — and handing what
// it finished to the settler. Nothing runs before its signature checks out.
type processor struct {
	st    *rdb.Store
	sched *scheduledSet // the queue's guess of scheduled conversations: a worker forgets one it leaves idle
	opt   Options
	log   *slog.Logger
	h     Handler
	sink  Sink
	slots *hintSlots
	held  *heldSet   // the run each worker executes, for the heartbeat and the canceller
	work  *workQueue // hints fetched, waiting for a worker
	set   *settler   // batched acknowledgements and counters
	// outage logs the workers' Redis calls that fail while Redis is unreachable, a few lines
	// for all workers together.
	outage struct{ claim, ack, renew, handler, unavailable *failureLog }

	bg       context.Context // the workers' Redis calls
	runs     context.Context // parent of every handler ctx; cancelled at the drain deadline
	stopRuns context.CancelCauseFunc
	// draining is set when the pool begins to stop: a worker gives back the hints it has not
	// started, and leaves a conversation between two runs.
	draining atomic.Bool
	// intakeDone is closed when intake stops, as the drain begins: a run waiting out an outage
	// stops waiting then.
	intakeDone chan struct{}
	// handedBack counts the runs released unfinished at shutdown, for the last log line.
	handedBack atomic.Int64
	wg         sync.WaitGroup
}

func newProcessor(q *Queue, log *slog.Logger, h Handler, sink Sink, slots *hintSlots, set *settler) *processor {
	p := &processor{st: q.st, sched: q.sched, opt: q.opt, log: log, h: h, sink: sink,
		slots: slots, held: slots.held, work: slots.work, set: set, intakeDone: make(chan struct{})}
	p.outage.claim = newFailureLog(log, "workers' claims", "runs: claiming a conversation failed; retrying")
	p.outage.ack = newFailureLog(log, "workers' acknowledgements", "runs: acknowledging a finished run failed; retrying")
	p.outage.renew = newFailureLog(log, "workers' renewals", "runs: renewing a lease before a retry failed; retrying")
	p.outage.handler = newFailureLog(log, "handler", "runs: transient failure, Redis unreachable; retrying")
	p.outage.unavailable = newFailureLog(log, "runs waiting on an unavailable service", "runs: a service runs need (the model, or the platform for their answers) is unavailable; retrying them later")
	return p
}

// start starts the workers: their Redis calls use bg, and their handlers' contexts derive from
// runs, which stopRuns cancels (handBack).
func (p *processor) start(bg, runs context.Context, stopRuns context.CancelCauseFunc) {
	p.bg, p.runs, p.stopRuns = bg, runs, stopRuns
	for i := range p.opt.Workers {
		p.wg.Go(func() { p.worker(i) })
	}
}

// drain tells the workers the pool is stopping: they start nothing new (see draining).
func (p *processor) drain() { p.draining.Store(true) }

func (p *processor) isDraining() bool { return p.draining.Load() }

// stopIntake tells the workers intake has stopped: a run waiting out an outage is handed back.
func (p *processor) stopIntake() { close(p.intakeDone) }

// handBack cancels every run in flight, which the workers then hand back to other processes.
func (p *processor) handBack() { p.stopRuns(errShutdown) }

// shutdown closes the work queue — the workers take what is still queued, then stop — and waits
// for them until ctx is done, then hands the runs still in flight back and waits for that.
func (p *processor) shutdown(ctx context.Context) {
	p.work.close()
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		p.log.Info("runs: drain deadline passed; handing in-flight runs back to other workers")
		p.handBack()
		<-done
	}
	p.handBack()
}

// worker is one worker goroutine: it serves hints until the work queue is closed and empty
// (Shutdown).
func (p *processor) worker(i int) {
	owner := p.opt.Consumer + "/" + strconv.Itoa(i)
	inbox := newWorkerInbox()
	for {
		h, ok := p.work.get(inbox)
		if !ok {
			return
		}
		if p.isDraining() {
			// Fetched but not started: give it back for another process.
			p.set.add(settleItem{hint: h.Tag, ack: h.ID})
		} else {
			p.serve(i, owner, h)
		}
		p.held.dropHint(h.ID)
		p.slots.give(1)
	}
}

// step is what became of one run.
type step int

const (
	stepAck      step = iota // the run is finished (outcome or dead letter): acknowledge it
	stepLost                 // another worker owns the conversation now: touch nothing
	stepReleased             // shutdown released the lease: the run will run elsewhere
)

type result struct {
	step    step
	runID   string
	outcome Outcome // empty for a dead letter
}

// serve claims the hinted conversation and runs its mailbox in order while it holds the lease.
func (p *processor) serve(i int, owner string, h rdb.Hint) {
	ctx := p.bg
	var c rdb.Claim
	// While Redis is unreachable, wait for it (the heartbeat keeps the hint ours) rather than
	// leave the conversation to the recoverer a lease later; each try takes the lease anew.
	err := retryRedis(p.runs, p.outage.claim, func() error {
		now := time.Now()
		var err error
		c, err = p.st.Leases().Claim(ctx, h.Tag, owner, now.UnixMilli(), now.Add(p.opt.Lease).UnixMilli())
		return err
	}, "tag", h.Tag)
	if err != nil {
		p.log.Warn("runs: claim failed; the hint comes back after a lease", "tag", h.Tag, "err", err)
		return
	}
	switch c.Status {
	case rdb.ClaimEmpty:
		p.sched.forget(h.Tag)
		p.set.add(settleItem{ack: h.ID})
		return
	case rdb.ClaimHeld:
		// A live worker has it. Keep the hint unacknowledged: if that worker dies, the hint goes
		// idle and the recoverer brings it back.
		return
	}
	defer p.held.setRun(i, nil)
	for {
		res := p.runOne(ctx, i, owner, h.Tag, c)
		switch res.step {
		case stepLost:
			p.set.add(settleItem{counter: statLeaseLost})
			return
		case stepReleased:
			p.set.add(settleItem{ack: h.ID})
			return
		}
		// The run is finished: while Redis is unreachable, keep trying to record that (the
		// lease stays ours unless another worker took the conversation over, which Ack tells),
		// so the run is not run again a lease later.
		err = retryRedis(p.runs, p.outage.ack, func() error {
			var err error
			c, err = p.st.Leases().Ack(ctx, h.Tag, owner, res.runID, time.Now().Add(p.opt.Lease).UnixMilli())
			return err
		}, "run", res.runID)
		if err != nil {
			p.log.Error("runs: acknowledging a finished run failed; it may run again", "run", res.runID, "err", err)
			return
		}
		if res.outcome != "" {
			p.set.add(settleItem{counter: string(res.outcome), done: rdb.Member(h.Tag, res.runID)})
		}
		switch c.Status {
		case rdb.ClaimIdle:
			p.sched.forget(h.Tag)
			p.set.add(settleItem{ack: h.ID})
			return
		case rdb.ClaimLost:
			p.set.add(settleItem{counter: statLeaseLost})
			return
		}
		if p.isDraining() {
			p.release(ctx, h.Tag, owner)
			p.set.add(settleItem{ack: h.ID})
			return
		}
	}
}

// release gives the conversation's lease up and hints it again when work remains.
func (p *processor) release(ctx context.Context, tag, owner string) {
	needHint, err := p.st.Leases().Release(ctx, tag, owner, time.Now().UnixMilli())
	if err != nil {
		p.log.Warn("runs: releasing a lease failed; it expires instead", "tag", tag, "err", err)
		return
	}
	if needHint {
		p.set.add(settleItem{hint: tag})
	}
}

// runOne verifies and runs the claimed head entry, retrying transient failures, and reports what
// to do with it. Nothing runs before the signature checks out.
func (p *processor) runOne(ctx context.Context, i int, owner, tag string, c rdb.Claim) result {
	runID, payload := rdb.SplitEntry(c.Entry)
	env, err := p.opt.Signer.Open(payload)
	if err == nil && env.RunID != runID {
		err = fmt.Errorf("runs: mailbox run id %s differs from the envelope's: %w", runID, ErrBadSignature)
	}
	t := runTry{tag: tag, owner: owner, runID: runID, payload: payload, handedBack: c.HandedBack}
	if env != nil {
		t.conv = env.Conv.String()
	}
	if err != nil {
		reason := "signature: " + VerifyReason(err)
		p.log.Warn("runs: envelope failed verification; dead-lettered, not run", "run", runID, "reason", reason)
		return p.deadLetter(ctx, tag, runID, reason, payload, t.conv, c.Attempt, true)
	}
	// Attempts handed back at a shutdown were not failures: they do not count against the limit.
	if c.Attempt-c.HandedBack > p.opt.MaxAttempts {
		p.log.Error("runs: run started too often without finishing; dead-lettered", "run", runID, "attempts", c.Attempt-1)
		return p.deadLetter(ctx, tag, runID, "attempts exhausted: workers stopped while running it", payload, t.conv, c.Attempt-1, false)
	}

	runCtx, cancel := context.WithCancelCause(p.runs)
	defer cancel(nil)
	p.held.setRun(i, &activeRun{tag: tag, owner: owner, runID: runID, cancel: cancel})
	if c.Cancelled {
		cancel(errCancelled)
	}
	attempt := c.Attempt
	for {
		env.Attempt = attempt
		run := NewRun(env, p.sink)
		var out Outcome
		var herr error
		if runCtx.Err() == nil {
			out, herr = p.call(runCtx, run)
		}
		if r, done := p.interrupted(runCtx, tag, owner, run); done {
			return r
		}
		if r, done := p.ended(ctx, t, run, attempt, out, herr); done {
			return r
		}
		next, r, done := p.again(ctx, runCtx, cancel, t, run, attempt, herr)
		if done {
			return r
		}
		attempt = next
	}
}

// runTry names the run a worker tries: its queue tag and the worker, the run and its payload,
// its conversation (for the logs) and how many of its attempts were handed back at a shutdown.
type runTry struct {
	tag, owner, runID, conv string
	payload                 []byte
	handedBack              int
}

// ended says how an attempt that returned out, herr ends the run, if it does (done): answered
// (or whatever outcome), failed for good, or dead-lettered after the last attempt.
func (p *processor) ended(ctx context.Context, t runTry, run *Run, attempt int, out Outcome, herr error) (result, bool) {
	switch {
	case herr == nil:
		p.outage.handler.ok()
		p.outage.unavailable.ok()
		if !out.Valid() {
			p.log.Error("runs: handler returned an unknown outcome; counting it failed", "run", t.runID, "outcome", out)
			out = OutcomeFailed
		}
		return result{step: stepAck, runID: t.runID, outcome: out}, true
	case IsPermanent(herr):
		p.log.Warn("runs: run failed", "run", t.runID, "conv", t.conv, "attempt", attempt, "err", herr)
		p.tell(run, EventFailed, "Sorry, this request failed.")
		return result{step: stepAck, runID: t.runID, outcome: OutcomeFailed}, true
	case attempt-t.handedBack >= p.opt.MaxAttempts:
		p.log.Error("runs: run failed on every attempt; dead-lettered", "run", t.runID, "conv", t.conv, "attempts", attempt, "err", herr)
		r := p.deadLetter(ctx, t.tag, t.runID, "attempts exhausted: "+truncate(herr.Error(), 300), t.payload, t.conv, attempt, false)
		if r.step == stepAck {
			reason := "Sorry, this request failed after several attempts."
			if u, ok := errors.AsType[*UnavailableError](herr); ok && u.Reason != "" {
				reason = u.Reason
			}
			p.tell(run, EventFailed, reason)
		}
		return r, true
	}
	return result{}, false
}

// again waits out the backoff after a failed attempt and renews the run's lease for the next
// one, whose number it returns; done, with r, when the run must not be tried here again (the
// drain began, the lease was lost, the run was interrupted).
func (p *processor) again(ctx, runCtx context.Context, cancel context.CancelCauseFunc, t runTry, run *Run, attempt int, herr error) (next int, r result, done bool) {
	wait := p.backoff(attempt)
	u, outage := errors.AsType[*UnavailableError](herr)
	if outage {
		wait = max(p.unavailableBackoff(attempt), u.RetryAfter)
	}
	switch {
	case outage:
		// The model is down for every run alike: a few lines for all of them, not one each.
		p.outage.unavailable.fail(herr, "run", t.runID, "conv", t.conv, "attempt", attempt, "wait", wait.Round(time.Millisecond))
	case unreachable(herr):
		// Redis is gone (the handler's thread store): one line for all runs, not one each.
		p.outage.handler.fail(herr, "run", t.runID, "attempt", attempt)
	default:
		p.log.Info("runs: transient failure; retrying", "run", t.runID, "attempt", attempt, "err", herr)
	}
	p.set.add(settleItem{counter: statRetries})
	p.opt.recovered(RecoveryRetry, 1)
	if !p.waitRetry(runCtx, wait, outage) {
		// The drain began while the run waited out an outage (minutes): give the run back
		// now, for the next worker, rather than hold shutdown up until its deadline.
		p.release(p.bg, t.tag, t.owner)
		return 0, result{step: stepReleased, runID: t.runID}, true
	}
	if r, done := p.interrupted(runCtx, t.tag, t.owner, run); done {
		return 0, r, true
	}
	// Before the next attempt the lease must be ours still; while Redis is unreachable that
	// cannot be known, so wait for it rather than leave the run to the recoverer.
	var rn rdb.Renewal
	err := retryRedis(runCtx, p.outage.renew, func() error {
		var err error
		rn, err = p.st.Leases().Renew(ctx, rdb.RenewReq{Tag: t.tag, Owner: t.owner, RunID: t.runID, Deadline: time.Now().Add(p.opt.Lease).UnixMilli(), Bump: true})
		return err
	}, "run", t.runID)
	if r, done := p.interrupted(runCtx, t.tag, t.owner, run); done {
		return 0, r, true
	}
	if err != nil || rn.Lost {
		return 0, result{step: stepLost, runID: t.runID}, true
	}
	if rn.Cancelled {
		cancel(errCancelled)
	}
	return rn.Attempt, result{}, false
}

// interrupted reports what to do when the run's context was cancelled from outside.
func (p *processor) interrupted(runCtx context.Context, tag, owner string, run *Run) (result, bool) {
	runID := run.Envelope.RunID
	switch cause := context.Cause(runCtx); {
	case errors.Is(cause, errLeaseLost):
		return result{step: stepLost, runID: runID}, true
	case errors.Is(cause, errShutdown):
		p.release(p.bg, tag, owner)
		p.handedBack.Add(1)
		p.log.Info("runs: handing an unfinished run back to other workers", "run", runID, "attempt", run.Envelope.Attempt)
		return result{step: stepReleased, runID: runID}, true
	case errors.Is(cause, errCancelled):
		p.tell(run, EventCancelled, "Cancelled.")
		return result{step: stepAck, runID: runID, outcome: OutcomeCancelled}, true
	}
	return result{}, false
}

// call runs the handler, turning a panic into a transient error.
func (p *processor) call(ctx context.Context, run *Run) (out Outcome, err error) {
	defer func() {
		if r := recover(); r != nil {
			p.log.Error("runs: handler panicked", "run", run.Envelope.RunID, "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("runs: handler panicked: %v", r)
		}
	}()
	return p.h.HandleRun(ctx, run)
}

// tell emits a closing event for the user unless the handler already emitted one.
func (p *processor) tell(run *Run, kind EventKind, reason string) {
	if p.sink == nil || run.emittedTerminal() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := run.Emit(ctx, Event{Kind: kind, Reason: reason}); err != nil {
		p.log.Warn("runs: telling the user how the run ended failed", "run", run.Envelope.RunID, "err", err)
	}
}

func (p *processor) deadLetter(ctx context.Context, tag, runID, reason string, payload []byte, conv string, attempts int, sig bool) result {
	_, err := p.st.DeadLetters().Add(ctx, tag, rdb.DeadLetter{RunID: runID, Reason: reason, Envelope: payload, Conv: conv, Attempts: attempts, At: time.Now()}, sig)
	if err != nil {
		p.log.Error("runs: dead-lettering failed; the run stays queued", "run", runID, "err", err)
		return result{step: stepLost, runID: runID}
	}
	return result{step: stepAck, runID: runID}
}

// backoff is the wait before retry attempt+1: exponential from RetryBase, capped at RetryMax,
// with jitter over its upper half.
func (p *processor) backoff(attempt int) time.Duration {
	d := p.opt.RetryBase << min(attempt-1, 20)
	if d > p.opt.RetryMax || d <= 0 {
		d = p.opt.RetryMax
	}
	return d/2 + rand.N(d/2+1)
}

// waitRetry waits d before the next attempt, or until runCtx ends. A wait for an outage also
// ends when the drain begins; it reports false then.
func (p *processor) waitRetry(runCtx context.Context, d time.Duration, outage bool) bool {
	if !outage {
		waitFor(runCtx, d)
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-runCtx.Done():
	case <-t.C:
	case <-p.intakeDone:
		return runCtx.Err() != nil // the run's own end is handled by the caller
	}
	return true
}

// unavailableSteps are the multiples of OutageRetryBase waited after attempts 1, 2, 3 and 4 of
// a run failing with an *UnavailableError (5 s, 20 s, 1 min, 2 min by default); later ones double.
var unavailableSteps = [...]time.Duration{1, 4, 12, 24}

// maxUnavailableWait caps one wait between attempts of a run waiting out an outage.
const maxUnavailableWait = 30 * time.Minute

// unavailableBackoff is the wait before retry attempt+1 of a run waiting out an outage of a
// service it needs (the model), with jitter over its last quarter so runs that failed together
// do not come back together.
func (p *processor) unavailableBackoff(attempt int) time.Duration {
	i := min(max(attempt, 1), len(unavailableSteps)) - 1
	d := p.opt.OutageRetryBase * unavailableSteps[i]
	for n := len(unavailableSteps); n < attempt && d < maxUnavailableWait; n++ {
		d *= 2
	}
	if d > maxUnavailableWait || d <= 0 {
		d = maxUnavailableWait
	}
	return d - d/4 + rand.N(d/4+1)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
