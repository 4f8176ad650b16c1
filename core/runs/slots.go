package runs

import (
	"context"

	"github.com/switchboard-bot/switchboard/core/runs/internal/rdb"
)

// hintSlots bound the hints one process holds — fetched, or in a worker's hands — to two per
// worker, and hand fetched hints to the workers. The fetcher and the recoverer take slots before
// they read hints and dispatch what they read; a worker gives its slot back when it is done with
// the hint. A slot is a token in free, which starts full.
type hintSlots struct {
	free chan struct{}
	held *heldSet   // the hints dispatched are held, for the heartbeat
	work *workQueue // where the workers take them from
}

func newHintSlots(n int, held *heldSet, work *workQueue) *hintSlots {
	s := &hintSlots{free: make(chan struct{}, n), held: held, work: work}
	s.give(n)
	return s
}

// take takes at least one free slot (waiting for it when wait) and then other free ones, up to
// max. ok is false when ctx ended or, without wait, no slot was free. The fetcher takes at most
// Workers of the 2×Workers slots so that a blocked read never starves the recoverer.
func (s *hintSlots) take(ctx context.Context, wait bool, max int) (n int, ok bool) {
	if wait {
		select {
		case <-ctx.Done():
			return 0, false
		case <-s.free:
		}
	} else {
		select {
		case <-s.free:
		default:
			return 0, false
		}
	}
	n = 1
	for n < max {
		select {
		case <-s.free:
			n++
		default:
			return n, true
		}
	}
	return n, true
}

// give returns n slots.
func (s *hintSlots) give(n int) {
	for range n {
		s.free <- struct{}{}
	}
}

// dispatch hands hints to the workers and returns the slots they did not use.
func (s *hintSlots) dispatch(hints []rdb.Hint, slots int) {
	for _, h := range hints {
		s.held.addHint(h.ID)
		s.work.put(h)
	}
	s.give(slots - len(hints))
}
