package slackfake_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/slack-go/slack"

	"github.com/switchboard-bot/switchboard/internal/conformance"
	slackfake "github.com/switchboard-bot/switchboard/internal/fake/slack"
)

// expectViolations tells s that the test sends bodies that break Slack's rules on purpose (to
// see the fake refuse them), and fails the test if none was recorded.
func expectViolations(t *testing.T, s *slackfake.Server) {
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

// TestNewFailsTheTestOnViolations proves every Web API request is checked: a conforming one
// leaves nothing, a non-conforming one is recorded with its method, rule, path and
// documentation, and New's cleanup fails the test listing it — unless the test allowed them.
func TestNewFailsTheTestOnViolations(t *testing.T) {
	for _, allow := range []bool{false, true} {
		rec := &recorderTB{TB: t}
		s := slackfake.New(rec)
		if allow {
			s.AllowViolations()
		}
		api := client(s)
		ctx := context.Background()
		ok := slack.NewActionBlock("a", slack.NewButtonBlockElement("go", "v", slack.NewTextBlockObject(slack.PlainTextType, "Go", false, false)))
		if _, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionBlocks(ok), slack.MsgOptionText("go", false)); err != nil {
			t.Fatal(err)
		}
		if vs := s.Violations(); len(vs) != 0 {
			t.Fatalf("conforming call recorded %v", vs)
		}
		long := slack.NewActionBlock("a", slack.NewButtonBlockElement("go", "v",
			slack.NewTextBlockObject(slack.PlainTextType, strings.Repeat("g", 76), false, false)))
		_, _, _ = api.PostMessageContext(ctx, "C1", slack.MsgOptionBlocks(long), slack.MsgOptionText("go", false))
		vs := s.Violations()
		if len(vs) != 1 || vs[0].Method != "chat.postMessage" || vs[0].Rule != conformance.RuleLength ||
			vs[0].Path != "blocks[0].elements[0].text.text" || !strings.Contains(vs[0].Doc, "button-element") {
			t.Fatalf("violations %v, want the button text's length", vs)
		}
		rec.runCleanups()
		if failed := len(rec.errs) == 1 && strings.Contains(rec.errs[0], "blocks[0].elements[0].text.text"); failed == allow {
			t.Errorf("allow=%v: cleanup errors %q", allow, rec.errs)
		}
	}
}
