package slackfake_test

import (
	"context"
	"strings"
	"testing"

	"github.com/slack-go/slack"

	"github.com/switchboard-bot/switchboard/internal/conformance"
	slackfake "github.com/switchboard-bot/switchboard/internal/fake/slack"
)

// TestNewFailsTheTestOnViolations proves every Web API request is checked: a conforming one
// leaves nothing, a non-conforming one is recorded with its method, rule, path and
// documentation, and New's cleanup fails the test listing it — unless the test allowed them.
func TestNewFailsTheTestOnViolations(t *testing.T) {
	for _, allow := range []bool{false, true} {
		rec := &conformance.RecordingTB{TB: t}
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
		rec.RunCleanups()
		if failed := len(rec.Errs) == 1 && strings.Contains(rec.Errs[0], "blocks[0].elements[0].text.text"); failed == allow {
			t.Errorf("allow=%v: cleanup errors %q", allow, rec.Errs)
		}
	}
}
