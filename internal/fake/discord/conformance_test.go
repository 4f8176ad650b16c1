package discordfake

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

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

// TestNewFailsTheTestOnViolations proves every REST request is checked: a conforming one leaves
// nothing, a non-conforming one is recorded with its route, rule, path and documentation, and
// New's cleanup fails the test listing it — unless the test allowed violations.
func TestNewFailsTheTestOnViolations(t *testing.T) {
	for _, allow := range []bool{false, true} {
		rec := &recorderTB{TB: t}
		s := New(rec)
		if allow {
			s.AllowViolations()
		}
		dg := dgSession(t, s, s.Token())
		ch := s.Guild("900000000000000100")
		ep := discordgo.EndpointChannelMessages(ch)
		call(t, dg, "POST", ep, `{"content":"hello"}`)
		if vs := s.Violations(); len(vs) != 0 {
			t.Fatalf("conforming call recorded %v", vs)
		}
		call(t, dg, "POST", ep, `{"content":"hello","embeds":[{"title":"`+strings.Repeat("t", 257)+`"}]}`)
		vs := s.Violations()
		if len(vs) != 1 || vs[0].Method != "POST /channels/{channel}/messages" || vs[0].Rule != conformance.RuleLength ||
			vs[0].Path != "embeds[0].title" || !strings.Contains(vs[0].Doc, "embed-limits") {
			t.Fatalf("violations %v, want the embed title's length", vs)
		}
		rec.runCleanups()
		if failed := len(rec.errs) == 1 && strings.Contains(rec.errs[0], "embeds[0].title"); failed == allow {
			t.Errorf("allow=%v: cleanup errors %q", allow, rec.errs)
		}
	}
}
