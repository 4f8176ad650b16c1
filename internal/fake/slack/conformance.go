package slackfake

import "github.com/switchboard-bot/switchboard/internal/conformance"

// Violations returns the published rules the requests the server received broke (Web API
// requests the conformance tables cover; known violations left out), in arrival order.
func (s *Server) Violations() []conformance.Violation { return s.conf.Violations() }

// AllowViolations stops New's cleanup from failing the test on violations: for tests that send
// non-conforming requests on purpose (and assert Violations themselves).
func (s *Server) AllowViolations() { s.conf.Allow() }
