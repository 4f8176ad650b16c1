package rdb

import (
	"context"
	"sync"
)

// maxBatch bounds what one flush of a group sends.
const maxBatch = 256

// group is group commit for concurrent callers. A caller that finds fewer than flights flushes
// in progress flushes everything queued so far, itself included; the others wait, and when a
// flush returns, its flusher hands what queued meanwhile to the first waiter, which flushes it.
// No goroutine of its own and no linger: a lone caller pays one flush as before, and under load
// many calls share one. Each caller has one item in flight, so a caller's items are flushed in
// the order it makes them.
type group[T any] struct {
	flights int
	send    func(ctx context.Context, batch []T) // fills each item's result

	mu    sync.Mutex
	busy  int // flushes in progress
	queue []*member[T]
}

type member[T any] struct {
	v     T
	wake  chan struct{} // receives once: v is done, or batch is this member's to flush
	batch []*member[T]
}

// do flushes v with the next batch and waits until it is done. It waits without watching ctx:
// a flush is bounded by the client's read and write timeouts, and leaving early would strand the
// items handed to this caller.
func (g *group[T]) do(ctx context.Context, v T) {
	m := &member[T]{v: v, wake: make(chan struct{}, 1)}
	g.mu.Lock()
	g.queue = append(g.queue, m)
	if g.busy < g.flights {
		g.busy++
		batch := g.take()
		g.mu.Unlock()
		g.flush(ctx, batch)
	} else {
		g.mu.Unlock()
	}
	for {
		<-m.wake
		if m.batch == nil {
			return // v is done
		}
		batch := m.batch
		m.batch = nil
		g.flush(ctx, batch) // m is batch[0]: this wakes m again once v is done
	}
}

// take removes up to maxBatch queued members. g.mu is held.
func (g *group[T]) take() []*member[T] {
	n := min(len(g.queue), maxBatch)
	batch := g.queue[:n:n]
	if n == len(g.queue) {
		g.queue = nil
	} else {
		g.queue = g.queue[n:]
	}
	return batch
}

// flush sends batch, wakes its callers, then hands the queue to its next flusher or ends this
// flush.
func (g *group[T]) flush(ctx context.Context, batch []*member[T]) {
	vs := make([]T, len(batch))
	for i, m := range batch {
		vs[i] = m.v
	}
	g.send(context.WithoutCancel(ctx), vs)
	g.mu.Lock()
	var next []*member[T]
	if len(g.queue) > 0 {
		next = g.take()
		next[0].batch = next
	} else {
		g.busy--
	}
	g.mu.Unlock()
	for _, m := range batch {
		m.wake <- struct{}{}
	}
	if next != nil {
		next[0].wake <- struct{}{}
	}
}
