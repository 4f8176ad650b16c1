package channels

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchboard-bot/switchboard/core/runs"
	"github.com/switchboard-bot/switchboard/core/threads"
)

// TestFinalRecordedThroughAShortOutage proves delivery keeps trying to record a run's closing
// message while Redis is unreachable for a moment, so that a replay of the run skips it rather
// than posting the answer twice.
func TestFinalRecordedThroughAShortOutage(t *testing.T) {
	c := realRedis(t)
	faults := &faultHook{}
	c.AddHook(faults)
	h := &deliveryHarness{t: t, ctx: ctxT(t), store: threads.New(c, threads.Options{Prefix: uniquePrefix(t, c)}),
		ch: newFakeChannel("test"), metrics: newCountMetrics()}
	d := h.delivery(h.ch)
	run := runs.NewRunID()
	faults.downFor(3) // the record's first three tries
	h.deliver(d, attempt(1, "7", final(run, "the answer"))...)
	if n := faults.failures(); n != 3 {
		t.Fatalf("%d calls failed, want the 3 injected", n)
	}
	h.deliver(h.delivery(h.ch), attempt(2, "7", final(run, "the answer"))...) // a replay elsewhere
	if s := h.ch.sent(); len(s) != 1 {
		t.Errorf("the answer was posted %d times, want once", len(s))
	}
}

// TestUnrecordedSendIsCountedAsAPossibleDouble proves a message the platform accepted but whose
// record Redis never took — the one case in which a replay posts it twice — is counted
// (outbound errors of kind "unrecorded", switchboard_outbound_errors_total).
func TestUnrecordedSendIsCountedAsAPossibleDouble(t *testing.T) {
	c := realRedis(t)
	faults := &faultHook{}
	c.AddHook(faults)
	h := &deliveryHarness{t: t, ctx: ctxT(t), store: threads.New(c, threads.Options{Prefix: uniquePrefix(t, c)}),
		ch: newFakeChannel("test"), metrics: newCountMetrics()}
	d := h.delivery(h.ch, func(o *DeliveryOptions) { o.MaxRetryWait = 200 * time.Millisecond })
	run := runs.NewRunID()
	faults.downFor(1000) // Redis stays away past the record's retries
	h.deliver(d, attempt(1, "7", final(run, "the answer"))...)
	faults.downFor(0) // and is back for the test's cleanup
	if s := h.ch.sent(); len(s) != 1 {
		t.Fatalf("sent %d messages, want the answer once", len(s))
	}
	if n := h.metrics.get("outbound/" + deliveryConv.Platform + "/unrecorded"); n != 1 {
		t.Errorf("unrecorded sends counted %d, want 1", n)
	}
}

// faultHook makes the client fail as an unreachable Redis does, from a chosen command on.
type faultHook struct {
	mu   sync.Mutex
	down bool
	// budget, when positive, is how many calls fail before Redis is back (downFor).
	budget int
	// after, when set, is a command name: the first call holding it runs, and then Redis is
	// down (downAfter), or that call's reply is lost (loseReplyOf).
	after    string
	loseOnly bool
	failed   int // calls failed so far
}

var errRefused = &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}

func (f *faultHook) downAfter(name string) { f.set(name, false) }

// downFor makes the next n calls fail, then heals.
func (f *faultHook) downFor(n int) {
	f.mu.Lock()
	f.budget = n
	f.mu.Unlock()
}

func (f *faultHook) failures() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failed
}
func (f *faultHook) loseReplyOf(name string) { f.set(name, true) }

func (f *faultHook) set(name string, loseOnly bool) {
	f.mu.Lock()
	f.after, f.loseOnly = name, loseOnly
	f.mu.Unlock()
}

func (f *faultHook) heal() {
	f.mu.Lock()
	f.down, f.after = false, ""
	f.mu.Unlock()
}

// before says whether cmds must fail unrun; after, whether they must fail once run.
func (f *faultHook) before(cmds []redis.Cmder) (fail bool, failAfter bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		f.failed++
		return true, false
	}
	if f.budget > 0 {
		f.budget--
		f.failed++
		return true, false
	}
	if f.after == "" {
		return false, false
	}
	for _, c := range cmds {
		if strings.EqualFold(c.Name(), f.after) {
			f.after = ""
			if f.loseOnly {
				return false, true
			}
			f.down = true // from the next call on
			return false, false
		}
	}
	return false, false
}

func fail(cmds []redis.Cmder) error {
	for _, c := range cmds {
		c.SetErr(errRefused)
	}
	return errRefused
}

func (f *faultHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (f *faultHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		pre, post := f.before([]redis.Cmder{cmd})
		if pre {
			return fail([]redis.Cmder{cmd})
		}
		err := next(ctx, cmd)
		if post {
			return fail([]redis.Cmder{cmd})
		}
		return err
	}
}

func (f *faultHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		pre, post := f.before(cmds)
		if pre {
			return fail(cmds)
		}
		err := next(ctx, cmds)
		if post {
			return fail(cmds)
		}
		return err
	}
}
