package runs

import (
	"context"
	"sync"
)

// heldSet is what one process holds: hints it fetched and not yet settled, and the run each
// worker is executing. The heartbeat renews from it; the canceller cancels through it.
type heldSet struct {
	mu    sync.Mutex
	hints map[string]struct{}
	runs  map[int]*activeRun // by worker index
}

type activeRun struct {
	tag, owner, runID string
	cancel            context.CancelCauseFunc
}

func newHeldSet() *heldSet {
	return &heldSet{hints: map[string]struct{}{}, runs: map[int]*activeRun{}}
}

func (h *heldSet) addHint(id string) {
	h.mu.Lock()
	h.hints[id] = struct{}{}
	h.mu.Unlock()
}

func (h *heldSet) dropHint(id string) {
	h.mu.Lock()
	delete(h.hints, id)
	h.mu.Unlock()
}

func (h *heldSet) setRun(worker int, r *activeRun) {
	h.mu.Lock()
	if r == nil {
		delete(h.runs, worker)
	} else {
		h.runs[worker] = r
	}
	h.mu.Unlock()
}

// snapshot copies the held runs and hint ids.
func (h *heldSet) snapshot() ([]activeRun, []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	runs := make([]activeRun, 0, len(h.runs))
	for _, r := range h.runs {
		runs = append(runs, *r)
	}
	ids := make([]string, 0, len(h.hints))
	for id := range h.hints {
		ids = append(ids, id)
	}
	return runs, ids
}

// cancelRun cancels runID's context with cause if this process runs it.
func (h *heldSet) cancelRun(runID string, cause error) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.runs {
		if r.runID == runID {
			r.cancel(cause)
			return true
		}
	}
	return false
}
