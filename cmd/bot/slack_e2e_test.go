package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/switchboard-bot/switchboard/config"
	"github.com/switchboard-bot/switchboard/internal/fake/modelserver"
	slackfake "github.com/switchboard-bot/switchboard/internal/fake/slack"
)

const (
	slackAnn = "U0ANN"
	slackBob = "U0BOB"
)

// slackE2E is an end-to-end setup with the fake Slack as the only platform.
type slackE2E struct {
	*e2e
	sl *slackfake.Server
}

func newSlackE2E(t testing.TB, mutate func(*config.Config)) *slackE2E {
	t.Helper()
	sl := slackfake.New(t)
	sl.SetPingInterval(200 * time.Millisecond)
	e := newE2E(t, func(c *config.Config) {
		c.Telegram.Token = ""
		c.Slack.BotToken, c.Slack.AppToken, c.Slack.SigningSecret = sl.BotToken(), sl.AppToken(), sl.SigningSecret()
		c.Slack.APIURL = sl.APIURL()
		c.Slack.Pacing = false // tests post bursts into one channel; the adapter's tests cover pacing
		// A DM's top level is one conversation, as for apps still on assistant_view; agent
		// view (the default) is TestSlackAgentViewAnswersInAThread's.
		c.Slack.AgentView = false
		if mutate != nil {
			mutate(c)
		}
	})
	t.Cleanup(func() {
		for _, sec := range []string{sl.BotToken(), sl.AppToken(), sl.SigningSecret()} {
			if strings.Contains(e.logs.String(), sec) {
				t.Errorf("a Slack secret appears in the app's logs")
			}
		}
	})
	return &slackE2E{e2e: e, sl: sl}
}

// slackVisible is what a posted message shows: its fallback text and every text of its blocks.
func slackVisible(m slackfake.Message) string {
	return m.Text + "\n" + slackBlockText(m) + m.Markdown
}

// slackBlockText is the text of m's blocks alone.
func slackBlockText(m slackfake.Message) string {
	var texts []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if s, ok := x["text"].(string); ok {
				texts = append(texts, s)
			}
			for _, y := range x {
				walk(y)
			}
		case []any:
			for _, y := range x {
				walk(y)
			}
		}
	}
	var blocks any
	if json.Unmarshal([]byte(m.Blocks), &blocks) == nil {
		walk(blocks)
	}
	return strings.Join(texts, "\n")
}

func slackPlaceholder(m slackfake.Message) bool {
	return strings.Contains(slackVisible(m), "Working on it")
}

// inThread returns the bot's messages in channel whose thread is thread ("" for top level).
func (e *slackE2E) inThread(channel, thread string) []slackfake.Message {
	var out []slackfake.Message
	for _, m := range e.sl.Posted(channel) {
		if m.ThreadTS == thread {
			out = append(out, m)
		}
	}
	return out
}

// waitSlackAnswers waits until the thread shows exactly n closing messages and returns them.
func (e *slackE2E) waitSlackAnswers(channel, thread string, n int) []slackfake.Message {
	e.tb.Helper()
	var got []slackfake.Message
	waitFor(e.tb, fmt.Sprintf("%d answer(s) in %s/%s", n, channel, thread), 15*time.Second, func() bool {
		got = e.inThread(channel, thread)
		if len(got) != n {
			return false
		}
		for _, m := range got {
			if slackPlaceholder(m) || m.Streaming {
				return false // still working, or a stream not stopped yet
			}
		}
		return true
	})
	return got
}

func dm(text string) slackfake.Msg {
	return slackfake.Msg{Channel: "D0ANN", ChannelType: "im", User: slackAnn, Text: text}
}

// TestSlackAgentViewAnswersInAThread: with agent view on (the default, what the manifest
// prints), a top-level message in the agent's DM is answered in a thread rooted at it, titled
// from the message; each such message is a conversation of its own.
func TestSlackAgentViewAnswersInAThread(t *testing.T) {
	t.Parallel()
	e := newSlackE2E(t, func(c *config.Config) { c.Slack.AgentView = config.Default().Slack.AgentView })
	if !e.cfg.Slack.AgentView {
		t.Fatal("agent view is not the default")
	}
	e.start()
	ts, _ := e.sl.PushMessage(dm("plan the offsite"))
	got := e.waitSlackAnswers("D0ANN", ts, 1)
	if v := slackVisible(got[0]); !strings.Contains(v, "echo: plan the offsite") {
		t.Fatalf("the thread's answer shows %q", v)
	}
	if top := e.inThread("D0ANN", ""); len(top) != 0 {
		t.Errorf("%d bot messages at the DM's top level, want none", len(top))
	}
	waitFor(t, "the thread's title", 5*time.Second, func() bool {
		for _, c := range e.sl.CallsOf("assistant.threads.setTitle") {
			if c.Params["thread_ts"] == ts && strings.Contains(c.Params["title"], "plan the offsite") {
				return true
			}
		}
		return false
	})
}

// TestSlackDirectMessage proves the whole path for a DM over Socket Mode: the envelope is acked
// once queued, the answer is one message at the DM's top level, with unfurls off.
func TestSlackDirectMessage(t *testing.T) {
	t.Parallel()
	e := newSlackE2E(t, func(c *config.Config) { c.Runs.PlaceholderAfter = time.Minute })
	e.start()
	_, env := e.sl.PushMessage(dm("hello bot"))
	got := e.waitSlackAnswers("D0ANN", "", 1)
	if v := slackVisible(got[0]); !strings.Contains(v, "echo: hello bot") {
		t.Fatalf("answer shows %q", v)
	}
	if got[0].UnfurlLinks != "false" || got[0].UnfurlMedia != "false" {
		t.Errorf("unfurls %q/%q, want off", got[0].UnfurlLinks, got[0].UnfurlMedia)
	}
	waitFor(t, "the ack", 5*time.Second, func() bool { return e.sl.Acked(env) })
	e.sl.PushMessage(dm("and again"))
	got = e.waitSlackAnswers("D0ANN", "", 2)
	if !strings.Contains(slackVisible(got[1]), "echo: and again") {
		t.Fatalf("second answer %q", slackVisible(got[1]))
	}
	reqs := e.model.Requests()
	if len(reqs) != 2 || !hasMessage(reqs[1].Messages, "assistant", "echo: hello bot") {
		t.Fatalf("the DM is not one conversation: %d requests", len(reqs))
	}
}

// TestSlackChannelMentionAnsweredInThread proves an unmentioned channel message is ignored, and
// a mention — delivered as Slack does, app_mention and message for the one post — is one run
// answered in a thread rooted at it.
func TestSlackChannelMentionAnsweredInThread(t *testing.T) {
	t.Parallel()
	e := newSlackE2E(t, nil)
	e.start()
	_, ignored := e.sl.PushMessage(slackfake.Msg{Channel: "C0GEN", User: slackAnn, Text: "chatting with friends"})
	ts, envs := e.sl.PushMentionPair(slackfake.Msg{Channel: "C0GEN", User: slackAnn, Text: slackfake.Mention() + " what is up"})
	got := e.waitSlackAnswers("C0GEN", ts, 1)
	if v := slackVisible(got[0]); !strings.Contains(v, "echo: what is up") {
		t.Fatalf("answer %q", v)
	}
	waitFor(t, "every ack", 5*time.Second, func() bool {
		return e.sl.Acked(ignored) && e.sl.Acked(envs[0]) && e.sl.Acked(envs[1])
	})
	if n := e.model.Count(); n != 1 {
		t.Fatalf("model called %d times, want 1: the pair is one run, the unmentioned message none", n)
	}
	if top := e.inThread("C0GEN", ""); len(top) != 0 {
		t.Errorf("%d messages at the channel's top level, want the answer in the thread only", len(top))
	}

	// A follow-up in the thread needs no mention.
	e.sl.PushMessage(slackfake.Msg{Channel: "C0GEN", User: slackAnn, Text: "tell me more", ThreadTS: ts})
	got = e.waitSlackAnswers("C0GEN", ts, 2)
	if !strings.Contains(slackVisible(got[1]), "echo: tell me more") {
		t.Fatalf("follow-up answer %q", slackVisible(got[1]))
	}
	if reqs := e.model.Requests(); !hasMessage(reqs[1].Messages, "assistant", "echo: what is up") {
		t.Error("the thread follow-up does not continue the thread's conversation")
	}
	// A thread the bot is not part of is not answered.
	other := e.sl.NewTS()
	_, env := e.sl.PushMessage(slackfake.Msg{Channel: "C0GEN", User: slackAnn, Text: "private chat", ThreadTS: other})
	waitFor(t, "the ack", 5*time.Second, func() bool { return e.sl.Acked(env) })
	if n := e.model.Count(); n != 2 {
		t.Errorf("model called %d times, want 2 (no answer in a thread the bot is not in)", n)
	}
}

// TestSlackRedeliveredEnvelopeIsOneRun proves a redelivery (retry_attempt 1, as Slack sends when
// an ack was late) is acked and deduplicated: one run, one answer.
func TestSlackRedeliveredEnvelopeIsOneRun(t *testing.T) {
	t.Parallel()
	e := newSlackE2E(t, nil)
	e.start()
	_, env := e.sl.PushMessage(dm("only once"))
	waitFor(t, "the ack", 5*time.Second, func() bool { return e.sl.Acked(env) })
	again := e.sl.Redeliver(env, "timeout")
	waitFor(t, "the redelivery acked", 5*time.Second, func() bool { return e.sl.Acked(again) })
	e.waitSlackAnswers("D0ANN", "", 1)
	e.sl.PushMessage(dm("next"))
	e.waitSlackAnswers("D0ANN", "", 2)
	if n := e.model.Count(); n != 2 {
		t.Fatalf("model called %d times, want 2", n)
	}
}

// TestSlack429StormNoReplyLost proves 429s with Retry-After on chat.postMessage and chat.update
// are waited out: the runs are held until every DM shows its placeholder (posted through the
// chat.postMessage storm), then answer into it through the chat.update storm; every DM ends
// with exactly its answer, in the placeholder's place, and no placeholder is left behind.
func TestSlack429StormNoReplyLost(t *testing.T) {
	t.Parallel()
	e := newSlackE2E(t, nil)
	e.sl.RateLimit("chat.postMessage", 4, 1)
	e.sl.FailNext("chat.postMessage", 2, slackfake.Fault{Error: "ratelimited"})
	e.sl.RateLimit("chat.update", 4, 0)
	release := gateModel(t, e)
	r := e.start()
	names := []string{"ann", "bob", "cy", "di"}
	for _, n := range names {
		e.sl.PushMessage(slackfake.Msg{Channel: "D0" + n, ChannelType: "im", User: "U0" + n, Text: "hi from " + n})
	}
	placeholders := map[string]string{}
	waitFor(t, "every DM's placeholder", 20*time.Second, func() bool {
		for _, n := range names {
			got := e.inThread("D0"+n, "")
			if len(got) != 1 || !slackPlaceholder(got[0]) {
				return false
			}
			placeholders[n] = got[0].TS
		}
		return true
	})
	if n := e.sl.Count("chat.update"); n != 0 {
		t.Fatalf("chat.update called %d times before any answer", n)
	}
	release()
	for _, n := range names {
		got := e.waitSlackAnswers("D0"+n, "", 1)
		if !strings.Contains(slackVisible(got[0]), "echo: hi from "+n) {
			t.Errorf("%s's DM shows %q", n, slackVisible(got[0]))
		}
		if got[0].TS != placeholders[n] {
			t.Errorf("%s's answer is message %s, not the placeholder %s edited", n, got[0].TS, placeholders[n])
		}
	}
	for _, m := range e.sl.AllPosted() {
		if m.User == slackfake.BotUserID && !m.Deleted && slackPlaceholder(m) {
			t.Errorf("a placeholder is left in %s: %q", m.Channel, slackVisible(m))
		}
	}
	if n := e.model.Count(); n != len(names) {
		t.Errorf("model called %d times for %d messages", n, len(names))
	}
	if n := e.sl.Count("chat.postMessage"); n < len(names)+6 {
		t.Errorf("chat.postMessage called %d times; the storm was not met", n)
	}
	if n := e.sl.Count("chat.update"); n < len(names)+4 {
		t.Errorf("chat.update called %d times; the storm was not met", n)
	}
	for method, want := range map[string]float64{"chat.postMessage": 6, "chat.update": 4} {
		if n := gathered(t, r.metrics.reg, "switchboard_slack_rate_limited_total", "method", method); n != want {
			t.Errorf("rate limits of %s in the metrics: %v, want %v", method, n, want)
		}
	}
	// The storm is one log line (a minute at most), and counted for the platform.
	if n := strings.Count(e.logs.String(), "slack: rate limited (one line a minute"); n != 1 {
		t.Errorf("the storm wrote %d rate-limit lines, want 1", n)
	}
	if n := counter(r.metrics.rateLimited, "slack", "retried"); n != 10 {
		t.Errorf("switchboard_platform_rate_limited_total{platform=slack,result=retried} = %v, want the 6 of chat.postMessage and the 4 of chat.update", n)
	}
}

// TestSlackLongAnswerSplit proves an answer past Slack's limits arrives whole, in order, as
// several messages the fake accepted (≤ 50 blocks, ≤ 3,000 characters a section, ≤ 40,000 of
// text): nothing truncated.
func TestSlackLongAnswerSplit(t *testing.T) {
	t.Parallel()
	const words = 25000
	var b strings.Builder
	for i := range words {
		fmt.Fprintf(&b, "w%05d ", i)
	}
	long := b.String() // 175,000 characters: more than 50 sections
	e := newSlackE2E(t, nil)
	e.model.SetFunc(func(modelserver.Request) modelserver.Reply { return modelserver.Reply{Content: long, ChunkSize: 4096} })
	e.start()
	e.sl.PushMessage(dm("tell me everything"))
	var got []slackfake.Message
	waitFor(t, "the whole long answer", 20*time.Second, func() bool {
		got = e.inThread("D0ANN", "")
		all := ""
		for _, m := range got {
			if slackPlaceholder(m) {
				return false
			}
			all += slackBlockText(m)
		}
		return strings.Contains(all, fmt.Sprintf("w%05d", words-1))
	})
	if len(got) < 2 {
		t.Fatalf("%d messages for 175,000 characters, want several", len(got))
	}
	var seq []string
	for _, m := range got {
		seq = append(seq, wordRE.FindAllString(slackBlockText(m), -1)...)
	}
	if len(seq) != words {
		t.Fatalf("%d words arrived, want %d", len(seq), words)
	}
	for i, w := range seq {
		if want := fmt.Sprintf("w%05d", i); w != want {
			t.Fatalf("word %d is %s, want %s: text lost or out of order", i, w, want)
		}
	}
	for _, c := range e.sl.Calls() {
		if c.Error == "invalid_blocks" || c.Error == "msg_too_long" {
			t.Errorf("%s refused: %s", c.Method, c.Error)
		}
	}
}

// slackButton returns the action id of the button labelled label on m.
func slackButton(t *testing.T, m slackfake.Message, label string) string {
	t.Helper()
	var blocks []struct {
		Type     string `json:"type"`
		Elements []struct {
			Type     string          `json:"type"`
			ActionID string          `json:"action_id"`
			Text     json.RawMessage `json:"text"`
		} `json:"elements"`
	}
	if err := json.Unmarshal([]byte(m.Blocks), &blocks); err != nil {
		t.Fatalf("blocks: %v", err)
	}
	for _, b := range blocks {
		for _, el := range b.Elements {
			var text struct {
				Text string `json:"text"`
			}
			if b.Type == "actions" && json.Unmarshal(el.Text, &text) == nil && text.Text == label {
				return el.ActionID
			}
		}
	}
	t.Fatalf("no button %q in %s", label, m.Blocks)
	return ""
}

// waitSlackQuestion waits for a message with buttons in the thread.
func (e *slackE2E) waitSlackQuestion(channel, thread string) slackfake.Message {
	e.tb.Helper()
	var card slackfake.Message
	waitFor(e.tb, "the question with buttons", 10*time.Second, func() bool {
		for _, m := range e.inThread(channel, thread) {
			if strings.Contains(m.Blocks, `"actions"`) && strings.Contains(slackVisible(m), "How many people?") {
				card = m
				return true
			}
		}
		return false
	})
	return card
}

// TestSlackClarificationByButton proves ask_clarification with a choice field becomes buttons in
// the thread, the asker's click resumes the run with that choice, the card is closed with the
// answer, and a click by someone else gets an ephemeral notice to that person only.
func TestSlackClarificationByButton(t *testing.T) {
	t.Parallel()
	e := newSlackE2E(t, nil)
	e.model.SetFunc(bookingModel)
	e.start()
	ts, _ := e.sl.PushMentionPair(slackfake.Msg{Channel: "C0GEN", User: slackAnn, Text: slackfake.Mention() + " book a table"})
	card := e.waitSlackQuestion("C0GEN", ts)

	foreign := e.sl.PushAction(slackfake.Action{User: slackBob, Channel: "C0GEN", MessageTS: card.TS, ThreadTS: ts, ActionID: slackButton(t, card, "6"), Value: "2"})
	waitFor(t, "the foreign click acked", 5*time.Second, func() bool { return e.sl.Acked(foreign) })
	waitFor(t, "the notice to the foreign clicker", 5*time.Second, func() bool { return len(e.sl.Ephemerals()) == 1 })
	if eph := e.sl.Ephemerals()[0]; eph.User != slackBob || eph.Channel != "C0GEN" || !strings.Contains(eph.Text, "someone else") {
		t.Fatalf("ephemeral %+v, want a notice to Bob", eph)
	}
	if n := e.model.Count(); n != 1 {
		t.Fatalf("model called %d times after a foreign click, want 1", n)
	}

	e.sl.PushAction(slackfake.Action{User: slackAnn, Channel: "C0GEN", MessageTS: card.TS, ThreadTS: ts, ActionID: slackButton(t, card, "4"), Value: "1"})
	waitFor(t, "the booking", 15*time.Second, func() bool {
		for _, m := range e.inThread("C0GEN", ts) {
			if v := slackVisible(m); strings.Contains(v, "booked") && strings.Contains(v, "People: 4") && !slackPlaceholder(m) {
				return true
			}
		}
		return false
	})
	waitFor(t, "the question card closed with the answer", 10*time.Second, func() bool {
		for _, m := range e.inThread("C0GEN", ts) {
			if m.TS == card.TS {
				return m.Edits > 0 && !strings.Contains(m.Blocks, `"actions"`) && strings.Contains(slackVisible(m), "People: 4")
			}
		}
		return false
	})
	if len(e.sl.Ephemerals()) != 1 {
		t.Errorf("%d ephemerals, want only the foreign clicker's", len(e.sl.Ephemerals()))
	}
}

// TestSlackSlashCommand proves /bot <command> runs the router's command and answers
// ephemerally to the one who ran it.
func TestSlackSlashCommand(t *testing.T) {
	t.Parallel()
	e := newSlackE2E(t, nil)
	e.start()
	env := e.sl.PushSlash(slackfake.Slash{Command: "/bot", Text: "whoami", User: slackAnn, Channel: "C0GEN"})
	waitFor(t, "the command acked", 5*time.Second, func() bool { return e.sl.Acked(env) })
	waitFor(t, "the answer", 5*time.Second, func() bool { return len(e.sl.Ephemerals()) == 1 })
	eph := e.sl.Ephemerals()[0]
	if eph.User != slackAnn || !strings.Contains(eph.Text, slackfake.TeamID+":"+slackAnn) {
		t.Fatalf("whoami answered %+v, want Ann's id %s:%s to Ann only", eph, slackfake.TeamID, slackAnn)
	}
	if len(e.sl.Posted("C0GEN")) != 0 {
		t.Error("the command's answer was posted to the channel")
	}
}

// TestSlackAdminCommandsByTeamAndUserID proves admins.slack lists Slack users as "T…:U…" (the
// workspace's team id and the user id, what /bot whoami shows): the listed user's /bot stats is
// obeyed, another user's refused, and so is the same user id in another workspace.
func TestSlackAdminCommandsByTeamAndUserID(t *testing.T) {
	t.Parallel()
	e := newSlackE2E(t, func(c *config.Config) { c.Admins.Slack = []string{slackfake.TeamID + ":" + slackAnn} })
	e.start()
	reply := func(user, team string) string {
		t.Helper()
		n := len(e.sl.Ephemerals())
		env := e.sl.PushSlash(slackfake.Slash{Command: "/bot", Text: "stats", User: user, Team: team, Channel: "C0GEN"})
		waitFor(t, "the command acked", 5*time.Second, func() bool { return e.sl.Acked(env) })
		waitFor(t, "the answer", 5*time.Second, func() bool { return len(e.sl.Ephemerals()) == n+1 })
		eph := e.sl.Ephemerals()[n]
		if eph.User != user {
			t.Fatalf("answered %+v, want to %s", eph, user)
		}
		return eph.Text
	}
	if got := reply(slackBob, ""); !strings.Contains(got, "admins only") {
		t.Errorf("a non-admin's /bot stats got %q, want a refusal", got)
	}
	if got := reply(slackAnn, "T0ELSEWHERE"); !strings.Contains(got, "admins only") {
		t.Errorf("the admin's user id in another workspace got %q, want a refusal", got)
	}
	if got := reply(slackAnn, ""); strings.Contains(got, "admins only") || !strings.Contains(got, "Queue:") {
		t.Errorf("the admin's /bot stats got %q, want the stats", got)
	}
}

// TestSlackHTTPMode proves the Events API mode on the shared listener: url_verification is
// answered with the challenge, a DM with a good signature is answered, bad and stale signatures
// are refused with 401 and run nothing, a retry (X-Slack-Retry-Num) of a delivered event runs
// nothing more, and a slash command arrives on its own path.
func TestSlackHTTPMode(t *testing.T) {
	t.Parallel()
	e := newSlackE2E(t, func(c *config.Config) { c.Slack.Mode = config.SlackHTTP; c.Slack.AppToken = "" })
	r := e.start()
	base := "http://" + r.listener.Addr().String()
	events := base + e.cfg.Slack.EventsPath

	resp, err := e.sl.DeliverEvent(events, slackfake.URLVerification("chal-e2e"), slackfake.Delivery{})
	if err != nil || resp.Status != 200 || !strings.Contains(string(resp.Body), `"challenge":"chal-e2e"`) {
		t.Fatalf("url_verification: %d %s %v", resp.Status, resp.Body, err)
	}
	msg := func(text string) map[string]any {
		return e.sl.Callback(map[string]any{"type": "message", "channel_type": "im", "channel": "D0ANN", "user": slackAnn,
			"text": text, "ts": e.sl.NewTS(), "team": slackfake.TeamID})
	}
	for _, d := range []slackfake.Delivery{{BadSignature: true}, {Stale: true}, {Unsigned: true}} {
		resp, err := e.sl.DeliverEvent(events, msg("forged"), d)
		if err != nil || resp.Status != 401 {
			t.Fatalf("delivery %+v answered %d, %v; want 401", d, resp.Status, err)
		}
	}
	good := msg("over http")
	resp, err = e.sl.DeliverEvent(events, good, slackfake.Delivery{})
	if err != nil || resp.Status != 200 || resp.Took > 3*time.Second {
		t.Fatalf("good delivery: %d in %s, %v", resp.Status, resp.Took, err)
	}
	resp, err = e.sl.DeliverEvent(events, good, slackfake.Delivery{RetryNum: 1, RetryReason: "http_timeout"})
	if err != nil || resp.Status != 200 {
		t.Fatalf("retry: %d, %v", resp.Status, err)
	}
	got := e.waitSlackAnswers("D0ANN", "", 1)
	if !strings.Contains(slackVisible(got[0]), "echo: over http") {
		t.Fatalf("answer %q", slackVisible(got[0]))
	}
	resp, err = e.sl.DeliverSlash(base+e.cfg.Slack.CommandsPath, slackfake.Slash{Command: "/bot", Text: "whoami", User: slackAnn, Channel: "D0ANN"}, slackfake.Delivery{})
	if err != nil || resp.Status != 200 {
		t.Fatalf("slash command: %d, %v", resp.Status, err)
	}
	waitFor(t, "the command's answer", 5*time.Second, func() bool { return len(e.sl.Ephemerals()) == 1 })
	if n := e.model.Count(); n != 1 {
		t.Errorf("model called %d times, want 1: forged, stale and retried deliveries run nothing", n)
	}
	if n := counter(r.metrics.dedupeHits, "slack"); n != 1 {
		t.Errorf("dedupe hits %v, want 1 (the retry)", n)
	}
	if rec := httpGet(t, base+"/readyz"); rec != 200 {
		t.Errorf("/readyz %d in HTTP mode", rec)
	}
}

func httpGet(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// tripModel asks two fields (a modal on Slack), and answers once the tool result comes back.
func tripModel(r modelserver.Request) modelserver.Reply {
	if last := r.Messages[len(r.Messages)-1]; last.Role == "tool" {
		return modelserver.Text("planned: " + last.Content)
	}
	return modelserver.Calls(modelserver.ToolCall{Name: "ask_clarification",
		Arguments: `{"question":"Where and when?","fields":[{"id":"city","label":"City","kind":"choice","options":["Oslo","Rome"],"required":true},{"id":"when","label":"When","kind":"text","required":true}]}`})
}

// TestSlackMultiFieldClarificationByModal proves a clarification of several fields shows an
// "Answer…" button whose click opens a modal (views.open with the click's trigger id), and the
// submitted modal resumes the run with every field's answer.
func TestSlackMultiFieldClarificationByModal(t *testing.T) {
	t.Parallel()
	e := newSlackE2E(t, nil)
	e.model.SetFunc(tripModel)
	e.start()
	e.sl.PushMessage(dm("plan a trip"))
	var card slackfake.Message
	waitFor(t, "the question card", 10*time.Second, func() bool {
		for _, m := range e.inThread("D0ANN", "") {
			if strings.Contains(slackVisible(m), "Where and when?") && strings.Contains(m.Blocks, `"actions"`) {
				card = m
				return true
			}
		}
		return false
	})
	e.sl.PushAction(slackfake.Action{User: slackAnn, Channel: "D0ANN", MessageTS: card.TS, ActionID: slackButton(t, card, "Answer…"), Value: "open"})
	waitFor(t, "the modal", 5*time.Second, func() bool { return len(e.sl.Views()) == 1 })
	view := e.sl.Views()[0]
	var v struct {
		Blocks []struct {
			BlockID string `json:"block_id"`
			Element struct {
				ActionID string `json:"action_id"`
				Options  []struct {
					Value string `json:"value"`
				} `json:"options"`
			} `json:"element"`
		} `json:"blocks"`
	}
	if err := json.Unmarshal([]byte(view.View), &v); err != nil {
		t.Fatal(err)
	}
	sub := slackfake.Submission{User: slackAnn, View: view, Values: map[string]map[string][]string{}, Texts: map[string]map[string]string{}}
	for _, b := range v.Blocks {
		switch b.BlockID {
		case "f0":
			sub.Values["f0"] = map[string][]string{b.Element.ActionID: {b.Element.Options[1].Value}}
		case "f1":
			sub.Texts["f1"] = map[string]string{b.Element.ActionID: "next week"}
		}
	}
	env := e.sl.PushSubmission(sub)
	waitFor(t, "the submission acked", 5*time.Second, func() bool { return e.sl.Acked(env) })
	waitFor(t, "the plan", 15*time.Second, func() bool {
		for _, m := range e.inThread("D0ANN", "") {
			if v := slackVisible(m); strings.Contains(v, "planned") && strings.Contains(v, "Rome") && strings.Contains(v, "next week") && !slackPlaceholder(m) {
				return true
			}
		}
		return false
	})
}

// gathered is the value of reg's metric name with the given label pairs (name, value, …); -1
// when there is none.
func gathered(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, l := range m.GetLabel() {
					found = found || (l.GetName() == labels[i] && l.GetValue() == labels[i+1])
				}
				if !found {
					continue next
				}
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue()
			}
		}
	}
	return -1
}

// TestSlackStartupFailsClearly proves a refused bot token, or an app token Socket Mode refuses,
// stops `bot run` at start with an error that names the problem and not the secret.
func TestSlackStartupFailsClearly(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		mut  func(*config.Config)
		want string
	}{
		{"bot token refused", func(c *config.Config) { c.Slack.BotToken = "xoxb-0000-wrong-SECRET" }, "invalid_auth"},
		{"app token refused", func(c *config.Config) { c.Slack.AppToken = "xapp-0-wrong-SECRET" }, "socket mode connection"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newSlackE2E(t, tc.mut)
			ctx := context.Background()
			a, err := newApp(ctx, e.cfg, newLogger(e.cfg, e.logs))
			if err != nil {
				t.Fatalf("newApp: %v", err)
			}
			startCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			err = a.start(startCtx)
			_ = a.shutdown(ctx)
			if err == nil || !strings.Contains(err.Error(), "slack") || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "SECRET") {
				t.Fatalf("start: %v; want a slack error naming %q without the token", err, tc.want)
			}
			if strings.Contains(e.logs.String(), "SECRET") {
				t.Error("the refused token appears in the logs")
			}
		})
	}
}

// TestSlackReadyzFollowsInboundLife proves /readyz goes unready when the Slack socket stays open
// but carries nothing (no pings, no envelopes) — the socket that looks connected but receives
// nothing — and ready again once frames flow.
func TestSlackReadyzFollowsInboundLife(t *testing.T) {
	t.Parallel()
	e := newSlackE2E(t, func(c *config.Config) { c.Slack.ReadyWindow = 300 * time.Millisecond })
	e.sl.SetPingInterval(50 * time.Millisecond)
	r := e.start()
	readyz := "http://" + r.listener.Addr().String() + "/readyz"
	if code := httpGet(t, readyz); code != 200 {
		t.Fatalf("/readyz %d after start", code)
	}
	e.sl.SetPingInterval(0)
	e.sl.Disconnect("refresh_requested") // the new socket gets a hello, then silence
	waitFor(t, "/readyz unready", 10*time.Second, func() bool { return httpGet(t, readyz) == http.StatusServiceUnavailable })
	if e.sl.Connections() != 1 {
		t.Fatalf("%d sockets open; the point is an open but silent one", e.sl.Connections())
	}
	e.sl.PushMessage(dm("wake up"))
	waitFor(t, "/readyz ready again", 10*time.Second, func() bool { return httpGet(t, readyz) == 200 })
}

// noFollow is an HTTP client that shows redirects instead of following them.
var noFollow = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// startSlackOAuthE2E starts the app with Slack's OAuth install configured and returns it with
// the base URL of its listener, where the install and callback paths are served.
func startSlackOAuthE2E(t *testing.T) (*slackE2E, string) {
	t.Helper()
	e := newSlackE2E(t, func(c *config.Config) {
		c.Slack.ClientID, c.Slack.ClientSecret = slackfake.ClientID, slackfake.ClientSecret
		c.Slack.RedirectURL = "https://bot.example.test/slack/oauth/callback"
	})
	r := e.start()
	return e, "http://" + r.listener.Addr().String()
}

// TestSlackOAuthInstallInAnotherWorkspace proves the OAuth v2 install on the shared listener:
// the install link redirects to Slack's authorize page with a signed state, the callback saves
// the new workspace's bot token encrypted in Redis (the stored value does not hold it), a DM
// from that workspace is answered with its own token, a replayed callback is refused, and
// app_uninstalled deletes the token.
func TestSlackOAuthInstallInAnotherWorkspace(t *testing.T) {
	t.Parallel()
	e, base := startSlackOAuthE2E(t)
	resp, err := noFollow.Get(base + e.cfg.Slack.InstallPath)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || err != nil || loc.Host != "slack.com" {
		t.Fatalf("install link: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	callback := base + e.cfg.Slack.OAuthPath + "?" + url.Values{"code": {e.sl.IssueCode("T0SECOND")}, "state": {loc.Query().Get("state")}}.Encode()
	if code := httpGet(t, callback); code != 200 {
		t.Fatalf("callback: %d", code)
	}
	if code := httpGet(t, callback); code != 400 {
		t.Fatalf("replayed callback: %d, want 400", code)
	}
	token := e.sl.TeamToken("T0SECOND")
	rc := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer rc.Close()
	raw, err := rc.Get(context.Background(), e.cfg.Redis.Prefix+"slack:install:T0SECOND").Bytes()
	if err != nil || len(raw) == 0 || bytes.Contains(raw, []byte(token)) || bytes.Contains(raw, []byte("xoxb-")) {
		t.Fatalf("stored install %q, %v: want ciphertext", raw, err)
	}

	cb := e.sl.Callback(map[string]any{"type": "message", "channel_type": "im", "channel": "D0TWO", "user": "U0TWO",
		"text": "hello from two", "ts": e.sl.NewTS(), "team": "T0SECOND"})
	cb["team_id"] = "T0SECOND"
	e.sl.Send("events_api", cb)
	got := e.waitSlackAnswers("D0TWO", "", 1)
	if !strings.Contains(slackVisible(got[0]), "echo: hello from two") {
		t.Fatalf("answer %q", slackVisible(got[0]))
	}
	for _, c := range e.sl.CallsOf("chat.postMessage") {
		if c.Params["channel"] == "D0TWO" && c.Team != "T0SECOND" {
			t.Errorf("the answer in the second workspace was posted with %q's token", c.Team)
		}
	}
	if strings.Contains(e.logs.String(), token) {
		t.Error("the installed token appears in the logs")
	}

	env := e.sl.Send("events_api", map[string]any{"type": "event_callback", "team_id": "T0SECOND", "event_id": "EvUninstall",
		"event": map[string]any{"type": "app_uninstalled"}})
	waitFor(t, "the uninstall acked", 5*time.Second, func() bool { return e.sl.Acked(env) })
	if n, _ := rc.Exists(context.Background(), e.cfg.Redis.Prefix+"slack:install:T0SECOND").Result(); n != 0 {
		t.Error("the uninstalled workspace's token is still stored")
	}
}

// TestSlackOrgWideUninstallDeletesEveryTokenOfTheOrg proves issue 12's "uninstall deletes that
// team's tokens" for Enterprise Grid, end to end on the real Redis: after an org-wide install
// and a workspace install inside the org, app_uninstalled for the org-wide install (enterprise,
// is_enterprise_install) deletes both stored tokens and drops the org's events, while another
// workspace's token stays and its DMs are still answered.
func TestSlackOrgWideUninstallDeletesEveryTokenOfTheOrg(t *testing.T) {
	t.Parallel()
	e, base := startSlackOAuthE2E(t)
	install := func(code string) {
		t.Helper()
		resp, err := noFollow.Get(base + e.cfg.Slack.InstallPath)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, _ := url.Parse(resp.Header.Get("Location"))
		if status := httpGet(t, base+e.cfg.Slack.OAuthPath+"?"+url.Values{"code": {code}, "state": {loc.Query().Get("state")}}.Encode()); status != 200 {
			t.Fatalf("install callback: %d", status)
		}
	}
	install(e.sl.IssueOrgCode("E0ORG"))
	install(e.sl.IssueGridCode("E0ORG", "T0GRID"))
	install(e.sl.IssueCode("T0ELSE"))
	rc := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer rc.Close()
	stored := func(team string) bool {
		n, err := rc.Exists(context.Background(), e.cfg.Redis.Prefix+"slack:install:"+team).Result()
		if err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	for _, team := range []string{"E0ORG", "T0GRID", "T0ELSE"} {
		if !stored(team) {
			t.Fatalf("%s's install is not stored", team)
		}
	}
	dm := func(ent, team, channel, text string) string {
		cb := e.sl.Callback(map[string]any{"type": "message", "channel_type": "im", "channel": channel, "user": "U0ANY",
			"text": text, "ts": e.sl.NewTS(), "team": team})
		cb["team_id"] = team
		if ent != "" {
			cb["enterprise_id"] = ent
		}
		return e.sl.Send("events_api", cb)
	}
	dm("E0ORG", "T0GRID", "D0GRID", "before")
	e.waitSlackAnswers("D0GRID", "", 1)

	env := e.sl.Send("events_api", map[string]any{"type": "event_callback", "team_id": "T0GRID", "enterprise_id": "E0ORG",
		"event_id": "EvOrgUninstall", "authorizations": []map[string]any{{"enterprise_id": "E0ORG", "team_id": nil,
			"user_id": slackfake.BotUserID, "is_bot": true, "is_enterprise_install": true}},
		"event": map[string]any{"type": "app_uninstalled"}})
	waitFor(t, "the uninstall acked", 5*time.Second, func() bool { return e.sl.Acked(env) })
	if stored("E0ORG") || stored("T0GRID") {
		t.Errorf("tokens of the uninstalled org still stored: org %v, workspace %v", stored("E0ORG"), stored("T0GRID"))
	}
	if !stored("T0ELSE") {
		t.Error("another workspace's token was deleted")
	}
	dropped := dm("E0ORG", "T0GRID", "D0GRID", "after")
	dm("", "T0ELSE", "D0ELSE", "elsewhere")
	e.waitSlackAnswers("D0ELSE", "", 1)
	waitFor(t, "the org's event acked", 5*time.Second, func() bool { return e.sl.Acked(dropped) })
	if n := e.model.Count(); n != 2 {
		t.Errorf("model called %d times, want 2: the org's event after the uninstall must be dropped", n)
	}
}
