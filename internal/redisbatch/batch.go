// Package redisbatch is group commit for the Redis commands of concurrent callers: calls made
// while pipelines are in flight queue and leave together in the next one, so under load many
// callers share one network round trip, and a lone call still costs one.
package redisbatch

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Flights is how many pipelines a Batcher keeps in flight at once. One: calls made while it is
// in flight all leave in the next. Two (encoding one batch while Redis answers the other) made
// smaller batches, which cost more than the overlap saved: with one, the shipped bot made
// 30–50 % fewer Redis round trips a message under BenchmarkBinary's bursts, and its own CPU a
// message and Redis's fell with them; a lone call still leaves at once.
const Flights = 1

// maxBatch bounds how many callers one flush serves.
const maxBatch = 256

// Batcher sends the commands of concurrent callers in shared pipelines. A caller that finds
// fewer than Flights flushes in progress flushes everything queued so far, itself included; the
// others wait, and when a flush returns, its flusher hands what queued meanwhile to the first
// waiter, which flushes it. No goroutine of its own and no linger. Each caller has one call in
// flight, so a caller's commands are sent in the order it makes them. Safe for concurrent use.
type Batcher struct {
	c redis.UniversalClient

	mu    sync.Mutex
	busy  int // flushes in progress
	queue []*member
}

type member struct {
	cmds  []redis.Cmder
	wake  chan struct{} // receives once: cmds are done, or batch is this member's to flush
	batch []*member
	one   [1]redis.Cmder // cmds of a lone command (Eval's), without a slice of their own
}

// members keeps the members of finished calls, their channels with them: a call is two
// allocations fewer, and a message makes about ten calls.
var members = sync.Pool{New: func() any { return &member{wake: make(chan struct{}, 1)} }}

// New returns a Batcher sending through c.
func New(c redis.UniversalClient) *Batcher { return &Batcher{c: c} }

// Do sends cmds, kept together and in order, with the next batch and waits until each has its
// result or error (read them from the commands). It does not watch ctx while it waits: a flush
// is bounded by the client's read and write timeouts, and leaving early would strand the calls
// handed to this caller. A ctx already ended fails every command at once, sending nothing.
func (b *Batcher) Do(ctx context.Context, cmds ...redis.Cmder) {
	if len(cmds) == 0 {
		return
	}
	m := members.Get().(*member)
	m.cmds = cmds
	b.do(ctx, m)
}

// do sends m's cmds as Do does, then gives m back to the pool.
func (b *Batcher) do(ctx context.Context, m *member) {
	defer func() {
		m.cmds, m.one[0] = nil, nil // keep no command alive in the pool
		members.Put(m)
	}()
	if err := ctx.Err(); err != nil {
		for _, c := range m.cmds {
			c.SetErr(err)
		}
		return
	}
	b.mu.Lock()
	b.queue = append(b.queue, m)
	if b.busy < Flights {
		b.busy++
		batch := b.take()
		b.mu.Unlock()
		b.flush(ctx, batch)
	} else {
		b.mu.Unlock()
	}
	for {
		<-m.wake
		if m.batch == nil {
			return // cmds are done
		}
		batch := m.batch
		m.batch = nil
		b.flush(ctx, batch) // m is batch[0]: this wakes m again once its cmds are done
	}
}

// Eval runs script on keys with the next batch: EVALSHA, and EVAL when Redis does not know the
// script yet. The retry is safe: a NOSCRIPT call ran nothing.
func (b *Batcher) Eval(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	a := make([]any, 0, 3+len(keys)+len(args))
	a = append(a, "evalsha", boxedHash(script), len(keys))
	for _, k := range keys {
		a = append(a, k)
	}
	a = append(a, args...)
	cmd := redis.NewCmd(ctx, a...)
	if len(keys) > 0 {
		cmd.SetFirstKeyPos(3) // routes by the first key on a cluster
	}
	m := members.Get().(*member)
	m.one[0] = cmd
	m.cmds = m.one[:]
	b.do(ctx, m)
	if err := cmd.Err(); redis.HasErrorPrefix(err, "NOSCRIPT") {
		return script.Eval(ctx, b.c, keys, args...)
	}
	return cmd
}

// hashes holds each script's hash as an interface value, boxed once rather than on every call.
var hashes sync.Map // *redis.Script → any (its hash string)

func boxedHash(s *redis.Script) any {
	if h, ok := hashes.Load(s); ok {
		return h
	}
	h, _ := hashes.LoadOrStore(s, any(s.Hash()))
	return h
}

// take removes up to maxBatch queued members. b.mu is held.
func (b *Batcher) take() []*member {
	n := min(len(b.queue), maxBatch)
	batch := b.queue[:n:n]
	if n == len(b.queue) {
		b.queue = nil
	} else {
		b.queue = b.queue[n:]
	}
	return batch
}

// flush sends batch, wakes its callers, then hands the queue to its next flusher or ends this
// flush.
func (b *Batcher) flush(ctx context.Context, batch []*member) {
	b.send(context.WithoutCancel(ctx), batch)
	b.mu.Lock()
	var next []*member
	if len(b.queue) > 0 {
		next = b.take()
		next[0].batch = next
	} else {
		b.busy--
	}
	b.mu.Unlock()
	for _, m := range batch {
		m.wake <- struct{}{}
	}
	if next != nil {
		next[0].wake <- struct{}{}
	}
}

// send runs batch's commands: a lone command as itself, anything more as one pipeline.
func (b *Batcher) send(ctx context.Context, batch []*member) {
	if len(batch) == 1 && len(batch[0].cmds) == 1 {
		_ = b.c.Process(ctx, batch[0].cmds[0])
		return
	}
	_, _ = b.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, m := range batch {
			for _, c := range m.cmds {
				_ = p.Process(ctx, c)
			}
		}
		return nil
	})
}
