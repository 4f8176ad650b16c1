package runs

import (
	"errors"
	"fmt"
)

// ErrPaused is returned by Enqueue while intake is paused (Queue.Pause).
var ErrPaused = errors.New("runs: intake is paused")

// ErrDuplicate is returned by EnqueueOnce when the event's run was queued already; nothing was
// queued.
var ErrDuplicate = errors.New("runs: the event's run is queued already")

// ErrNotFound is returned by admin operations naming a run that is not there.
var ErrNotFound = errors.New("runs: no such run")

// BusyScope says which limit a BusyError hit.
type BusyScope string

// The backpressure scopes.
const (
	ScopeConversation BusyScope = "conversation"
	ScopeGlobal       BusyScope = "global"
)

// BusyError is returned by Enqueue when a backpressure limit is reached; nothing was queued. The
// router answers it with a polite "busy" reply.
type BusyError struct {
	Scope BusyScope
	// Limit is the limit that was reached.
	Limit int64
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("runs: busy: the %s limit of %d queued runs is reached", e.Scope, e.Limit)
}
