package telegramfake

import (
	"sync"
	"time"
)

// Call is one request the server received, in arrival order.
type Call struct {
	Method string
	Params map[string]string
	// Status is the HTTP status answered (200, or the error code).
	Status int
	At     time.Time
}

// callLog counts every call on arrival (Bot API methods and file downloads) and logs each once
// answered, unless recording is off.
type callLog struct {
	mu *sync.Mutex
	// Guarded by mu.
	calls  []Call
	counts map[string]int
	record bool
}

func newCallLog(mu *sync.Mutex) *callLog {
	return &callLog{mu: mu, counts: map[string]int{}, record: true}
}

// arrived counts a call of method.
func (l *callLog) arrived(method string) {
	l.mu.Lock()
	l.counts[method]++
	l.mu.Unlock()
}

// answered logs a call of method answered with status, when recording.
func (l *callLog) answered(method string, params map[string]string, status int) {
	l.mu.Lock()
	if l.record {
		l.calls = append(l.calls, Call{Method: method, Params: params, Status: status, At: time.Now()})
	}
	l.mu.Unlock()
}

// SetRecording turns the call log (Calls) on or off; counts are always kept. Load tests turn it
// off to keep memory flat.
func (l *callLog) SetRecording(on bool) {
	l.mu.Lock()
	l.record = on
	l.mu.Unlock()
}

// Calls returns a copy of the call log.
func (l *callLog) Calls() []Call {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Call(nil), l.calls...)
}

// Count returns how many calls of method the server received, counted on arrival (calls in
// flight, refused and failed ones included).
func (l *callLog) Count(method string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.counts[method]
}
