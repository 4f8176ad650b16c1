package telegramfake

import (
	"net/url"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/conformance"
)

// TestNewFailsTheTestOnViolations proves every request is checked: a conforming one leaves
// nothing, a non-conforming one is recorded with its method, rule, path and documentation, and
// New's cleanup fails the test listing it — unless the test allowed violations.
func TestNewFailsTheTestOnViolations(t *testing.T) {
	for _, allow := range []bool{false, true} {
		rec := &conformance.RecordingTB{TB: t}
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
		rec.RunCleanups()
		if failed := len(rec.Errs) == 1 && strings.Contains(rec.Errs[0], "sendChatAction: enum: action"); failed == allow {
			t.Errorf("allow=%v: cleanup errors %q", allow, rec.Errs)
		}
	}
}
