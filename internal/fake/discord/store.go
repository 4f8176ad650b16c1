package discordfake

import (
	"strconv"
	"sync"
)

// store is what the REST components share: the one lock that guards all their state — one, so
// that a request that reads one component and writes another (a thread started from a message,
// an interaction's response message) sees them consistent — and the snowflake source.
type store struct {
	mu     sync.Mutex
	nextID uint64
}

// newID returns a fresh snowflake.
func (st *store) newID() string {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.newIDLocked()
}

func (st *store) newIDLocked() string {
	st.nextID++
	return strconv.FormatUint(st.nextID, 10)
}
