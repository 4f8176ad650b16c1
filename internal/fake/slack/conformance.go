package slackfake

import (
	"testing"

	"github.com/switchboard-bot/switchboard/internal/conformance"
)

// maxViolations bounds the violations a server keeps (a load test could make millions).
const maxViolations = 200

// conform runs a Web API request body through the conformance checker and keeps what it reports.
func (s *Server) conform(method, contentType string, body []byte) {
	vs := conformance.Check(conformance.Slack, method, contentType, body)
	if len(vs) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.violations = append(s.violations, vs[:min(len(vs), max(0, maxViolations-len(s.violations)))]...)
}

// Violations returns the published rules the requests the server received broke (Web API
// methods the conformance tables cover; known violations left out), in arrival order.
func (s *Server) Violations() []conformance.Violation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]conformance.Violation(nil), s.violations...)
}

// AllowViolations stops New's cleanup from failing the test on violations: for tests that send
// non-conforming requests on purpose (and assert Violations themselves).
func (s *Server) AllowViolations() {
	s.mu.Lock()
	s.allowViolations = true
	s.mu.Unlock()
}

// failOnViolations makes tb fail at its end if the server recorded violations it was not told
// to allow.
func (s *Server) failOnViolations(tb testing.TB) {
	tb.Helper()
	tb.Cleanup(func() {
		s.mu.Lock()
		vs, allowed := s.violations, s.allowViolations
		s.mu.Unlock()
		if len(vs) > 0 && !allowed {
			tb.Errorf("slackfake: requests broke Slack's published rules:%s", conformance.Report(vs))
		}
	})
}
