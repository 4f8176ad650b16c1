package main

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/fake/modelserver"
	slackfake "github.com/switchboard-bot/switchboard/internal/fake/slack"
)

// The tests of the Slack issue's "a disconnect / dropped socket mid-run with no event lost or
// doubled": runs are held in flight (the model answers only when the test lets it) while the
// socket goes — cut after the adapter acknowledged an envelope, so the ack is lost and Slack
// sends the envelope again, or closed by Slack's disconnect — and messages keep coming.

// gateModel makes every model call wait until release is called (at the latest when the test
// ends), then answer as echoModel does: the test decides when runs finish.
func gateModel(t *testing.T, e *slackE2E) (release func()) {
	t.Helper()
	gate := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release)
	e.model.SetFunc(func(r modelserver.Request) modelserver.Reply {
		<-gate
		return echoModel(r)
	})
	return release
}

// userDM is a DM from user i of n distinct users, each in their own conversation.
func userDM(i int, text string) slackfake.Msg {
	return slackfake.Msg{Channel: fmt.Sprintf("D0U%d", i), ChannelType: "im", User: fmt.Sprintf("U0U%d", i), Text: text}
}

// socketSettled reports whether Slack holds no envelope it still waits to have acknowledged:
// each payload's latest delivery was acked (an earlier one lost with its socket was resent).
func socketSettled(sl *slackfake.Server) bool {
	latest := map[string]slackfake.Envelope{}
	for _, env := range sl.Envelopes() {
		latest[string(env.Payload)] = env
	}
	for _, env := range latest {
		if !env.Acked {
			return false
		}
	}
	return true
}

// waitShown waits until the DM channel shows each of wants in a finished answer, then checks
// that it holds exactly n messages, the wants among them in order.
func (e *slackE2E) waitShown(channel string, n int, wants ...string) {
	e.tb.Helper()
	var got []slackfake.Message
	at := func(want string) int {
		for j, m := range got {
			if strings.Contains(slackVisible(m), want) && !slackPlaceholder(m) && !m.Streaming {
				return j
			}
		}
		return -1
	}
	waitFor(e.tb, fmt.Sprintf("%q answered in %s", wants, channel), 15*time.Second, func() bool {
		got = e.inThread(channel, "")
		for _, want := range wants {
			if at(want) < 0 {
				return false
			}
		}
		return true
	})
	var shown []string
	for _, m := range got {
		shown = append(shown, slackVisible(m))
	}
	if len(got) != n {
		e.tb.Errorf("%s holds %d messages, want %d (one answer a message): %q", channel, len(got), n, shown)
	}
	for j := 1; j < len(wants); j++ {
		if at(wants[j-1]) > at(wants[j]) {
			e.tb.Errorf("%s answers out of order: %q", channel, shown)
		}
	}
}

// midRunSocketLoss runs the scenario: users send a first message each; once runs are in flight
// (held by the model), cut ends the socket; a second message each follows while the runs are
// still held; then the runs go on. It checks that every message is answered exactly once, in
// order, that Slack was left with nothing unacknowledged, that the adapter never had two
// sockets open, and — with one more message each, answered after anything queued before it in
// its conversation — that no duplicate was still on its way.
func midRunSocketLoss(t *testing.T, e *slackE2E, cut func()) *running {
	t.Helper()
	const users = 4
	e.sl.SetRedelivery(500*time.Millisecond, 3) // envelopes written to a socket on its way out
	release := gateModel(t, e)
	r := e.start()
	for i := range users {
		e.sl.PushMessage(userDM(i, fmt.Sprintf("first %d", i)))
	}
	waitFor(t, "a run in flight", 10*time.Second, func() bool { return e.model.Count() >= 1 })
	cut()
	for i := range users {
		e.sl.PushMessage(userDM(i, fmt.Sprintf("second %d", i)))
	}
	waitFor(t, "a new socket", 10*time.Second, func() bool { return e.sl.Opened() >= 2 && e.sl.Connections() == 1 })
	release()

	for i := range users {
		e.waitShown(fmt.Sprintf("D0U%d", i), 2, fmt.Sprintf("echo: first %d", i), fmt.Sprintf("echo: second %d", i))
	}
	waitFor(t, "every envelope acknowledged", 10*time.Second, func() bool { return socketSettled(e.sl) })
	if n := e.model.Count(); n != 2*users {
		t.Errorf("model called %d times, want %d: a message lost or run twice", n, 2*users)
	}

	// A duplicate queued before this message would be answered before it, in its conversation.
	for i := range users {
		e.sl.PushMessage(userDM(i, fmt.Sprintf("third %d", i)))
	}
	for i := range users {
		e.waitShown(fmt.Sprintf("D0U%d", i), 3, fmt.Sprintf("echo: third %d", i))
	}
	if n := e.model.Count(); n != 3*users {
		t.Errorf("model called %d times for %d messages", n, 3*users)
	}
	if n := e.sl.PeakConnections(); n != 1 {
		t.Errorf("%d sockets open at once, want 1: the old socket must close before the new opens", n)
	}
	if n := gathered(t, r.metrics.reg, "switchboard_slack_socket_reconnects_total"); n < 1 {
		t.Errorf("reconnects in the metrics: %v, want at least 1", n)
	}
	if n := gathered(t, r.metrics.reg, "switchboard_slack_socket_connected", "connection", "1"); n != 1 {
		t.Errorf("connection 1 in the metrics: %v, want 1 (up)", n)
	}
	return r
}

// TestSlackDroppedSocketMidRunNothingLostOrDoubled proves a socket cut after the adapter
// acknowledged an envelope — the ack lost with it, so Slack sends the envelope again on the new
// socket with retry_attempt 1 — while runs work loses no message and answers none twice: the
// resent envelope is recognised as the one already taken.
func TestSlackDroppedSocketMidRunNothingLostOrDoubled(t *testing.T) {
	t.Parallel()
	e := newSlackE2E(t, nil)
	e.sl.LoseAcks(1)
	r := midRunSocketLoss(t, e, func() {
		waitFor(t, "the socket cut on a lost ack", 10*time.Second, func() bool { return e.sl.Opened() >= 2 })
	})
	var lost, resent int
	for _, env := range e.sl.Envelopes() {
		switch {
		case env.RetryAttempt == 0 && !env.Acked:
			lost++
		case env.RetryAttempt >= 1 && env.Acked:
			resent++
		}
	}
	if lost < 1 || resent < 1 {
		t.Errorf("%d first deliveries unacknowledged, %d resends acknowledged; want the lost ack's envelope resent", lost, resent)
	}
	if n := counter(r.metrics.dedupeHits, "slack"); n < 1 {
		t.Errorf("dedupe hits %v: the resent envelope was not recognised as taken", n)
	}
}

// TestSlackDisconnectMidRunNothingLostOrDoubled proves Slack's disconnect (refresh_requested
// before a socket's time is up, link_disabled) while runs work loses no message and answers none
// twice, the adapter closing the old socket before opening the new.
func TestSlackDisconnectMidRunNothingLostOrDoubled(t *testing.T) {
	t.Parallel()
	for _, reason := range []string{"refresh_requested", "link_disabled"} {
		t.Run(reason, func(t *testing.T) {
			e := newSlackE2E(t, nil)
			// Slack closes the socket itself only after the grace; the adapter must not wait for it.
			e.sl.SetDisconnectGrace(time.Minute)
			midRunSocketLoss(t, e, func() { e.sl.Disconnect(reason) })
		})
	}
}
