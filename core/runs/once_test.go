package runs

import (
	"context"
	"errors"
	"testing"
	"time"
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
