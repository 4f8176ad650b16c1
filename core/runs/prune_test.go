package runs

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"
)

// consumerNames lists the ready stream's consumers with their pending hints.
func consumerNames(t testing.TB, q *Queue) []string {
	t.Helper()
	cs, err := q.st.Client().XInfoConsumers(context.Background(), q.st.Hints().ReadyKey(), "workers").Result()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%s:%d", c.Name, c.Pending))
	}
	sort.Strings(out)
	return out
}

// TestDeadConsumersArePruned restarts worker processes (each start is a new consumer of the
// ready stream), kills one while it holds a hint, and checks that the live pool's recoverer
// deletes every dead consumer — the killed one only once its hint was reclaimed and its run
// served — so the consumer list does not grow with restarts.
func TestDeadConsumersArePruned(t *testing.T) {
	ctx := context.Background()
	c := realRedis(t)
	base := newQueue(t, c, func(o *Options) { o.Lease = 300 * time.Millisecond })
	rec := newRecorder()
	h := HandlerFunc(func(ctx context.Context, run *Run) (Outcome, error) { rec.handled(run); return OutcomeAnswered, nil })
	open := func(consumer string) *Queue {
		t.Helper()
		opt := base.opt
		opt.Consumer = consumer
		q, err := Open(ctx, c, opt)
		if err != nil {
			t.Fatal(err)
		}
		return q
	}

	// Two deploys: each process serves a run, so Redis knows its consumer, then stops.
	for i := range 2 {
		q := open(fmt.Sprint("old-", i))
		p := startPool(t, q, h, nil)
		e := signedEnv(q.opt.Signer, testConv(i), "served by an old process")
		mustEnqueue(t, q, e)
		eventually(t, 5*time.Second, "the old process's run", func() bool { return rec.count(e.RunID) == 1 })
		if err := p.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// A process killed while holding a hint it never served.
	orphan := signedEnv(base.opt.Signer, testConv(9), "held by a killed process")
	mustEnqueue(t, base, orphan)
	if hs, err := base.st.Hints().Read(ctx, "killed", 10, 0); err != nil || len(hs) != 1 {
		t.Fatalf("the killed process read %v, %v", hs, err)
	}
	if got := fmt.Sprint(consumerNames(t, base)); got != "[killed:1 old-0:0 old-1:0]" {
		t.Fatalf("consumers before = %s", got)
	}

	live := open("live")
	p, err := live.NewPool(h, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.recoverer.consumerIdle = 200 * time.Millisecond
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	eventually(t, 10*time.Second, "only the live consumer left, and the orphaned run served", func() bool {
		return fmt.Sprint(consumerNames(t, base)) == "[live:0]" && rec.count(orphan.RunID) == 1
	})
	// Deleting the killed consumer with its hint would have left that hint in the stream for
	// good, acknowledged by nobody.
	eventually(t, 5*time.Second, "every hint acknowledged and deleted", func() bool {
		n, err := c.XLen(ctx, base.st.Hints().ReadyKey()).Result()
		return err == nil && n == 0
	})
}
