package conformance

import (
	"fmt"
	"sync"
	"testing"
)

// maxKept bounds the violations a Recorder keeps (a load test could make millions).
const maxKept = 200

// Recorder is what a platform fake keeps of the conformance of the requests it receives: it
// checks each, keeps the violations, and can fail a test that ends with violations it was not
// told to allow. The zero value is not ready: use NewRecorder. Safe for concurrent use.
type Recorder struct {
	platform Platform
	name     string // the fake's name, for the failure ("slackfake")

	mu         sync.Mutex
	violations []Violation
	allowed    bool
}

// NewRecorder returns a Recorder of platform's rules for the fake called name.
func NewRecorder(platform Platform, name string) *Recorder {
	return &Recorder{platform: platform, name: name}
}

// Check runs one request body of method (a Web API method, a Bot API method, or Discord's
// "VERB /route") through the platform's rules and keeps what they report.
func (r *Recorder) Check(method, contentType string, body []byte) {
	vs := Check(r.platform, method, contentType, body)
	if len(vs) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.violations = append(r.violations, vs[:min(len(vs), max(0, maxKept-len(r.violations)))]...)
}

// Violations returns the violations kept, in arrival order (known ones left out by Check).
func (r *Recorder) Violations() []Violation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Violation(nil), r.violations...)
}

// Allow stops FailOnViolations from failing the test: for tests that send non-conforming
// requests on purpose (and assert Violations themselves).
func (r *Recorder) Allow() {
	r.mu.Lock()
	r.allowed = true
	r.mu.Unlock()
}

// FailOnViolations makes tb fail at its end if violations were kept that were not allowed.
func (r *Recorder) FailOnViolations(tb testing.TB) {
	tb.Helper()
	tb.Cleanup(func() {
		r.mu.Lock()
		vs, allowed := r.violations, r.allowed
		r.mu.Unlock()
		if len(vs) > 0 && !allowed {
			tb.Errorf("%s: requests broke %s's published rules:%s", r.name, r.platform, Report(vs))
		}
	})
}

// Checked is a fake that keeps the violations of the requests it receives.
type Checked interface {
	Violations() []Violation
	AllowViolations()
}

// ExpectViolations tells fake that the test sends bodies that break the platform's rules on
// purpose (to see the fake refuse them), and fails the test if none was recorded.
func ExpectViolations(t testing.TB, fake Checked) {
	t.Helper()
	fake.AllowViolations()
	t.Cleanup(func() {
		if len(fake.Violations()) == 0 {
			t.Error("no conformance violation recorded, want the refused bodies reported")
		}
	})
}

// RecordingTB is a testing.TB whose failures and cleanups are kept instead of acted on: a test
// of a fake's constructor watches with it what the fake's cleanup would do to a test.
type RecordingTB struct {
	testing.TB
	Errs     []string
	cleanups []func()
}

func (r *RecordingTB) Helper()          {}
func (r *RecordingTB) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *RecordingTB) Errorf(format string, a ...any) {
	r.Errs = append(r.Errs, fmt.Sprintf(format, a...))
}

// RunCleanups runs the cleanups registered, last first, as a test's end would.
func (r *RecordingTB) RunCleanups() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}
