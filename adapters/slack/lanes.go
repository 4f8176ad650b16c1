package slack

import (
	"context"
	"sync"
)

// maxHandovers bounds how many conversations are handed to the Handler at once, as the
// Telegram adapter does: a burst of envelopes over many conversations waits its turn in the
// lanes instead of holding a goroutine (and its stack) per conversation.
const maxHandovers = 64

// lanes run functions one at a time per key, in submission order, different keys in parallel
// on at most limit goroutines. A goroutine that ran one function of its key moves on to the key
// waiting longest, if one waits (the key goes back in line), so a busy conversation never holds
// up the others; it exits when no key has work.
type lanes struct {
	mu      sync.Mutex
	m       map[string][]func() // key → its queued functions; present while queued or running
	waiting []string            // keys with work and no goroutine, oldest first
	running int
	limit   int
	// idle is closed when running drops to zero, for wait; nil while nobody waits.
	idle chan struct{}
}

func newLanes(limit int) *lanes {
	return &lanes{m: map[string][]func(){}, limit: limit}
}

// wait blocks until no function runs or is queued, or ctx ends; it reports whether all ran.
// Unlike a WaitGroup's Wait it may overlap a run that starts more work (an envelope still
// being handed over while Stop waits).
func (l *lanes) wait(ctx context.Context) bool {
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

// run queues f behind key's functions; it never waits.
func (l *lanes) run(key string, f func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	q, known := l.m[key]
	l.m[key] = append(q, f)
	if known {
		return // running or waiting: its goroutine comes to f in turn
	}
	if l.running < l.limit {
		l.running++
		go l.drain(key)
		return
	}
	l.waiting = append(l.waiting, key)
}

// do runs f on the caller's goroutine when key has nothing queued or running and a place is
// free — an HTTP delivery's own goroutine, spared a hand-over to a new one — and otherwise
// queues it as run does, without waiting for it.
func (l *lanes) do(key string, f func()) {
	l.mu.Lock()
	if _, known := l.m[key]; known || l.running >= l.limit {
		l.mu.Unlock()
		l.run(key, f)
		return
	}
	l.m[key] = nil // running: later functions of key queue behind f
	l.running++
	l.mu.Unlock()
	f()
	l.mu.Lock()
	defer l.mu.Unlock()
	if next, ok := l.after(key); ok {
		go l.drain(next) // takes over this place
	}
}

// drain runs key's functions, taking turns with the waiting keys, until no key has work.
func (l *lanes) drain(key string) {
	l.mu.Lock()
	for {
		q := l.m[key]
		f := q[0]
		q[0] = nil
		if q = q[1:]; len(q) == 0 {
			l.m[key] = nil // running: later functions of key queue behind f
		} else {
			l.m[key] = q
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

// after is called, locked, once a function of key ran on a goroutine holding a place: it
// returns the key whose next function that goroutine runs — key again while no other waits —
// or false, giving the place up, when no key has work.
func (l *lanes) after(key string) (string, bool) {
	switch {
	case len(l.m[key]) == 0:
		delete(l.m, key)
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
