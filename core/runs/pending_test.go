package runs

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/core/runs/internal/rdb"
)

func pendingOf(t testing.TB, q *Queue) int64 {
	t.Helper()
	n, err := q.st.Admissions().Pending(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// ghostAck plays a worker that runs conv's run and acknowledges it, then dies before its settler
// flushes: the run is finished but still counted.
func ghostAck(t *testing.T, q *Queue, k conv.Key, runID string) {
	t.Helper()
	ctx := context.Background()
	if _, err := q.st.Hints().Read(ctx, "ghost", 100, 0); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	c, err := q.st.Leases().Claim(ctx, k.HashTag(), "ghost/0", now.UnixMilli(), now.Add(q.opt.Lease).UnixMilli())
	if err != nil || c.Status != rdb.ClaimRun {
		t.Fatalf("ghost claim = %+v, %v", c, err)
	}
	if id, _ := rdb.SplitEntry(c.Entry); id != runID {
		t.Fatalf("ghost claimed %s, want %s", id, runID)
	}
	if c, err := q.st.Leases().Ack(ctx, k.HashTag(), "ghost/0", runID, now.Add(q.opt.Lease).UnixMilli()); err != nil || c.Status != rdb.ClaimIdle {
		t.Fatalf("ghost ack = %+v, %v", c, err)
	}
}

// ghostAdmit plays an enqueuer that admits a run for a scheduled conversation and dies before
// pushing it: counted, never queued.
func ghostAdmit(t *testing.T, q *Queue, k conv.Key) {
	t.Helper()
	st, _, err := q.st.Admissions().Ready(context.Background(), rdb.ReadyReq{Admit: rdb.AdmitCheck, Member: rdb.Member(k.HashTag(), NewRunID())})
	if err != nil || st != rdb.ReadyOK {
		t.Fatalf("ghost admission = %q, %v", st, err)
	}
}

// TestPendingCountHealsAfterCrashes simulates each crash that used to leave the global pending
// count too high for good — a worker killed between its ack and its settler's flush, an enqueuer
// killed between admitting a run and pushing it — and one that left it too low (an enqueuer
// killed between pushing a run and admitting it), and checks that the periodic sweep brings the
// count back to the runs really queued, never below them.
func TestPendingCountHealsAfterCrashes(t *testing.T) {
	ctx := context.Background()
	q := newQueue(t, realRedis(t), func(o *Options) { o.Lease = 300 * time.Millisecond })
	q.reconcileAge = 500 * time.Millisecond

	acked := signedEnv(q.opt.Signer, testConv(1), "acked, never settled")
	mustEnqueue(t, q, acked)
	ghostAck(t, q, testConv(1), acked.RunID)
	ghostAdmit(t, q, testConv(2))
	live := signedEnv(q.opt.Signer, testConv(3), "queued")
	mustEnqueue(t, q, live)
	if n := pendingOf(t, q); n != 3 {
		t.Fatalf("pending = %d after the crashes, want 3 (1 queued, 2 left over)", n)
	}

	t.Run("the reconciliation forgets what crashes left counted", func(t *testing.T) {
		eventually(t, 10*time.Second, "the pending count to fall to the one queued run", func() bool {
			q.reconcile(ctx)
			n := pendingOf(t, q)
			if n < 1 {
				t.Fatalf("pending = %d: the queued run is no longer counted", n)
			}
			return n == 1
		})
		if ok, err := q.st.Admissions().IsAdmitted(ctx, testConv(3).HashTag(), live.RunID); err != nil || !ok {
			t.Errorf("the queued run's admission = %v, %v; want kept", ok, err)
		}
	})

	// An enqueuer killed between its push and its admission: queued, hinted by nobody, counted by
	// nobody. The rescue hints it and counts it.
	unadmitted := signedEnv(q.opt.Signer, testConv(4), "pushed, never admitted")
	payload, err := unadmitted.Encode()
	if err != nil {
		t.Fatal(err)
	}
	r, err := q.st.Mailboxes().Enqueue(ctx, rdb.EnqueueReq{Tag: testConv(4).HashTag(), Probe: true, Entry: rdb.Entry(unadmitted.RunID, payload), Now: time.Now().UnixMilli(), ConvKey: testConv(4).String()})
	if err != nil || r.Status != rdb.StatusNew {
		t.Fatalf("push = %+v, %v", r, err)
	}
	rec := newRecorder()
	var admittedWhileRunning atomic.Int32
	p, err := q.NewPool(HandlerFunc(func(ctx context.Context, run *Run) (Outcome, error) {
		if ok, err := q.st.Admissions().IsAdmitted(ctx, run.Envelope.Conv.HashTag(), run.Envelope.RunID); err == nil && ok {
			admittedWhileRunning.Add(1)
		}
		rec.handled(run)
		return OutcomeAnswered, nil
	}), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("the rescue counts a run nobody admitted", func(t *testing.T) {
		eventually(t, 10*time.Second, "the rescue", func() bool {
			p.recoverer.rescueScan(ctx)
			return pendingOf(t, q) == 2
		})
		if ok, _ := q.st.Admissions().IsAdmitted(ctx, testConv(4).HashTag(), unadmitted.RunID); !ok {
			t.Error("the rescued run is not the one counted")
		}
	})

	t.Run("a running pool sweeps by itself", func(t *testing.T) {
		// New crashes, left to the pool's recoverer.
		ghostAdmit(t, q, testConv(5))
		ghostAdmit(t, q, testConv(1))
		if err := p.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
		eventually(t, 10*time.Second, "both queued runs and a pending count of zero", func() bool {
			return rec.count(live.RunID) == 1 && rec.count(unadmitted.RunID) == 1 && pendingOf(t, q) == 0
		})
		if n := admittedWhileRunning.Load(); n != 2 {
			t.Errorf("%d of 2 runs were counted while they ran", n)
		}
		if rec.count(acked.RunID) != 0 {
			t.Error("the run acknowledged before the crash ran again")
		}
		if s := stats(t, q); s.Answered != 2 {
			t.Errorf("answered %d, want 2", s.Answered)
		}
	})
}

// TestReconcileNeverUndercountsLiveRuns runs producers, workers and a reconciliation looping
// without pause, with a reconciliation age short enough that queued runs outlive it many times
// over, and checks that every run is counted from its admission until it finishes: each handler
// finds its run admitted when it starts and when it ends.
func TestReconcileNeverUndercountsLiveRuns(t *testing.T) {
	ctx := context.Background()
	q := newQueue(t, realRedis(t), func(o *Options) { o.MaxPending, o.MaxPerConversation = -1, -1 })
	q.reconcileAge = 400 * time.Millisecond

	const convs, perConv = 6, 40
	gate := make(chan struct{})
	var mu sync.Mutex
	var uncounted []string
	rec := newRecorder()
	check := func(run *Run, when string) {
		ok, err := q.st.Admissions().IsAdmitted(context.Background(), run.Envelope.Conv.HashTag(), run.Envelope.RunID)
		if err != nil || !ok {
			mu.Lock()
			uncounted = append(uncounted, fmt.Sprintf("%s at its %s (%v)", run.Envelope.Text, when, err))
			mu.Unlock()
		}
	}
	startPool(t, q, HandlerFunc(func(ctx context.Context, run *Run) (Outcome, error) {
		check(run, "start")
		select { // the first runs hold their conversations, the rest wait in the mailboxes
		case <-gate:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		check(run, "end")
		rec.handled(run)
		return OutcomeAnswered, nil
	}), nil)

	stop := make(chan struct{})
	var sweeps atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		pace := time.NewTicker(time.Millisecond)
		defer pace.Stop()
		for {
			select {
			case <-stop:
				return
			case <-pace.C:
			}
			q.reconcile(ctx)
			sweeps.Add(1)
		}
	})
	t.Cleanup(func() { close(stop); wg.Wait() })

	produce := func(from, to int) {
		var pw sync.WaitGroup
		for c := range convs {
			pw.Go(func() {
				for i := from; i < to; i++ {
					mustEnqueueAsync(t, q, signedEnv(q.opt.Signer, testConv(c), fmt.Sprintf("c%d-%d", c, i)))
				}
			})
		}
		pw.Wait()
	}
	produce(0, perConv/2)
	queued := time.Now()
	// Let the queued runs grow older than the reconciliation age while it sweeps.
	eventually(t, 10*time.Second, "the queued runs to outlive the reconciliation age", func() bool {
		return time.Since(queued) > 2*q.reconcileAge
	})
	swept := sweeps.Load()
	eventually(t, 10*time.Second, "more sweeps over the old runs", func() bool { return sweeps.Load() > swept+10 })
	if n := pendingOf(t, q); n != convs*perConv/2 {
		t.Fatalf("pending = %d, want the %d queued runs", n, convs*perConv/2)
	}
	close(gate)
	produce(perConv/2, perConv) // enqueues and acks interleave with the sweeps
	eventually(t, 20*time.Second, "every run", func() bool { return rec.total() == convs*perConv })
	eventually(t, 10*time.Second, "a pending count of zero", func() bool { return pendingOf(t, q) == 0 })
	mu.Lock()
	defer mu.Unlock()
	sort.Strings(uncounted)
	if len(uncounted) > 0 {
		t.Errorf("%d runs were not counted while live: %v", len(uncounted), uncounted)
	}
	for id, n := range rec.runs {
		if n != 1 {
			t.Errorf("run %s ran %d times", id, n)
		}
	}
}

// mustEnqueueAsync is mustEnqueue for goroutines other than the test's: it reports with Errorf.
func mustEnqueueAsync(t *testing.T, q *Queue, e *Envelope) {
	if err := q.Enqueue(context.Background(), e); err != nil {
		t.Errorf("Enqueue(%s) = %v", e.Text, err)
	}
}
