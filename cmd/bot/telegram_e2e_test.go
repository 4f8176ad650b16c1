package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/switchboard-bot/switchboard/channels/delivery"
	"github.com/switchboard-bot/switchboard/channels/kit"
	"github.com/switchboard-bot/switchboard/config"
	"github.com/switchboard-bot/switchboard/internal/fake/modelserver"
	telegramfake "github.com/switchboard-bot/switchboard/internal/fake/telegram"
)

var (
	ann = telegramfake.User{ID: 4201, FirstName: "Ann", Username: "ann"}
	bob = telegramfake.User{ID: 4202, FirstName: "Bob", Username: "bob"}
)

// TestTelegramPrivateConversation proves the whole path for a private message: the update is
// polled, typing is signalled at receipt, and the model's answer — faster than the placeholder's
// grace period — is the one message posted, in reply to it, with no placeholder and no edit. A
// second message continues the same thread (the model sees the first turn).
// slowEcho is echoModel taking a moment, as a model does: longer than the typing signal's wait
// (kit.DefaultTypingAfter), so "typing…" shows before the answer and tests can see it — a
// signal overtaken by the answer is dropped, as it would show under it.
func slowEcho(r modelserver.Request) modelserver.Reply {
	reply := echoModel(r)
	reply.Latency = kit.DefaultTypingAfter + 300*time.Millisecond
	return reply
}

func TestTelegramPrivateConversation(t *testing.T) {
	t.Parallel()
	// A generous grace period: the fast path (one message, no placeholder) must not depend on
	// how loaded the machine is.
	e := newE2E(t, func(c *config.Config) { c.Runs.PlaceholderAfter = time.Minute })
	e.model.SetFunc(slowEcho)
	e.start()
	_, msgID := e.tg.PushPrivate(ann, "hello bot")
	got := e.waitAnswers(ann.ID, 1)
	if v := visible(got[0]); !strings.Contains(v, "echo: hello bot") {
		t.Fatalf("answer shows %q, want the model's answer", v)
	}
	if got[0].ReplyTo != msgID {
		t.Errorf("answer replies to %d, want the user's message %d", got[0].ReplyTo, msgID)
	}
	if got[0].Edits != 0 || e.tg.Count("editMessageText") != 0 {
		t.Errorf("the answer was edited (%d edits, %d editMessageText calls); a fast answer is one message", got[0].Edits, e.tg.Count("editMessageText"))
	}
	if n := e.tg.Count("sendMessage"); n != 1 {
		t.Errorf("sendMessage called %d times, want 1 (the answer)", n)
	}
	if e.tg.ChatActions(ann.ID, "typing") == 0 {
		t.Error("no typing signal while the run worked")
	}

	e.tg.PushPrivate(ann, "and again")
	got = e.waitAnswers(ann.ID, 2)
	if v := visible(got[1]); !strings.Contains(v, "echo: and again") {
		t.Fatalf("second answer shows %q", v)
	}
	reqs := e.model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model called %d times, want 2", len(reqs))
	}
	if !hasMessage(reqs[1].Messages, "user", "hello bot") || !hasMessage(reqs[1].Messages, "assistant", "echo: hello bot") {
		t.Errorf("the second request lacks the first turn: %+v", reqs[1].Messages)
	}
}

// TestTelegramMalformedUpdateSkippedAndCounted proves an update the bot cannot read is skipped —
// the message behind it is answered — and counted as refused for being malformed.
func TestTelegramMalformedUpdateSkippedAndCounted(t *testing.T) {
	t.Parallel()
	e := newE2E(t, nil)
	r := e.start()
	e.tg.PushVerbatim([]byte(`{"message":{"text":"no update id"}}`))
	e.tg.PushPrivate(ann, "after the bad one")
	got := e.waitAnswers(ann.ID, 1)
	if v := visible(got[0]); !strings.Contains(v, "echo: after the bad one") {
		t.Fatalf("answer shows %q, want the message after the malformed update answered", v)
	}
	if n := counter(r.metrics.refused, "telegram", "malformed"); n < 1 {
		t.Errorf("malformed updates counted %v, want at least 1", n)
	}
}

// TestTelegramBlockedUserEndsTheRun proves a run whose user blocked the bot meanwhile ends once
// its answer is refused with 403 — counted, not retried (the model is asked once) and not
// dead-lettered — and that the next user is served as usual.
func TestTelegramBlockedUserEndsTheRun(t *testing.T) {
	t.Parallel()
	e := newE2E(t, nil)
	r := e.start()
	e.tg.FailChat(ann.ID, "sendMessage", 100, telegramfake.Fault{Status: 403, Description: "Forbidden: bot was blocked by the user"})
	e.tg.PushPrivate(ann, "are you there?")
	waitFor(t, "the blocked user's answer given up", 15*time.Second, func() bool {
		return counter(r.metrics.outboundErr, "telegram", "unreachable") == 1
	})
	waitFor(t, "the run to end answered", 15*time.Second, func() bool { return counter(r.metrics.runs, "answered") == 1 })
	if n := len(e.model.Requests()); n != 1 {
		t.Errorf("model called %d times, want 1 (no retry)", n)
	}
	if d, err := r.core.queue.Depth(context.Background()); err != nil || d.DeadLetters != 0 {
		t.Errorf("dead letters %d, %v; want none", d.DeadLetters, err)
	}
	e.tg.PushPrivate(bob, "hello")
	if got := e.waitAnswers(bob.ID, 1); !strings.Contains(visible(got[0]), "echo: hello") {
		t.Errorf("the next user got %q", visible(got[0]))
	}
}

// TestTelegramSlowAnswerEditsThePlaceholder proves a run slower than the placeholder's grace
// period gets a "working" placeholder in reply to the message, and that the answer is edited
// into that same placeholder: one sendMessage, nothing else left in the chat.
// TestTelegramPrivateAnswerStreamsAsDrafts: with the defaults, an answer the model streams
// for seconds shows in a private chat as native drafts while it is written and ends as one
// message — no placeholder, no edits — and no draft is left showing.
func TestTelegramPrivateAnswerStreamsAsDrafts(t *testing.T) {
	t.Parallel()
	e := newE2E(t, nil)
	if !e.cfg.Telegram.Drafts {
		t.Fatal("drafts are not the default")
	}
	answer := strings.Repeat("A sentence the model writes slowly. ", 40)
	e.model.SetFunc(func(modelserver.Request) modelserver.Reply {
		return modelserver.Reply{Content: answer, ChunkSize: 64, Latency: 3 * time.Second}
	})
	e.start()
	e.tg.PushPrivate(ann, "write slowly")
	got := e.waitAnswers(ann.ID, 1)
	if v := visible(got[0]); !strings.Contains(v, strings.TrimSpace(answer[:200])) {
		t.Fatalf("the answer shows %q", v)
	}
	if n := len(e.tg.Drafts(ann.ID)); n == 0 {
		t.Error("no draft was shown while the answer was written")
	}
	if n := e.tg.Count("editMessageText"); n != 0 {
		t.Errorf("%d edits, want none: the answer is one message", n)
	}
	if posted := e.tg.Posted(ann.ID); len(posted) != 1 || isPlaceholder(posted[0]) {
		t.Errorf("%d messages posted, want the answer alone", len(posted))
	}
	if d, shown := e.tg.ShownDraft(ann.ID, 0); shown {
		t.Errorf("a draft is still showing: %q", d.Visible)
	}
}

func TestTelegramSlowAnswerEditsThePlaceholder(t *testing.T) {
	t.Parallel()
	// The placeholder path: a private chat streams drafts instead (TestTelegramPrivateAnswerStreamsAsDrafts).
	e := newE2E(t, func(c *config.Config) { c.Telegram.Drafts = false })
	e.model.SetLatency(delivery.DefaultPlaceholderAfter + 500*time.Millisecond)
	e.start()
	_, msgID := e.tg.PushPrivate(ann, "take your time")
	var placeholder telegramfake.Message
	waitFor(t, "the working placeholder", 10*time.Second, func() bool {
		p := e.tg.Posted(ann.ID)
		if len(p) == 1 && isPlaceholder(p[0]) {
			placeholder = p[0]
			return true
		}
		return false
	})
	if placeholder.ReplyTo != msgID {
		t.Errorf("the placeholder replies to %d, want the user's message %d", placeholder.ReplyTo, msgID)
	}
	got := e.waitAnswers(ann.ID, 1)
	if got[0].ID != placeholder.ID || got[0].Edits == 0 {
		t.Errorf("the answer is message %d (%d edits), want it edited into the placeholder %d", got[0].ID, got[0].Edits, placeholder.ID)
	}
	if v := visible(got[0]); !strings.Contains(v, "echo: take your time") {
		t.Fatalf("answer shows %q, want the model's answer", v)
	}
	if n := e.tg.Count("sendMessage"); n != 1 {
		t.Errorf("sendMessage called %d times, want 1 (the placeholder)", n)
	}
}

// mention addresses the fake's bot in a group.
const mention = "@" + telegramfake.BotUsername

// TestTelegramGroupMentionGating proves that in a group only messages addressed to the bot are
// answered: an unmentioned message is ignored, a mention is answered in the group, and a reply
// to the bot's message counts as addressing it.
func TestTelegramGroupMentionGating(t *testing.T) {
	t.Parallel()
	const group = int64(-1001001)
	e := newE2E(t, nil)
	e.start()
	e.tg.PushGroup(group, ann, "just chatting among ourselves")
	e.tg.PushGroup(group, ann, mention+" what is the plan?")
	got := e.waitAnswers(group, 1)
	if v := visible(got[0]); !strings.Contains(v, "what is the plan?") {
		t.Fatalf("answer shows %q, want the answer to the mention", v)
	}
	reqs := e.model.Requests()
	if len(reqs) != 1 || hasMessage(reqs[0].Messages, "user", "just chatting") {
		t.Fatalf("model saw %d request(s); the unmentioned message must never reach it", len(reqs))
	}

	e.tg.PushMessage(telegramfake.In{Chat: telegramfake.Group(group), From: bob, Text: "and after that?", ReplyTo: got[0].ID})
	got = e.waitAnswers(group, 2)
	if v := visible(got[1]); !strings.Contains(v, "and after that?") {
		t.Fatalf("reply to the bot answered with %q", v)
	}
}

// TestTelegramStartGreetsNewUser proves a new user's first message — the /start the Telegram
// client sends — is answered with a greeting saying how to ask, not "I don't know the command",
// and never reaches the model; in a group, /start@bot says to mention the bot.
func TestTelegramStartGreetsNewUser(t *testing.T) {
	t.Parallel()
	const group = int64(-1001003)
	e := newE2E(t, nil)
	e.start()
	e.tg.PushPrivate(ann, "/start")
	got := e.waitAnswers(ann.ID, 1)
	if v := visible(got[0]); !strings.HasPrefix(v, "Hi!") || !strings.Contains(v, "just write") || strings.Contains(v, "don't know") {
		t.Fatalf("/start answered with %q, want the greeting for a direct chat", v)
	}
	e.tg.PushGroup(group, bob, "/start"+mention)
	got = e.waitAnswers(group, 1)
	if v := visible(got[0]); !strings.HasPrefix(v, "Hi!") || !strings.Contains(v, "mention me") {
		t.Fatalf("/start in a group answered with %q, want the greeting for a group", v)
	}
	if n := len(e.model.Requests()); n != 0 {
		t.Errorf("the model was called %d times; /start is answered by the router", n)
	}
}

// TestTelegramForumTopic proves an answer stays in the forum topic it was asked in
// (message_thread_id on every message), and that each topic is its own conversation.
func TestTelegramForumTopic(t *testing.T) {
	t.Parallel()
	const forum = int64(-1002002)
	e := newE2E(t, nil)
	e.model.SetFunc(slowEcho) // the typing signal shows before the answer
	e.start()
	e.tg.PushTopic(forum, 77, ann, mention+" first topic question")
	e.waitAnswers(forum, 1)
	e.tg.PushTopic(forum, 78, ann, mention+" second topic question")
	got := e.waitAnswers(forum, 2)
	for i, want := range []int{77, 78} {
		if got[i].ThreadID != want {
			t.Errorf("answer %d went to topic %d, want %d", i, got[i].ThreadID, want)
		}
	}
	if e.tg.ChatActions(forum, "typing") == 0 {
		t.Error("no typing signal in the topic")
	}
	reqs := e.model.Requests()
	if len(reqs) != 2 || hasMessage(reqs[1].Messages, "user", "first topic question") {
		t.Fatal("the second topic's run saw the first topic's conversation")
	}
}

// bookingModel asks how many people with a choice field, and answers once the tool result (the
// user's choice) comes back.
func bookingModel(r modelserver.Request) modelserver.Reply {
	if last := r.Messages[len(r.Messages)-1]; last.Role == "tool" {
		return modelserver.Text("booked: " + last.Content)
	}
	return modelserver.Calls(modelserver.ToolCall{Name: "ask_clarification",
		Arguments: `{"question":"How many people?","fields":[{"id":"people","label":"People","kind":"choice","options":["2","4","6"],"required":true}]}`})
}

// waitQuestion waits for a message with an inline keyboard in chat and returns it.
func (e *e2e) waitQuestion(chat int64) telegramfake.Message {
	e.tb.Helper()
	var card telegramfake.Message
	waitFor(e.tb, "the question with buttons", 10*time.Second, func() bool {
		for _, m := range e.tg.Posted(chat) {
			if len(m.Keyboard) > 0 {
				card = m
				return true
			}
		}
		return false
	})
	return card
}

// button returns the callback data of the button labelled text.
func button(tb testing.TB, m telegramfake.Message, text string) string {
	tb.Helper()
	for _, row := range m.Keyboard {
		for _, b := range row {
			if b.Text == text {
				return b.CallbackData
			}
		}
	}
	tb.Fatalf("no button %q on %+v", text, m.Keyboard)
	return ""
}

// TestTelegramClarificationByButton proves the model's ask_clarification with a choice field
// becomes an inline keyboard, a click on an option is answered and resumes the run with that
// choice as the tool result, and the final answer arrives with no placeholder or keyboard left.
func TestTelegramClarificationByButton(t *testing.T) {
	t.Parallel()
	e := newE2E(t, nil)
	e.model.SetFunc(bookingModel)
	e.start()
	e.tg.PushPrivate(ann, "book a table")
	card := e.waitQuestion(ann.ID)
	if v := visible(card); !strings.Contains(v, "How many people?") {
		t.Fatalf("question card shows %q", v)
	}
	_, qid := e.tg.PushCallback(ann.ID, card.ID, ann, button(t, card, "4"))
	waitFor(t, "the click answered", 10*time.Second, func() bool { _, ok := e.tg.CallbackAnswer(qid); return ok })
	got := e.waitAnswers(ann.ID, 2)
	if v := visible(got[1]); !strings.Contains(v, "booked") || !strings.Contains(v, "People: 4") {
		t.Fatalf("final answer shows %q, want the booking for 4", v)
	}
	if got[0].ID != card.ID || len(got[0].Keyboard) != 0 || !strings.Contains(visible(got[0]), "People: 4") {
		t.Errorf("the question card was left as %q with keyboard %v, want it closed with the answer", visible(got[0]), got[0].Keyboard)
	}
	reqs := e.model.Requests()
	if len(reqs) != 2 || reqs[1].Messages[len(reqs[1].Messages)-1].Role != "tool" {
		t.Fatalf("model calls %d; the answer must resume the run with a tool result", len(reqs))
	}
}

// TestTelegramForeignClickRefused proves a click on someone else's question in a group gets a
// private answerCallbackQuery notice and changes nothing: the card, its keyboard and the run are
// untouched, and the asker can still answer.
func TestTelegramForeignClickRefused(t *testing.T) {
	t.Parallel()
	const group = int64(-1003003)
	e := newE2E(t, nil)
	e.model.SetFunc(bookingModel)
	e.start()
	e.tg.PushGroup(group, ann, mention+" book a table")
	card := e.waitQuestion(group)

	_, qid := e.tg.PushCallback(group, card.ID, bob, button(t, card, "6"))
	var notice string
	waitFor(t, "the foreign click answered", 10*time.Second, func() bool {
		var ok bool
		notice, ok = e.tg.CallbackAnswer(qid)
		return ok
	})
	if notice == "" {
		t.Error("the foreign click was answered without a notice")
	}
	after, _ := e.tg.Message(group, card.ID)
	if after.Text != card.Text || after.Edits != card.Edits || len(after.Keyboard) != len(card.Keyboard) {
		t.Errorf("the foreign click changed the card: %q (edits %d → %d)", visible(after), card.Edits, after.Edits)
	}
	if n := e.model.Count(); n != 1 {
		t.Errorf("model called %d times after a foreign click, want 1", n)
	}

	e.tg.PushCallback(group, card.ID, ann, button(t, card, "2"))
	got := e.waitAnswers(group, 2)
	if v := visible(got[1]); !strings.Contains(v, "People: 2") {
		t.Fatalf("the asker's answer gave %q, want People: 2", v)
	}
}

// TestTelegramLongAnswerChunked proves an answer longer than 4,096 characters arrives as
// several messages, each within the limit, with all of the text present in order and no
// placeholder left.
func TestTelegramLongAnswerChunked(t *testing.T) {
	t.Parallel()
	const words = 1500
	var b strings.Builder
	for i := range words {
		fmt.Fprintf(&b, "w%05d ", i)
	}
	long := b.String() // 10,500 characters
	e := newE2E(t, nil)
	e.model.SetFunc(func(modelserver.Request) modelserver.Reply {
		return modelserver.Reply{Content: long, ChunkSize: 512}
	})
	e.start()
	e.tg.PushPrivate(ann, "tell me everything")
	var got []telegramfake.Message
	waitFor(t, "the whole long answer", 15*time.Second, func() bool {
		got = e.tg.Posted(ann.ID)
		all := ""
		for _, m := range got {
			if isPlaceholder(m) {
				return false
			}
			all += visible(m)
		}
		return strings.Contains(all, fmt.Sprintf("w%05d", words-1))
	})
	if len(got) < 3 {
		t.Fatalf("%d messages for a 10,500-character answer, want at least 3", len(got))
	}
	var seq []string
	for i, m := range got {
		if n := utf16Len(visible(m)); n > telegramfake.MaxTextLen {
			t.Errorf("message %d is %d characters, over the limit", i, n)
		}
		seq = append(seq, wordRE.FindAllString(visible(m), -1)...)
	}
	if len(seq) != words {
		t.Fatalf("%d words arrived, want %d", len(seq), words)
	}
	for i, w := range seq {
		if want := fmt.Sprintf("w%05d", i); w != want {
			t.Fatalf("word %d is %s, want %s: text lost or out of order", i, w, want)
		}
	}
}

var wordRE = regexp.MustCompile(`w\d{5}`)

func utf16Len(s string) int { return len(utf16.Encode([]rune(s))) }

// TestTelegram429StormNoReplyLost proves a storm of 429s on sendMessage and editMessageText
// (retry_after honoured) loses no reply and leaves no placeholder: every chat ends with exactly
// its answer.
func TestTelegram429StormNoReplyLost(t *testing.T) {
	t.Parallel()
	e := newE2E(t, nil)
	e.tg.RateLimitStorm("sendMessage", 4, 1)
	e.tg.RateLimitStorm("editMessageText", 4, 1)
	e.start()
	users := []telegramfake.User{ann, bob, {ID: 4203, FirstName: "Cy"}, {ID: 4204, FirstName: "Di"}}
	for _, u := range users {
		e.tg.PushPrivate(u, "hi from "+u.FirstName)
	}
	for _, u := range users {
		got := e.waitAnswers(u.ID, 1)
		if v := visible(got[0]); !strings.Contains(v, "echo: hi from "+u.FirstName) {
			t.Errorf("%s's chat shows %q", u.FirstName, v)
		}
	}
	if n := e.tg.Count("sendMessage"); n < len(users)+4 {
		t.Errorf("sendMessage called %d times; the storm's 429s were not all met", n)
	}
}

// counter reads one labelled value of a counter vector.
func counter(v *prometheus.CounterVec, labels ...string) float64 {
	var m dto.Metric
	if err := v.WithLabelValues(labels...).Write(&m); err != nil {
		return -1
	}
	return m.GetCounter().GetValue()
}

// TestTelegramRestartMidStreamNoUpdateReplayedOrSkipped proves the Redis-kept offset: a process
// stopped while updates keep arriving and runs are in flight, and a new process on the same
// Redis prefix, together answer every update exactly once, in order per chat — none is skipped,
// and one handed over twice (by a batch cut off at the stop) is dropped by the router's dedupe.
func TestTelegramRestartMidStreamNoUpdateReplayedOrSkipped(t *testing.T) {
	t.Parallel()
	const chats, perChat = 8, 3
	e := newE2E(t, nil)
	e.model.SetLatency(20 * time.Millisecond)
	users := make([]telegramfake.User, chats)
	for i := range users {
		users[i] = telegramfake.User{ID: int64(5000 + i), FirstName: fmt.Sprintf("U%d", i)}
	}
	push := func(round int) {
		for _, u := range users {
			e.tg.PushPrivate(u, fmt.Sprintf("%s message %d", u.FirstName, round))
		}
	}
	first := e.start()
	push(0)
	waitFor(t, "runs in flight", 10*time.Second, func() bool { return e.model.Count() >= 2 })
	stopped := make(chan struct{})
	go func() { first.stop(); close(stopped) }()
	waitFor(t, "intake to stop", 10*time.Second, func() bool { return !first.intake.Load() })
	push(1) // arrives while the first process stops: refused, left for the next one
	<-stopped
	round2 := int64(0)
	for _, u := range users { // arrives while no process runs
		id, _ := e.tg.PushPrivate(u, fmt.Sprintf("%s message 2", u.FirstName))
		if round2 == 0 {
			round2 = id
		}
	}
	restartAt := len(e.tg.Calls())
	second := e.start()

	for _, u := range users {
		got := e.waitAnswers(u.ID, perChat)
		for round, m := range got {
			if want := fmt.Sprintf("echo: %s message %d", u.FirstName, round); !strings.Contains(visible(m), want) {
				t.Errorf("%s's answer %d shows %q, want %q", u.FirstName, round, visible(m), want)
			}
		}
	}
	firstIn, secondIn := counter(first.metrics.inbound, "telegram"), counter(second.metrics.inbound, "telegram")
	t.Logf("updates handed over: %v by the first process, %v by the second", firstIn, secondIn)
	inbound := firstIn + secondIn
	if inbound < chats*perChat {
		t.Errorf("the router was handed %v updates over both processes, want at least %d", inbound, chats*perChat)
	}
	// A batch the stopping process handed over only in part (intake closed between two of its
	// conversations) saves the offset of its earliest update not handed over; the updates after
	// it that were handed over come again to the next process, and the router's dedupe drops
	// them — what the user sees is checked above: every message answered exactly once.
	d := counter(first.metrics.dedupeHits, "telegram") + counter(second.metrics.dedupeHits, "telegram")
	t.Logf("%v updates came to the router again and were deduplicated", d)
	if d > chats {
		t.Errorf("%v updates were replayed to the router, more than one stopped batch's worth (%d)", d, chats)
	}
	// The second process polls from where the first stopped: at or past every offset the first
	// confirmed (no replay), at or before the first update it never saw (no skip).
	var before, after []int64
	for i, c := range e.tg.Calls() {
		if c.Method != "getUpdates" {
			continue
		}
		off, _ := strconv.ParseInt(c.Params["offset"], 10, 64)
		if i < restartAt {
			before = append(before, off)
		} else {
			after = append(after, off)
		}
	}
	if len(before) == 0 || len(after) == 0 {
		t.Fatalf("getUpdates calls before/after the restart: %d/%d", len(before), len(after))
	}
	if resumed := after[0]; resumed < slices.Max(before) || resumed > round2 {
		t.Errorf("the new process resumed at offset %d; the old one confirmed up to %d and update %d arrived while down", resumed, slices.Max(before), round2)
	}
	if n := e.tg.Count("sendMessage"); n != chats*perChat {
		t.Errorf("sendMessage called %d times, want %d (one message per update)", n, chats*perChat)
	}
}

// TestTelegramWebhookGoodAndBadSecret proves webhook mode over the app's own HTTP listener: the
// webhook is registered with its secret on start, a delivery with a wrong or missing secret is
// refused with 401 and never answered, the right secret gets 200 and an answer, and a
// redelivery of the same update is not answered twice.
func TestTelegramWebhookGoodAndBadSecret(t *testing.T) {
	t.Parallel()
	const secret = "e2e_webhook-Secret-42"
	e := newE2E(t, func(c *config.Config) {
		c.Telegram.Mode = config.TelegramWebhook
		c.Telegram.WebhookURL = "https://bot.example.test/hooks/telegram"
		c.Telegram.WebhookSecret = secret
	})
	a := e.start()
	if wh := e.tg.Webhook(); wh.URL != e.cfg.Telegram.WebhookURL || wh.SecretToken != secret {
		t.Fatalf("webhook registered as %q (secret set: %v)", wh.URL, wh.SecretToken == secret)
	}
	e.tg.PushPrivate(ann, "via webhook")
	updates := e.tg.TakeUpdates()
	if len(updates) != 1 {
		t.Fatalf("%d updates queued, want 1", len(updates))
	}
	url := "http://" + a.listener.Addr().String() + "/hooks/telegram"
	deliveries := []struct {
		name   string
		secret string
		status int
	}{
		{"missing secret", "", http.StatusUnauthorized},
		{"wrong secret", "e2e_webhook-Secret-43", http.StatusUnauthorized},
		{"right secret", secret, http.StatusOK},
		{"redelivery", secret, http.StatusOK},
	}
	for _, d := range deliveries {
		t.Run(d.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(updates[0]))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			if d.secret != "" {
				req.Header.Set("X-Telegram-Bot-Api-Secret-Token", d.secret)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != d.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, d.status)
			}
			if d.status == http.StatusUnauthorized && e.model.Count() != 0 {
				t.Fatal("a refused delivery reached the model")
			}
		})
	}
	got := e.waitAnswers(ann.ID, 1)
	if v := visible(got[0]); !strings.Contains(v, "echo: via webhook") {
		t.Fatalf("answer shows %q", v)
	}
	if n := e.tg.Count("getUpdates"); n != 0 {
		t.Errorf("getUpdates called %d times in webhook mode", n)
	}
	if n := e.model.Count(); n != 1 {
		t.Errorf("model called %d times, want 1: the redelivery was answered again", n)
	}
	http.DefaultClient.CloseIdleConnections()
}

// TestBotRunWithEnvironment proves `bot run` configured only by BOT_ environment variables
// serves a Telegram bot end to end, never prints the token, and exits 0 when cancelled.
func TestBotRunWithEnvironment(t *testing.T) {
	t.Parallel()
	e := newE2E(t, nil)
	environ := []string{
		"BOT_TELEGRAM__TOKEN=" + e.tg.Token(),
		"BOT_TELEGRAM__API_URL=" + e.tg.URL(),
		"BOT_TELEGRAM__PACING=false",
		"BOT_LLM__BASE_URL=" + e.model.BaseURL(),
		"BOT_REDIS__URL=" + testRedisURL,
		"BOT_REDIS__PREFIX=" + e.cfg.Redis.Prefix,
		"BOT_AUTH__SIGNING_KEYS=" + testSigningKey,
		"BOT_HTTP__ADDR=127.0.0.1:0",
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	code := make(chan int, 1)
	go func() { code <- runContext(ctx, []string{"run"}, strings.NewReader(""), &stdout, &stderr, environ) }()

	e.tg.PushPrivate(ann, "hello from the environment")
	got := e.waitAnswers(ann.ID, 1)
	if v := visible(got[0]); !strings.Contains(v, "echo: hello from the environment") {
		t.Fatalf("answer shows %q", v)
	}
	cancel()
	select {
	case c := <-code:
		if c != 0 {
			t.Fatalf("bot run exited %d, want 0; stderr:\n%s", c, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("bot run did not exit after cancellation")
	}
	_, secretPart, _ := strings.Cut(e.tg.Token(), ":")
	if strings.Contains(stderr.String(), secretPart) || strings.Contains(stdout.String(), secretPart) {
		t.Error("bot run printed the bot token")
	}
}

// TestTelegramQueuedRunsWaitForTheChannelToStart proves a process that starts with runs already
// queued in Redis delivers none of them before its Telegram channel has started (getMe answered):
// the runs left by a stopped process are answered by the next one exactly once, even when its
// getMe is slow.
func TestTelegramQueuedRunsWaitForTheChannelToStart(t *testing.T) {
	t.Parallel()
	e := newE2E(t, func(c *config.Config) { c.Runs.Workers = 1 })
	e.model.SetLatency(300 * time.Millisecond)
	first := e.start()
	users := []telegramfake.User{ann, bob, {ID: 4203, FirstName: "Cy"}, {ID: 4204, FirstName: "Di"}}
	for _, u := range users {
		e.tg.PushPrivate(u, "queued for "+u.FirstName)
	}
	waitFor(t, "every message queued", 10*time.Second, func() bool {
		return counter(first.metrics.inbound, "telegram") == float64(len(users))
	})
	first.stop() // hands the run in flight back; the others stay queued in Redis
	e.model.SetLatency(0)
	e.tg.Delay("getMe", 300*time.Millisecond)
	e.start()
	for _, u := range users {
		got := e.waitAnswers(u.ID, 1)
		if v := visible(got[0]); !strings.Contains(v, "echo: queued for "+u.FirstName) {
			t.Errorf("%s's chat shows %q", u.FirstName, v)
		}
	}
}

// TestHistoryReadsAreCounted proves /metrics tells how runs read their history: a chat's first
// two runs read the whole log (an empty one, then one turn), the third only the turn since —
// switchboard_history_reads_total{read} — and the cache's room is shown.
func TestHistoryReadsAreCounted(t *testing.T) {
	t.Parallel()
	e := newE2E(t, nil)
	r := e.start()
	for i, text := range []string{"one", "two", "three"} {
		e.tg.PushPrivate(ann, text)
		e.waitAnswers(ann.ID, i+1)
	}
	waitFor(t, "the third run counted", 10*time.Second, func() bool { return counter(r.metrics.runs, "answered") == 3 })
	got := map[string]float64{}
	families, err := r.metrics.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			switch f.GetName() {
			case "switchboard_history_reads_total":
				for _, l := range m.GetLabel() {
					if l.GetName() == "read" {
						got[l.GetValue()] = m.GetCounter().GetValue()
					}
				}
			case "switchboard_history_cache_events":
				got["room"] = m.GetGauge().GetValue()
			}
		}
	}
	if got["whole"] != 2 || got["partial"] != 1 || got["room"] <= 0 {
		t.Errorf("history reads %v, want whole 2, partial 1 and some room held", got)
	}
}

// TestTelegramAnswerOutlivesAPlatformOutage proves an answer Telegram refuses for a while (502,
// past the adapter's own three tries) is not lost: the run is tried again on the outage
// schedule, each try re-sends the recorded answer without asking the model again, and the
// answer lands once when Telegram is back — not dead-lettered, not doubled.
func TestTelegramAnswerOutlivesAPlatformOutage(t *testing.T) {
	t.Parallel()
	e := newE2E(t, func(c *config.Config) { c.Runs.OutageRetryBase = 50 * time.Millisecond })
	r := e.start()
	// Two tries of the run fail (three calls each), the third gets through.
	e.tg.FailChat(ann.ID, "sendMessage", 6, telegramfake.Fault{Status: 502, Description: "Bad Gateway"})
	e.tg.PushPrivate(ann, "still there?")
	got := e.waitAnswers(ann.ID, 1)
	if !strings.Contains(visible(got[0]), "echo: still there?") {
		t.Errorf("answer %q", visible(got[0]))
	}
	waitFor(t, "the run to end answered", 15*time.Second, func() bool { return counter(r.metrics.runs, "answered") == 1 })
	if n := len(e.model.Requests()); n != 1 {
		t.Errorf("model called %d times, want 1 (the tries re-send the recorded answer)", n)
	}
	if n := counter(r.metrics.outboundErr, "telegram", "final_failed"); n != 2 {
		t.Errorf("final_failed counted %v, want 2 (two tries refused)", n)
	}
	if d, err := r.core.queue.Depth(context.Background()); err != nil || d.DeadLetters != 0 {
		t.Errorf("dead letters %d, %v; want none", d.DeadLetters, err)
	}
	// One answer, and it stays one: the next message is answered after it.
	e.tg.PushPrivate(ann, "and now?")
	got = e.waitAnswers(ann.ID, 2)
	if len(got) != 2 || !strings.Contains(visible(got[1]), "echo: and now?") {
		t.Errorf("chat shows %d messages, last %q; want the two answers", len(got), visible(got[len(got)-1]))
	}
}
