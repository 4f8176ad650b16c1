package runs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/core/conv"
)

func TestConversationsRunInParallel(t *testing.T) {
	const convs = 4
	q := newQueue(t, realRedis(t), func(o *Options) { o.Workers = convs })
	var mu sync.Mutex
	running, peak := 0, 0
	all := make(chan struct{})
	var once sync.Once
	startPool(t, q, HandlerFunc(func(ctx context.Context, run *Run) (Outcome, error) {
		mu.Lock()
		running++
		peak = max(peak, running)
		if running == convs {
			once.Do(func() { close(all) })
		}
		mu.Unlock()
		// Each run waits until every conversation's run is in flight at once.
		select {
		case <-all:
		case <-time.After(10 * time.Second):
		}
		mu.Lock()
		running--
		mu.Unlock()
		return OutcomeAnswered, nil
	}), nil)
	for i := range convs {
		mustEnqueue(t, q, signedEnv(q.opt.Signer, testConv(i), "hi"))
	}
	eventually(t, 10*time.Second, "every run", func() bool { return stats(t, q).Answered == convs })
	if peak != convs {
		t.Errorf("at most %d conversations ran at once, want %d", peak, convs)
	}
}

func TestInterruptPolicy(t *testing.T) {
	q := newQueue(t, realRedis(t), func(o *Options) { o.Followup = FollowupInterrupt })
	rec := newRecorder()
	started := make(chan string, 10)
	release := make(chan struct{})
	var sawCancel sync.Map
	startPool(t, q, HandlerFunc(func(ctx context.Context, run *Run) (Outcome, error) {
		rec.handled(run)
		started <- run.Envelope.Text
		if run.Envelope.Text == "first" {
			<-ctx.Done()
			sawCancel.Store(run.Envelope.Text, true)
			<-release // hold the conversation until the follow-ups are queued
			return OutcomeCancelled, nil
		}
		return OutcomeAnswered, nil
	}), rec)
	k := testConv(1)
	first, second, third := signedEnv(q.opt.Signer, k, "first"), signedEnv(q.opt.Signer, k, "second"), signedEnv(q.opt.Signer, k, "third")
	mustEnqueue(t, q, first)
	if got := <-started; got != "first" {
		t.Fatalf("started %q", got)
	}
	mustEnqueue(t, q, second) // cancels first
	eventually(t, 5*time.Second, "the active run to see its cancellation", func() bool { _, ok := sawCancel.Load("first"); return ok })
	mustEnqueue(t, q, third) // drops second, the newest runs
	close(release)
	if got := <-started; got != "third" {
		t.Errorf("after the interrupt %q ran, want the newest (third)", got)
	}
	eventually(t, 5*time.Second, "the counters", func() bool {
		s := stats(t, q)
		return s.Cancelled == 2 && s.Answered == 1
	})
	if rec.count(second.RunID) != 0 {
		t.Error("the superseded follow-up ran")
	}
	evs := rec.eventsOf(first.RunID)
	if len(evs) != 1 || evs[0].Kind != EventCancelled {
		t.Errorf("events of the interrupted run = %+v, want one cancelled event", evs)
	}
}

func TestBackpressure(t *testing.T) {
	ctx := context.Background()
	q := newQueue(t, realRedis(t), func(o *Options) { o.MaxPerConversation = 3; o.MaxPending = 5 })
	var accepted []string
	enqueue := func(k conv.Key) error {
		e := signedEnv(q.opt.Signer, k, "m")
		err := q.Enqueue(ctx, e)
		if err == nil {
			accepted = append(accepted, e.RunID)
		}
		return err
	}
	for range 3 {
		if err := enqueue(testConv(1)); err != nil {
			t.Fatal(err)
		}
	}
	var busy *BusyError
	if err := enqueue(testConv(1)); !errors.As(err, &busy) || busy.Scope != ScopeConversation || busy.Limit != 3 {
		t.Fatalf("4th run in one conversation: %v, want BusyError{conversation, 3}", err)
	}
	for range 2 {
		if err := enqueue(testConv(2)); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []conv.Key{testConv(2), testConv(3)} { // scheduled and idle conversations alike
		if err := enqueue(k); !errors.As(err, &busy) || busy.Scope != ScopeGlobal || busy.Limit != 5 {
			t.Fatalf("6th run overall in %s: %v, want BusyError{global, 5}", k.Chat, err)
		}
	}
	// Nothing was dropped silently: exactly the accepted runs are queued.
	var queued []string
	for _, k := range []conv.Key{testConv(1), testConv(2), testConv(3)} {
		ids, err := q.QueuedRuns(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		queued = append(queued, ids...)
	}
	if fmt.Sprint(queued) != fmt.Sprint(accepted) {
		t.Errorf("queued %v, want the accepted %v", queued, accepted)
	}
	d, err := q.Depth(ctx)
	if err != nil || d.Pending != 5 || len(d.Conversations) != 2 {
		t.Errorf("Depth = %+v, %v; want 5 pending over 2 conversations", d, err)
	}
}

// TestEnqueueIsAllOrNothingAcrossCancellation proves a caller's context decides only whether an
// Enqueue starts: an already-ended context queues nothing, and a context that ends while the
// steps run does not leave a run half-queued (in its mailbox but never hinted to a worker).
func TestEnqueueIsAllOrNothingAcrossCancellation(t *testing.T) {
	// A long lease keeps the recoverer's scan for unhinted conversations (every few leases) out
	// of the test's window: only runs hinted by Enqueue itself can run in time.
	q := newQueue(t, realRedis(t), func(o *Options) { o.Lease = 30 * time.Second })
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if err := q.Enqueue(done, signedEnv(q.opt.Signer, testConv(1), "never")); !errors.Is(err, context.Canceled) {
		t.Fatalf("enqueue with an ended context: %v, want context.Canceled", err)
	}
	if d, err := q.ConvDepth(context.Background(), testConv(1)); err != nil || d.Queued != 0 {
		t.Fatalf("an ended context queued something: %+v %v", d, err)
	}

	// Cancel while the steps are in flight, many times over; every Enqueue that reported success
	// or was cut short must leave runs that a worker actually runs.
	rec := newRecorder()
	var want []string
	for i := range 50 {
		ctx, cancel := context.WithCancel(context.Background())
		e := signedEnv(q.opt.Signer, testConv(100+i), "m")
		go cancel()
		if err := q.Enqueue(ctx, e); err == nil {
			want = append(want, e.RunID)
		}
		cancel()
	}
	startPool(t, q, HandlerFunc(func(_ context.Context, run *Run) (Outcome, error) {
		rec.handled(run)
		return OutcomeAnswered, nil
	}), nil)
	eventually(t, 10*time.Second, "every queued run to be run", func() bool {
		for _, id := range want {
			if rec.count(id) != 1 {
				return false
			}
		}
		return true
	})
	eventually(t, 10*time.Second, "no run left in a mailbox", func() bool {
		for i := range 50 {
			d, err := q.ConvDepth(context.Background(), testConv(100+i))
			if err != nil || d.Queued != 0 {
				return false
			}
		}
		return true
	})
}
