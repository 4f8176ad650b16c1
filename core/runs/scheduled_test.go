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

func TestScheduledSetRemembersForAWhile(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tests := []struct {
		name string
		do   func(s *scheduledSet)
		at   time.Time
		want bool
	}{
		{"unknown conversation", func(s *scheduledSet) {}, t0, false},
		{"just seen", func(s *scheduledSet) { s.saw("a", t0) }, t0.Add(time.Second), true},
		{"seen too long ago", func(s *scheduledSet) { s.saw("a", t0) }, t0.Add(scheduledMemory), false},
		{"forgotten when a worker left it idle", func(s *scheduledSet) { s.saw("a", t0); s.forget("a") }, t0, false},
		{"still remembered when full of expired guesses", func(s *scheduledSet) {
			for i := range scheduledMax {
				s.saw(fmt.Sprint(i), t0.Add(-scheduledMemory))
			}
			s.saw("a", t0)
		}, t0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newScheduledSet()
			tt.do(s)
			if got := s.likely("a", tt.at); got != tt.want {
				t.Errorf("likely = %v, want %v", got, tt.want)
			}
			if len(s.until) > scheduledMax {
				t.Errorf("remembers %d conversations, want at most %d", len(s.until), scheduledMax)
			}
		})
	}
}

// TestEnqueueWhenTheGuessIsWrong proves that Enqueue's guess of whether a conversation is
// scheduled only picks an order: wrong either way, the run is queued, hinted, run in order and
// counted.
func TestEnqueueWhenTheGuessIsWrong(t *testing.T) {
	c := realRedis(t)
	ctx := context.Background()
	tests := []struct {
		name string
		// hold keeps the first run in its handler until the second is enqueued.
		hold bool
		// prime enqueues the first run so that the producer's guess is wrong.
		prime func(t *testing.T, producer, other *Queue, k conv.Key, rec *recorder) (first *Envelope)
	}{
		{"believed scheduled, went idle", false, func(t *testing.T, producer, _ *Queue, k conv.Key, rec *recorder) *Envelope {
			e := signedEnv(producer.opt.Signer, k, "first")
			mustEnqueue(t, producer, e)
			eventually(t, 5*time.Second, "the first run and the idle conversation", func() bool {
				d, _ := producer.ConvDepth(ctx, k)
				return rec.count(e.RunID) == 1 && d.Queued == 0
			})
			if !producer.sched.likely(k.HashTag(), time.Now()) {
				t.Fatal("the producer does not believe the conversation scheduled")
			}
			return e
		}},
		{"believed idle, scheduled by another producer", true, func(t *testing.T, producer, other *Queue, k conv.Key, rec *recorder) *Envelope {
			e := signedEnv(other.opt.Signer, k, "first")
			mustEnqueue(t, other, e)
			if producer.sched.likely(k.HashTag(), time.Now()) {
				t.Fatal("the producer believes the conversation scheduled")
			}
			return e
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			workers := newQueue(t, c)
			opt := workers.opt
			producer, err := Open(ctx, c, opt)
			if err != nil {
				t.Fatal(err)
			}
			other, err := Open(ctx, c, opt)
			if err != nil {
				t.Fatal(err)
			}
			rec := newRecorder()
			var mu sync.Mutex
			var order []string
			gate := make(chan struct{})
			startPool(t, workers, HandlerFunc(func(ctx context.Context, run *Run) (Outcome, error) {
				if run.Envelope.Text == "first" && tt.hold {
					<-gate // keeps the conversation scheduled while the second run is enqueued
				}
				mu.Lock()
				order = append(order, run.Envelope.Text)
				mu.Unlock()
				rec.handled(run)
				return OutcomeAnswered, nil
			}), nil)
			k := testConv(7)
			first := tt.prime(t, producer, other, k, rec)
			second := signedEnv(opt.Signer, k, "second")
			mustEnqueue(t, producer, second)
			close(gate)
			eventually(t, 5*time.Second, "both runs", func() bool { return rec.count(first.RunID) == 1 && rec.count(second.RunID) == 1 })
			eventually(t, 5*time.Second, "the counters", func() bool { return stats(t, producer).Answered == 2 })
			mu.Lock()
			if fmt.Sprint(order) != "[first second]" {
				t.Errorf("ran %v, want [first second]", order)
			}
			mu.Unlock()
			if d, err := producer.Depth(ctx); err != nil || d.Pending != 0 || len(d.Conversations) != 0 {
				t.Errorf("Depth = %+v, %v; want nothing pending", d, err)
			}
		})
	}
}

// TestEnqueueRefusalsLeaveTheGuessAlone checks that a refused run leaves nothing behind on either
// path, and that the refusal does not teach the producer that an idle conversation is scheduled.
func TestEnqueueRefusalsLeaveTheGuessAlone(t *testing.T) {
	ctx := context.Background()
	q := newQueue(t, realRedis(t), func(o *Options) { o.MaxPending = 1 })
	mustEnqueue(t, q, signedEnv(q.opt.Signer, testConv(1), "one"))
	k := testConv(2)
	var busy *BusyError
	if err := q.Enqueue(ctx, signedEnv(q.opt.Signer, k, "two")); !errors.As(err, &busy) || busy.Scope != ScopeGlobal {
		t.Fatalf("Enqueue over the global limit = %v, want BusyError{global}", err)
	}
	if q.sched.likely(k.HashTag(), time.Now()) {
		t.Error("a refused run made the producer believe its conversation scheduled")
	}
	if d, err := q.Depth(ctx); err != nil || d.Pending != 1 || len(d.Conversations) != 1 {
		t.Errorf("Depth = %+v, %v; want the one accepted run", d, err)
	}
}
