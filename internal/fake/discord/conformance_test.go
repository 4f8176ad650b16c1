package discordfake

import (
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/switchboard-bot/switchboard/internal/conformance"
)

// TestNewFailsTheTestOnViolations proves every REST request is checked: a conforming one leaves
// nothing, a non-conforming one is recorded with its route, rule, path and documentation, and
// New's cleanup fails the test listing it — unless the test allowed violations.
func TestNewFailsTheTestOnViolations(t *testing.T) {
	for _, allow := range []bool{false, true} {
		rec := &conformance.RecordingTB{TB: t}
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
		rec.RunCleanups()
		if failed := len(rec.Errs) == 1 && strings.Contains(rec.Errs[0], "embeds[0].title"); failed == allow {
			t.Errorf("allow=%v: cleanup errors %q", allow, rec.Errs)
		}
	}
}
