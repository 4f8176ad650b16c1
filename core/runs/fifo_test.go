package runs

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/switchboard-bot/switchboard/core/conv"
)

func TestFIFOPerConversation(t *testing.T) {
	t.Run("redis", func(t *testing.T) { testFIFO(t, realRedis(t), 1000, 50) })
	t.Run("embedded miniredis", func(t *testing.T) { testFIFO(t, embedded(t), 300, 20) })
}

// testFIFO runs n runs over convs conversations with 8 workers, enqueued by several producers,
// and checks each conversation's runs ran one at a time, in order, each exactly once. It returns
// the pool.
func testFIFO(t *testing.T, c redis.UniversalClient, n, convs int) *Pool {
	q := newQueue(t, c, func(o *Options) { o.Workers = 8; o.MaxPending = -1; o.MaxPerConversation = -1 })
	rec := newRecorder()
	var mu sync.Mutex
	active := map[conv.Key]bool{}
	overlap := false
	h := HandlerFunc(func(ctx context.Context, run *Run) (Outcome, error) {
		k := run.Envelope.Conv
		mu.Lock()
		if active[k] {
			overlap = true
		}
		active[k] = true
		mu.Unlock()
		rec.handled(run)
		mu.Lock()
		active[k] = false
		mu.Unlock()
		return OutcomeAnswered, nil
	})
	pool := startPool(t, q, h, nil)

	// Each producer owns a subset of conversations, so per-conversation enqueue order is known.
	const producers = 5
	var wg sync.WaitGroup
	want := map[conv.Key][]string{}
	ids := make([]string, 0, n)
	var wmu sync.Mutex
	for p := range producers {
		wg.Go(func() {
			perProducer := convs / producers
			for j := range n / producers {
				k := testConv(p + producers*(j%perProducer))
				i := j*producers + p
				e := signedEnv(q.opt.Signer, k, fmt.Sprintf("%s#%d", k.Chat, i))
				wmu.Lock()
				want[k] = append(want[k], e.Text)
				ids = append(ids, e.RunID)
				wmu.Unlock()
				if err := q.Enqueue(context.Background(), e); err != nil {
					t.Errorf("Enqueue = %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	eventually(t, 60*time.Second, fmt.Sprintf("%d runs", n), func() bool { return rec.total() >= n })
	eventually(t, 10*time.Second, "the counters to settle", func() bool { return stats(t, q).Answered == int64(n) })

	rec.mu.Lock()
	defer rec.mu.Unlock()
	if overlap {
		t.Error("two runs of one conversation ran at the same time")
	}
	for k, w := range want {
		got := rec.order[k]
		if fmt.Sprint(got) != fmt.Sprint(w) {
			t.Errorf("conversation %s ran %v, want %v", k.Chat, got, w)
		}
	}
	for _, id := range ids {
		if rec.runs[id] != 1 {
			t.Errorf("run %s ran %d times, want once", id, rec.runs[id])
		}
	}
	d, err := q.Depth(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d.Pending != 0 || len(d.Conversations) != 0 {
		t.Errorf("Depth after the drain = %+v, want nothing pending", d)
	}
	return pool
}
