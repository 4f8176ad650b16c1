package slackfake

import (
	"net/http"
	"slices"
	"sync"
)

// Fault is a failure to inject. Status 429 answers HTTP 429 with a Retry-After header of
// RetryAfter seconds (0 allowed, for fast tests); another non-200 Status answers that status
// with an HTML body, as Slack does for 5xx; otherwise the answer is {"ok":false,"error":Error}
// (e.g. "ratelimited", "invalid_auth", "channel_not_found").
type Fault struct {
	Status     int
	RetryAfter int
	Error      string
}

type fault struct {
	method  string
	channel string // "": any
	left    int    // < 0: until cleared
	f       Fault
}

// faults are what tests make calls do instead of their usual answer: fail (FailNext, FailChannel,
// RateLimit) or wait (Hold).
type faults struct {
	mu    sync.Mutex
	list  []*fault
	holds []*hold
	// done is closed by Close: held calls go on.
	done   chan struct{}
	closed bool
}

func newFaults() *faults { return &faults{done: make(chan struct{})} }

// FailNext makes the next n calls of method answer with f (n < 0: every call until
// ClearFaults).
func (fs *faults) FailNext(method string, n int, f Fault) { fs.add(method, "", n, f) }

// FailChannel makes the next n calls of method about channel answer with f.
func (fs *faults) FailChannel(channel, method string, n int, f Fault) {
	fs.add(method, channel, n, f)
}

// RateLimit makes the next n calls of method answer HTTP 429 with Retry-After retryAfter
// seconds.
func (fs *faults) RateLimit(method string, n, retryAfter int) {
	fs.FailNext(method, n, Fault{Status: http.StatusTooManyRequests, RetryAfter: retryAfter})
}

// ClearFaults removes every injected fault.
func (fs *faults) ClearFaults() {
	fs.mu.Lock()
	fs.list = nil
	fs.mu.Unlock()
}

func (fs *faults) add(method, channel string, n int, f Fault) {
	if n == 0 {
		return
	}
	if f.Status == 0 {
		f.Status = http.StatusOK
	}
	if f.Status == http.StatusOK && f.Error == "" {
		f.Error = "fatal_error"
	}
	fs.mu.Lock()
	fs.list = append(fs.list, &fault{method: method, channel: channel, left: n, f: f})
	fs.mu.Unlock()
}

// take consumes one matching fault, if any.
func (fs *faults) take(method string, p map[string]string) *apiErr {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for i, f := range fs.list {
		if f.method != method {
			continue
		}
		if f.channel != "" && f.channel != p["channel"] && f.channel != p["channel_id"] {
			continue
		}
		if f.left > 0 {
			f.left--
			if f.left == 0 {
				fs.list = append(fs.list[:i:i], fs.list[i+1:]...)
			}
		}
		return &apiErr{status: f.f.Status, err: f.f.Error, retryAfter: f.f.RetryAfter}
	}
	return nil
}

type hold struct {
	method string
	left   int // < 0: until released
	gate   chan struct{}
}

// Hold makes the next n calls of method (n < 0: every call) wait, once they arrived and were
// counted, until release is called or the server closes; then they are answered as usual,
// injected faults included. A test proves by it that something does not wait for a slow call:
// Count says the call arrived, CallsOf lists it only once answered.
func (fs *faults) Hold(method string, n int) (release func()) {
	h := &hold{method: method, left: n, gate: make(chan struct{})}
	fs.mu.Lock()
	fs.holds = append(fs.holds, h)
	fs.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			fs.mu.Lock()
			fs.holds = slices.DeleteFunc(fs.holds, func(x *hold) bool { return x == h })
			fs.mu.Unlock()
			close(h.gate)
		})
	}
}

// takeHold returns the gate a call of method waits at, if one is held.
func (fs *faults) takeHold(method string) <-chan struct{} {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for i, h := range fs.holds {
		if h.method != method {
			continue
		}
		if h.left > 0 {
			h.left--
			if h.left == 0 {
				fs.holds = append(fs.holds[:i:i], fs.holds[i+1:]...)
			}
		}
		return h.gate
	}
	return nil
}

// wait blocks a call of method while it is held (Hold), until released or the server closes.
func (fs *faults) wait(method string) {
	if gate := fs.takeHold(method); gate != nil {
		select {
		case <-gate:
		case <-fs.done:
		}
	}
}

// close lets every held call go on, for good.
func (fs *faults) close() {
	fs.mu.Lock()
	if !fs.closed {
		close(fs.done)
	}
	fs.closed = true
	fs.mu.Unlock()
}
