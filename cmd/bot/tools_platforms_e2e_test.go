package main

import (
	"context"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/config"
	discordfake "github.com/switchboard-bot/switchboard/internal/fake/discord"
	"github.com/switchboard-bot/switchboard/internal/fake/modelserver"
	slackfake "github.com/switchboard-bot/switchboard/internal/fake/slack"
)

// The end-to-end tests of tools and approvals on Slack, Discord and the console; the Telegram
// ones are in tools_e2e_test.go, whose helpers (startMCPFake, withTools, toolModel, waitTools)
// these use.

// echoSecretArgs are the arguments of the approval tests: a message the card shows and a
// secret-looking value it must mask.
const echoSecretArgs = `{"message":"ship it","password":"S3CRET-pw"}`

// waitSlackApproval waits for the approval card in the thread: a message with buttons that
// names the tool.
func (e *slackE2E) waitSlackApproval(channel, thread, tool string) slackfake.Message {
	e.tb.Helper()
	var card slackfake.Message
	waitFor(e.tb, "the approval card with buttons", 15*time.Second, func() bool {
		for _, m := range e.inThread(channel, thread) {
			if strings.Contains(m.Blocks, `"actions"`) && strings.Contains(slackVisible(m), tool) {
				card = m
				return true
			}
		}
		return false
	})
	return card
}

// slackMessage is the current state of the bot's message ts in channel.
func (e *slackE2E) slackMessage(channel, ts string) (slackfake.Message, bool) {
	for _, m := range e.sl.Posted(channel) {
		if m.TS == ts {
			return m, true
		}
	}
	return slackfake.Message{}, false
}

// TestSlackToolApprovalByButton proves, on Slack, that a tool call needing approval parks the
// run behind a card in the mention's thread with Approve and Deny buttons that shows the tool
// and its arguments with the secret masked; a click by someone else gets an ephemeral notice to
// that person only and runs nothing; the requester's Approve runs the call once, the run
// resumes with its result in the thread, and the card is closed with who approved.
func TestSlackToolApprovalByButton(t *testing.T) {
	t.Parallel()
	f := startMCPFake(t)
	e := newSlackE2E(t, withTools(f, "always"))
	e.model.SetFunc(toolModel("fake__echo", echoSecretArgs))
	waitTools(t, e.start())
	ts, _ := e.sl.PushMentionPair(slackfake.Msg{Channel: "C0GEN", User: slackAnn, Text: slackfake.Mention() + " echo please"})
	card := e.waitSlackApproval("C0GEN", ts, "fake__echo")
	v := slackVisible(card)
	if !strings.Contains(v, "ship it") || strings.Contains(v, "S3CRET") {
		t.Fatalf("approval card shows %q: want the tool and its arguments, the secret masked", v)
	}
	approve, deny := slackButton(t, card, "Approve"), slackButton(t, card, "Deny")
	if approve == deny {
		t.Fatalf("buttons Approve %q and Deny %q", approve, deny)
	}
	if _, _, n := f.lastCall(); n != 0 {
		t.Fatalf("the tool ran %d times before approval", n)
	}

	foreign := e.sl.PushAction(slackfake.Action{User: slackBob, Channel: "C0GEN", MessageTS: card.TS, ThreadTS: ts, ActionID: approve, Value: "0"})
	waitFor(t, "the foreign click acked", 5*time.Second, func() bool { return e.sl.Acked(foreign) })
	waitFor(t, "the notice to the foreign clicker", 10*time.Second, func() bool { return len(e.sl.Ephemerals()) == 1 })
	if eph := e.sl.Ephemerals()[0]; eph.User != slackBob || eph.Channel != "C0GEN" || !strings.Contains(eph.Text+eph.Blocks, "Only the person who asked") {
		t.Fatalf("ephemeral %+v, want the notice to Bob only", eph)
	}
	if _, _, n := f.lastCall(); n != 0 {
		t.Fatalf("a foreign click ran the tool %d times", n)
	}
	if m, _ := e.slackMessage("C0GEN", card.TS); m.Edits != card.Edits || !strings.Contains(m.Blocks, `"actions"`) {
		t.Errorf("the foreign click changed the card: %d edits, blocks %s", m.Edits, m.Blocks)
	}

	e.sl.PushAction(slackfake.Action{User: slackAnn, Channel: "C0GEN", MessageTS: card.TS, ThreadTS: ts, ActionID: approve, Value: "0"})
	var final slackfake.Message
	waitFor(t, "the final answer in the thread", 20*time.Second, func() bool {
		for _, m := range e.inThread("C0GEN", ts) {
			if strings.Contains(slackVisible(m), "tool said: echo: ship it") && !slackPlaceholder(m) && !m.Streaming {
				final = m
				return true
			}
		}
		return false
	})
	if final.TS == card.TS {
		t.Errorf("the answer replaced the approval card instead of following it")
	}
	var closed slackfake.Message
	waitFor(t, "the approval card closed", 10*time.Second, func() bool {
		m, ok := e.slackMessage("C0GEN", card.TS)
		closed = m
		return ok && m.Edits > card.Edits && strings.Contains(slackVisible(m), "Approved by")
	})
	if strings.Contains(closed.Blocks, `"actions"`) {
		t.Errorf("the closed card still has buttons: %s", closed.Blocks)
	}
	if v := slackVisible(closed); !strings.Contains(v, "fake__echo") || strings.Contains(v, "S3CRET") {
		t.Errorf("the closed card shows %q: want the tool, the secret still masked", v)
	}
	if top := e.inThread("C0GEN", ""); len(top) != 0 {
		t.Errorf("%d messages at the channel's top level, want all in the thread", len(top))
	}
	if n := len(e.sl.Ephemerals()); n != 1 {
		t.Errorf("%d ephemerals, want only the foreign clicker's", n)
	}
	if _, _, n := f.lastCall(); n != 1 {
		t.Errorf("the tool ran %d times, want once", n)
	}
	if strings.Contains(e.logs.String(), "S3CRET") {
		t.Error("a secret argument reached the logs")
	}
}

// discordMessage is the current state of message id, failing the test when it is gone.
func (e *discordE2E) discordMessage(id string) discordfake.Message {
	e.tb.Helper()
	m, ok := e.dc.Message(id)
	if !ok {
		e.tb.Fatalf("message %s is gone", id)
	}
	return m
}

// waitDiscordFinal waits for a bot message in channel, other than the card, that shows want.
func (e *discordE2E) waitDiscordFinal(channel, card, want string) discordfake.Message {
	e.tb.Helper()
	var final discordfake.Message
	waitFor(e.tb, "the final answer showing "+want, 20*time.Second, func() bool {
		for _, m := range e.dc.PostedByBot(channel) {
			if m.ID != card && strings.Contains(m.Text(), want) && !isDiscordPlaceholder(m) {
				final = m
				return true
			}
		}
		return false
	})
	return final
}

// TestDiscordToolApprovalByButton proves, on Discord, the approval of a tool call in a guild
// channel: the card in the mention's thread has Approve and Deny buttons and shows the tool and
// its arguments with the secret masked; a click by someone else is acknowledged and refused
// with an ephemeral notice and changes nothing; the requester's Approve is acknowledged within
// Discord's deadline, runs the call once, the run resumes with its result, and the card shows
// who approved, its buttons gone.
func TestDiscordToolApprovalByButton(t *testing.T) {
	t.Parallel()
	f := startMCPFake(t)
	e := newDiscordE2E(t, withTools(f, "always"))
	e.model.SetFunc(toolModel("fake__echo", echoSecretArgs))
	waitTools(t, e.start())
	ch := e.dc.Guild("700000000000000101")
	mid := e.dc.Post(discordfake.UserMessage{Channel: ch, Author: dAnn, Content: "echo please", MentionBot: true})
	card := e.waitQuestion(mid)
	v := card.Text()
	if !strings.Contains(v, "fake__echo") || !strings.Contains(v, "ship it") || strings.Contains(v, "S3CRET") {
		t.Fatalf("approval card shows %q: want the tool and its arguments, the secret masked", v)
	}
	approve, deny := discordButton(t, card, "Approve"), discordButton(t, card, "Deny")
	if approve == deny {
		t.Fatalf("Approve and Deny share the custom_id %q", approve)
	}
	if _, _, n := f.lastCall(); n != 0 {
		t.Fatalf("the tool ran %d times before approval", n)
	}

	ix := e.waitAcked(e.dc.Click(mid, card.ID, dBob, approve))
	if d, _ := ix.Acked(); d > discordfake.AckDeadline {
		t.Errorf("the foreign click was acknowledged after %v", d)
	}
	waitFor(t, "the refusal", 10*time.Second, func() bool {
		ix, _ = e.dc.InteractionByID(ix.ID)
		return len(ix.Replies()) > 0
	})
	if r := ix.Replies(); !r[0].Ephemeral || !strings.Contains(r[0].Text(), "Only the person who asked") {
		t.Errorf("refusal %+v, want an ephemeral notice", r)
	}
	if after := e.discordMessage(card.ID); after.Edits != card.Edits || len(discordfake.CustomIDs(after.Components)) != len(discordfake.CustomIDs(card.Components)) {
		t.Errorf("the foreign click changed the card")
	}
	if _, _, n := f.lastCall(); n != 0 {
		t.Fatalf("a foreign click ran the tool %d times", n)
	}

	ix = e.waitAcked(e.dc.Click(mid, card.ID, dAnn, approve))
	if d, _ := ix.Acked(); d > discordfake.AckDeadline {
		t.Errorf("the approval was acknowledged after %v, past Discord's %v", d, discordfake.AckDeadline)
	}
	e.waitDiscordFinal(mid, card.ID, "tool said: echo: ship it")
	var closed discordfake.Message
	waitFor(t, "the approval card closed", 10*time.Second, func() bool {
		closed = e.discordMessage(card.ID)
		return strings.Contains(closed.Text(), "Approved by "+dAnn.Username)
	})
	if ids := discordfake.CustomIDs(closed.Components); len(ids) != 0 {
		t.Errorf("the closed card still has buttons %v", ids)
	}
	if strings.Contains(closed.Text(), "S3CRET") {
		t.Errorf("the closed card shows the secret: %q", closed.Text())
	}
	if n := len(e.dc.PostedByBot(ch)); n != 0 {
		t.Errorf("%d bot messages in the channel itself, want all in the thread", n)
	}
	if _, _, n := f.lastCall(); n != 1 {
		t.Errorf("the tool ran %d times, want once", n)
	}
	if strings.Contains(e.logs.String(), "S3CRET") {
		t.Error("a secret argument reached the logs")
	}
}

// TestDiscordToolDenied proves Deny in a Discord DM never runs the call, the model reads the
// denial, and the card shows who denied.
func TestDiscordToolDenied(t *testing.T) {
	t.Parallel()
	f := startMCPFake(t)
	e := newDiscordE2E(t, withTools(f, "always"))
	e.model.SetFunc(toolModel("fake__echo", `{"message":"ship it"}`))
	waitTools(t, e.start())
	dm := e.dc.DM(dAnn.ID)
	e.dc.Post(discordfake.UserMessage{Channel: dm, Author: dAnn, Content: "echo please"})
	card := e.waitQuestion(dm)
	ix := e.waitAcked(e.dc.Click(dm, card.ID, dAnn, discordButton(t, card, "Deny")))
	if d, _ := ix.Acked(); d > discordfake.AckDeadline {
		t.Errorf("the denial was acknowledged after %v", d)
	}
	e.waitDiscordFinal(dm, card.ID, "tool said: Denied")
	waitFor(t, "the card showing who denied", 10*time.Second, func() bool {
		return strings.Contains(e.discordMessage(card.ID).Text(), "Denied by "+dAnn.Username)
	})
	if ids := discordfake.CustomIDs(e.discordMessage(card.ID).Components); len(ids) != 0 {
		t.Errorf("the denied card still has buttons %v", ids)
	}
	if _, _, n := f.lastCall(); n != 0 {
		t.Errorf("a denied call ran %d times", n)
	}
}

// toolChat is `bot chat` running in the test's process, as `bot chat` runs it, on the fake
// model, the MCP fake's tools and the embedded store, with its output as a transcript.
type toolChat struct {
	t     *testing.T
	model *modelserver.Server
	in    *io.PipeWriter
	out   *transcript
	done  chan error
	ended bool
}

// startToolChat starts chat with the fake's tools configured as withTools(f, "always") and the
// model answering with fn; it waits for the greeting.
func startToolChat(t *testing.T, f *mcpFake, fn func(modelserver.Request) modelserver.Reply) *toolChat {
	t.Helper()
	model := modelserver.New(t)
	model.SetFunc(fn)
	cfg := config.Default()
	cfg.LLM.Provider, cfg.LLM.BaseURL, cfg.LLM.APIKey, cfg.LLM.Model = config.ProviderOpenAI, model.BaseURL(), "sk-e2e-test", "fake-model"
	cfg.LLM.Timeout = 10 * time.Second
	withTools(f, "always")(cfg)
	if err := cfg.Validate(); err != nil {
		t.Fatalf("chat configuration: %v", err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &toolChat{t: t, model: model, in: inW, out: newTranscript(outR), done: make(chan error, 1)}
	go func() {
		err := chat(context.Background(), cfg, inR, outW, io.Discard, make(chan os.Signal))
		_ = outW.Close() // ends the transcript's reader
		c.done <- err
	}()
	t.Cleanup(func() { c.quit() })
	c.out.waitFor(t, 0, "Type a message")
	c.waitTools()
	return c
}

// waitTools waits until the fake's tools are offered (the servers connect in the background,
// as waitTools waits for on the other platforms): it asks /tools until the fake's server lists
// fake__echo among its tools.
func (c *toolChat) waitTools() {
	c.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		at := len(c.out.String())
		c.typeLine("/tools")
		at = c.out.waitFor(c.t, at, "Tool servers")
		var report string
		up := false
		waitFor(c.t, "the fake's server in the /tools report", 10*time.Second, func() bool {
			report = c.out.String()[at:]
			server, _, _ := strings.Cut(report, "Policy") // the policy names fake__echo too
			up = strings.Contains(server, "fake__echo")
			return up || strings.Contains(server, "no tools offered")
		})
		if up {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("the fake's tools were never offered; /tools said:\n%s", report)
		}
	}
}

func (c *toolChat) typeLine(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

// quit ends the input (Ctrl-D) and waits for chat to return, failing unless it returned nil.
func (c *toolChat) quit() {
	c.t.Helper()
	if c.ended {
		return
	}
	c.ended = true
	_ = c.in.Close()
	select {
	case err := <-c.done:
		if err != nil {
			c.t.Errorf("chat returned %v; output:\n%s", err, c.out)
		}
	case <-time.After(30 * time.Second):
		c.t.Errorf("chat did not quit after the end of its input; output:\n%s", c.out)
	}
}

// askApproval types a request whose tool call needs approval and waits for the approval, shown
// as text with numbered choices; it returns the transcript's offset past it.
func (c *toolChat) askApproval(f *mcpFake) int {
	c.t.Helper()
	from := len(c.out.String())
	c.typeLine("echo please")
	at := c.out.waitFor(c.t, from, "fake__echo")
	at = c.out.waitFor(c.t, at, "1. Approve")
	at = c.out.waitFor(c.t, at, "2. Deny")
	shown := c.out.String()[from:at]
	if !strings.Contains(shown, "ship it") || strings.Contains(shown, "S3CRET") {
		c.t.Fatalf("the approval shows:\n%s\nwant the arguments, the secret masked", shown)
	}
	if _, _, n := f.lastCall(); n != 0 {
		c.t.Fatalf("the tool ran %d times before approval", n)
	}
	return at
}

// TestChatToolApprovalByNumber proves, in `bot chat`, that a tool call needing approval shows as
// text with the choices "1. Approve" and "2. Deny", and typing 1 approves it: the call runs
// once, and the answer that follows carries its result.
func TestChatToolApprovalByNumber(t *testing.T) {
	t.Parallel()
	f := startMCPFake(t)
	c := startToolChat(t, f, toolModel("fake__echo", echoSecretArgs))
	at := c.askApproval(f)
	c.typeLine("1")
	at = c.out.waitFor(t, at, "Approved")
	c.out.waitFor(t, at, "tool said: echo: ship it")
	if _, _, n := f.lastCall(); n != 1 {
		t.Errorf("the tool ran %d times, want once", n)
	}
	c.quit()
	if s := c.out.String(); strings.Contains(s, "S3CRET") || strings.Contains(s, "Denied") {
		t.Errorf("the transcript shows a secret or a denial:\n%s", s)
	}
}

// TestChatToolDeniedByNumber proves typing 2 at the approval denies the call in `bot chat`: it
// never runs, and the answer shows the model read a denial.
func TestChatToolDeniedByNumber(t *testing.T) {
	t.Parallel()
	f := startMCPFake(t)
	c := startToolChat(t, f, toolModel("fake__echo", echoSecretArgs))
	at := c.askApproval(f)
	c.typeLine("2")
	c.out.waitFor(t, at, "tool said: Denied")
	c.quit()
	if _, _, n := f.lastCall(); n != 0 {
		t.Errorf("a denied call ran %d times", n)
	}
	if strings.Contains(c.out.String(), "echo: ship it") {
		t.Errorf("the denied call's result shows:\n%s", c.out)
	}
}

// TestSlackToolCallShownOnTheCard proves a tool call that needs no approval shows on Slack as a
// task named after the tool in the run's stream: in progress while the tool runs (it runs past
// the placeholder's grace period, so the stream is up by then), then complete, next to the
// answer that carries the tool's result.
func TestSlackToolCallShownOnTheCard(t *testing.T) {
	t.Parallel()
	const ms = 2500 // past delivery.DefaultPlaceholderAfter, so the stream starts while it runs
	f := startMCPFake(t)
	e := newSlackE2E(t, withTools(f, "always"))
	e.model.SetFunc(toolModel("fake__slow", `{"ms":`+strconv.Itoa(ms)+`}`))
	waitTools(t, e.start())
	ts, _ := e.sl.PushMentionPair(slackfake.Msg{Channel: "C0GEN", User: slackAnn, Text: slackfake.Mention() + " take your time"})

	waitFor(t, "the tool's task in progress while it runs", 10*time.Second, func() bool {
		for _, m := range e.inThread("C0GEN", ts) {
			for _, task := range m.Tasks {
				if m.Streaming && task.Title == "fake__slow" && task.Status == "in_progress" {
					return true
				}
			}
		}
		return false
	})
	if strings.Contains(slackVisible(e.inThread("C0GEN", ts)[0]), "tool said") {
		t.Fatal("the answer showed while the tool was still running")
	}

	want := "tool said: done after " + strconv.Itoa(ms) + "ms"
	var m slackfake.Message
	waitFor(t, "the finished stream with the answer", 20*time.Second, func() bool {
		got := e.inThread("C0GEN", ts)
		if len(got) != 1 || got[0].Streaming {
			return false
		}
		m = got[0]
		return strings.Contains(slackVisible(m), want)
	})
	if _, _, n := f.lastCall(); n != 1 {
		t.Errorf("the tool ran %d times, want once", n)
	}
	var states []string
	for _, u := range m.TaskUpdates {
		if u.Title == "fake__slow" {
			states = append(states, u.Status)
		}
	}
	if len(states) < 2 || states[0] != "in_progress" || states[len(states)-1] != "complete" {
		t.Errorf("the tool's task went through %v, want in_progress then complete", states)
	}
	done := false
	for _, task := range m.Tasks {
		done = done || (task.Title == "fake__slow" && task.Status == "complete")
	}
	if !done || len(m.Tasks) != 1 {
		t.Errorf("tasks %+v, want the one tool call, complete", m.Tasks)
	}
	if strings.Count(slackVisible(m), want) != 1 {
		t.Errorf("the message shows %q, want the answer once", slackVisible(m))
	}
}
