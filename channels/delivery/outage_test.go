package delivery

import (
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/core/runs"
	"github.com/switchboard-bot/switchboard/core/threads"
	"github.com/switchboard-bot/switchboard/internal/redistest"
)

// TestFinalRecordedThroughAShortOutage proves delivery keeps trying to record a run's closing
// message while Redis is unreachable for a moment, so that a replay of the run skips it rather
// than posting the answer twice.
func TestFinalRecordedThroughAShortOutage(t *testing.T) {
	c := realRedis(t)
	faults := &redistest.Faults{}
	c.AddHook(faults)
	h := &deliveryHarness{t: t, ctx: ctxT(t), store: threads.New(c, threads.Options{Prefix: uniquePrefix(t, c)}).Records(),
		ch: newFakeChannel("test"), metrics: newCountMetrics()}
	d := h.delivery(h.ch)
	run := runs.NewRunID()
	faults.DownFor(3) // the record's first three tries
	h.deliver(d, attempt(1, "7", final(run, "the answer"))...)
	if n := faults.Failures(); n != 3 {
		t.Fatalf("%d calls failed, want the 3 injected", n)
	}
	h.deliver(h.delivery(h.ch), attempt(2, "7", final(run, "the answer"))...) // a replay elsewhere
	if s := h.ch.Sent(); len(s) != 1 {
		t.Errorf("the answer was posted %d times, want once", len(s))
	}
}

// TestUnrecordedSendIsCountedAsAPossibleDouble proves a message the platform accepted but whose
// record Redis never took — the one case in which a replay posts it twice — is counted
// (outbound errors of kind "unrecorded", switchboard_outbound_errors_total).
func TestUnrecordedSendIsCountedAsAPossibleDouble(t *testing.T) {
	c := realRedis(t)
	faults := &redistest.Faults{}
	c.AddHook(faults)
	h := &deliveryHarness{t: t, ctx: ctxT(t), store: threads.New(c, threads.Options{Prefix: uniquePrefix(t, c)}).Records(),
		ch: newFakeChannel("test"), metrics: newCountMetrics()}
	d := h.delivery(h.ch, func(o *Options) { o.MaxRetryWait = 200 * time.Millisecond })
	run := runs.NewRunID()
	faults.DownFor(1000) // Redis stays away past the record's retries
	h.deliver(d, attempt(1, "7", final(run, "the answer"))...)
	faults.DownFor(0) // and is back for the test's cleanup
	if s := h.ch.Sent(); len(s) != 1 {
		t.Fatalf("sent %d messages, want the answer once", len(s))
	}
	if n := h.metrics.Get("outbound/" + deliveryConv.Platform + "/unrecorded"); n != 1 {
		t.Errorf("unrecorded sends counted %d, want 1", n)
	}
}
