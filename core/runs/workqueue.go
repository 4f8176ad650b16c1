package runs

import (
	"sync"

	"github.com/switchboard-bot/switchboard/core/runs/internal/rdb"
)

// workQueue hands fetched hints to the workers, the worker that went idle last first. A channel
// all workers read from would hand each hint to the worker that has waited longest, so a burst
// cycles through every worker of the pool, and each one's stack grows to a run's depth and stays
// there (bot run keeps stacks from shrinking). Taken last-in first-out, only as many workers as
// runs overlap ever do work; the others stay as small as they started, and the stacks that do
// work are the ones still in the CPU's caches. Hints wait first-in first-out while no worker is
// idle.
type workQueue struct {
	mu      sync.Mutex
	pending []rdb.Hint // hints waiting for a worker, oldest at head
	head    int
	idle    []chan rdb.Hint // the inboxes of workers waiting for a hint, the most recent last
	closed  bool
}

// newWorkerInbox returns a worker's inbox, where it receives its hint while it waits. It holds
// one, so put never blocks: a worker is in the idle list at most once, and put sends to it only
// after taking it off the list.
func newWorkerInbox() chan rdb.Hint { return make(chan rdb.Hint, 1) }

// put hands h to the worker that went idle last, or queues it when none is idle. It never blocks.
// It must not be called after close.
func (q *workQueue) put(h rdb.Hint) {
	q.mu.Lock()
	if n := len(q.idle); n > 0 {
		w := q.idle[n-1]
		q.idle[n-1] = nil
		q.idle = q.idle[:n-1]
		q.mu.Unlock()
		w <- h
		return
	}
	q.pending = append(q.pending, h)
	q.mu.Unlock()
}

// get returns the oldest queued hint, or waits in w for the next one put hands over. ok is false
// once the queue is closed and holds nothing: the worker is done.
func (q *workQueue) get(w chan rdb.Hint) (h rdb.Hint, ok bool) {
	q.mu.Lock()
	if q.head < len(q.pending) {
		h = q.pending[q.head]
		q.pending[q.head] = rdb.Hint{}
		q.head++
		if q.head == len(q.pending) {
			q.pending, q.head = q.pending[:0], 0
		}
		q.mu.Unlock()
		return h, true
	}
	if q.closed {
		q.mu.Unlock()
		return rdb.Hint{}, false
	}
	q.idle = append(q.idle, w)
	q.mu.Unlock()
	h, ok = <-w
	return h, ok
}

// close ends the queue: workers take what is still queued, then get reports that they are done.
func (q *workQueue) close() {
	q.mu.Lock()
	q.closed = true
	idle := q.idle
	q.idle = nil
	q.mu.Unlock()
	for _, w := range idle {
		close(w)
	}
}
