package telegram

import (
	"context"
	"sync"
	"time"
)

// editThrottle spaces edits of one message: at most one per interval (a second in private chats,
// three in groups), coalescing so that the latest edit wins. An edit that finds the slot taken
// waits for it; if a newer edit arrives meanwhile, the older one is superseded and returns
// without sending. A final edit takes the slot at once and supersedes any waiting edit.
type editThrottle struct {
	private, group time.Duration

	mu    sync.Mutex
	state map[editKey]*editState
	calls int
}

type editKey struct {
	chat int64
	msg  string
}

type editState struct {
	last       time.Time
	seq        uint64
	superseded chan struct{} // closed when the waiting edit is replaced; nil when none waits
}

func newEditThrottle(private, group time.Duration) *editThrottle {
	return &editThrottle{private: private, group: group, state: map[editKey]*editState{}}
}

// acquire waits for the edit slot of key. It reports false when a newer edit superseded this one
// (the caller must not send). final skips the wait and supersedes whoever waits.
func (t *editThrottle) acquire(ctx context.Context, key editKey, final bool, now func() time.Time) (bool, error) {
	interval := t.private
	if key.chat < 0 {
		interval = t.group
	}
	t.mu.Lock()
	t.calls++
	if t.calls%1024 == 0 {
		t.prune(now())
	}
	st := t.state[key]
	if st == nil {
		st = &editState{}
		t.state[key] = st
	}
	st.seq++
	my := st.seq
	if st.superseded != nil {
		close(st.superseded)
		st.superseded = nil
	}
	wait := st.last.Add(interval).Sub(now())
	if final || wait <= 0 {
		st.last = now()
		t.mu.Unlock()
		return true, nil
	}
	sup := make(chan struct{})
	st.superseded = sup
	t.mu.Unlock()

	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-sup:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	case <-timer.C:
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if st.seq != my {
		return false, nil
	}
	st.superseded = nil
	st.last = now()
	return true, nil
}

// forget drops the state of a deleted message.
func (t *editThrottle) forget(key editKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if st := t.state[key]; st != nil && st.superseded == nil {
		delete(t.state, key)
	}
}

// prune drops idle states (no waiter, last edit a minute ago).
func (t *editThrottle) prune(now time.Time) {
	for k, st := range t.state {
		if st.superseded == nil && now.Sub(st.last) > time.Minute {
			delete(t.state, k)
		}
	}
}
