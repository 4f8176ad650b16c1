package slackfake_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/conformance"

	"github.com/slack-go/slack"

	slackfake "github.com/switchboard-bot/switchboard/internal/fake/slack"
)

// TestUndocumentedArgumentsAreRecorded proves the fake answers a call carrying an argument its
// method does not take as Slack does — as if it were not there — and records the argument
// with the call (Call.Undocumented, Server.Undocumented) so that tests can fail on it, while a
// call with documented arguments only records none.
func TestUndocumentedArgumentsAreRecorded(t *testing.T) {
	s := slackfake.New(t)
	conformance.ExpectViolations(t, s) // refused bodies, sent on purpose
	api := client(s)
	ctx := context.Background()
	_, ts, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("hello", false), slack.MsgOptionDisableLinkUnfurl())
	if err != nil {
		t.Fatal(err)
	}
	// unfurl_links is chat.postMessage's, not chat.update's: Slack ignores it there.
	if _, _, _, err := api.UpdateMessageContext(ctx, "C1", ts, slack.MsgOptionText("edited", false), slack.MsgOptionDisableLinkUnfurl()); err != nil {
		t.Fatalf("chat.update with an undocumented argument: %v, want it answered as Slack does", err)
	}
	if m := s.Posted("C1"); len(m) != 1 || m[0].Text != "edited" {
		t.Fatalf("posted %+v", m)
	}
	if c := s.CallsOf("chat.postMessage"); len(c) != 1 || len(c[0].Undocumented) != 0 {
		t.Errorf("chat.postMessage recorded %+v, want no undocumented argument", c)
	}
	u := s.Undocumented()
	if len(u) != 1 || u[0].Method != "chat.update" || !slices.Contains(u[0].Undocumented, "unfurl_links") {
		t.Fatalf("undocumented %+v, want chat.update's unfurl_links", u)
	}
	if slices.Contains(u[0].Undocumented, "token") {
		t.Error("the token was recorded as an argument")
	}
}

// TestDocumentedArgsCoverTheMethods proves every Web API method the fake serves has its
// documented arguments listed, sorted and without the token, which every method takes.
func TestDocumentedArgsCoverTheMethods(t *testing.T) {
	methods := slackfake.DocumentedMethods()
	for _, m := range []string{"chat.postMessage", "chat.update", "chat.delete", "chat.postEphemeral", "chat.startStream",
		"chat.appendStream", "chat.stopStream", "assistant.threads.setStatus", "assistant.threads.setSuggestedPrompts",
		"assistant.threads.setTitle", "files.getUploadURLExternal", "files.completeUploadExternal",
		"conversations.history", "conversations.replies", "views.open", "auth.test", "apps.connections.open", "oauth.v2.access"} {
		if !slices.Contains(methods, m) {
			t.Errorf("%s has no documented arguments", m)
		}
	}
	for _, m := range methods {
		args, ok := slackfake.DocumentedArgs(m)
		if !ok || !slices.IsSorted(args) || slices.Contains(args, "token") {
			t.Errorf("%s: %v (%v), want them sorted, without the token", m, args, ok)
		}
		if strings.HasPrefix(m, "chat.") && m != "chat.postMessage" && slices.Contains(args, "unfurl_links") {
			t.Errorf("%s lists unfurl_links, which only chat.postMessage takes", m)
		}
	}
}
