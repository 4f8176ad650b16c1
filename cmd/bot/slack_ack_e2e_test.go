package main

import (
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/fake/modelserver"
	slackfake "github.com/switchboard-bot/switchboard/internal/fake/slack"
)

// TestSlackAckDoesNotWaitForTheRoutersReply proves, through the whole app, that a text command's
// envelope is acked before its reply is posted — the ack waits for the router's durable work, not
// for chat.postMessage, which may wait out rate limits — and that the reply is posted afterwards.
func TestSlackAckDoesNotWaitForTheRoutersReply(t *testing.T) {
	t.Parallel()
	e := newSlackE2E(t, nil)
	e.start()
	release := e.sl.Hold("chat.postMessage", 1)
	defer release()
	_, env := e.sl.PushMessage(dm("/whoami"))
	waitFor(t, "the ack", 10*time.Second, func() bool { return e.sl.Acked(env) })
	waitFor(t, "the reply's post to reach Slack", 10*time.Second, func() bool { return e.sl.Count("chat.postMessage") == 1 })
	if n := len(e.sl.Posted("D0ANN")); n != 0 {
		t.Fatalf("%d messages posted while the reply's post is held", n)
	}
	release()
	waitFor(t, "the reply's post", 10*time.Second, func() bool { return len(e.sl.CallsOf("chat.postMessage")) == 1 })
	posted := e.sl.Posted("D0ANN")
	if len(posted) != 1 || !strings.Contains(slackVisible(posted[0]), slackAnn) {
		t.Fatalf("posted after release: %+v (calls %+v)", posted, e.sl.CallsOf("chat.postMessage"))
	}
}

// TestSlackFailedRunClearsTheThreadStatus proves a run that fails (the model refuses the API
// key) does not leave "is thinking…" under its thread: the status set while it worked is
// cleared when the failure is shown.
func TestSlackFailedRunClearsTheThreadStatus(t *testing.T) {
	t.Parallel()
	e := newSlackE2E(t, fastOutageRetries)
	e.model.SetFunc(func(modelserver.Request) modelserver.Reply {
		// Fail once the thread shows the status (set half a second after the message).
		deadline := time.Now().Add(10 * time.Second)
		for len(e.sl.Statuses()) == 0 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond) // polling the fake for a condition, with a deadline
		}
		return modelserver.Unauthorized()
	})
	e.start()
	ts, _ := e.sl.PushMentionPair(slackfake.Msg{Channel: "C0GEN", User: slackAnn, Text: slackfake.Mention() + " what is up"})
	got := e.waitSlackAnswers("C0GEN", ts, 1)
	if v := slackVisible(got[0]); !strings.Contains(v, "refused the bot's API key") {
		t.Fatalf("the failure shows %q", v)
	}
	waitFor(t, "the status cleared", 10*time.Second, func() bool {
		st := e.sl.Statuses()
		return len(st) >= 2 && st[0].Status != "" && st[0].ThreadTS == ts && st[len(st)-1].Status == ""
	})
}
