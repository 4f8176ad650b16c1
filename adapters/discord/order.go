package discord

import (
	"context"
	"sync"
)

// orderer runs jobs one at a time per key (a channel id) in the order they were added, while
// different keys run in parallel: the gateway delivers a channel's messages in order, and the
// router must see them in that order. A key's goroutine exists only while it has work.
type orderer struct {
	mu     sync.Mutex
	queues map[string]*orderQueue
}

type orderQueue struct {
	jobs []func(ctx context.Context)
}

// maxQueued bounds one channel's backlog; past it new messages are dropped (and logged by the
// caller's absence of a hand-over) rather than growing memory without end.
const maxQueued = 10000

func newOrderer() *orderer { return &orderer{queues: map[string]*orderQueue{}} }

// add queues job under key; when key had no work, spawn is called with the loop that drains it.
// It reports false when the key's backlog is full and job was dropped.
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
	q := &orderQueue{jobs: []func(ctx context.Context){job}}
	o.queues[key] = q
	o.mu.Unlock()
	spawn(func() {
		for {
			o.mu.Lock()
			if len(q.jobs) == 0 {
				delete(o.queues, key)
				o.mu.Unlock()
				return
			}
			j := q.jobs[0]
			q.jobs[0] = nil
			q.jobs = q.jobs[1:]
			o.mu.Unlock()
			if ctx.Err() == nil {
				j(ctx)
			}
		}
	})
	return true
}
