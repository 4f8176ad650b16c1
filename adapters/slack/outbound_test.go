package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/conv"
	slackfake "github.com/switchboard-bot/switchboard/internal/fake/slack"
	"github.com/switchboard-bot/switchboard/render"
)

func threadConv(thread string) conv.Key {
	return conv.Key{Platform: "slack", Workspace: slackfake.TeamID, Chat: "C1", Thread: thread}
}

// blockTexts returns the section texts of a message's blocks.
func blockTexts(t *testing.T, m slackfake.Message) []string {
	t.Helper()
	var bs []struct {
		Type string `json:"type"`
		Text *struct {
			Text string `json:"text"`
		} `json:"text"`
	}
	if err := json.Unmarshal([]byte(m.Blocks), &bs); err != nil {
		t.Fatalf("blocks of %s: %v", m.TS, err)
	}
	var out []string
	for _, b := range bs {
		if b.Type == "section" && b.Text != nil {
			out = append(out, b.Text.Text)
		}
	}
	return out
}

func TestSendCardInThreadWithFallback(t *testing.T) {
	h := start(t, nil)
	root := h.fake.NewTS()
	card := render.Card{Title: "Answer", Status: render.StatusDone, Body: "**bold** and `code`"}
	ref, err := h.ch.Send(context.Background(), channels.Target{Conv: threadConv(root)}, channels.Message{Card: &card})
	if err != nil || len(ref.IDs) != 1 {
		t.Fatalf("Send: %v %+v", err, ref)
	}
	m := h.fake.Posted("C1")[0]
	if m.ThreadTS != root || m.TS != ref.ID() || m.Text == "" || m.UnfurlLinks != "false" || m.UnfurlMedia != "false" {
		t.Fatalf("posted %+v", m)
	}
	if texts := blockTexts(t, m); len(texts) == 0 || !strings.Contains(texts[0], "*bold*") {
		t.Fatalf("the body is not mrkdwn: %q", texts)
	}
}

var wordRE = regexp.MustCompile(`w\d{5}`)

func TestSendSplitsLongTextWithoutLosingAny(t *testing.T) {
	h := start(t, nil)
	const words = 25000
	var b strings.Builder
	for i := range words {
		fmt.Fprintf(&b, "w%05d ", i)
		if i%500 == 499 {
			b.WriteString("\n\n")
		}
	}
	ref, err := h.ch.Send(context.Background(), channels.Target{Conv: threadConv("")}, channels.Message{Text: b.String()})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	posted := h.fake.Posted("C1")
	if len(posted) < 2 || len(posted) != len(ref.IDs) {
		t.Fatalf("%d messages (ref %d) for 175,000 characters", len(posted), len(ref.IDs))
	}
	var seq []string
	for _, m := range posted {
		if n := len([]rune(m.Text)); n > MaxText {
			t.Errorf("text of %d characters", n)
		}
		var inBlocks []string
		for _, s := range blockTexts(t, m) {
			if n := len([]rune(s)); n > MaxSectionText {
				t.Errorf("section of %d characters", n)
			}
			inBlocks = append(inBlocks, wordRE.FindAllString(s, -1)...)
		}
		if fb := wordRE.FindAllString(m.Text, -1); strings.Join(fb, " ") != strings.Join(inBlocks, " ") {
			t.Errorf("the fallback text of %s is not its blocks' content", m.TS)
		}
		seq = append(seq, inBlocks...)
	}
	if len(seq) != words {
		t.Fatalf("%d words arrived, want %d", len(seq), words)
	}
	for i, w := range seq {
		if w != fmt.Sprintf("w%05d", i) {
			t.Fatalf("word %d is %s: lost or out of order", i, w)
		}
	}
}

func TestEditUpdatesTrimsAndReportsGone(t *testing.T) {
	h := start(t, nil)
	ctx := context.Background()
	long := strings.Repeat("x ", 60000)
	ref, err := h.ch.Send(ctx, channels.Target{Conv: threadConv("")}, channels.Message{Text: long})
	if err != nil || len(ref.IDs) < 2 {
		t.Fatalf("Send: %v %+v", err, ref)
	}
	out, err := h.ch.Edit(ctx, ref, channels.Message{Text: "short now"})
	if err != nil || len(out.IDs) != 1 || out.ID() != ref.ID() {
		t.Fatalf("Edit: %v %+v", err, out)
	}
	posted := h.fake.Posted("C1")
	if len(posted) != 1 || posted[0].Text != "short now" || posted[0].Edits != 1 {
		t.Fatalf("after the edit: %+v", posted)
	}
	if err := h.ch.Delete(ctx, out); err != nil || len(h.fake.Posted("C1")) != 0 {
		t.Fatalf("Delete: %v", err)
	}
	if err := h.ch.Delete(ctx, out); err != nil {
		t.Fatalf("deleting a deleted message: %v, want success", err)
	}
	if _, err := h.ch.Edit(ctx, out, channels.Message{Text: "again"}); !errors.Is(err, channels.ErrMessageGone) {
		t.Fatalf("editing a deleted message: %v, want ErrMessageGone", err)
	}
}

func TestErrorsClassified(t *testing.T) {
	h := start(t, nil)
	ctx := context.Background()
	cases := []struct {
		code string
		want error
	}{
		{"channel_not_found", channels.ErrUnreachable},
		{"not_in_channel", channels.ErrUnreachable},
		{"is_archived", channels.ErrUnreachable},
		{"invalid_blocks", channels.ErrCardRefused},
		{"msg_too_long", channels.ErrCardRefused},
		{"invalid_auth", ErrAuth},
		{"token_revoked", channels.ErrUnreachable},
	}
	for _, tc := range cases {
		t.Run(tc.code, func(t *testing.T) {
			h.fake.FailNext("chat.postMessage", 1, slackfake.Fault{Error: tc.code})
			_, err := h.ch.Send(ctx, channels.Target{Conv: threadConv("")}, channels.Message{Text: "x"})
			if !errors.Is(err, tc.want) {
				t.Fatalf("%s: %v, want %v", tc.code, err, tc.want)
			}
			if strings.Contains(err.Error(), h.fake.BotToken()) {
				t.Fatal("the error holds the token")
			}
		})
	}
}

// TestServerErrorIsTransient proves a 5xx answer to chat.postMessage is an *APIError naming the
// status and no sentinel: delivery retries it, unlike a refusal.
func TestServerErrorIsTransient(t *testing.T) {
	h := start(t, nil)
	h.fake.FailNext("chat.postMessage", 1, slackfake.Fault{Status: 503})
	_, err := h.ch.Send(context.Background(), channels.Target{Conv: threadConv("")}, channels.Message{Text: "x"})
	var ae *APIError
	if !errors.As(err, &ae) || ae.Code != "http_503" || errors.Is(err, channels.ErrUnreachable) || errors.Is(err, channels.ErrCardRefused) {
		t.Fatalf("a 503: %v, want an APIError http_503 without a sentinel", err)
	}
	if _, err := h.ch.Send(context.Background(), channels.Target{Conv: threadConv("")}, channels.Message{Text: "again"}); err != nil {
		t.Fatalf("the next post: %v", err)
	}
}

// TestTypingAfterTheAnswerShowsNothing proves the signal for a message whose answer was posted
// first — a fast run overtaking the router's signal — sets no status (it would stay after the
// answer), while a later message of the thread still shows one, cleared by its answer.
func TestTypingAfterTheAnswerShowsNothing(t *testing.T) {
	h := start(t, nil)
	ctx := context.Background()
	root := h.fake.NewTS()
	first := channels.Target{Conv: threadConv(root), ReplyTo: root}
	if _, err := h.ch.Send(ctx, first, channels.Message{Text: "the answer"}); err != nil {
		t.Fatal(err)
	}
	if err := h.ch.Typing(ctx, first); err != nil {
		t.Fatalf("Typing: %v", err)
	}
	if st := h.fake.Statuses(); len(st) != 0 {
		t.Fatalf("statuses %+v: a signal for an answered message set the status", st)
	}
	next := channels.Target{Conv: threadConv(root), ReplyTo: h.fake.NewTS()}
	if err := h.ch.Typing(ctx, next); err != nil {
		t.Fatalf("Typing: %v", err)
	}
	if _, err := h.ch.Send(ctx, next, channels.Message{Text: "the next answer"}); err != nil {
		t.Fatal(err)
	}
	if st := h.fake.Statuses(); len(st) != 2 || st[0].Status == "" || st[1].Status != "" {
		t.Fatalf("statuses %+v, want the next message's status set, then cleared", st)
	}
}

func TestTSBefore(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"", "1700000000.000001", true},
		{"1700000000.000001", "1700000000.000002", true},
		{"1700000000.000002", "1700000000.000002", false},
		{"1700000001.000000", "1700000000.999999", false},
		{"999999999.000000", "1700000000.000000", true},
		{"1700000000.000002", "ephemeral:U1", true},
		{"1700000000.000002", "1700000000.2", true},
	} {
		if got := tsBefore(tc.a, tc.b); got != tc.want {
			t.Errorf("tsBefore(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestTypingSetsTheStatusAndTheAnswerClearsIt(t *testing.T) {
	h := start(t, nil)
	ctx := context.Background()
	root := h.fake.NewTS()
	to := channels.Target{Conv: threadConv(root)}
	if err := h.ch.Typing(ctx, to); err != nil {
		t.Fatalf("Typing: %v", err)
	}
	working := render.Card{Title: "Working", Status: render.StatusWorking}
	ref, err := h.ch.Send(ctx, to, channels.Message{Card: &working})
	if err != nil {
		t.Fatal(err)
	}
	if st := h.fake.Statuses(); len(st) != 1 || st[0].Status == "" || st[0].ThreadTS != root {
		t.Fatalf("statuses %+v: the working card must not clear the status", st)
	}
	done := render.Card{Title: "Done", Status: render.StatusDone, Body: "answer"}
	if _, err := h.ch.Edit(ctx, ref, channels.Message{Card: &done}); err != nil {
		t.Fatal(err)
	}
	if st := h.fake.Statuses(); len(st) != 2 || st[1].Status != "" {
		t.Fatalf("statuses %+v, want the status cleared by the final answer", st)
	}
	// Without a thread there is no status to show.
	if err := h.ch.Typing(ctx, channels.Target{Conv: threadConv("")}); err != nil || len(h.fake.Statuses()) != 2 {
		t.Fatalf("Typing without a thread: %v, %d statuses", err, len(h.fake.Statuses()))
	}
	// A channel that refuses the status is not asked again.
	h.fake.FailChannel("C2", "assistant.threads.setStatus", 1, slackfake.Fault{Error: "not_allowed"})
	other := channels.Target{Conv: conv.Key{Platform: "slack", Workspace: slackfake.TeamID, Chat: "C2", Thread: root}}
	for range 3 {
		if err := h.ch.Typing(ctx, other); err != nil {
			t.Fatalf("Typing where refused: %v", err)
		}
	}
	if n := h.fake.Count("assistant.threads.setStatus"); n != 3 {
		t.Fatalf("setStatus called %d times, want 3 (one refusal, then never again there)", n)
	}
}

func TestInteractionsRespondAndOpenForm(t *testing.T) {
	fake := slackfake.New(t)
	form := render.Form{Token: "tok1", Question: "Details?", Fields: []render.FormField{
		{ID: "size", Label: "Size", Kind: render.KindChoice, Options: []string{"S", "M", "L"}, Required: true},
		{ID: "note", Label: "Note", Kind: render.KindText},
	}}
	var respondErr, openErr error
	rec := &recorder{respond: func(ctx context.Context, ch channels.Channel, in channels.Inbound) {
		c := ch.(*Channel)
		if in.Interaction.Data == "open" {
			openErr = c.OpenForm(ctx, in.Interaction, form)
			return
		}
		respondErr = c.RespondInteraction(ctx, in.Interaction, "Only **you** see this")
	}}
	h := startWith(t, fake, nil, rec)
	root := fake.NewTS()
	card := fake.NewTS()
	env := fake.PushAction(slackfake.Action{User: ann, Channel: "C1", MessageTS: card, ThreadTS: root, ActionID: "choose", Value: "0"})
	in := h.waitInbound(t, 1)[0]
	eventually(t, "the ack", func() bool { return fake.Acked(env) })
	want := threadConv(root)
	if in.Conv != want || in.Interaction.Data != "choose" || in.Interaction.Message.ID() != card || in.Identity.ChannelUserID != annID || in.Interaction.ID == "" {
		t.Fatalf("interaction inbound %+v / %+v", in, in.Interaction)
	}
	if respondErr != nil {
		t.Fatalf("RespondInteraction: %v", respondErr)
	}
	if e := fake.Ephemerals(); len(e) != 1 || e[0].User != ann || e[0].ThreadTS != root || e[0].Text != "Only *you* see this" {
		t.Fatalf("ephemerals %+v", e)
	}

	fake.PushAction(slackfake.Action{User: ann, Channel: "C1", MessageTS: card, ThreadTS: root, ActionID: "open", Value: "open"})
	h.waitInbound(t, 2)
	if openErr != nil {
		t.Fatalf("OpenForm: %v", openErr)
	}
	views := fake.Views()
	if len(views) != 1 {
		t.Fatalf("views %+v", views)
	}
	// Find the signed action ids of the two inputs and submit.
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
	if err := json.Unmarshal([]byte(views[0].View), &v); err != nil {
		t.Fatal(err)
	}
	var sizeAction, sizeValue, noteAction string
	for _, b := range v.Blocks {
		switch b.BlockID {
		case "f0":
			sizeAction, sizeValue = b.Element.ActionID, b.Element.Options[1].Value
		case "f1":
			noteAction = b.Element.ActionID
		}
	}
	if sizeAction == "" || noteAction == "" {
		t.Fatalf("the modal lacks its inputs: %s", views[0].View)
	}
	fake.PushSubmission(slackfake.Submission{User: ann, View: views[0],
		Values: map[string]map[string][]string{"f0": {sizeAction: {sizeValue}}},
		Texts:  map[string]map[string]string{"f1": {noteAction: "by Friday"}}})
	sub := h.waitInbound(t, 3)[2]
	if sub.Conv != want || sub.Interaction.Message.ID() != card || sub.Interaction.Data == "" {
		t.Fatalf("submission inbound %+v / %+v", sub, sub.Interaction)
	}
	if got := sub.Interaction.Values; len(got) != 2 || got["size"][0] != sizeValue || got["note"][0] != "by Friday" {
		t.Fatalf("submitted values %v, want them keyed by field id", got)
	}
}

func TestSlashCommandAnsweredEphemerally(t *testing.T) {
	h := start(t, func(c *Config) { c.Command = "/sb" })
	env := h.fake.PushSlash(slackfake.Slash{Command: "/sb", Text: "allow T1:U9", User: ann, Channel: "C1"})
	in := h.waitInbound(t, 1)[0]
	eventually(t, "the ack", func() bool { return h.fake.Acked(env) })
	if in.Command != "allow" || len(in.Args) != 1 || in.Args[0] != "T1:U9" || in.Conv.Chat != "C1" || in.Conv.Thread != "" || in.Identity.ChannelUserID != annID {
		t.Fatalf("command inbound %+v", in)
	}
	// The router's reply goes to the one who ran the command only.
	if _, err := h.ch.Send(context.Background(), channels.Target{Conv: in.Conv, ReplyTo: in.MessageID}, channels.Message{Text: "done"}); err != nil {
		t.Fatal(err)
	}
	if e := h.fake.Ephemerals(); len(e) != 1 || e[0].User != ann || e[0].Text != "done" || len(h.fake.Posted("C1")) != 0 {
		t.Fatalf("ephemerals %+v, posted %+v", e, h.fake.Posted("C1"))
	}
	// An empty command is help; another command is not ours.
	h.fake.PushSlash(slackfake.Slash{Command: "/sb", User: ann, Channel: "C1"})
	if in := h.waitInbound(t, 2)[1]; in.Command != "help" {
		t.Fatalf("empty command → %q, want help", in.Command)
	}
	env = h.fake.PushSlash(slackfake.Slash{Command: "/other", User: ann, Channel: "C1"})
	eventually(t, "the foreign command acked", func() bool { return h.fake.Acked(env) })
	if len(h.rec.got()) != 2 {
		t.Fatal("a command of another name was handed over")
	}
}

func TestUninstallStopsTheWorkspace(t *testing.T) {
	gone := make(chan string, 4)
	h := start(t, func(c *Config) { c.OnUninstall = func(team string) { gone <- team } })
	env := h.fake.Send("events_api", h.fake.Callback(map[string]any{"type": "app_uninstalled"}))
	eventually(t, "the ack", func() bool { return h.fake.Acked(env) })
	_, env = h.fake.PushMessage(slackfake.Msg{Channel: "D1", ChannelType: "im", User: ann, Text: "still there?"})
	eventually(t, "the ack", func() bool { return h.fake.Acked(env) })
	if len(h.rec.got()) != 0 || len(gone) != 1 || <-gone != slackfake.TeamID {
		t.Fatalf("after app_uninstalled: %d inbound, %d uninstalls", len(h.rec.got()), len(gone))
	}
}

func TestAssistantThreadPromptsAndTitle(t *testing.T) {
	h := start(t, func(c *Config) { c.SuggestedPrompts = []string{"What can you do?", "Plan my week"} })
	root := h.fake.NewTS()
	env := h.fake.Send("events_api", h.fake.Callback(map[string]any{"type": "assistant_thread_started",
		"assistant_thread": map[string]any{"user_id": ann, "channel_id": "D1", "thread_ts": root}}))
	eventually(t, "the ack", func() bool { return h.fake.Acked(env) })
	// The prompts are set after the ack (TestSocketAckDoesNotWaitForAssistantThreadCalls).
	eventually(t, "the prompts", func() bool { return len(h.fake.CallsOf("assistant.threads.setSuggestedPrompts")) == 1 })
	calls := h.fake.CallsOf("assistant.threads.setSuggestedPrompts")
	if len(calls) != 1 || calls[0].Params["channel_id"] != "D1" || calls[0].Params["thread_ts"] != root ||
		!strings.Contains(calls[0].Params["prompts"], "Plan my week") {
		t.Fatalf("suggested prompts %+v", calls)
	}
	long := strings.Repeat("plan ", 30)
	for _, text := range []string{long, "and then?"} {
		h.fake.PushMessage(slackfake.Msg{Channel: "D1", ChannelType: "im", User: ann, Text: text, ThreadTS: root})
	}
	got := h.waitInbound(t, 2)
	if got[0].Conv.Thread != root {
		t.Fatalf("assistant thread message conv %+v", got[0].Conv)
	}
	eventually(t, "the title", func() bool { return len(h.fake.CallsOf("assistant.threads.setTitle")) == 1 })
	titles := h.fake.CallsOf("assistant.threads.setTitle")
	if len(titles) != 1 || len([]rune(titles[0].Params["title"])) > 60 || !strings.HasPrefix(titles[0].Params["title"], "plan plan") {
		t.Fatalf("titles %+v, want one, from the first message, at most 60 characters", titles)
	}
}

// TestFindSentRecognisesAKeyedMessage proves a message sent with a key (channels.Message.Key)
// carries it in its metadata and is found again by FindSent — every piece of a long one, in
// order, at the top level (conversations.history) and in a thread (conversations.replies) — so
// a replay takes it instead of posting it twice; another key, a message sent before since, and
// an unkeyed message are not found.
func TestFindSentRecognisesAKeyedMessage(t *testing.T) {
	long := strings.Repeat("word ", 9000) // several pieces
	for _, tc := range []struct {
		name string
		conv conv.Key
		text string
	}{
		{"top level", threadConv(""), "the answer"},
		{"in a thread", threadConv("root"), "the answer"},
		{"several pieces", threadConv(""), long},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, nil)
			ctx := context.Background()
			to := channels.Target{Conv: tc.conv}
			if tc.conv.Thread != "" {
				_, to.Conv.Thread = h.fake.MessageCallback(slackfake.Msg{Channel: "C1", User: "U1", Text: "the question"})
			}
			// The fake's ts is its second and a sequence number: a "since" a second back from a
			// whole second lets no message of this test fall before it, however slow the run.
			before := time.Now().Truncate(time.Second).Add(-time.Second)
			if _, err := h.ch.Send(ctx, to, channels.Message{Text: "unkeyed"}); err != nil {
				t.Fatal(err)
			}
			sent, err := h.ch.Send(ctx, to, channels.Message{Text: tc.text, Key: "01RUN:final"})
			if err != nil {
				t.Fatal(err)
			}
			got, found, err := h.ch.FindSent(ctx, to, "01RUN:final", before)
			if err != nil || !found || strings.Join(got.IDs, ",") != strings.Join(sent.IDs, ",") {
				t.Fatalf("FindSent = %v, %v, %v; want the sent message %v", got.IDs, found, err, sent.IDs)
			}
			if _, found, err := h.ch.FindSent(ctx, to, "01RUN:card", before); err != nil || found {
				t.Errorf("FindSent of another key = %v, %v; want not found", found, err)
			}
			if _, found, err := h.ch.FindSent(ctx, to, "01RUN:final", time.Now().Add(time.Hour)); err != nil || found {
				t.Errorf("FindSent since after the send = %v, %v; want not found", found, err)
			}
		})
	}
}

// With StatusAfter, a run answered within it costs no status call, one that works longer shows
// "is thinking…" and the answer clears it, and Stop does not wait for a status still due.
func TestStatusAfterSkipsAQuickAnswerAndShowsASlowOne(t *testing.T) {
	h := start(t, func(c *Config) { c.StatusAfter = 400 * time.Millisecond })
	ctx := context.Background()
	answer := render.Card{Title: "Done", Status: render.StatusDone, Body: "answer"}

	quick := h.fake.NewTS()
	to := channels.Target{Conv: threadConv(quick), ReplyTo: quick}
	if err := h.ch.Typing(ctx, to); err != nil {
		t.Fatalf("Typing: %v", err)
	}
	if _, err := h.ch.Send(ctx, to, channels.Message{Card: &answer}); err != nil {
		t.Fatal(err)
	}

	slow := h.fake.NewTS()
	to = channels.Target{Conv: threadConv(slow), ReplyTo: slow}
	if err := h.ch.Typing(ctx, to); err != nil {
		t.Fatalf("Typing: %v", err)
	}
	eventually(t, "the slow run's status", func() bool { return len(h.fake.Statuses()) == 1 })
	if _, err := h.ch.Send(ctx, to, channels.Message{Card: &answer}); err != nil {
		t.Fatal(err)
	}
	st := h.fake.Statuses()
	if len(st) != 2 || st[0].ThreadTS != slow || st[0].Status == "" || st[1].Status != "" {
		t.Fatalf("statuses %+v, want the slow thread's set and then cleared, and none in the quick one's", st)
	}

	due := h.fake.NewTS()
	if err := h.ch.Typing(ctx, channels.Target{Conv: threadConv(due), ReplyTo: due}); err != nil {
		t.Fatal(err)
	}
	stopCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := h.ch.Stop(stopCtx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if n := h.fake.Count("assistant.threads.setStatus"); n != 2 {
		t.Fatalf("setStatus called %d times, want 2: the status due at Stop is not set", n)
	}
}

// TestStatusSetAgainAfterAWorkingCardAndAfterItLapses: a status Slack cleared — the bot posted
// a working card in the thread, or two minutes passed — is set again by the next typing
// refresh; one still showing is not set twice.
func TestStatusSetAgainAfterAWorkingCardAndAfterItLapses(t *testing.T) {
	fake := slackfake.New(t)
	ch, _ := newChannel(t, fake, func(c *Config) { c.StatusAfter = 20 * time.Millisecond })
	var ahead atomic.Int64 // how far the channel's clock runs ahead of the real one
	ch.clock.Now = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	ctx := context.Background()
	if err := ch.Start(ctx, &recorder{}); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := ch.Stop(stopCtx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	root := fake.NewTS()
	to := channels.Target{Conv: threadConv(root), ReplyTo: root}
	sets := func() int { return fake.Count("assistant.threads.setStatus") }
	typing := func() {
		t.Helper()
		if err := ch.Typing(ctx, to); err != nil {
			t.Fatalf("Typing: %v", err)
		}
	}
	scheduled := func() bool {
		st := ch.status.thread(to.Conv)
		defer st.mu.Unlock()
		return st.timer != nil
	}
	// waitSet waits for the n-th set and for the call making it to have returned (it holds the
	// thread's lock until then).
	waitSet := func(what string, n int) {
		t.Helper()
		eventually(t, what, func() bool { return sets() == n })
		st := ch.status.thread(to.Conv)
		st.mu.Unlock()
	}

	typing()
	waitSet("the first status", 1)
	typing()
	if scheduled() || sets() != 1 {
		t.Fatalf("a status still showing was set again (%d calls, scheduled %v)", sets(), scheduled())
	}

	working := render.Card{Title: "Working", Status: render.StatusWorking}
	if _, err := ch.Send(ctx, to, channels.Message{Card: &working}); err != nil {
		t.Fatal(err)
	}
	typing()
	waitSet("the status set again after the working card", 2)

	ahead.Store(int64(statusLasts + time.Second))
	typing()
	waitSet("the status set again after it lapsed", 3)
	if st := fake.Statuses(); len(st) != 3 || st[2].Status == "" || st[2].ThreadTS != root {
		t.Fatalf("statuses %+v, want three sets in the thread", st)
	}
}
