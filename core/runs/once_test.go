package runs

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestEnqueueOnceQueuesAnEventOnce proves EnqueueOnce's mark: a second run for the same event is
// ErrDuplicate and queues nothing, whether the conversation was idle or scheduled when it came;
// another event is queued as usual; and a run the global gate refused (paused) leaves no mark,
// so the event can be queued once intake resumes.
func TestEnqueueOnceQueuesAnEventOnce(t *testing.T) {
	for _, backend := range []struct {
		name string
		q    func(t *testing.T) *Queue
	}{
		{"redis", func(t *testing.T) *Queue { return newQueue(t, realRedis(t)) }},
		{"embedded", func(t *testing.T) *Queue { return newQueue(t, embedded(t)) }},
	} {
		t.Run(backend.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			q := backend.q(t)
			c := testConv(1)
			enq := func(event string) error {
				return q.EnqueueOnce(ctx, signedEnv(q.opt.Signer, c, event), event, time.Minute)
			}
			if err := enq("event:a"); err != nil {
				t.Fatalf("first run of event a: %v", err)
			}
			// The conversation is scheduled now (its run waits): both orders see the mark.
			for range 2 {
				if err := enq("event:a"); !errors.Is(err, ErrDuplicate) {
					t.Fatalf("second run of event a: %v, want ErrDuplicate", err)
				}
			}
			if err := enq("event:b"); err != nil {
				t.Fatalf("run of event b: %v", err)
			}
			d, err := q.Depth(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if d.Pending != 2 || len(d.Conversations) != 1 || d.Conversations[0].Queued != 2 {
				t.Fatalf("depth %+v after events a, a, a, b; want the two runs of a and b", d)
			}

			other := testConv(2)
			if err := q.Pause(ctx); err != nil {
				t.Fatal(err)
			}
			if err := q.EnqueueOnce(ctx, signedEnv(q.opt.Signer, other, "x"), "event:c", time.Minute); !errors.Is(err, ErrPaused) {
				t.Fatalf("event c while paused: %v, want ErrPaused", err)
			}
			if err := q.Resume(ctx); err != nil {
				t.Fatal(err)
			}
			if err := q.EnqueueOnce(ctx, signedEnv(q.opt.Signer, other, "x"), "event:c", time.Minute); err != nil {
				t.Fatalf("event c after resuming: %v; the refused run left its mark", err)
			}
		})
	}
}

// TestEnqueueRetriesSchedulingThroughAnOutage proves a run that reached its mailbox just before
// Redis became unreachable is still scheduled by its Enqueue: the second step (admit and hint)
// is tried again until Redis answers, so Enqueue succeeds and a worker runs the run at once,
// rather than failing and leaving it to the rescue scan.
func TestEnqueueRetriesSchedulingThroughAnOutage(t *testing.T) {
	c := realRedis(t)
	q := newQueue(t, c)
	faults := &failNth{n: 2, times: 3} // the enqueue's second script call fails three times
	c.AddHook(faults)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	env := signedEnv(q.opt.Signer, testConv(7), "through the outage")
	if err := q.EnqueueOnce(ctx, env, "event:7", time.Minute); err != nil {
		t.Fatalf("EnqueueOnce across a short outage: %v", err)
	}
	if got := faults.failed(); got != 3 {
		t.Fatalf("%d calls failed, want the 3 injected", got)
	}
	rec := newRecorder()
	startPool(t, q, HandlerFunc(func(ctx context.Context, run *Run) (Outcome, error) {
		rec.handled(run)
		return OutcomeAnswered, nil
	}), nil)
	eventually(t, 5*time.Second, "the run to be run", func() bool { return rec.count(env.RunID) == 1 })
}

// failNth is a go-redis hook that fails the nth script call (EVALSHA or EVAL, alone or in a
// pipeline) and the times-1 calls after it as an unreachable Redis does, without running them.
type failNth struct {
	mu            sync.Mutex
	n, times      int
	seen, failedN int
}

func (f *failNth) failed() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failedN
}

func (f *failNth) DialHook(next redis.DialHook) redis.DialHook { return next }

func (f *failNth) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	pipe := f.ProcessPipelineHook(func(ctx context.Context, cmds []redis.Cmder) error { return next(ctx, cmds[0]) })
	return func(ctx context.Context, cmd redis.Cmder) error { return pipe(ctx, []redis.Cmder{cmd}) }
}

func (f *failNth) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		f.mu.Lock()
		script := false
		for _, c := range cmds {
			script = script || c.Name() == "evalsha" || c.Name() == "eval"
		}
		fail := false
		if script && f.failedN < f.times {
			f.seen++
			fail = f.seen >= f.n
		}
		if fail {
			f.failedN++
		}
		f.mu.Unlock()
		if !fail {
			return next(ctx, cmds)
		}
		err := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}
		for _, c := range cmds {
			c.SetErr(err)
		}
		return err
	}
}
