package kit

import (
	"context"
	"sync"
)

// Lanes hand work over in order per key — a conversation, a channel — while different keys run
// in parallel on at most Runners goroutines: a platform delivers one conversation's events in
// order and the router must see them in that order, but a burst over thousands of conversations
// must not become thousands of goroutines. A goroutine that ran one function of its key moves on
// to the key waiting longest, if one waits (its key goes back in line), so a busy conversation
// never holds the others up; it exits when no key has work, so idle Lanes hold no goroutine.
//
// MaxBacklog is the platform's backlog rule: how many functions one key may have queued (not
// counting the one running) before Run refuses more. Zero keeps every function — right where
// the platform redelivers what is not acknowledged, as Slack does, so memory is bounded by its
// retries; Discord's gateway never redelivers, so its adapter bounds a channel's backlog rather
// than grow memory without end. Create with NewLanes; safe for concurrent use.
type Lanes struct {
	runners, maxBacklog int

	mu      sync.Mutex
	queues  map[string][]func() // key → its queued functions; present while queued or running
	waiting []string            // keys with work and no goroutine, oldest first
	running int
	// idle is closed when running drops to zero, for Wait; nil while nobody waits.
	idle chan struct{}
}

// NewLanes returns Lanes running at most runners keys at once (at least 1), each key holding at
// most maxBacklog queued functions (≤ 0: no bound).
func NewLanes(runners, maxBacklog int) *Lanes {
	return &Lanes{runners: max(runners, 1), maxBacklog: max(maxBacklog, 0), queues: map[string][]func(){}}
}

// Run queues f behind key's functions and returns at once. It reports false, dropping f, when
// key's backlog is full (MaxBacklog).
func (l *Lanes) Run(key string, f func()) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.queueLocked(key, f)
}

// queueLocked is Run with l.mu held.
func (l *Lanes) queueLocked(key string, f func()) bool {
	q, known := l.queues[key]
	if l.maxBacklog > 0 && len(q) >= l.maxBacklog {
		return false
	}
	l.queues[key] = append(q, f)
	if known {
		return true // running or waiting: its goroutine comes to f in turn
	}
	if l.running < l.runners {
		l.running++
		go l.drain(key)
		return true
	}
	l.waiting = append(l.waiting, key)
	return true
}

// Do runs f on the caller's goroutine when key has nothing queued or running and a runner is
// free — an HTTP delivery's own goroutine, spared a hand-over to a new one — and otherwise
// queues it as Run does, without waiting for it. It reports false as Run does.
func (l *Lanes) Do(key string, f func()) bool {
	l.mu.Lock()
	if _, known := l.queues[key]; known || l.running >= l.runners {
		defer l.mu.Unlock()
		return l.queueLocked(key, f)
	}
	l.queues[key] = nil // running: later functions of key queue behind f
	l.running++
	l.mu.Unlock()
	f()
	l.mu.Lock()
	defer l.mu.Unlock()
	if next, ok := l.after(key); ok {
		go l.drain(next) // takes over this runner's place
	}
	return true
}

// Wait blocks until no function runs or is queued, or ctx ends; it reports whether all ran.
// Unlike a WaitGroup's Wait it may overlap a function that queues more work (an envelope still
// being handed over while Stop waits).
func (l *Lanes) Wait(ctx context.Context) bool {
	for {
		l.mu.Lock()
		if l.running == 0 {
			l.mu.Unlock()
			return true
		}
		if l.idle == nil {
			l.idle = make(chan struct{})
		}
		idle := l.idle
		l.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			return false
		}
	}
}

// drain runs key's functions, taking turns with the waiting keys, until no key has work.
func (l *Lanes) drain(key string) {
	l.mu.Lock()
	for {
		q := l.queues[key]
		f := q[0]
		q[0] = nil
		if q = q[1:]; len(q) == 0 {
			l.queues[key] = nil // running: later functions of key queue behind f
		} else {
			l.queues[key] = q
		}
		l.mu.Unlock()
		f()
		l.mu.Lock()
		var ok bool
		if key, ok = l.after(key); !ok {
			l.mu.Unlock()
			return
		}
	}
}

// after is called, locked, once a function of key ran on a goroutine holding a runner's place:
// it returns the key whose next function that goroutine runs — key again while no other waits
// — or false, giving the place up, when no key has work.
func (l *Lanes) after(key string) (string, bool) {
	switch {
	case len(l.queues[key]) == 0:
		delete(l.queues, key)
	case len(l.waiting) == 0:
		return key, true
	default:
		l.waiting = append(l.waiting, key)
	}
	if len(l.waiting) == 0 {
		l.running--
		if l.running == 0 && l.idle != nil {
			close(l.idle)
			l.idle = nil
		}
		return "", false
	}
	next := l.waiting[0]
	l.waiting[0] = ""
	l.waiting = l.waiting[1:]
	return next, true
}
