package runs

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/core/runs/internal/rdb"
)

// waitIdle waits until n workers wait in q.
func waitIdle(t *testing.T, q *workQueue, n int) {
	t.Helper()
	eventually(t, 5*time.Second, strconv.Itoa(n)+" idle workers", func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return len(q.idle) == n
	})
}

func hint(i int) rdb.Hint { return rdb.Hint{ID: strconv.Itoa(i), Tag: "t" + strconv.Itoa(i)} }

// The worker that went idle last takes the next hint, so a trickle of runs keeps one worker busy
// instead of cycling through the pool.
func TestWorkQueueHandsAHintToTheWorkerIdleLast(t *testing.T) {
	var q workQueue
	type got struct {
		worker int
		h      rdb.Hint
	}
	out := make(chan got, 8)
	for i := range 3 {
		inbox := newWorkerInbox()
		go func() {
			for {
				h, ok := q.get(inbox)
				if !ok {
					return
				}
				out <- got{i, h}
			}
		}()
		waitIdle(t, &q, i+1) // worker i went idle after workers 0..i-1
	}
	for n := range 4 {
		q.put(hint(n))
		g := <-out
		if g.worker != 2 || g.h != hint(n) {
			t.Fatalf("hint %d went to worker %d (%v), want worker 2, the one idle last", n, g.worker, g.h)
		}
		waitIdle(t, &q, 3)
	}
	q.close()
}

// Hints put while no worker is idle wait, and are taken oldest first.
func TestWorkQueueQueuesHintsInOrderWhileNoWorkerIsIdle(t *testing.T) {
	var q workQueue
	for i := range 5 {
		q.put(hint(i)) // never blocks, with no worker at all
	}
	inbox := newWorkerInbox()
	for i := range 5 {
		h, ok := q.get(inbox)
		if !ok || h != hint(i) {
			t.Fatalf("get %d = %v, %v; want %v", i, h, ok, hint(i))
		}
	}
	// Drained: the queue reuses its array from the start.
	q.put(hint(9))
	if h, ok := q.get(inbox); !ok || h != hint(9) {
		t.Fatalf("get after draining = %v, %v", h, ok)
	}
	if q.head != 0 || len(q.pending) != 0 {
		t.Fatalf("head %d, %d pending after draining; want 0, 0", q.head, len(q.pending))
	}
}

// Close lets workers take what is queued, then tells each, waiting or not, that it is done.
func TestWorkQueueCloseDrainsThenEndsEveryWorker(t *testing.T) {
	var q workQueue
	done := make(chan int, 2)
	for range 2 {
		inbox := newWorkerInbox()
		go func() {
			n := 0
			for {
				if _, ok := q.get(inbox); !ok {
					done <- n
					return
				}
				n++
			}
		}()
	}
	waitIdle(t, &q, 2)
	q.close()
	for range 2 {
		select {
		case n := <-done:
			if n != 0 {
				t.Fatalf("a worker got %d hints from an empty closed queue", n)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a waiting worker did not end at close")
		}
	}

	var q2 workQueue
	q2.put(hint(1))
	q2.put(hint(2))
	q2.close()
	inbox := newWorkerInbox()
	for i := 1; i <= 2; i++ {
		if h, ok := q2.get(inbox); !ok || h != hint(i) {
			t.Fatalf("get %d after close = %v, %v; want the queued %v", i, h, ok, hint(i))
		}
	}
	if h, ok := q2.get(inbox); ok {
		t.Fatalf("get from a drained closed queue = %v, true", h)
	}
}

// Under contention — workers taking and going idle while producers put — every hint reaches
// exactly one worker, and close ends them all once the queue is drained.
func TestWorkQueueDeliversEveryHintOnceUnderContention(t *testing.T) {
	const workers, producers, perProducer = 16, 4, 2500
	var q workQueue
	got := make([][]rdb.Hint, workers)
	done := make(chan struct{}, workers)
	for w := range workers {
		inbox := newWorkerInbox()
		go func() {
			defer func() { done <- struct{}{} }()
			for {
				h, ok := q.get(inbox)
				if !ok {
					return
				}
				got[w] = append(got[w], h)
			}
		}()
	}
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := range perProducer {
				q.put(hint(p*perProducer + i))
			}
		})
	}
	wg.Wait()
	q.close()
	for range workers {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("a worker did not end after close")
		}
	}
	seen := make(map[rdb.Hint]int, producers*perProducer)
	for _, hs := range got {
		for _, h := range hs {
			seen[h]++
		}
	}
	for i := range producers * perProducer {
		if n := seen[hint(i)]; n != 1 {
			t.Fatalf("hint %d reached %d workers, want 1", i, n)
		}
	}
	if len(seen) != producers*perProducer {
		t.Fatalf("%d distinct hints delivered, want %d", len(seen), producers*perProducer)
	}
}
