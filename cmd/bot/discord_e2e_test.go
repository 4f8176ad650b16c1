package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/config"
	discordfake "github.com/switchboard-bot/switchboard/internal/fake/discord"
	"github.com/switchboard-bot/switchboard/internal/fake/modelserver"
)

var (
	dAnn = discordfake.User{ID: "410000000000000001", Username: "ann"}
	dBob = discordfake.User{ID: "410000000000000002", Username: "bob"}
)

// TestDiscordDirectMessage proves the whole path for a DM: the gateway event becomes a run,
// typing is signalled, and the model's answer is the one message posted in the DM.
func TestDiscordDirectMessage(t *testing.T) {
	t.Parallel()
	e := newDiscordE2E(t, func(c *config.Config) { c.Runs.PlaceholderAfter = time.Minute })
	e.model.SetFunc(slowEcho) // longer than the typing signal's wait
	e.start()
	dm := e.dc.DM(dAnn.ID)
	e.dc.Post(discordfake.UserMessage{Channel: dm, Author: dAnn, Content: "hello bot"})
	got := e.waitAnswers(dm, 1)
	if !strings.Contains(got[0].Text(), "echo: hello bot") {
		t.Fatalf("answer shows %q", got[0].Text())
	}
	if e.dc.Count("POST", discordfake.RouteTyping) == 0 {
		t.Error("no typing signal while the run worked")
	}
	if n := e.dc.Count("POST", discordfake.RouteMessages); n != 1 {
		t.Errorf("%d messages posted, want 1", n)
	}
	if strings.Contains(e.logs.String(), e.dc.Token()) {
		t.Error("the bot token is in the logs")
	}
}

// TestDiscordChannelMentionAnsweredInThread proves a mention in a channel is answered in a new
// thread started from that message, an unmentioned message is ignored, and a follow-up in the
// thread without a mention continues the same conversation.
func TestDiscordChannelMentionAnsweredInThread(t *testing.T) {
	t.Parallel()
	e := newDiscordE2E(t, func(c *config.Config) { c.Runs.PlaceholderAfter = time.Minute })
	e.start()
	ch := e.dc.Guild("700000000000000001")
	e.dc.Post(discordfake.UserMessage{Channel: ch, Author: dBob, Content: "just chatting, not for the bot"})
	mid := e.dc.Post(discordfake.UserMessage{Channel: ch, Author: dAnn, Content: "what is two plus two?", MentionBot: true})
	got := e.waitAnswers(mid, 1)
	if !strings.Contains(got[0].Text(), "echo: what is two plus two?") {
		t.Fatalf("thread answer shows %q", got[0].Text())
	}
	th, ok := e.dc.ChannelInfo(mid)
	if !ok || th.Type != discordfake.ChannelPublicThread || th.ParentID != ch {
		t.Fatalf("no thread from the message: %+v", th)
	}
	if n := len(e.dc.PostedByBot(ch)); n != 0 {
		t.Errorf("%d bot messages in the channel itself, want 0", n)
	}
	if n := e.model.Count(); n != 1 {
		t.Errorf("model called %d times; the unmentioned message must be ignored", n)
	}

	e.dc.Post(discordfake.UserMessage{Channel: mid, Author: dAnn, Content: "and times three?"})
	got = e.waitAnswers(mid, 2)
	if !strings.Contains(got[1].Text(), "echo: and times three?") {
		t.Fatalf("follow-up answer shows %q", got[1].Text())
	}
	reqs := e.model.Requests()
	if len(reqs) != 2 || !hasMessage(reqs[1].Messages, "user", "what is two plus two?") {
		t.Errorf("the follow-up did not continue the thread's conversation")
	}
}

// TestDiscordWithoutMessageContentAnswersMentions proves discord.message_content: false runs a
// bot whose Message Content Intent is off in the Developer Portal: IDENTIFY leaves the
// privileged intent out (no 4014), a mention is answered in its thread, a DM is answered, and
// messages Discord sends without their text (no mention) are ignored, in the channel and in the
// thread alike, while a mention in the thread continues its conversation.
func TestDiscordWithoutMessageContentAnswersMentions(t *testing.T) {
	t.Parallel()
	e := newDiscordE2E(t, func(c *config.Config) {
		c.Runs.PlaceholderAfter = time.Minute
		c.Discord.MessageContent, c.Discord.ThreadReplies = false, config.DiscordThreadMention
	})
	e.dc.AllowPrivilegedIntents(0) // the portal switch is off
	e.start()
	for _, id := range e.dc.Identifies() {
		if !id.Accepted || id.Intents&discordfake.IntentMessageContent != 0 {
			t.Fatalf("identify %+v: want accepted, without the message content intent", id)
		}
	}
	ch := e.dc.Guild("700000000000000002")
	e.dc.Post(discordfake.UserMessage{Channel: ch, Author: dBob, Content: "just chatting, not for the bot"})
	mid := e.dc.Post(discordfake.UserMessage{Channel: ch, Author: dAnn, Content: "what is two plus two?", MentionBot: true})
	got := e.waitAnswers(mid, 1)
	if !strings.Contains(got[0].Text(), "echo: what is two plus two?") {
		t.Fatalf("thread answer shows %q", got[0].Text())
	}
	dm := e.dc.DM(dAnn.ID)
	e.dc.Post(discordfake.UserMessage{Channel: dm, Author: dAnn, Content: "a direct question"})
	if got := e.waitAnswers(dm, 1); !strings.Contains(got[0].Text(), "echo: a direct question") {
		t.Fatalf("DM answer shows %q", got[0].Text())
	}
	e.dc.Post(discordfake.UserMessage{Channel: mid, Author: dAnn, Content: "a follow-up without a mention"})
	e.dc.Post(discordfake.UserMessage{Channel: mid, Author: dAnn, Content: "and times three?", MentionBot: true})
	got = e.waitAnswers(mid, 2)
	if !strings.Contains(got[1].Text(), "echo: and times three?") {
		t.Fatalf("thread follow-up answer shows %q", got[1].Text())
	}
	if n := e.model.Count(); n != 3 {
		t.Errorf("model called %d times, want 3: messages without a mention must be ignored", n)
	}
}

// TestDiscordClarificationByButton proves ask_clarification becomes buttons, a click answers it
// (acknowledged within 3 s) and resumes the run with the choice.
func TestDiscordClarificationByButton(t *testing.T) {
	t.Parallel()
	e := newDiscordE2E(t, nil)
	e.model.SetFunc(bookingModel)
	e.start()
	dm := e.dc.DM(dAnn.ID)
	e.dc.Post(discordfake.UserMessage{Channel: dm, Author: dAnn, Content: "book a table"})
	card := e.waitQuestion(dm)
	if !strings.Contains(card.Text(), "How many people?") {
		t.Fatalf("question shows %q", card.Text())
	}
	ix := e.waitAcked(e.dc.Click(dm, card.ID, dAnn, discordButton(t, card, "4")))
	if d, _ := ix.Acked(); d > discordfake.AckDeadline {
		t.Errorf("click acknowledged after %v", d)
	}
	waitFor(t, "the booking", 20*time.Second, func() bool {
		for _, m := range e.dc.PostedByBot(dm) {
			if strings.Contains(m.Text(), "booked") {
				return true
			}
		}
		return false
	})
	var final string
	for _, m := range e.dc.PostedByBot(dm) {
		if strings.Contains(m.Text(), "booked") {
			final = m.Text()
		}
	}
	if !strings.Contains(final, "People: 4") {
		t.Errorf("final answer %q, want the booking for 4", final)
	}
}

// TestDiscordForeignClickRefused proves a click on someone else's question is refused with an
// ephemeral notice and changes nothing; the asker can still answer.
func TestDiscordForeignClickRefused(t *testing.T) {
	t.Parallel()
	e := newDiscordE2E(t, nil)
	e.model.SetFunc(bookingModel)
	e.start()
	ch := e.dc.Guild("700000000000000002")
	mid := e.dc.Post(discordfake.UserMessage{Channel: ch, Author: dAnn, Content: "book a table", MentionBot: true})
	card := e.waitQuestion(mid)
	ix := e.waitAcked(e.dc.Click(mid, card.ID, dBob, discordButton(t, card, "6")))
	waitFor(t, "the refusal", 10*time.Second, func() bool {
		ix, _ = e.dc.InteractionByID(ix.ID)
		return len(ix.Replies()) > 0
	})
	r := ix.Replies()
	if !r[0].Ephemeral || !strings.Contains(r[0].Content, "someone else") {
		t.Errorf("refusal = %+v", r)
	}
	after, _ := e.dc.Message(card.ID)
	if after.Edits != card.Edits || len(after.Components) != len(card.Components) {
		t.Errorf("the foreign click changed the card")
	}
	if n := e.model.Count(); n != 1 {
		t.Errorf("model called %d times after a foreign click, want 1", n)
	}
	e.dc.Click(mid, card.ID, dAnn, discordButton(t, card, "2"))
	waitFor(t, "the asker's answer", 20*time.Second, func() bool {
		for _, m := range e.dc.PostedByBot(mid) {
			if strings.Contains(m.Text(), "booked") && strings.Contains(m.Text(), "People: 2") {
				return true
			}
		}
		return false
	})
}

// TestDiscordLongAnswerSplitCodeBlockWhole proves a long answer arrives in several messages
// within Discord's limits, nothing lost, with its code block whole in one of them.
func TestDiscordLongAnswerSplitCodeBlockWhole(t *testing.T) {
	t.Parallel()
	var code strings.Builder
	for i := range 80 {
		fmt.Fprintf(&code, "    line(%02d) // some code here\n", i)
	}
	var b strings.Builder
	for i := range 700 {
		fmt.Fprintf(&b, "w%04d ", i)
		if i == 400 {
			b.WriteString("\n\n```go\n" + code.String() + "```\n\n")
		}
	}
	long := b.String()
	e := newDiscordE2E(t, nil)
	e.model.SetFunc(func(modelserver.Request) modelserver.Reply { return modelserver.Reply{Content: long, ChunkSize: 512} })
	e.start()
	dm := e.dc.DM(dAnn.ID)
	e.dc.Post(discordfake.UserMessage{Channel: dm, Author: dAnn, Content: "tell me everything"})
	var got []discordfake.Message
	waitFor(t, "the whole long answer", 20*time.Second, func() bool {
		got = e.dc.PostedByBot(dm)
		all := ""
		for _, m := range got {
			if isDiscordPlaceholder(m) {
				return false
			}
			all += m.Text()
		}
		return strings.Contains(all, "w0699")
	})
	whole, words := 0, 0
	for _, m := range got {
		if n := utf8.RuneCountInString(m.Content); n > discordfake.MaxContent {
			t.Errorf("content of %d characters", n)
		}
		size := 0
		for _, em := range m.Embeds {
			size += utf8.RuneCountInString(em.Text())
			if strings.Contains(em.Description, "line(00)") && strings.Contains(em.Description, "line(79)") {
				whole++
			}
		}
		if size > discordfake.MaxEmbedTotal {
			t.Errorf("embeds of %d characters", size)
		}
		words += strings.Count(m.Text(), " ") // rough: every word is followed by a space
	}
	if whole != 1 {
		t.Errorf("the code block is not whole in one embed")
	}
	all := ""
	for _, m := range got {
		all += m.Text()
	}
	for _, w := range []string{"w0000", "w0400", "w0401", "w0699"} {
		if strings.Count(all, w) != 1 {
			t.Errorf("%s appears %d times", w, strings.Count(all, w))
		}
	}
}

// TestDiscordEveryonePingsNoOne proves model output with @everyone, @here and mentions pings
// nobody.
func TestDiscordEveryonePingsNoOne(t *testing.T) {
	t.Parallel()
	e := newDiscordE2E(t, nil)
	e.model.SetFunc(func(modelserver.Request) modelserver.Reply {
		return modelserver.Text("@everyone @here hey <@" + dBob.ID + "> and <@&12345>")
	})
	e.start()
	ch := e.dc.Guild("700000000000000003")
	mid := e.dc.Post(discordfake.UserMessage{Channel: ch, Author: dAnn, Content: "ping them", MentionBot: true})
	got := e.waitAnswers(mid, 1)
	for _, m := range got {
		if p := discordfake.Pings(m); len(p) != 0 {
			t.Errorf("message %q pings %v", m.Text(), p)
		}
		// Discord pings from allowed_mentions, not from what the fake's Pings reads: the
		// message must parse nothing and list no one.
		if am := m.AllowedMentions; am == nil || am.Parse == nil || len(am.Parse) != 0 || len(am.Users) != 0 || len(am.Roles) != 0 {
			t.Errorf("message %q allowed_mentions %+v, want parse [] and no users or roles", m.Text(), am)
		}
		// And the text itself is neutralized wherever it went (content or an embed), so a
		// client or a copy of it pings no one either.
		text := m.Text()
		for _, raw := range []string{"@everyone", "@here", "<@" + dBob.ID + ">", "<@&12345>"} {
			if strings.Contains(text, raw) {
				t.Errorf("message %q carries %q as is", text, raw)
			}
		}
		for _, neutral := range []string{"@\u200beveryone", "@\u200bhere", "hey"} {
			if !strings.Contains(text, neutral) {
				t.Errorf("message %q lacks %q: the answer did not go out neutralized", text, neutral)
			}
		}
	}
}

// TestDiscordSlashCommandDeferredThenAnswered proves /bot whoami is acknowledged (deferred)
// within 3 s and answered in its response.
func TestDiscordSlashCommandDeferredThenAnswered(t *testing.T) {
	t.Parallel()
	e := newDiscordE2E(t, nil)
	e.start()
	ch := e.dc.Guild("700000000000000004")
	id := e.dc.Slash(ch, dAnn, "bot", "whoami", "")
	ix := e.waitAcked(id)
	if d, _ := ix.Acked(); d > discordfake.AckDeadline || ix.Responses[0].Type != discordfake.CallbackDeferred {
		t.Fatalf("acknowledged after %v with %+v", d, ix.Responses)
	}
	waitFor(t, "the command's answer", 10*time.Second, func() bool {
		ix, _ = e.dc.InteractionByID(id)
		r := ix.Replies()
		return len(r) > 0 && strings.Contains(r[0].Text(), dAnn.ID)
	})
}

// TestDiscordCommandsRegisteredOnceAcrossRestarts proves restarts with unchanged commands make
// no second bulk overwrite: three starts (two restarts), one PUT, and one GET each.
func TestDiscordCommandsRegisteredOnceAcrossRestarts(t *testing.T) {
	t.Parallel()
	e := newDiscordE2E(t, nil)
	for range 3 {
		e.start().stop()
	}
	if n := e.dc.CommandOverwrites(); n != 1 {
		t.Errorf("%d bulk overwrites over three starts, want 1", n)
	}
	if n := e.dc.Count("PUT", discordfake.RouteCommands); n != 1 {
		t.Errorf("%d PUTs of the commands over three starts, want 1", n)
	}
	if n := e.dc.Count("GET", discordfake.RouteCommands); n != 3 {
		t.Errorf("%d GETs of the commands over three starts, want 3 (one a start)", n)
	}
	names := []string{}
	for _, c := range e.dc.Commands("") {
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "bot,botadmin" {
		t.Errorf("commands = %v", names)
	}
}

// TestDiscordCommandRegistration429StormAtStart proves a storm of 429s on the registration of
// the slash commands (their GET and their PUT, more than one call waits out) neither holds up
// the start nor loses the commands: the bot answers /bot at once, and the registration is
// retried in the background until the commands are registered, with one bulk overwrite.
func TestDiscordCommandRegistration429StormAtStart(t *testing.T) {
	t.Parallel()
	e := newDiscordE2E(t, nil)
	e.dc.RateLimitStorm("GET", discordfake.RouteCommands, 2, 30*time.Millisecond)
	// Six PUTs are the first and the five retries of one call: the seventh 429 meets the retry.
	e.dc.RateLimitStorm("PUT", discordfake.RouteCommands, 7, 30*time.Millisecond)
	e.start()
	ch := e.dc.Guild("700000000000000005")
	id := e.dc.Slash(ch, dAnn, "bot", "whoami", "")
	waitFor(t, "the command's answer", 10*time.Second, func() bool {
		ix, _ := e.dc.InteractionByID(id)
		r := ix.Replies()
		return len(r) > 0 && strings.Contains(r[0].Text(), dAnn.ID)
	})
	// The fake records a call once it has answered, just after the overwrite it counts: wait
	// for both.
	waitFor(t, "the commands registered", 20*time.Second, func() bool {
		return e.dc.CommandOverwrites() == 1 && e.dc.Count("PUT", discordfake.RouteCommands) > 0
	})
	names := []string{}
	for _, c := range e.dc.Commands("") {
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "bot,botadmin" {
		t.Errorf("commands = %v", names)
	}
	if n := e.dc.Count("PUT", discordfake.RouteCommands); n != 1 {
		t.Errorf("%d PUTs of the commands answered 2xx, want 1", n)
	}
	waitFor(t, "the registration's recovery logged", 10*time.Second, func() bool {
		return strings.Contains(e.logs.String(), "commands registered after retrying")
	})
	for _, line := range strings.Split(e.logs.String(), "\n") {
		if strings.Contains(line, "registering commands failed") && !strings.Contains(line, "retrying in the background") {
			t.Errorf("a registration failure left to itself: %s", line)
		}
	}
}

// gatedModel answers "echo: …" once release is closed, so a run can be caught mid-way.
func gatedModel(release <-chan struct{}) func(modelserver.Request) modelserver.Reply {
	return func(r modelserver.Request) modelserver.Reply {
		<-release
		return echoModel(r)
	}
}

// TestDiscordDisconnectMidRun proves a resumable disconnect during a run replays the event sent
// meanwhile, and a non-resumable one identifies again; neither loses nor doubles a reply.
func TestDiscordDisconnectMidRun(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		cut       func(dc *discordfake.Server) bool
		resumable bool
	}{
		{"resumable drop", func(dc *discordfake.Server) bool { return dc.Drop() }, true},
		{"non-resumable 4009", func(dc *discordfake.Server) bool { return dc.CloseWith(4009, "Session timed out.") }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			e := newDiscordE2E(t, nil)
			e.model.SetFunc(gatedModel(release))
			e.running = e.start()
			a, b := e.dc.DM(dAnn.ID), e.dc.DM(dBob.ID)
			e.dc.Post(discordfake.UserMessage{Channel: a, Author: dAnn, Content: "first"})
			waitFor(t, "the run to reach the model", 10*time.Second, func() bool { return e.model.Pending() == 1 || e.model.Count() == 1 })
			if !tc.cut(e.dc) {
				t.Fatal("no gateway connection to cut")
			}
			if tc.resumable {
				e.dc.Post(discordfake.UserMessage{Channel: b, Author: dBob, Content: "while away"})
			}
			waitFor(t, "the gateway back", 15*time.Second, e.dc.Connected)
			if !tc.resumable {
				e.dc.Post(discordfake.UserMessage{Channel: b, Author: dBob, Content: "while away"})
			}
			close(release)
			if got := e.waitAnswers(a, 1); !strings.Contains(got[0].Text(), "echo: first") {
				t.Errorf("first answer %q", got[0].Text())
			}
			if got := e.waitAnswers(b, 1); !strings.Contains(got[0].Text(), "echo: while away") {
				t.Errorf("second answer %q", got[0].Text())
			}
			if n := e.model.Count(); n != 2 {
				t.Errorf("model called %d times, want 2", n)
			}
			ids, res := e.dc.Identifies(), e.dc.Resumes()
			if tc.resumable && (len(ids) != 1 || len(res) != 1 || !res[0].Accepted || res[0].Replayed < 1) {
				t.Errorf("identifies %+v resumes %+v, want one resume replaying the missed event", ids, res)
			}
			if !tc.resumable && len(ids) != 2 {
				t.Errorf("identifies %+v, want a second identify", ids)
			}
			wantResumes, wantIdentifies := 0.0, 2.0
			if tc.resumable {
				wantResumes, wantIdentifies = 1, 1
			}
			if r, i := gatewayConnections(t, e.running, "resume"), gatewayConnections(t, e.running, "identify"); r != wantResumes || i != wantIdentifies {
				t.Errorf("switchboard_discord_gateway_connections_total: resume %v identify %v, want %v and %v", r, i, wantResumes, wantIdentifies)
			}
			// Nothing doubles once the dust settles: one more message, one more answer each.
			e.dc.Post(discordfake.UserMessage{Channel: a, Author: dAnn, Content: "again"})
			e.waitAnswers(a, 2)
			if n := len(e.dc.PostedByBot(b)); n != 1 {
				t.Errorf("%d answers in b, want 1", n)
			}
		})
	}
}

// gatewayConnections reads switchboard_discord_gateway_connections_total{kind} from the app's
// registry.
func gatewayConnections(t *testing.T, r *running, kind string) float64 {
	t.Helper()
	mfs, err := r.metrics.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "switchboard_discord_gateway_connections_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == kind {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestDiscord429StormNothingLost proves a storm of 429s (route and global) delays replies but
// loses and doubles none.
func TestDiscord429StormNothingLost(t *testing.T) {
	t.Parallel()
	e := newDiscordE2E(t, nil)
	r := e.start()
	e.dc.RateLimitStorm("POST", discordfake.RouteMessages, 8, 30*time.Millisecond)
	e.dc.GlobalRateLimit(4, 30*time.Millisecond)
	users := []discordfake.User{dAnn, dBob, {ID: "410000000000000003", Username: "cy"}}
	var dms []string
	for _, u := range users {
		dm := e.dc.DM(u.ID)
		dms = append(dms, dm)
		e.dc.Post(discordfake.UserMessage{Channel: dm, Author: u, Content: "hello from " + u.Username})
	}
	for i, dm := range dms {
		got := e.waitAnswers(dm, 1)
		if !strings.Contains(got[0].Text(), "echo: hello from "+users[i].Username) {
			t.Errorf("answer %q", got[0].Text())
		}
	}
	// The storm is one log line (a minute at most), and counted for the platform.
	if n := strings.Count(e.logs.String(), "discord: rate limited (one line a minute"); n != 1 {
		t.Errorf("the storm wrote %d rate-limit lines, want 1", n)
	}
	if n := counter(r.metrics.rateLimited, "discord", "retried"); n < 1 {
		t.Errorf("switchboard_platform_rate_limited_total{platform=discord,result=retried} = %v, want the storm counted", n)
	}
}

// TestDiscordStartRefusals proves a refused token and a refused message content intent stop
// `bot run` with what to do, and the token is never shown.
func TestDiscordStartRefusals(t *testing.T) {
	t.Parallel()
	const wrong = "NDEw.wrong-discord-token-SECRET.part"
	cases := []struct {
		name   string
		mutate func(*config.Config)
		setup  func(dc *discordfake.Server)
		want   []string
		unauth bool
	}{
		{name: "wrong token", mutate: func(c *config.Config) { c.Discord.Token = wrong },
			want: []string{"check discord.token", "Developer Portal"}, unauth: true},
		{name: "message content intent off", setup: func(dc *discordfake.Server) { dc.AllowPrivilegedIntents(0) },
			want: []string{"Message Content Intent", "Developer Portal", "discord.message_content: false"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newDiscordE2E(t, tc.mutate)
			if tc.setup != nil {
				tc.setup(e.dc)
			}
			ctx := context.Background()
			a, err := newApp(ctx, e.cfg, newLogger(e.cfg, e.logs))
			if err != nil {
				t.Fatal(err)
			}
			err = a.start(ctx)
			_ = a.shutdown(ctx)
			if err == nil {
				t.Fatal("start succeeded")
			}
			if tc.unauth != errors.Is(err, channels.ErrUnauthorized) {
				t.Errorf("ErrUnauthorized = %v: %v", !tc.unauth, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			for _, secret := range []string{wrong, e.dc.Token()} {
				if strings.Contains(err.Error(), secret) || strings.Contains(e.logs.String(), secret) {
					t.Errorf("the token leaked into the error or the logs")
				}
			}
		})
	}
}

// TestDiscordHTTPInteractionsEndpoint proves that with discord.public_key set, bot run serves
// signed HTTP interactions on http.addr: PING is answered and a bad signature refused.
func TestDiscordHTTPInteractionsEndpoint(t *testing.T) {
	t.Parallel()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	e := newDiscordE2E(t, func(c *config.Config) { c.Discord.PublicKey = hex.EncodeToString(pub) })
	r := e.start()
	url := "http://" + r.listener.Addr().String() + discordInteractionsPath
	post := func(sign ed25519.PrivateKey) (int, string) {
		body := `{"type":1,"id":"1","token":"t"}`
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		req, _ := http.NewRequest("POST", url, strings.NewReader(body))
		req.Header.Set("X-Signature-Ed25519", hex.EncodeToString(ed25519.Sign(sign, []byte(ts+body))))
		req.Header.Set("X-Signature-Timestamp", ts)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post(priv); code != http.StatusOK || !strings.Contains(body, `"type":1`) {
		t.Errorf("PING: %d %s", code, body)
	}
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	if code, _ := post(other); code != http.StatusUnauthorized {
		t.Errorf("a request signed by another key: %d", code)
	}
}

// TestDiscordInviteCommand proves `bot discord-invite` prints the invite URL with the
// application id Discord reports, and says what is missing without a token.
func TestDiscordInviteCommand(t *testing.T) {
	t.Parallel()
	dc := discordfake.New(t)
	var out, errb bytes.Buffer
	env := []string{"BOT_DISCORD__TOKEN=" + dc.Token(), "BOT_DISCORD__API_URL=" + dc.URL()}
	code := runContext(context.Background(), []string{"discord-invite"}, strings.NewReader(""), &out, &errb, env)
	want := "client_id=" + discordfake.ApplicationID + "&permissions=309237763072&scope=bot+applications.commands"
	if code != exitOK || !strings.Contains(out.String(), want) {
		t.Errorf("exit %d\nstdout: %s\nstderr: %s", code, out.String(), errb.String())
	}
	if strings.Contains(out.String()+errb.String(), dc.Token()) {
		t.Error("the token was printed")
	}
	out.Reset()
	errb.Reset()
	if code := runContext(context.Background(), []string{"discord-invite"}, strings.NewReader(""), &out, &errb, nil); code != exitConfig ||
		!strings.Contains(errb.String(), "discord.token") {
		t.Errorf("without a token: exit %d, %s", code, errb.String())
	}
}

// TestDiscordClarificationByModal proves a question with a text field opens a modal from its
// "Answer…" button and the submitted modal resumes the run with the typed answer.
func TestDiscordClarificationByModal(t *testing.T) {
	t.Parallel()
	e := newDiscordE2E(t, nil)
	e.model.SetFunc(func(r modelserver.Request) modelserver.Reply {
		if last := r.Messages[len(r.Messages)-1]; last.Role == "tool" {
			return modelserver.Text("noted: " + last.Content)
		}
		return modelserver.Calls(modelserver.ToolCall{Name: "ask_clarification",
			Arguments: `{"question":"What name?","fields":[{"id":"name","label":"Name","kind":"text","required":true}]}`})
	})
	e.start()
	dm := e.dc.DM(dAnn.ID)
	e.dc.Post(discordfake.UserMessage{Channel: dm, Author: dAnn, Content: "reserve"})
	card := e.waitQuestion(dm)
	ix := e.waitAcked(e.dc.Click(dm, card.ID, dAnn, discordButton(t, card, "Answer…")))
	custom, inputs, ok := ix.Modal()
	if !ok || len(inputs) != 1 || inputs[0].CustomID != "name" {
		t.Fatalf("no modal with the field opened: %+v", ix.Responses)
	}
	e.dc.Submit(dm, card.ID, dAnn, custom, map[string]string{inputs[0].CustomID: "Ada Lovelace"})
	waitFor(t, "the answer with the typed name", 20*time.Second, func() bool {
		for _, m := range e.dc.PostedByBot(dm) {
			if strings.Contains(m.Text(), "noted") && strings.Contains(m.Text(), "Name: Ada Lovelace") {
				return true
			}
		}
		return false
	})
}

// TestDiscordFreeTextAnswerByModal proves "Answer in my own words…" opens a modal and the text
// typed there resumes the run.
func TestDiscordFreeTextAnswerByModal(t *testing.T) {
	t.Parallel()
	e := newDiscordE2E(t, nil)
	e.model.SetFunc(func(r modelserver.Request) modelserver.Reply {
		if last := r.Messages[len(r.Messages)-1]; last.Role == "tool" {
			return modelserver.Text("booked: " + last.Content)
		}
		return modelserver.Calls(modelserver.ToolCall{Name: "ask_clarification",
			Arguments: `{"question":"How many people?","allow_free_text":true,"fields":[{"id":"people","label":"People","kind":"choice","options":["2","4"],"required":true}]}`})
	})
	e.start()
	dm := e.dc.DM(dAnn.ID)
	e.dc.Post(discordfake.UserMessage{Channel: dm, Author: dAnn, Content: "book a table"})
	card := e.waitQuestion(dm)
	ix := e.waitAcked(e.dc.Click(dm, card.ID, dAnn, discordButton(t, card, "Answer in my own words…")))
	custom, inputs, ok := ix.Modal()
	if !ok || len(inputs) != 1 {
		t.Fatalf("no free-text modal: %+v", ix.Responses)
	}
	e.dc.Submit(dm, card.ID, dAnn, custom, map[string]string{inputs[0].CustomID: "three of us, maybe five"})
	waitFor(t, "the answer with the typed text", 20*time.Second, func() bool {
		for _, m := range e.dc.PostedByBot(dm) {
			if strings.Contains(m.Text(), "booked") && strings.Contains(m.Text(), "three of us, maybe five") {
				return true
			}
		}
		return false
	})
}

// TestDiscordRedeliveredMessageAnsweredOnce proves a MESSAGE_CREATE Discord sends again (after a
// resume) is deduplicated by its message id: one run, one answer.
func TestDiscordRedeliveredMessageAnsweredOnce(t *testing.T) {
	t.Parallel()
	e := newDiscordE2E(t, nil)
	e.start()
	dm := e.dc.DM(dAnn.ID)
	id := e.dc.Post(discordfake.UserMessage{Channel: dm, Author: dAnn, Content: "only once"})
	e.waitAnswers(dm, 1)
	if !e.dc.Redeliver(id) {
		t.Fatal("no message to redeliver")
	}
	e.dc.Post(discordfake.UserMessage{Channel: dm, Author: dAnn, Content: "next"})
	got := e.waitAnswers(dm, 2)
	if !strings.Contains(got[1].Text(), "echo: next") || e.model.Count() != 2 {
		t.Errorf("answers %q, %d model calls; the redelivery must be dropped", got[1].Text(), e.model.Count())
	}
}

// TestDiscordAdminCommandsByUserID proves admins.discord lists Discord user ids: the listed user
// may run /botadmin stats, another is refused.
func TestDiscordAdminCommandsByUserID(t *testing.T) {
	t.Parallel()
	e := newDiscordE2E(t, func(c *config.Config) { c.Admins.Discord = []string{dAnn.ID} })
	e.start()
	ch := e.dc.Guild("700000000000000005")
	reply := func(u discordfake.User) string { return e.slashReply(ch, u, "botadmin", "stats") }
	if got := reply(dBob); !strings.Contains(got, "admins only") {
		t.Errorf("a non-admin got %q", got)
	}
	if got := reply(dAnn); strings.Contains(got, "admins only") {
		t.Errorf("the admin was refused: %q", got)
	}
}

// TestDiscordAdminByGuildPermission proves discord.admin_permission: /botadmin stats from a
// member Discord reports holding MANAGE_GUILD (and not in admins.discord) is obeyed, from a
// member without it refused; the same member's text command in the channel, which carries no
// permissions, is refused too.
func TestDiscordAdminByGuildPermission(t *testing.T) {
	t.Parallel()
	e := newDiscordE2E(t, func(c *config.Config) { c.Discord.AdminPermission = "MANAGE_GUILD" })
	e.start()
	ch := e.dc.Guild("700000000000000006")
	e.dc.SetPermissions(dAnn.ID, "1071698660961")    // MANAGE_GUILD among others
	e.dc.SetPermissions(dBob.ID, "2248473465835073") // everyday permissions, no MANAGE_GUILD
	reply := func(u discordfake.User) string { return e.slashReply(ch, u, "botadmin", "stats") }
	if got := reply(dBob); !strings.Contains(got, "admins only") {
		t.Errorf("a member without MANAGE_GUILD got %q", got)
	}
	if got := reply(dAnn); strings.Contains(got, "admins only") || !strings.Contains(strings.ToLower(got), "queue") {
		t.Errorf("the member with MANAGE_GUILD got %q, want the stats", got)
	}
	mid := e.dc.Post(discordfake.UserMessage{Channel: ch, Author: dAnn, Content: "/stats", MentionBot: true})
	got := e.waitAnswers(mid, 1)
	if !strings.Contains(got[0].Text(), "admins only") {
		t.Errorf("a text command got %q: messages carry no permissions", got[0].Text())
	}
}

// cuisineModel asks one question of eight options — more than a row of buttons holds, so Discord
// shows a string select — and, once answered, says what was chosen.
func cuisineModel(r modelserver.Request) modelserver.Reply {
	if last := r.Messages[len(r.Messages)-1]; last.Role == "tool" {
		return modelserver.Text("table booked: " + last.Content)
	}
	return modelserver.Calls(modelserver.ToolCall{Name: "ask_clarification",
		Arguments: `{"question":"Which cuisine?","fields":[{"id":"cuisine","label":"Cuisine","kind":"choice",` +
			`"options":["Thai","Greek","Italian","Mexican","Indian","Japanese","French","Korean"],"required":true}]}`})
}

// discordSelectMenu returns the string select (type 3) on m.
func discordSelectMenu(tb testing.TB, m discordfake.Message) discordfake.Component {
	tb.Helper()
	for _, r := range m.Components {
		for _, c := range r.Components {
			if c.Type == 3 {
				return c
			}
		}
	}
	tb.Fatalf("no string select on %+v", m.Components)
	return discordfake.Component{}
}

// TestDiscordClarificationBySelect proves a question of more than five options is a string
// select whose options are signed choices, and that choosing one through Discord's select
// interaction (the values the bot sent) answers it: the click is acknowledged in time and the
// run continues with the chosen option.
func TestDiscordClarificationBySelect(t *testing.T) {
	t.Parallel()
	e := newDiscordE2E(t, nil)
	e.model.SetFunc(cuisineModel)
	e.start()
	dm := e.dc.DM(dAnn.ID)
	e.dc.Post(discordfake.UserMessage{Channel: dm, Author: dAnn, Content: "book dinner"})
	card := e.waitQuestion(dm)
	sel := discordSelectMenu(t, card)
	if len(sel.Options) != 8 {
		t.Fatalf("select options %+v, want the eight cuisines", sel.Options)
	}
	var value string
	for _, o := range sel.Options {
		if o.Label == "Japanese" {
			value = o.Value
		}
	}
	// A value the bot did not sign answers nothing: the chooser is told so, privately.
	forged := e.waitAcked(e.dc.Select(dm, card.ID, dAnn, sel.CustomID, "Japanese"))
	if r := forged.Replies(); len(r) != 1 || !r[0].Ephemeral || !strings.Contains(r[0].Text(), "not valid") {
		t.Errorf("a forged value got %+v, want a private notice", r)
	}
	ix := e.waitAcked(e.dc.Select(dm, card.ID, dAnn, sel.CustomID, value))
	if d, _ := ix.Acked(); d > discordfake.AckDeadline {
		t.Errorf("selection acknowledged after %v", d)
	}
	var final string
	waitFor(t, "the booking", 20*time.Second, func() bool {
		for _, m := range e.dc.PostedByBot(dm) {
			if strings.Contains(m.Text(), "table booked") {
				final = m.Text()
				return true
			}
		}
		return false
	})
	if !strings.Contains(final, "Japanese") || strings.Contains(final, "Thai") {
		t.Errorf("final answer %q, want the run continued with Japanese", final)
	}
	reqs := e.model.Requests()
	if len(reqs) != 2 || !strings.Contains(reqs[1].Messages[len(reqs[1].Messages)-1].Content, "Japanese") {
		t.Errorf("the tool result the model saw does not carry the choice")
	}
}

// TestDiscordSlashRefusalsAreEphemeral proves a refused slash command is told so privately:
// /botadmin from a non-admin gets "admins only", /bot from a user the allowlist refuses gets
// "not allowed" — each deferred ephemerally and answered in that ephemeral response — and the
// channel shows nothing.
func TestDiscordSlashRefusalsAreEphemeral(t *testing.T) {
	t.Parallel()
	e := newDiscordE2E(t, func(c *config.Config) {
		c.Access.Discord.Policy, c.Access.Discord.Allow = "allowlist", []string{dAnn.ID}
	})
	e.start()
	ch := e.dc.Guild("700000000000000007")
	answer := func(u discordfake.User, name, sub string) (discordfake.Interaction, discordfake.Message) {
		id := e.dc.Slash(ch, u, name, sub, "")
		var ix discordfake.Interaction
		waitFor(t, "the command's answer", 10*time.Second, func() bool {
			ix, _ = e.dc.InteractionByID(id)
			return len(ix.Replies()) > 0
		})
		return ix, ix.Replies()[0]
	}
	for _, tc := range []struct {
		user      discordfake.User
		name, sub string
		want      string
	}{
		{dAnn, "botadmin", "stats", "admins only"},
		{dBob, "bot", "help", "not allowed"},
	} {
		ix, m := answer(tc.user, tc.name, tc.sub)
		if !strings.Contains(m.Text(), tc.want) || !m.Ephemeral {
			t.Errorf("/%s %s from %s: %q (ephemeral %v), want %q privately", tc.name, tc.sub, tc.user.Username, m.Text(), m.Ephemeral, tc.want)
		}
		var data struct{ Flags int }
		if len(ix.Responses) == 0 || ix.Responses[0].Type != discordfake.CallbackDeferred ||
			json.Unmarshal(ix.Responses[0].Data, &data) != nil || data.Flags&discordfake.FlagEphemeral == 0 {
			t.Errorf("/%s acknowledged with %+v, want an ephemeral deferral", tc.name, ix.Responses)
		}
	}
	if p := e.dc.PostedByBot(ch); len(p) != 0 {
		t.Errorf("the channel shows %d bot messages, want none", len(p))
	}
}

// TestDiscordRestartResumesTheSession proves a restarted bot resumes the stopped one's gateway
// session (kept in Redis) and answers a message sent while no process was connected, once.
func TestDiscordRestartResumesTheSession(t *testing.T) {
	t.Parallel()
	e := newDiscordE2E(t, nil)
	first := e.start()
	dm := e.dc.DM(dAnn.ID)
	e.dc.Post(discordfake.UserMessage{Channel: dm, Author: dAnn, Content: "before"})
	e.waitAnswers(dm, 1)
	first.stop()
	e.dc.Post(discordfake.UserMessage{Channel: dm, Author: dAnn, Content: "while restarting"})
	e.start()
	got := e.waitAnswers(dm, 2)
	if !strings.Contains(got[1].Text(), "echo: while restarting") {
		t.Errorf("answer %q", got[1].Text())
	}
	res := e.dc.Resumes()
	if n := acceptedDiscordIdentifies(e.dc); n != 1 || len(res) != 1 || !res[0].Accepted {
		t.Errorf("%d identifies, resumes %+v: the restart must resume", n, res)
	}
	e.dc.Post(discordfake.UserMessage{Channel: dm, Author: dAnn, Content: "after"})
	e.waitAnswers(dm, 3)
	if n := e.model.Count(); n != 3 {
		t.Errorf("model called %d times, want 3", n)
	}
}

func acceptedDiscordIdentifies(dc *discordfake.Server) int {
	n := 0
	for _, id := range dc.Identifies() {
		if id.Accepted {
			n++
		}
	}
	return n
}
