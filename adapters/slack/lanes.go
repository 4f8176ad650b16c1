package slack

import "sync"

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
	wg      *sync.WaitGroup
}

func newLanes(wg *sync.WaitGroup, limit int) *lanes {
	return &lanes{m: map[string][]func(){}, wg: wg, limit: limit}
}

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
		l.wg.Add(1)
		go l.drain(key)
		return
	}
	l.waiting = append(l.waiting, key)
}

// drain runs key's functions, taking turns with the waiting keys, until no key has work.
func (l *lanes) drain(key string) {
	defer l.wg.Done()
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
		if len(l.m[key]) == 0 {
			delete(l.m, key)
		} else if len(l.waiting) > 0 {
			l.waiting = append(l.waiting, key)
		} else {
			continue
		}
		if len(l.waiting) == 0 {
			l.running--
			l.mu.Unlock()
			return
		}
		key = l.waiting[0]
		l.waiting[0] = ""
		l.waiting = l.waiting[1:]
	}
}
