package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/switchboard-bot/switchboard/config"
	discordfake "github.com/switchboard-bot/switchboard/internal/fake/discord"
	"github.com/switchboard-bot/switchboard/internal/fake/modelserver"
	slackfake "github.com/switchboard-bot/switchboard/internal/fake/slack"
	telegramfake "github.com/switchboard-bot/switchboard/internal/fake/telegram"
)

// longAnswer is an answer of about size bytes: numbered paragraphs, each unique, so a test can
// tell that every one arrived exactly once and in order.
func longAnswer(size int) (string, []string) {
	var paras []string
	n := 0
	for i := 1; n < size; i++ {
		p := fmt.Sprintf("P%04d: this paragraph of the long answer says something worth reading, and then a little more.", i)
		paras = append(paras, p)
		n += len(p) + 2
	}
	return strings.Join(paras, "\n\n"), paras
}

// TestLongAnswerSendsTheRestAsAFile proves a 50 KB answer stays readable: at most
// runs.max_answer_messages (3) messages, each within Telegram's 4,096 characters shown, then one
// answer.md document holding the rest — and nothing lost or repeated: every paragraph of the
// answer is in the messages or the file exactly once, in order.
func TestLongAnswerSendsTheRestAsAFile(t *testing.T) {
	t.Parallel()
	t.Run("answered at once", func(t *testing.T) { testLongAnswer(t, 0) })
	// The answer is edited into the placeholder, its further messages sent after it.
	t.Run("after a placeholder", func(t *testing.T) { testLongAnswer(t, 1500*time.Millisecond) })
}

func testLongAnswer(t *testing.T, latency time.Duration) {
	answer, paras := longAnswer(50_000)
	e := newE2E(t, nil)
	e.model.SetFunc(func(modelserver.Request) modelserver.Reply {
		return modelserver.Reply{Content: answer, ChunkSize: 4096, Latency: latency}
	})
	e.start()
	e.tg.PushPrivate(ann, "tell me everything")
	var got []telegramfake.Message
	waitFor(t, "the answer and its file", 20*time.Second, func() bool {
		got = e.tg.Posted(ann.ID)
		for _, m := range got {
			if m.Document != nil {
				return true
			}
		}
		return false
	})
	var texts []string
	var doc *telegramfake.Document
	for i, m := range got {
		if isPlaceholder(m) {
			t.Fatalf("message %d is still the placeholder", i)
		}
		if m.Document != nil {
			if doc != nil {
				t.Fatal("more than one document sent")
			}
			doc = m.Document
			continue
		}
		if doc != nil {
			t.Errorf("message %d comes after the file", i)
		}
		if n := utf16Len(visible(m)); n > telegramfake.MaxTextLen {
			t.Errorf("message %d shows %d characters, over the limit", i, n)
		}
		texts = append(texts, visible(m))
	}
	if len(texts) == 0 || len(texts) > e.cfg.Runs.MaxAnswerMessages {
		t.Errorf("%d messages before the file, want 1 to %d", len(texts), e.cfg.Runs.MaxAnswerMessages)
	}
	if doc.FileName != "answer.md" {
		t.Errorf("the file is named %q, want answer.md", doc.FileName)
	}
	if !strings.Contains(strings.Join(texts, "\n"), "answer.md") {
		t.Error("the messages do not say the rest is in the file")
	}
	// The paragraphs shown, then those in the file, must be the answer's, once each, in order.
	all := strings.Join(texts, "\n\n") + "\n\n" + string(doc.Data)
	pos := 0
	for i, p := range paras {
		j := strings.Index(all[pos:], p)
		if j < 0 {
			t.Fatalf("paragraph %d (%.6s) is missing or out of order", i+1, p)
		}
		pos += j + len(p)
		if strings.Count(all, p[:6]) != 1 {
			t.Fatalf("paragraph %d arrived %d times", i+1, strings.Count(all, p[:6]))
		}
	}
	if !strings.HasPrefix(string(doc.Data), paras[len(paras)-len(strings.Split(strings.TrimSpace(string(doc.Data)), "\n\n"))]) {
		t.Error("the file does not start at a paragraph")
	}
	t.Logf("%d bytes: %d messages (%d characters shown) and a file of %d bytes", len(answer), len(texts), utf16Len(strings.Join(texts, "")), len(doc.Data))
}

// TestTelegramAnswerFailingPartWayShowsOnce proves an answer of several messages that the
// platform refuses part-way (a message answered 502 past the adapter's tries) is not shown in
// part and then again whole: the messages it posted are deleted before it is sent again, and
// the answer shows once, every paragraph once, in order — the model asked once. Sent anew, its
// second message is refused and the run tried again; edited into the placeholder, its third
// is, and the answer is sent anew at once.
func TestTelegramAnswerFailingPartWayShowsOnce(t *testing.T) {
	t.Parallel()
	t.Run("sent anew", func(t *testing.T) { testAnswerFailingPartWay(t, 0, 1) })
	// The placeholder is the chat's first sendMessage, the answer's second message its second.
	t.Run("edited into the placeholder", func(t *testing.T) { testAnswerFailingPartWay(t, 1500*time.Millisecond, 2) })
}

func testAnswerFailingPartWay(t *testing.T, latency time.Duration, pass int) {
	answer, paras := longAnswer(9_000) // three messages of Telegram's 4,096 characters
	// The placeholder path (drafts off): a private chat would stream drafts instead.
	e := newE2E(t, func(c *config.Config) { c.Runs.OutageRetryBase, c.Telegram.Drafts = 50*time.Millisecond, false })
	e.model.SetFunc(func(modelserver.Request) modelserver.Reply {
		return modelserver.Reply{Content: answer, ChunkSize: 4096, Latency: latency}
	})
	r := e.start()
	// pass sendMessage calls go through; the next is refused on every one of its tries.
	e.tg.FailChatAfter(ann.ID, "sendMessage", pass, 3, telegramfake.Fault{Status: 502, Description: "Bad Gateway"})
	e.tg.PushPrivate(ann, "tell me a lot")
	waitFor(t, "the run to end answered", 20*time.Second, func() bool { return counter(r.metrics.runs, "answered") == 1 })
	got := e.tg.Posted(ann.ID)
	var shown []string
	for i, m := range got {
		if isPlaceholder(m) {
			t.Fatalf("message %d is still the placeholder", i)
		}
		shown = append(shown, visible(m))
	}
	if len(shown) < 2 || len(shown) > e.cfg.Runs.MaxAnswerMessages {
		t.Fatalf("%d messages shown, want the answer's 2 to %d", len(shown), e.cfg.Runs.MaxAnswerMessages)
	}
	paragraphsOnce(t, strings.Join(shown, "\n\n"), paras)
	answeredOnRetry(t, e, r, "partial_withdrawn")
}

// answeredOnRetry checks the outbound error kind was counted once, no possible double, and the
// model asked once: the run's next try re-sent the recorded answer.
func answeredOnRetry(t *testing.T, e *e2e, r *running, kind string) {
	t.Helper()
	if n := counter(r.metrics.outboundErr, "telegram", kind); n != 1 {
		t.Errorf("%s counted %v, want 1", kind, n)
	}
	if n := counter(r.metrics.outboundErr, "telegram", "possible_double"); n != 0 {
		t.Errorf("possible_double counted %v, want 0: the refused try left nothing shown", n)
	}
	if n := len(e.model.Requests()); n != 1 {
		t.Errorf("model called %d times, want 1 (the next try re-sends the recorded answer)", n)
	}
}

// TestTelegramLongAnswerRestRefusedIsTriedAgain proves the rest of a long answer survives the
// platform refusing it — the file, and the messages it falls back to, answered 502 past the
// adapter's tries: the run is tried again, and that try sends only the rest (as the file, the
// platform being back), the head shown once — the model asked once.
func TestTelegramLongAnswerRestRefusedIsTriedAgain(t *testing.T) {
	t.Parallel()
	answer, paras := longAnswer(50_000)
	e := newE2E(t, func(c *config.Config) { c.Runs.OutageRetryBase = 50 * time.Millisecond })
	e.model.SetFunc(func(modelserver.Request) modelserver.Reply {
		return modelserver.Reply{Content: answer, ChunkSize: 4096}
	})
	r := e.start()
	bad := telegramfake.Fault{Status: 502, Description: "Bad Gateway"}
	e.tg.FailChat(ann.ID, "sendDocument", 3, bad)
	// The head's three messages go through; the rest's first is refused on each of its tries.
	e.tg.FailChatAfter(ann.ID, "sendMessage", e.cfg.Runs.MaxAnswerMessages, 3, bad)
	e.tg.PushPrivate(ann, "tell me everything")
	waitFor(t, "the run to end answered", 20*time.Second, func() bool { return counter(r.metrics.runs, "answered") == 1 })
	var shown []string
	var file string
	for i, m := range e.tg.Posted(ann.ID) {
		switch {
		case isPlaceholder(m):
			t.Fatalf("message %d is still the placeholder", i)
		case m.Document != nil:
			if file != "" {
				t.Fatal("more than one document sent")
			}
			file = string(m.Document.Data)
		default:
			shown = append(shown, visible(m))
		}
	}
	if len(shown) != e.cfg.Runs.MaxAnswerMessages || file == "" {
		t.Fatalf("%d messages and a file of %d bytes, want the head's %d messages and the rest as a file", len(shown), len(file), e.cfg.Runs.MaxAnswerMessages)
	}
	checkParagraphs(t, shown, file, paras)
	answeredOnRetry(t, e, r, "rest_failed")
}

// paragraphsOnce checks that every paragraph of the answer is whole in all, exactly once, in
// order.
func paragraphsOnce(t *testing.T, all string, paras []string) {
	t.Helper()
	pos := 0
	for i, p := range paras {
		if n := strings.Count(all, p[:6]); n != 1 {
			t.Fatalf("paragraph %d arrived %d times", i+1, n)
		}
		j := strings.Index(all[pos:], p)
		if j < 0 {
			t.Fatalf("paragraph %d (%.6s) is missing, cut or out of order", i+1, p)
		}
		pos += j + len(p)
	}
}

// checkParagraphs checks that every paragraph of the answer is whole in shown (the messages'
// texts, then the file), exactly once, in order — so no chunk was cut inside one — and that the
// file starts at a paragraph.
func checkParagraphs(t *testing.T, shown []string, file string, paras []string) {
	t.Helper()
	paragraphsOnce(t, strings.Join(shown, "\n\n")+"\n\n"+file, paras)
	if !strings.HasPrefix(file, "P") || !slices.Contains(paras, strings.SplitN(file, "\n", 2)[0]) {
		t.Errorf("the file does not start at a paragraph: %.40q", file)
	}
}

// TestSlackLongAnswerSendsTheRestAsAFile proves on Slack what the Telegram test proves there: an
// answer past runs.max_answer_messages messages (1 here: a Slack message holds 50 sections of
// 3,000 characters, so it takes about 140,000 characters to fill one) shows its head in that
// many messages, within Slack's limits, saying the rest is in answer.md; the rest is that file,
// uploaded through files.getUploadURLExternal and files.completeUploadExternal and shared in
// the mention's thread, last; every paragraph arrives once, whole, in order.
func TestSlackLongAnswerSendsTheRestAsAFile(t *testing.T) {
	t.Parallel()
	t.Run("answered at once", func(t *testing.T) { testSlackLongAnswer(t, 0) })
	t.Run("after a placeholder", func(t *testing.T) { testSlackLongAnswer(t, 1500*time.Millisecond) })
}

func testSlackLongAnswer(t *testing.T, latency time.Duration) {
	answer, paras := longAnswer(200_000)
	e := newSlackE2E(t, func(c *config.Config) { c.Runs.MaxAnswerMessages = 1 })
	e.model.SetFunc(func(modelserver.Request) modelserver.Reply {
		return modelserver.Reply{Content: answer, ChunkSize: 4096, Latency: latency}
	})
	e.start()
	root, _ := e.sl.PushMentionPair(slackfake.Msg{Channel: "C0GEN", User: slackAnn, Text: slackfake.Mention() + " tell me everything"})
	var ups []slackfake.Upload
	waitFor(t, "the answer's file", 30*time.Second, func() bool {
		ups = e.sl.Uploads()
		return len(ups) > 0
	})
	if len(ups) != 1 {
		t.Fatalf("%d files, want 1", len(ups))
	}
	up := ups[0]
	if up.Name != "answer.md" || up.Channel != "C0GEN" || up.ThreadTS != root || up.InitialComment == "" {
		t.Fatalf("the file is %q shared in %s/%s with %q; want answer.md in the mention's thread", up.Name, up.Channel, up.ThreadTS, up.InitialComment)
	}
	var shown []string
	thread := e.inThread("C0GEN", root)
	for i, m := range thread {
		if slackPlaceholder(m) {
			t.Fatalf("message %d is still the placeholder", i)
		}
		if len(m.Files) > 0 {
			if i != len(thread)-1 || m.TS != up.TS {
				t.Errorf("the file's message is %d of %d in the thread, want it last", i+1, len(thread))
			}
			continue
		}
		shown = append(shown, slackBlockText(m))
	}
	if len(shown) == 0 || len(shown) > e.cfg.Runs.MaxAnswerMessages {
		t.Errorf("%d messages before the file, want 1 to %d", len(shown), e.cfg.Runs.MaxAnswerMessages)
	}
	if !strings.Contains(strings.Join(shown, "\n"), "answer.md") {
		t.Error("the messages do not say the rest is in the file")
	}
	for _, c := range e.sl.Calls() {
		if c.Error != "" {
			t.Errorf("%s refused: %s", c.Method, c.Error)
		}
	}
	if top := e.inThread("C0GEN", ""); len(top) != 0 {
		t.Errorf("%d messages at the channel's top level", len(top))
	}
	checkParagraphs(t, shown, string(up.Data), paras)
	t.Logf("%d bytes: %d message(s) (%d characters shown) and a file of %d bytes", len(answer), len(shown), len(strings.Join(shown, "")), len(up.Data))
}

// TestDiscordLongAnswerSendsTheRestAsAFile proves the same on Discord with the default
// runs.max_answer_messages (3): a 50 KB answer is at most 3 messages within Discord's limits,
// then one message in the mention's thread carrying answer.md (a multipart attachment) that
// pings no one; every paragraph arrives once, whole, in order.
func TestDiscordLongAnswerSendsTheRestAsAFile(t *testing.T) {
	t.Parallel()
	t.Run("answered at once", func(t *testing.T) { testDiscordLongAnswer(t, 0) })
	t.Run("after a placeholder", func(t *testing.T) { testDiscordLongAnswer(t, 1500*time.Millisecond) })
}

func testDiscordLongAnswer(t *testing.T, latency time.Duration) {
	answer, paras := longAnswer(50_000)
	e := newDiscordE2E(t, nil)
	e.model.SetFunc(func(modelserver.Request) modelserver.Reply {
		return modelserver.Reply{Content: answer, ChunkSize: 4096, Latency: latency}
	})
	e.start()
	ch := e.dc.Guild("700000000000000031")
	mid := e.dc.Post(discordfake.UserMessage{Channel: ch, Author: dAnn, Content: "tell me everything", MentionBot: true})
	waitFor(t, "the answer's file", 30*time.Second, func() bool { return len(e.dc.FilesPosted(mid)) > 0 })
	got := e.dc.PostedByBot(mid)
	var shown []string
	var file *discordfake.File
	for i, m := range got {
		if isDiscordPlaceholder(m) {
			t.Fatalf("message %d is still the placeholder", i)
		}
		if len(m.Files) > 0 {
			if file != nil || len(m.Files) != 1 {
				t.Fatal("more than one file sent")
			}
			file = &m.Files[0]
			if i != len(got)-1 {
				t.Errorf("the file's message is %d of %d, want it last", i+1, len(got))
			}
			if m.AllowedMentions == nil || len(m.AllowedMentions.Parse) != 0 {
				t.Errorf("the file's message parses mentions: %+v", m.AllowedMentions)
			}
			continue
		}
		if n := utf8.RuneCountInString(m.Content); n > discordfake.MaxContent {
			t.Errorf("message %d has %d characters of content", i, n)
		}
		size := 0
		for _, em := range m.Embeds {
			size += utf8.RuneCountInString(em.Text())
		}
		if size > discordfake.MaxEmbedTotal {
			t.Errorf("message %d has %d characters of embeds", i, size)
		}
		shown = append(shown, m.Text())
	}
	if len(shown) == 0 || len(shown) > e.cfg.Runs.MaxAnswerMessages {
		t.Errorf("%d messages before the file, want 1 to %d", len(shown), e.cfg.Runs.MaxAnswerMessages)
	}
	if file.Name != "answer.md" || !strings.HasPrefix(file.ContentType, "text/markdown") {
		t.Errorf("the file is %q (%s), want answer.md as markdown", file.Name, file.ContentType)
	}
	if !strings.Contains(strings.Join(shown, "\n"), "answer.md") {
		t.Error("the messages do not say the rest is in the file")
	}
	if n := len(e.dc.PostedByBot(ch)); n != 0 {
		t.Errorf("%d bot messages in the channel itself, want all in the thread", n)
	}
	checkParagraphs(t, shown, string(file.Data), paras)
	t.Logf("%d bytes: %d messages (%d characters shown) and a file of %d bytes", len(answer), len(shown), len(strings.Join(shown, "")), len(file.Data))
}
