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

// FailNext makes the next n calls of method answer with f (n < 0: every call until
// ClearFaults).
func (s *Server) FailNext(method string, n int, f Fault) { s.addFault(method, "", n, f) }

// FailChannel makes the next n calls of method about channel answer with f.
func (s *Server) FailChannel(channel, method string, n int, f Fault) {
	s.addFault(method, channel, n, f)
}

// RateLimit makes the next n calls of method answer HTTP 429 with Retry-After retryAfter
// seconds.
func (s *Server) RateLimit(method string, n, retryAfter int) {
	s.FailNext(method, n, Fault{Status: http.StatusTooManyRequests, RetryAfter: retryAfter})
}

// ClearFaults removes every injected fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	s.faults = nil
	s.mu.Unlock()
}

func (s *Server) addFault(method, channel string, n int, f Fault) {
	if n == 0 {
		return
	}
	if f.Status == 0 {
		f.Status = http.StatusOK
	}
	if f.Status == http.StatusOK && f.Error == "" {
		f.Error = "fatal_error"
	}
	s.mu.Lock()
	s.faults = append(s.faults, &fault{method: method, channel: channel, left: n, f: f})
	s.mu.Unlock()
}

// takeFault consumes one matching fault, if any.
func (s *Server) takeFault(method string, p map[string]string) *apiErr {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.faults {
		if f.method != method {
			continue
		}
		if f.channel != "" && f.channel != p["channel"] && f.channel != p["channel_id"] {
			continue
		}
		if f.left > 0 {
			f.left--
			if f.left == 0 {
				s.faults = append(s.faults[:i:i], s.faults[i+1:]...)
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
func (s *Server) Hold(method string, n int) (release func()) {
	h := &hold{method: method, left: n, gate: make(chan struct{})}
	s.mu.Lock()
	s.holds = append(s.holds, h)
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			s.holds = slices.DeleteFunc(s.holds, func(x *hold) bool { return x == h })
			s.mu.Unlock()
			close(h.gate)
		})
	}
}

// takeHold returns the gate a call of method waits at, if one is held.
func (s *Server) takeHold(method string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, h := range s.holds {
		if h.method != method {
			continue
		}
		if h.left > 0 {
			h.left--
			if h.left == 0 {
				s.holds = append(s.holds[:i:i], s.holds[i+1:]...)
			}
		}
		return h.gate
	}
	return nil
}
