package discord

import (
	"context"
	"sync"
)

// orderer runs jobs one at a time per key (a channel id) in the order they were added, while
// different keys run in parallel — at most maxRunners at once: the gateway delivers a channel's
// messages in order, and the router must see them in that order, but a burst over thousands of
// channels should not become thousands of goroutines contending for the router at once. A
// runner exists only while there is work; keys with work beyond maxRunners wait their turn in
// the order they got it.
type orderer struct {
	mu      sync.Mutex
	queues  map[string]*orderQueue
	waiting []string // keys with work and no runner, oldest first
	running int
	max     int
}

type orderQueue struct {
	jobs []func(ctx context.Context)
}

// maxQueued bounds one channel's backlog; past it new messages are dropped (and logged by the
// caller's absence of a hand-over) rather than growing memory without end.
const maxQueued = 10000

// maxRunners bounds the channels handed over at once (as Telegram's maxHandovers does).
const maxRunners = 64

func newOrderer() *orderer { return &orderer{queues: map[string]*orderQueue{}, max: maxRunners} }

// add queues job under key; when a runner is free and key had no work, spawn is called with the
// loop that drains it (and then the keys waiting). It reports false when the key's backlog is
// full and job was dropped.
func (o *orderer) add(key string, job func(ctx context.Context), spawn func(run func()), ctx context.Context) bool {
	o.mu.Lock()
	if q := o.queues[key]; q != nil {
		if len(q.jobs) >= maxQueued {
			o.mu.Unlock()
			return false
		}
		q.jobs = append(q.jobs, job)
		o.mu.Unlock()
		return true
	}
	o.queues[key] = &orderQueue{jobs: []func(ctx context.Context){job}}
	if o.running >= o.max {
		o.waiting = append(o.waiting, key)
		o.mu.Unlock()
		return true
	}
	o.running++
	o.mu.Unlock()
	spawn(func() { o.run(ctx, key) })
	return true
}

// run drains key's queue, then the waiting keys', until none is left.
func (o *orderer) run(ctx context.Context, key string) {
	for {
		o.mu.Lock()
		q := o.queues[key]
		if len(q.jobs) == 0 {
			delete(o.queues, key)
			if len(o.waiting) == 0 {
				o.running--
				o.mu.Unlock()
				return
			}
			key = o.waiting[0]
			o.waiting[0] = ""
			o.waiting = o.waiting[1:]
			o.mu.Unlock()
			continue
		}
		j := q.jobs[0]
		q.jobs[0] = nil
		q.jobs = q.jobs[1:]
		o.mu.Unlock()
		if ctx.Err() == nil {
			j(ctx)
		}
	}
}
