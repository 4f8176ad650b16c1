package telegramfake

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/conformance"
)

// expectViolations tells s that the test sends bodies that break the platform's rules on
// purpose (to see the fake refuse them), and fails the test if none was recorded.
func expectViolations(t *testing.T, s *Server) {
	t.Helper()
	s.AllowViolations()
	t.Cleanup(func() {
		if len(s.Violations()) == 0 {
			t.Error("no conformance violation recorded, want the refused bodies reported")
		}
	})
}

// recorderTB is a testing.TB whose failures and cleanups are kept, to watch New's cleanup.
type recorderTB struct {
	testing.TB
	errs     []string
	cleanups []func()
}

func (r *recorderTB) Helper()          {}
func (r *recorderTB) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recorderTB) Errorf(format string, a ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, a...))
}
func (r *recorderTB) runCleanups() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

// TestNewFailsTheTestOnViolations proves every request is checked: a conforming one leaves
// nothing, a non-conforming one is recorded with its method, rule, path and documentation, and
// New's cleanup fails the test listing it — unless the test allowed violations.
func TestNewFailsTheTestOnViolations(t *testing.T) {
	for _, allow := range []bool{false, true} {
		rec := &recorderTB{TB: t}
		s := New(rec)
		if allow {
			s.AllowViolations()
		}
		call(t, s, "sendChatAction", url.Values{"chat_id": {"5"}, "action": {"typing"}})
		if vs := s.Violations(); len(vs) != 0 {
			t.Fatalf("conforming call recorded %v", vs)
		}
		call(t, s, "sendChatAction", url.Values{"chat_id": {"5"}, "action": {"dancing"}})
		vs := s.Violations()
		if len(vs) != 1 || vs[0].Method != "sendChatAction" || vs[0].Rule != conformance.RuleEnum || vs[0].Path != "action" ||
			!strings.Contains(vs[0].Doc, "core.telegram.org/bots/api#sendchataction") {
			t.Fatalf("violations %v, want sendChatAction's action enum", vs)
		}
		rec.runCleanups()
		if failed := len(rec.errs) == 1 && strings.Contains(rec.errs[0], "sendChatAction: enum: action"); failed == allow {
			t.Errorf("allow=%v: cleanup errors %q", allow, rec.errs)
		}
	}
}
