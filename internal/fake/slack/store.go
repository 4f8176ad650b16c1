package slackfake

import (
	"fmt"
	"sync"
)

// store is what the Web API components share: the one lock that guards all their state — one,
// so that a call that reads one component and writes another (an upload shared as a message, a
// stream appended to a message) sees them consistent; the handlers of Web API methods run with
// it held — and the sequence that numbers timestamps, trigger ids, event ids and file ids.
type store struct {
	mu      sync.Mutex
	seq     int64
	tsClock int64
}

// nextLocked is the next number of the sequence.
func (st *store) nextLocked() int64 {
	st.seq++
	return st.seq
}

// newTSLocked returns a fresh message timestamp, later than every one before.
func (st *store) newTSLocked() string {
	st.seq++
	return fmt.Sprintf("%d.%06d", st.tsClock+st.seq/1000000, st.seq%1000000)
}

// newTS is newTSLocked for a caller without the lock.
func (st *store) newTS() string {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.newTSLocked()
}
