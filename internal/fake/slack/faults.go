package slackfake

import "net/http"

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
