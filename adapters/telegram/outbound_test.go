package telegram

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/conv"
	telegramfake "github.com/switchboard-bot/switchboard/internal/fake/telegram"
	"github.com/switchboard-bot/switchboard/internal/poll"
	"github.com/switchboard-bot/switchboard/render"
)

func privateConv(id int64) conv.Key {
	return conv.Key{Platform: "telegram", Chat: strconv.FormatInt(id, 10)}
}

func clarificationCard() *render.Card {
	return &render.Card{
		Title:  "Which region?",
		Status: render.StatusWaiting,
		Body:   "I need **one** answer <before> I go on.",
		Form: &render.Form{Token: "clar_1", Question: "Region?", Fields: []render.FormField{
			{ID: "region", Label: "Region", Kind: render.KindChoice, Options: []string{"EU", "US", "Asia"}, Required: true},
		}},
	}
}

func TestSendCardCarriesInlineKeyboard(t *testing.T) {
	h := start(t, nil)
	ref, err := h.ch.Send(context.Background(), channels.Target{Conv: privateConv(42)}, channels.Message{Card: clarificationCard()})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	posted := h.fake.Posted(42)
	if len(posted) != 1 || strconv.Itoa(posted[0].ID) != ref.ID() {
		t.Fatalf("posted = %+v, ref %+v", posted, ref)
	}
	m := posted[0]
	if m.ParseMode != "HTML" || !strings.Contains(m.Text, "<b>one</b>") || !strings.Contains(m.Text, "&lt;before&gt;") {
		t.Fatalf("text = %q (mode %q)", m.Text, m.ParseMode)
	}
	var labels []string
	for _, row := range m.Keyboard {
		for _, b := range row {
			labels = append(labels, b.Text)
			id, err := render.DecodeAction(testKey, b.CallbackData)
			if err != nil || id.Token != "clar_1" {
				t.Fatalf("button %q data %q: %v %+v", b.Text, b.CallbackData, err, id)
			}
		}
	}
	if j := strings.Join(labels, ","); !strings.Contains(j, "EU") || !strings.Contains(j, "Asia") {
		t.Fatalf("buttons = %v", labels)
	}
}

func TestLongAnswerIsChunkedWithKeyboardOnLast(t *testing.T) {
	h := start(t, nil)
	var body strings.Builder
	for i := range 900 {
		body.WriteString("Paragraph " + strconv.Itoa(i) + " has *some* words & <symbols>.\n\n")
	}
	card := &render.Card{Title: "Report", Status: render.StatusDone, Body: body.String(),
		Actions: []render.Action{{Label: "Again", ID: render.ActionID{Kind: render.ActionButton, Token: "run_1"}}}}
	tests := []struct {
		name string
		msg  channels.Message
		kb   bool
	}{
		{"markdown text", channels.Message{Text: body.String()}, false},
		{"card", channels.Message{Card: card}, true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chat := int64(1000 + i)
			ref, err := h.ch.Send(context.Background(), channels.Target{Conv: privateConv(chat)}, tt.msg)
			if err != nil {
				t.Fatalf("Send: %v", err)
			}
			posted := h.fake.Posted(chat)
			if len(posted) < 3 || len(posted) != len(ref.IDs) {
				t.Fatalf("posted %d pieces, ref has %d", len(posted), len(ref.IDs))
			}
			for j, m := range posted {
				visible, err := telegramfake.ParseHTML(m.Text)
				if err != nil || len(utf16.Encode([]rune(visible))) > 4096 {
					t.Fatalf("piece %d: err %v, %d chars", j, err, len(visible))
				}
				if hasKB := len(m.Keyboard) > 0; hasKB != (tt.kb && j == len(posted)-1) {
					t.Fatalf("piece %d of %d has keyboard=%v", j, len(posted), hasKB)
				}
			}
			if !strings.Contains(posted[len(posted)-1].Text, "Paragraph 899") {
				t.Fatalf("last piece lacks the end of the answer")
			}
		})
	}
}

func TestEditIsThrottledCoalescedAndNotModifiedIsSuccess(t *testing.T) {
	h := start(t, nil)
	h.ch.edits = newEditThrottle(500*time.Millisecond, time.Second)
	ctx := context.Background()
	ref, err := h.ch.Send(ctx, channels.Target{Conv: privateConv(42)}, channels.Message{Text: "working…"})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	if _, err := h.ch.Edit(ctx, ref, channels.Message{Text: "step 1"}); err != nil {
		t.Fatalf("first edit: %v", err)
	}
	// Four more progress edits at once: within the interval, only the latest may land.
	var wg sync.WaitGroup
	for i := 2; i <= 5; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := h.ch.Edit(ctx, ref, channels.Message{Text: "step " + strconv.Itoa(i)}); err != nil {
				t.Errorf("edit %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	edits := h.fake.Count("editMessageText")
	if edits > 3 {
		t.Fatalf("%d editMessageText calls for 5 edits within one interval, want coalescing", edits)
	}
	// The final edit goes out at once and is never dropped; repeating it is "not modified" = success.
	for range 2 {
		if _, err := h.ch.EditFinal(ctx, ref, channels.Message{Text: "**done**"}); err != nil {
			t.Fatalf("final edit: %v", err)
		}
	}
	if got := h.fake.Posted(42); len(got) != 1 || got[0].Text != "<b>done</b>" {
		t.Fatalf("posted after final = %+v", got)
	}
	// Editing a deleted message is ErrMessageGone.
	if err := h.ch.Delete(ctx, ref); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := h.ch.EditFinal(ctx, ref, channels.Message{Text: "late"}); !errors.Is(err, channels.ErrMessageGone) {
		t.Fatalf("edit of deleted message: %v, want ErrMessageGone", err)
	}
}

func TestEditFinalSpreadsLongAnswerOverNewMessages(t *testing.T) {
	h := start(t, nil)
	ctx := context.Background()
	ref, err := h.ch.Send(ctx, channels.Target{Conv: privateConv(9)}, channels.Message{Text: "working…"})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	long := strings.Repeat("word ", 2000)
	out, err := h.ch.EditFinal(ctx, ref, channels.Message{Text: long})
	if err != nil {
		t.Fatalf("EditFinal: %v", err)
	}
	posted := h.fake.Posted(9)
	if len(out.IDs) < 2 || len(posted) != len(out.IDs) || out.ID() != ref.ID() || posted[0].Edits != 1 {
		t.Fatalf("ref %+v, posted %d, first edits %d", out, len(posted), posted[0].Edits)
	}
	// Shrinking back deletes the surplus messages: no placeholder left behind.
	if _, err := h.ch.EditFinal(ctx, out, channels.Message{Text: "short"}); err != nil {
		t.Fatalf("EditFinal short: %v", err)
	}
	if got := h.fake.Posted(9); len(got) != 1 || got[0].Text != "short" {
		t.Fatalf("after shrink = %+v", got)
	}
}

// TestRateLimitStormIsHandedBackWithNothingLost proves the adapter never waits out a 429 of a
// send beneath delivery's own retries: each 429 comes back at once as a *channels.RateLimitError
// with its retry_after (the adapter sleeps not once), and sent again as delivery sends it, every
// message is posted once.
func TestRateLimitStormIsHandedBackWithNothingLost(t *testing.T) {
	h := start(t, nil)
	var slept atomic.Int32
	h.ch.clock.Sleep = func(ctx context.Context, d time.Duration) error { slept.Add(1); return ctx.Err() }
	h.fake.RateLimitStorm("sendMessage", 4, 2)
	ctx := context.Background()
	var waits []time.Duration
	for i := range 10 {
		for {
			_, err := h.ch.Send(ctx, channels.Target{Conv: privateConv(int64(100 + i%3))}, channels.Message{Text: "msg " + strconv.Itoa(i)})
			if rl, ok := errors.AsType[*channels.RateLimitError](err); ok {
				waits = append(waits, rl.RetryAfter) // delivery would wait this long, then send again
				continue
			}
			if err != nil {
				t.Fatalf("Send %d: %v", i, err)
			}
			break
		}
	}
	total := 0
	for c := int64(100); c < 103; c++ {
		total += len(h.fake.Posted(c))
	}
	if total != 10 {
		t.Fatalf("posted %d messages, want 10", total)
	}
	if len(waits) != 4 || waits[0] != 2*time.Second || slept.Load() != 0 {
		t.Fatalf("rate limits %v, %d sleeps in the adapter; want four of 2s handed back, none slept", waits, slept.Load())
	}
}

// TestRateLimitOfALaterPieceIsWaitedOut proves a 429 after a long message's first piece was
// posted is waited out in the adapter (a resend of the whole message would post the first
// piece twice): Send succeeds with every piece posted once.
func TestRateLimitOfALaterPieceIsWaitedOut(t *testing.T) {
	h := start(t, nil)
	var waits []time.Duration
	var mu sync.Mutex
	h.ch.clock.Sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		waits = append(waits, d)
		mu.Unlock()
		return ctx.Err()
	}
	h.fake.FailChatAfter(42, "sendMessage", 1, 1, telegramfake.Fault{Status: 429, RetryAfter: 3})
	ref, err := h.ch.Send(context.Background(), channels.Target{Conv: privateConv(42)}, channels.Message{Text: strings.Repeat("word ", 1500)})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	if got := h.fake.Posted(42); len(got) != 2 || len(ref.IDs) != 2 {
		t.Fatalf("posted %d pieces, ref %v; want 2 each", len(got), ref.IDs)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(waits) != 1 || waits[0] != 3*time.Second {
		t.Fatalf("waits %v, want one of 3s", waits)
	}
}

// TestTypingNeverWaitsOutARateLimit proves the typing signal never holds its caller up and makes
// one attempt: Typing returns before the platform answers, and a 429 (however long its
// retry_after) is not waited out or retried, so the receipt of a message — the router sends typing
// inside the update's hand-over — is never held up by a rate-limit storm.
func TestTypingNeverWaitsOutARateLimit(t *testing.T) {
	h := start(t, nil)
	h.fake.RateLimitStorm("sendChatAction", 3, 30)
	if err := h.ch.Typing(context.Background(), channels.Target{Conv: privateConv(42)}); err != nil {
		t.Fatalf("Typing = %v, want nil: the signal is sent off the caller's path", err)
	}
	poll.Until(t, "the one sendChatAction call", func() bool { return h.fake.Count("sendChatAction") == 1 })
	if _, err := h.ch.Send(context.Background(), channels.Target{Conv: privateConv(42)}, channels.Message{Text: "still sends"}); err != nil {
		t.Errorf("Send after the typing storm: %v", err)
	}
	if n := h.fake.Count("sendChatAction"); n != 1 {
		t.Errorf("%d sendChatAction calls, want 1: typing is never retried", n)
	}
}

// TestTypingSentOncePerShowing: a signal still showing in the chat is not sent again; a message
// posted there ends it, so the next one goes out.
func TestTypingSentOncePerShowing(t *testing.T) {
	h := start(t, nil)
	ctx := context.Background()
	to := channels.Target{Conv: privateConv(42)}
	for range 5 {
		if err := h.ch.Typing(ctx, to); err != nil {
			t.Fatalf("Typing: %v", err)
		}
	}
	poll.Until(t, "one typing action", func() bool { return h.fake.ChatActions(42, "typing") == 1 })
	if _, err := h.ch.Send(ctx, to, channels.Message{Text: "answer"}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	if err := h.ch.Typing(ctx, to); err != nil {
		t.Fatalf("Typing: %v", err)
	}
	poll.Until(t, "a second typing action after the answer", func() bool { return h.fake.ChatActions(42, "typing") == 2 })
	if n := h.fake.ChatActions(43, "typing"); n != 0 {
		t.Fatalf("typing in another chat: %d", n)
	}
}

func TestRateLimitBeyondBoundIsRateLimitError(t *testing.T) {
	h := start(t, func(c *Config) { c.MaxRetryWait = 5 * time.Second })
	h.fake.RateLimitStorm("sendMessage", 1, 60)
	_, err := h.ch.Send(context.Background(), channels.Target{Conv: privateConv(42)}, channels.Message{Text: "x"})
	var rl *channels.RateLimitError
	if !errors.As(err, &rl) || rl.RetryAfter != time.Minute {
		t.Fatalf("err = %v, want RateLimitError of 1m", err)
	}
}

func TestUnparsableHTMLFallsBackToPlainText(t *testing.T) {
	h := start(t, nil)
	h.fake.FailNext("sendMessage", 1, telegramfake.Fault{Status: 400, Description: "Bad Request: can't parse entities: unsupported start tag"})
	if _, err := h.ch.Send(context.Background(), channels.Target{Conv: privateConv(42)}, channels.Message{Text: "**bold** & more"}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	got := h.fake.Posted(42)
	if len(got) != 1 || got[0].ParseMode != "" || got[0].Text != "bold & more" {
		t.Fatalf("posted = %+v", got)
	}
}

func TestTypingAndCommandsAreSentOnlyWhenNeeded(t *testing.T) {
	h := start(t, nil)
	ctx := context.Background()
	if err := h.ch.Typing(ctx, channels.Target{Conv: conv.Key{Platform: "telegram", Chat: "-100777", Thread: "55"}}); err != nil {
		t.Fatalf("Typing: %v", err)
	}
	poll.Until(t, "the typing action", func() bool { return h.fake.ChatActions(-100777, "typing") == 1 })
	cmds := []channels.CommandSpec{{Name: "/new", Description: "Start over"}, {Name: "help", Description: "Help"}, {Name: "deadletters", AdminOnly: true}}
	for range 2 {
		if err := h.ch.RegisterCommands(ctx, cmds); err != nil {
			t.Fatalf("RegisterCommands: %v", err)
		}
	}
	if n := h.fake.Count("setMyCommands"); n != 1 {
		t.Fatalf("setMyCommands called %d times, want 1 (unchanged list skipped)", n)
	}
	if got := h.fake.Commands(); len(got) != 2 || got[0].Command != "new" {
		t.Fatalf("commands = %+v", got)
	}
}

func TestPacerSpacesSendsPerChatWithoutHoldingOthers(t *testing.T) {
	p := newPacer()
	now := time.Unix(1000, 0)
	var private []time.Duration
	for range 5 {
		private = append(private, p.reserve(42, now))
	}
	want := []time.Duration{0, 0, 0, time.Second, 2 * time.Second}
	for i := range want {
		if private[i] != want[i] {
			t.Fatalf("private waits = %v, want %v", private, want)
		}
	}
	if d := p.reserve(43, now); d != 0 {
		t.Fatalf("another chat waits %v behind a busy one", d)
	}
	for range 3 {
		p.reserve(-1, now)
	}
	if d := p.reserve(-1, now); d != 3*time.Second {
		t.Fatalf("fourth group message waits %v, want 3s (20 a minute)", d)
	}
	if d := p.reserve(42, now.Add(10*time.Second)); d != 0 {
		t.Fatalf("after a quiet spell wait = %v", d)
	}
}

// TestUnreachableChatIsClassified proves the answers meaning the bot can no longer write to a
// chat (blocked, removed, chat gone, no rights) are channels.ErrUnreachable, sent once and not
// retried, while other refusals are not.
func TestUnreachableChatIsClassified(t *testing.T) {
	cases := []struct {
		status int
		desc   string
		want   bool
	}{
		{403, "Forbidden: bot was blocked by the user", true},
		{403, "Forbidden: bot was kicked from the group chat", true},
		{403, "Forbidden: user is deactivated", true},
		{400, "Bad Request: chat not found", true},
		{400, "Bad Request: have no rights to send a message", true},
		{400, "Bad Request: TOPIC_CLOSED", true},
		{400, "Bad Request: message thread not found", true},
		{400, "Bad Request: message text is empty", false},
		{401, "Unauthorized", false},
	}
	h := start(t, nil)
	ctx := context.Background()
	for i, tc := range cases {
		chat := int64(900 + i)
		h.fake.FailChat(chat, "sendMessage", 1, telegramfake.Fault{Status: tc.status, Description: tc.desc})
		before := h.fake.Count("sendMessage")
		_, err := h.ch.Send(ctx, channels.Target{Conv: privateConv(chat)}, channels.Message{Text: "hello"})
		if err == nil {
			t.Fatalf("%d %q: Send succeeded", tc.status, tc.desc)
		}
		if got := errors.Is(err, channels.ErrUnreachable); got != tc.want {
			t.Errorf("%d %q: ErrUnreachable = %v, want %v (err %v)", tc.status, tc.desc, got, tc.want, err)
		}
		if tc.want {
			if n := h.fake.Count("sendMessage") - before; n != 1 {
				t.Errorf("%d %q: %d sendMessage calls, want 1 (no retry)", tc.status, tc.desc, n)
			}
		}
	}
}
