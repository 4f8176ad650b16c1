package runs

import (
	"sync"
	"time"
)

// scheduledMemory is how long Enqueue assumes a conversation it saw scheduled stays scheduled,
// about the length of a run; scheduledMax bounds how many it remembers.
const (
	scheduledMemory = 10 * time.Second
	scheduledMax    = 16384
)

// scheduledSet remembers conversations this process recently saw scheduled, so that Enqueue can
// pick the order of its two steps that costs two round trips rather than three: admit then push
// for a scheduled conversation, push then admit and hint for an idle one. It is only a guess: a
// wrong one costs one more round trip, never correctness. Workers of this process forget a
// conversation when they leave it idle.
type scheduledSet struct {
	mu    sync.Mutex
	until map[string]time.Time // conversation tag → guess expiry
}

func newScheduledSet() *scheduledSet { return &scheduledSet{until: map[string]time.Time{}} }

// likely reports whether tag was seen scheduled within scheduledMemory.
func (s *scheduledSet) likely(tag string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.until[tag]
	return ok && now.Before(t)
}

// saw records that tag is scheduled as of now.
func (s *scheduledSet) saw(tag string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.until[tag]; !ok && len(s.until) >= scheduledMax {
		for k, t := range s.until {
			if !now.Before(t) {
				delete(s.until, k)
			}
		}
		if len(s.until) >= scheduledMax {
			clear(s.until)
		}
	}
	s.until[tag] = now.Add(scheduledMemory)
}

// forget records that tag went idle.
func (s *scheduledSet) forget(tag string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.until, tag)
}
