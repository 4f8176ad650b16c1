package rdb

import (
	"context"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// maxFlights is how many pipelines the batcher keeps in flight at once; maxBatch bounds one
// pipeline. Two flights let the client encode one batch while Redis answers the other.
const (
	maxFlights = 2
	maxBatch   = 256
)

// batcher sends the script calls of concurrent callers in shared pipelines (group commit): a
// caller that finds fewer than maxFlights pipelines in flight sends everything queued so far,
// itself included; the others wait, and when a pipeline returns, its sender hands what queued
// meanwhile to the first waiter, which sends it. No goroutine of its own, no linger: a lone
// caller pays one round trip as before, and under load many calls share one. Every call is one
// script on one conversation's or the global slot; a caller has at most one call in flight, so
// its calls reach Redis in the order it makes them.
type batcher struct {
	c       redis.UniversalClient
	mu      sync.Mutex
	flights int
	queue   []*call
}

type call struct {
	cmd   *redis.Cmd
	wake  chan struct{} // receives once: cmd is done, or batch is this call's to send
	batch []*call
}

// run sends cmd with the next pipeline and waits for its reply. It waits without watching ctx:
// the pipeline is bounded by the client's read and write timeouts, and leaving early would strand
// the calls handed to this one.
func (b *batcher) run(ctx context.Context, cmd *redis.Cmd) {
	c := &call{cmd: cmd, wake: make(chan struct{}, 1)}
	b.mu.Lock()
	b.queue = append(b.queue, c)
	if b.flights < maxFlights {
		b.flights++
		batch := b.take()
		b.mu.Unlock()
		b.send(ctx, batch)
	} else {
		b.mu.Unlock()
	}
	for {
		<-c.wake
		if c.batch == nil {
			return // c's command is done
		}
		batch := c.batch
		c.batch = nil
		b.send(ctx, batch) // c is batch[0]: this wakes c again once its command is done
	}
}

// take removes up to maxBatch queued calls. b.mu is held.
func (b *batcher) take() []*call {
	n := min(len(b.queue), maxBatch)
	batch := b.queue[:n:n]
	if n == len(b.queue) {
		b.queue = nil
	} else {
		b.queue = b.queue[n:]
	}
	return batch
}

// send pipelines batch, wakes its callers, then hands the queue to the next sender or ends this
// flight.
func (b *batcher) send(ctx context.Context, batch []*call) {
	ctx = context.WithoutCancel(ctx)
	if len(batch) == 1 {
		_ = b.c.Process(ctx, batch[0].cmd)
	} else {
		_, _ = b.c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, c := range batch {
				_ = p.Process(ctx, c.cmd)
			}
			return nil
		})
	}
	b.mu.Lock()
	var next []*call
	if len(b.queue) > 0 {
		next = b.take()
		next[0].batch = next
	} else {
		b.flights--
	}
	b.mu.Unlock()
	for _, c := range batch {
		c.wake <- struct{}{}
	}
	if next != nil {
		next[0].wake <- struct{}{}
	}
}

// eval runs script on keys through the batcher: EVALSHA, and EVAL when Redis does not know the
// script yet. The retry is safe: a NOSCRIPT call ran nothing, and it is this caller's only call
// in flight.
func (s *Store) eval(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	a := make([]any, 0, 3+len(keys)+len(args))
	a = append(a, "evalsha", script.Hash(), len(keys))
	for _, k := range keys {
		a = append(a, k)
	}
	a = append(a, args...)
	cmd := redis.NewCmd(ctx, a...)
	if len(keys) > 0 {
		cmd.SetFirstKeyPos(3) // routes by the first key on a cluster
	}
	s.b.run(ctx, cmd)
	if err := cmd.Err(); err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		return script.Eval(ctx, s.c, keys, args...)
	}
	return cmd
}
