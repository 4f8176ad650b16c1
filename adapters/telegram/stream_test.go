package telegram

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/conv"
	telegramfake "github.com/switchboard-bot/switchboard/internal/fake/telegram"
	"github.com/switchboard-bot/switchboard/render"
)

// These tests drive the Streamer as delivery does (channels/delivery/stream.go): StartStream,
// AppendStream at most once per StreamEvery, StopStream with the final text; and, where a draft
// is refused, the placeholder (Send) edited (Edit, EditFinal) — also through the stream's ref,
// which delivery edits once the stream broke.

// testClock is a clock tests move by hand.
type testClock struct{ ns atomic.Int64 }

func newTestClock() *testClock {
	k := &testClock{}
	k.ns.Store(time.Now().UnixNano())
	return k
}

func (k *testClock) now() time.Time          { return time.Unix(0, k.ns.Load()) }
func (k *testClock) advance(d time.Duration) { k.ns.Add(int64(d)) }

// draftChannel is a channel with drafts on, on its own clock, not started: outbound calls need
// no intake.
func draftChannel(t *testing.T) (*Channel, *telegramfake.Server, *testClock) {
	t.Helper()
	fake := telegramfake.New(t)
	ch, _ := newChannel(t, fake, func(c *Config) { c.Drafts = true })
	clock := newTestClock()
	ch.clock.Now = clock.now
	return ch, fake, clock
}

func groupConv(id int64) conv.Key {
	return conv.Key{Platform: "telegram", Chat: strconv.FormatInt(id, 10)}
}

// visibleTexts are the texts the drafts of chatID showed, in order.
func visibleTexts(ds []telegramfake.Draft) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Visible
	}
	return out
}

// failedCalls are the calls of method the fake answered with an error.
func failedCalls(fake *telegramfake.Server, method string) int {
	n := 0
	for _, c := range fake.Calls() {
		if c.Method == method && c.Status != 200 {
			n++
		}
	}
	return n
}

// TestPrivateAnswerStreamsByDraftsThenOneSendMessage proves an answer in a private chat is
// shown as drafts of the text so far — one draft id, paced a second apart with the deltas
// between coalesced — and ends as one sendMessage replying to the message answered: no
// placeholder, no edit, and no draft left showing.
func TestPrivateAnswerStreamsByDraftsThenOneSendMessage(t *testing.T) {
	ch, fake, clock := draftChannel(t)
	ctx := context.Background()
	to := channels.Target{Conv: privateConv(ann.ID), ReplyTo: "7"}
	if !ch.CanStream(to) {
		t.Fatal("a private chat must stream by drafts")
	}
	ref, err := ch.StartStream(ctx, to, channels.StreamUpdate{Plan: "Working on it…"})
	if err != nil {
		t.Fatalf("StartStream: %v", err)
	}
	if !strings.HasPrefix(ref.ID(), draftRefPrefix) || ref.Conv != to.Conv {
		t.Fatalf("ref = %+v, want a draft's ref in the conversation", ref)
	}
	clock.advance(draftEvery)
	if err := ch.AppendStream(ctx, ref, channels.StreamUpdate{Text: "Hello **wor"}); err != nil {
		t.Fatalf("AppendStream: %v", err)
	}
	// Within the second: kept, shown with the next draft.
	if err := ch.AppendStream(ctx, ref, channels.StreamUpdate{Text: "ld**, how"}); err != nil {
		t.Fatalf("AppendStream: %v", err)
	}
	clock.advance(draftEvery)
	if err := ch.AppendStream(ctx, ref, channels.StreamUpdate{Text: " are you"}); err != nil {
		t.Fatalf("AppendStream: %v", err)
	}
	if err := ch.StopStream(ctx, ref, channels.StreamUpdate{Text: "?", Plan: "Done"}); err != nil {
		t.Fatalf("StopStream: %v", err)
	}

	drafts := fake.Drafts(ann.ID)
	want := []string{"Working on it…", "Hello **wor", "Hello world, how are you"}
	if got := visibleTexts(drafts); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("drafts showed %q, want %q", got, want)
	}
	for i, d := range drafts {
		if d.DraftID == 0 || d.DraftID != drafts[0].DraftID || d.ParseMode != "HTML" || d.ThreadID != 0 {
			t.Fatalf("draft %d = %+v: want one non-zero draft id, HTML, no topic", i, d)
		}
	}
	if !strings.Contains(drafts[2].Text, "<b>world</b>") {
		t.Errorf("the draft's markdown was not rendered: %q", drafts[2].Text)
	}
	posted := fake.Posted(ann.ID)
	if len(posted) != 1 {
		t.Fatalf("posted %d messages, want the answer alone", len(posted))
	}
	v, _ := telegramfake.ParseHTML(posted[0].Text)
	if v != "Hello world, how are you?" || posted[0].ReplyTo != 7 || posted[0].Edits != 0 {
		t.Fatalf("answer %q (reply to %d, %d edits), want the whole text replying to 7, unedited", v, posted[0].ReplyTo, posted[0].Edits)
	}
	if n := fake.Count("sendMessage"); n != 1 {
		t.Errorf("sendMessage called %d times, want 1", n)
	}
	if n := fake.Count("editMessageText"); n != 0 {
		t.Errorf("editMessageText called %d times, want none", n)
	}
	if d, ok := fake.ShownDraft(ann.ID, 0); ok {
		t.Errorf("a draft still shows after the answer: %+v", d)
	}
	// The stream is over: a late append is refused, and a second stop posts nothing more.
	if err := ch.AppendStream(ctx, ref, channels.StreamUpdate{Text: "more"}); !errors.Is(err, channels.ErrStreamRefused) {
		t.Errorf("append after the stop = %v, want ErrStreamRefused", err)
	}
	if err := ch.StopStream(ctx, ref, channels.StreamUpdate{}); err != nil || fake.Count("sendMessage") != 1 {
		t.Errorf("a second stop = %v with %d sendMessage calls, want nothing posted", err, fake.Count("sendMessage"))
	}
}

// TestGroupKeepsThePlaceholderAndEdits proves drafts are not tried outside private chats: a
// group's answer is a placeholder edited into the answer, as before, and no sendMessageDraft is
// made.
func TestGroupKeepsThePlaceholderAndEdits(t *testing.T) {
	ch, fake, clock := draftChannel(t)
	ctx := context.Background()
	to := channels.Target{Conv: groupConv(-100123)}
	if ch.CanStream(to) {
		t.Fatal("a group must not stream by drafts")
	}
	if _, err := ch.StartStream(ctx, to, channels.StreamUpdate{Text: "x"}); !errors.Is(err, channels.ErrStreamRefused) {
		t.Fatalf("StartStream in a group = %v, want ErrStreamRefused", err)
	}
	ref, err := ch.Send(ctx, to, channels.Message{Text: "_Working on it…_"})
	if err != nil {
		t.Fatalf("placeholder: %v", err)
	}
	clock.advance(3 * time.Second)
	if _, err := ch.Edit(ctx, ref, channels.Message{Text: "Hello"}); err != nil {
		t.Fatalf("Edit: %v", err)
	}
	if _, err := ch.EditFinal(ctx, ref, channels.Message{Text: "Hello world"}); err != nil {
		t.Fatalf("EditFinal: %v", err)
	}
	posted := fake.Posted(-100123)
	if len(posted) != 1 || posted[0].Text != "Hello world" || posted[0].Edits != 2 {
		t.Fatalf("posted %+v, want the placeholder edited twice into the answer", posted)
	}
	if n := fake.Count("sendMessageDraft"); n != 0 {
		t.Errorf("sendMessageDraft called %d times in a group", n)
	}
}

// TestRefusedDraftFallsBackWithoutShowingTwice proves a refused draft hands the answer to the
// placeholder and its edits, and that nothing shows twice: refused at the start (a chat where
// drafts are not allowed, a server older than Bot API 9.3), nothing was shown; refused
// mid-answer, the placeholder posted in the draft's place takes the text so far and the draft
// goes.
func TestRefusedDraftFallsBackWithoutShowingTwice(t *testing.T) {
	tests := []struct {
		name string
		// refuse makes the fake refuse the next draft.
		refuse func(fake *telegramfake.Server)
		// everywhere: the refusal holds for every chat (the server lacks the method).
		everywhere bool
		midAnswer  bool
	}{
		{name: "refused in the chat", refuse: func(fake *telegramfake.Server) {
			fake.FailChat(ann.ID, "sendMessageDraft", 1, telegramfake.Fault{Status: 400, Description: "Bad Request: TEXTDRAFT_PEER_INVALID"})
		}},
		{name: "older server", refuse: func(fake *telegramfake.Server) { fake.Unsupported("sendMessageDraft") }, everywhere: true},
		{name: "refused mid-answer", midAnswer: true, refuse: func(fake *telegramfake.Server) {
			fake.FailChat(ann.ID, "sendMessageDraft", 1, telegramfake.Fault{Status: 400, Description: "Bad Request: TEXTDRAFT_PEER_INVALID"})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch, fake, clock := draftChannel(t)
			ctx := context.Background()
			to := channels.Target{Conv: privateConv(ann.ID), ReplyTo: "3"}
			var ref channels.MessageRef
			if tt.midAnswer {
				var err error
				if ref, err = ch.StartStream(ctx, to, channels.StreamUpdate{Text: "Hello"}); err != nil {
					t.Fatalf("StartStream: %v", err)
				}
				clock.advance(draftEvery)
			}
			tt.refuse(fake)
			var err error
			if tt.midAnswer {
				err = ch.AppendStream(ctx, ref, channels.StreamUpdate{Text: " world"})
			} else {
				ref, err = ch.StartStream(ctx, to, channels.StreamUpdate{Text: "Hello"})
			}
			if !errors.Is(err, channels.ErrStreamRefused) {
				t.Fatalf("the refused draft = %v, want ErrStreamRefused", err)
			}
			if ch.CanStream(to) {
				t.Error("the chat still streams after a refusal")
			}
			if other := (channels.Target{Conv: privateConv(bobID)}); ch.CanStream(other) == tt.everywhere {
				t.Errorf("another chat streams = %v, want %v", ch.CanStream(other), !tt.everywhere)
			}

			// Delivery now posts and edits: mid-answer, in the stream's own ref (the draft's
			// place); else a placeholder of its own.
			if !tt.midAnswer {
				ref, err = ch.Send(ctx, to, channels.Message{Text: "_Working on it…_"})
				if err != nil {
					t.Fatalf("placeholder: %v", err)
				}
			}
			work, err := ch.Edit(ctx, ref, channels.Message{Text: "Hello world\n\n_Working on it…_"})
			if err != nil {
				t.Fatalf("progress edit: %v", err)
			}
			if _, ok := fake.ShownDraft(ann.ID, 0); ok {
				t.Error("the draft still shows next to the placeholder")
			}
			clock.advance(time.Second)
			// Delivery edits with the ref an edit returned, or still the stream's: both reach
			// the one message.
			for _, r := range []channels.MessageRef{ref, work} {
				if _, err := ch.EditFinal(ctx, r, channels.Message{Text: "Hello world, and more."}); err != nil {
					t.Fatalf("EditFinal(%v): %v", r.IDs, err)
				}
			}
			posted := fake.Posted(ann.ID)
			if len(posted) != 1 {
				t.Fatalf("posted %d messages, want the one placeholder", len(posted))
			}
			if v, _ := telegramfake.ParseHTML(posted[0].Text); v != "Hello world, and more." || posted[0].ReplyTo != 3 {
				t.Fatalf("the message shows %q (reply to %d), want the answer once, replying to 3", v, posted[0].ReplyTo)
			}
			if n := fake.Count("sendMessage"); n != 1 {
				t.Errorf("sendMessage called %d times, want 1", n)
			}
			// A later answer in the chat goes straight to the placeholder.
			before := fake.Count("sendMessageDraft")
			if _, err := ch.StartStream(ctx, to, channels.StreamUpdate{Text: "again"}); !errors.Is(err, channels.ErrStreamRefused) || fake.Count("sendMessageDraft") != before {
				t.Errorf("a later stream = %v after %d more drafts, want refused without a call", err, fake.Count("sendMessageDraft")-before)
			}
		})
	}
}

const bobID = 43

// TestPrivateChatTopicIsItsOwnConversation proves a message in a topic of a private chat (Bot
// API 9.3) is a conversation of its own — conv.Key.Thread is its message_thread_id — and that
// the answer's drafts and its message go to the same topic.
func TestPrivateChatTopicIsItsOwnConversation(t *testing.T) {
	h := start(t, func(c *Config) { c.Drafts = true })
	h.fake.PushPrivateTopic(ann, 77, "in my topic")
	h.fake.PushPrivate(ann, "outside it")
	got := h.waitInbound(t, 2)
	// The two are different conversations, handed over in parallel: take each by its text.
	if got[0].Text != "in my topic" {
		got[0], got[1] = got[1], got[0]
	}
	in := got[0]
	if want := (conv.Key{Platform: "telegram", Chat: strconv.FormatInt(ann.ID, 10), Thread: "77"}); in.Conv != want || !in.Direct {
		t.Fatalf("conv = %+v direct=%v, want %+v in a private chat", in.Conv, in.Direct, want)
	}
	if in.ReplyTo != "" {
		t.Errorf("the topic's root counted as a reply: %q", in.ReplyTo)
	}
	if got[1].Conv.Thread != "" || got[1].Conv.Chat != in.Conv.Chat {
		t.Errorf("the chat outside the topic = %+v, want the same chat with no thread", got[1].Conv)
	}

	ctx := context.Background()
	to := channels.Target{Conv: in.Conv, ReplyTo: in.MessageID}
	ref, err := h.ch.StartStream(ctx, to, channels.StreamUpdate{Text: "Topic answer"})
	if err != nil {
		t.Fatalf("StartStream: %v", err)
	}
	if err := h.ch.StopStream(ctx, ref, channels.StreamUpdate{Text: ", done."}); err != nil {
		t.Fatalf("StopStream: %v", err)
	}
	drafts := h.fake.Drafts(ann.ID)
	if len(drafts) != 1 || drafts[0].ThreadID != 77 {
		t.Fatalf("drafts %+v, want one in topic 77", drafts)
	}
	posted := h.fake.Posted(ann.ID)
	if len(posted) != 1 || posted[0].ThreadID != 77 || strconv.Itoa(posted[0].ReplyTo) != in.MessageID {
		t.Fatalf("posted %+v, want the answer in topic 77 replying to %s", posted, in.MessageID)
	}
	if v, _ := telegramfake.ParseHTML(posted[0].Text); v != "Topic answer, done." {
		t.Errorf("answer %q", v)
	}
}

// longText is n paragraphs of about 100 characters, numbered so that each is told apart.
func longText(n int) (string, []string) {
	paras := make([]string, n)
	for i := range paras {
		paras[i] = "Paragraph " + strconv.Itoa(1000+i) + strings.Repeat(" words", 15)
	}
	return strings.Join(paras, "\n\n"), paras
}

// TestLongStreamedAnswerEndsAsMessages proves an answer past 4,096 characters streams within the
// draft's limit — the draft shows the page being written — and ends as messages of at most
// 4,096 characters each, every paragraph once, in order.
func TestLongStreamedAnswerEndsAsMessages(t *testing.T) {
	ch, fake, clock := draftChannel(t)
	ctx := context.Background()
	text, paras := longText(100) // about 10,000 characters
	to := channels.Target{Conv: privateConv(ann.ID)}
	ref, err := ch.StartStream(ctx, to, channels.StreamUpdate{Text: text[:2000]})
	if err != nil {
		t.Fatalf("StartStream: %v", err)
	}
	for at := 2000; at < 8000; at += 2000 {
		clock.advance(draftEvery)
		if err := ch.AppendStream(ctx, ref, channels.StreamUpdate{Text: text[at : at+2000]}); err != nil {
			t.Fatalf("AppendStream: %v", err)
		}
	}
	if err := ch.StopStream(ctx, ref, channels.StreamUpdate{Text: text[8000:]}); err != nil {
		t.Fatalf("StopStream: %v", err)
	}
	if n := failedCalls(fake, "sendMessageDraft") + failedCalls(fake, "sendMessage"); n != 0 {
		t.Fatalf("%d calls refused", n)
	}
	drafts := fake.Drafts(ann.ID)
	if len(drafts) != 4 {
		t.Fatalf("%d drafts, want 4", len(drafts))
	}
	// The last draft ends with the last paragraph streamed whole, and no longer shows the first.
	last := drafts[len(drafts)-1].Visible
	streamed := text[:8000]
	whole := paras[strings.Count(streamed[:strings.LastIndex(streamed, "\n\n")], "\n\n")]
	if strings.Contains(last, paras[0]) || !strings.Contains(last, whole) {
		t.Errorf("the last draft does not show the page being written: %.80q…", last)
	}
	posted := fake.Posted(ann.ID)
	if len(posted) < 3 {
		t.Fatalf("posted %d messages, want the answer's 3 or more", len(posted))
	}
	var shown []string
	for i, m := range posted {
		v, err := telegramfake.ParseHTML(m.Text)
		if err != nil || utf16Len(v) > MaxText {
			t.Fatalf("message %d: %v, %d characters", i, err, utf16Len(v))
		}
		shown = append(shown, v)
	}
	all := strings.Join(shown, "\n\n")
	pos := 0
	for i, p := range paras {
		j := strings.Index(all[pos:], p)
		if j < 0 || strings.Count(all, p) != 1 {
			t.Fatalf("paragraph %d is missing, repeated or out of order", i)
		}
		pos += j + len(p)
	}
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r >= 0x10000 {
			n++
		}
	}
	return n
}

// TestStreamFailingPartWayLeavesItsMessagesToEdit proves a long answer whose posting fails
// part-way leaves what it posted to the stream's ref: delivery's edit of it edits those
// messages and adds the rest, so the answer shows once.
func TestStreamFailingPartWayLeavesItsMessagesToEdit(t *testing.T) {
	ch, fake, _ := draftChannel(t)
	ctx := context.Background()
	text, paras := longText(90)
	ref, err := ch.StartStream(ctx, channels.Target{Conv: privateConv(ann.ID)}, channels.StreamUpdate{Text: text[:100]})
	if err != nil {
		t.Fatalf("StartStream: %v", err)
	}
	fake.FailChatAfter(ann.ID, "sendMessage", 1, 3, telegramfake.Fault{Status: 502, Description: "Bad Gateway"})
	if err := ch.StopStream(ctx, ref, channels.StreamUpdate{Text: text[100:]}); err == nil {
		t.Fatal("StopStream succeeded through a 502")
	}
	if n := len(fake.Posted(ann.ID)); n != 1 {
		t.Fatalf("%d messages posted before the failure, want 1", n)
	}
	out, err := ch.EditFinal(ctx, ref, channels.Message{Text: text})
	if err != nil {
		t.Fatalf("EditFinal: %v", err)
	}
	posted := fake.Posted(ann.ID)
	// The first message already showed the answer's first page: it is kept ("not modified").
	if len(posted) < 3 || len(out.IDs) != len(posted) || out.ID() != strconv.Itoa(posted[0].ID) {
		t.Fatalf("posted %d messages (ref %v), want the first kept and the rest added", len(posted), out.IDs)
	}
	var all strings.Builder
	for _, m := range posted {
		v, _ := telegramfake.ParseHTML(m.Text)
		all.WriteString(v + "\n\n")
	}
	for i, p := range paras {
		if strings.Count(all.String(), p) != 1 {
			t.Fatalf("paragraph %d shows %d times", i, strings.Count(all.String(), p))
		}
	}
}

// TestRateLimitedDraftIsNotCountedShown proves a draft answered 429 goes back to delivery as a
// rate limit, and that the text it carried is not kept: delivery's retry shows it once.
func TestRateLimitedDraftIsNotCountedShown(t *testing.T) {
	ch, fake, clock := draftChannel(t)
	ctx := context.Background()
	ref, err := ch.StartStream(ctx, channels.Target{Conv: privateConv(ann.ID)}, channels.StreamUpdate{Text: "Hello"})
	if err != nil {
		t.Fatalf("StartStream: %v", err)
	}
	clock.advance(draftEvery)
	fake.RateLimitStorm("sendMessageDraft", 1, 2)
	u := channels.StreamUpdate{Text: " world"}
	if err := ch.AppendStream(ctx, ref, u); !rateLimitOf(err, 2*time.Second) {
		t.Fatalf("AppendStream = %v, want a rate limit of 2s", err)
	}
	if err := ch.AppendStream(ctx, ref, u); err != nil {
		t.Fatalf("the retry: %v", err)
	}
	if err := ch.StopStream(ctx, ref, channels.StreamUpdate{}); err != nil {
		t.Fatalf("StopStream: %v", err)
	}
	posted := fake.Posted(ann.ID)
	if len(posted) != 1 || posted[0].Text != "Hello world" {
		t.Fatalf("posted %+v, want %q once", posted, "Hello world")
	}
}

// TestDraftShowsTasksUntilTheText proves the draft shows the plan and the subagents' tasks while
// there is no text, then the tasks above the text, and that the message posted is the answer
// alone.
func TestDraftShowsTasksUntilTheText(t *testing.T) {
	ch, fake, clock := draftChannel(t)
	ctx := context.Background()
	ref, err := ch.StartStream(ctx, channels.Target{Conv: privateConv(ann.ID)}, channels.StreamUpdate{Plan: "Working with subagents…",
		Tasks: []channels.StreamTask{{ID: "a1", Title: "Flights <cheap>", Status: channels.TaskRunning}}})
	if err != nil {
		t.Fatalf("StartStream: %v", err)
	}
	clock.advance(draftEvery)
	done := channels.StreamTask{ID: "a1", Title: "Flights <cheap>", Status: channels.TaskDone, Output: "two found"}
	if err := ch.AppendStream(ctx, ref, channels.StreamUpdate{Text: "Both leave at nine.", Tasks: []channels.StreamTask{done}}); err != nil {
		t.Fatalf("AppendStream: %v", err)
	}
	if err := ch.StopStream(ctx, ref, channels.StreamUpdate{Plan: "Done"}); err != nil {
		t.Fatalf("StopStream: %v", err)
	}
	got := visibleTexts(fake.Drafts(ann.ID))
	want := []string{"Working with subagents…\n⏳ Flights <cheap>", "✅ Flights <cheap> — two found\n\nBoth leave at nine."}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("drafts showed %q, want %q", got, want)
	}
	if p := fake.Posted(ann.ID); len(p) != 1 || p[0].Text != "Both leave at nine." {
		t.Fatalf("posted %+v, want the answer alone", p)
	}
}

// TestDraftRefOfAnEarlierAttempt proves what a replay does with the stream an earlier attempt
// (another process) recorded: ending it sends nothing, its first edit posts the card in its
// place and later edits edit that message; deleting a draft never posted sends nothing.
func TestDraftRefOfAnEarlierAttempt(t *testing.T) {
	ch, fake, clock := draftChannel(t)
	ctx := context.Background()
	ref := channels.MessageRef{Conv: privateConv(ann.ID), IDs: []string{draftRef(99)}}
	if err := ch.StopStream(ctx, ref, channels.StreamUpdate{}); err != nil {
		t.Fatalf("StopStream of an unknown draft: %v", err)
	}
	if err := ch.StopStream(ctx, ref, channels.StreamUpdate{Text: "more"}); !errors.Is(err, channels.ErrStreamRefused) {
		t.Fatalf("StopStream of an unknown draft with text = %v, want ErrStreamRefused", err)
	}
	other := channels.MessageRef{Conv: privateConv(ann.ID), IDs: []string{draftRef(98)}}
	if err := ch.Delete(ctx, other); err != nil {
		t.Fatalf("Delete of a draft never posted: %v", err)
	}
	if n := len(fake.Calls()); n != 0 {
		t.Fatalf("%d calls made, want none", n)
	}
	card := render.Card{Title: "Working on it…", Status: render.StatusWorking, Body: "Hello"}
	if _, err := ch.Edit(ctx, ref, channels.Message{Card: &card}); err != nil {
		t.Fatalf("Edit: %v", err)
	}
	clock.advance(time.Second)
	if _, err := ch.EditFinal(ctx, ref, channels.Message{Text: "Hello world"}); err != nil {
		t.Fatalf("EditFinal: %v", err)
	}
	posted := fake.Posted(ann.ID)
	if len(posted) != 1 || posted[0].Text != "Hello world" || posted[0].Edits != 1 {
		t.Fatalf("posted %+v, want one message edited into the answer", posted)
	}
	if err := ch.Delete(ctx, ref); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if p := fake.Posted(ann.ID); len(p) != 0 {
		t.Fatalf("%d messages left after deleting the draft's ref", len(p))
	}
}

// TestDraftsOffByDefault proves a channel without Config.Drafts streams nowhere.
func TestDraftsOffByDefault(t *testing.T) {
	fake := telegramfake.New(t)
	ch, _ := newChannel(t, fake, nil)
	if ch.CanStream(channels.Target{Conv: privateConv(ann.ID)}) {
		t.Fatal("drafts are on without Config.Drafts")
	}
}

// TestDraftShownAgainWhileTheRunWorks proves a draft about to lapse (Telegram shows one about
// 30 s) is shown again by the run's typing signal while nothing is added to it, and that an
// answer posted ends that.
func TestDraftShownAgainWhileTheRunWorks(t *testing.T) {
	ch, fake, clock := draftChannel(t)
	t.Cleanup(ch.typer.signals.Close)
	ctx := context.Background()
	to := channels.Target{Conv: privateConv(ann.ID)}
	ref, err := ch.StartStream(ctx, to, channels.StreamUpdate{Text: "Looking it up"})
	if err != nil {
		t.Fatalf("StartStream: %v", err)
	}
	typing := func(n int) {
		t.Helper()
		if err := ch.Typing(ctx, to); err != nil {
			t.Fatalf("Typing: %v", err)
		}
		eventually(t, "the typing signal", func() bool { return fake.ChatActions(ann.ID, "typing") >= n })
	}
	clock.advance(5 * time.Second)
	typing(1)
	if n := len(fake.Drafts(ann.ID)); n != 1 {
		t.Fatalf("%d drafts after 5 s, want the first alone", n)
	}
	clock.advance(draftRefresh)
	typing(2)
	drafts := fake.Drafts(ann.ID)
	if len(drafts) != 2 || drafts[1].Visible != "Looking it up" || drafts[1].DraftID != drafts[0].DraftID {
		t.Fatalf("drafts %+v, want the draft shown again", drafts)
	}
	if err := ch.StopStream(ctx, ref, channels.StreamUpdate{Text: "."}); err != nil {
		t.Fatalf("StopStream: %v", err)
	}
	clock.advance(draftRefresh)
	typing(3)
	if n := len(fake.Drafts(ann.ID)); n != 2 {
		t.Fatalf("%d drafts, want none after the answer", n)
	}
}

// TestDroppedDraftIsNeverPosted proves a stream delivery hands over to its card (a notice, the
// run's next attempt, a final that replaces the streamed text) is dropped, not posted: no
// draft follows, and the card is posted in the draft's place — the streamed text never shows
// as a message of its own.
func TestDroppedDraftIsNeverPosted(t *testing.T) {
	ch, fake, clock := draftChannel(t)
	ctx := context.Background()
	to := channels.Target{Conv: privateConv(ann.ID), ReplyTo: "4"}
	ref, err := ch.StartStream(ctx, to, channels.StreamUpdate{Text: "PARTIAL ANSW"})
	if err != nil {
		t.Fatalf("StartStream: %v", err)
	}
	if err := ch.DropStream(ctx, ref); err != nil {
		t.Fatalf("DropStream: %v", err)
	}
	clock.advance(draftEvery)
	if err := ch.AppendStream(ctx, ref, channels.StreamUpdate{Text: "ER"}); !errors.Is(err, channels.ErrStreamRefused) {
		t.Fatalf("append after the drop = %v, want ErrStreamRefused", err)
	}
	if err := ch.StopStream(ctx, ref, channels.StreamUpdate{}); err != nil || fake.Count("sendMessage") != 0 {
		t.Fatalf("stop after the drop = %v with %d sendMessage calls, want nothing posted", err, fake.Count("sendMessage"))
	}
	card := render.Card{Title: "Working on it…", Status: render.StatusWorking, Body: "_The model is unavailable; the answer will follow._"}
	if _, err := ch.Edit(ctx, ref, channels.Message{Card: &card}); err != nil {
		t.Fatalf("Edit: %v", err)
	}
	posted := fake.Posted(ann.ID)
	if len(posted) != 1 || strings.Contains(posted[0].Text, "PARTIAL") || posted[0].ReplyTo != 4 {
		t.Fatalf("posted %+v, want the card alone, replying to 4", posted)
	}
	if n := len(fake.Drafts(ann.ID)); n != 1 {
		t.Fatalf("%d drafts, want the first alone", n)
	}
}

// TestDraftBookForgetsIdleStreams proves the streams kept for delivery's edits are forgotten
// once idle for draftMemory (swept at most once a minute), and that a stream done leaves its
// conversation's typing refresh.
func TestDraftBookForgetsIdleStreams(t *testing.T) {
	b := newDraftBook()
	now := time.Now()
	k := privateConv(ann.ID)
	old := &draftStream{conv: k, chat: ann.ID, done: true}
	b.add(draftRef(1), old, now)
	open := &draftStream{conv: privateConv(bobID), chat: bobID}
	b.add(draftRef(2), open, now.Add(time.Second))
	if b.openIn(privateConv(bobID)) != open || b.openIn(k) != nil {
		t.Fatal("only a stream not done is its conversation's open one")
	}
	ref := channels.MessageRef{Conv: k, IDs: []string{draftRef(1)}}
	b.add(draftRef(3), &draftStream{conv: privateConv(7), chat: 7}, now.Add(draftMemory+2*time.Minute))
	if b.find(ref, ann.ID) != nil || b.openIn(privateConv(bobID)) != nil {
		t.Fatal("idle streams were kept past draftMemory")
	}
	if b.find(channels.MessageRef{Conv: privateConv(7), IDs: []string{draftRef(3)}}, 7) == nil {
		t.Fatal("the stream just added was forgotten")
	}
}
