package slackfake

import (
	"sync"
	"time"
)

// Call is one Web API request the server received, in arrival order.
type Call struct {
	Method string
	// Params are the request's parameters (form values, or the JSON body's top-level members:
	// strings as they are, anything else as its JSON text). The token is never recorded.
	Params map[string]string
	// Auth says how the token came: "bearer", "form" or "" (none).
	Auth string
	// Team is the workspace whose bot token made the call ("" for app-token and OAuth calls).
	Team string
	// Status is the HTTP status answered; Error the ok:false error, if any.
	Status int
	Error  string
	// Undocumented are the parameters the method's reference does not list (DocumentedArgs),
	// sorted: Slack ignores them without a word, so the fake answers as if they were not
	// there, and tests assert there are none.
	Undocumented []string
	At           time.Time
}

// callLog counts every call on arrival (Web API methods, uploads, downloads) and logs each once
// answered, unless recording is off.
type callLog struct {
	mu     sync.Mutex
	calls  []Call
	counts map[string]int
	record bool
}

func newCallLog() *callLog { return &callLog{counts: map[string]int{}, record: true} }

// arrived counts a call of method.
func (l *callLog) arrived(method string) {
	l.mu.Lock()
	l.counts[method]++
	l.mu.Unlock()
}

// answered logs c, when recording, with the parameters its method's reference does not list.
func (l *callLog) answered(c Call) {
	l.mu.Lock()
	if l.record {
		c.Undocumented = undocumented(c.Method, c.Params)
		l.calls = append(l.calls, c)
	}
	l.mu.Unlock()
}

// SetRecording turns the call log (Calls) on or off; counts are always kept.
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

// CallsOf returns the logged calls of method.
func (l *callLog) CallsOf(method string) []Call {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Call
	for _, c := range l.calls {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// Undocumented returns the logged calls that carried a parameter their method's reference
// does not list (Call.Undocumented), in arrival order.
func (l *callLog) Undocumented() []Call {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Call
	for _, c := range l.calls {
		if len(c.Undocumented) > 0 {
			out = append(out, c)
		}
	}
	return out
}

// Count returns how many calls of method arrived (refused and failed ones included).
func (l *callLog) Count(method string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.counts[method]
}
