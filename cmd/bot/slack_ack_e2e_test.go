package main

import (
	"strings"
	"testing"
	"time"
)

// TestSlackAckDoesNotWaitForTheRoutersReply proves, through the whole app, that a text command's
// envelope is acked before its reply is posted — the ack waits for the router's durable work, not
// for chat.postMessage, which may wait out rate limits — and that the reply is posted afterwards.
func TestSlackAckDoesNotWaitForTheRoutersReply(t *testing.T) {
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
