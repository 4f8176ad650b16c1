package discord

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/conv"
	discordfake "github.com/switchboard-bot/switchboard/internal/fake/discord"
	"github.com/switchboard-bot/switchboard/internal/poll"
	"github.com/switchboard-bot/switchboard/render"
)

func dmConv(h *harness) conv.Key {
	return conv.Key{Platform: "discord", Chat: h.fk.DM(alice.ID)}
}

func TestSendSplitsLongTextKeepingCodeBlocksWhole(t *testing.T) {
	h := newHarness(t, nil, nil)
	k := dmConv(h)
	prose := strings.Repeat("Some words to read here. ", 60) // ~1,500 characters
	var code strings.Builder
	for i := range 60 {
		code.WriteString("    line(" + strings.Repeat("x", 10) + ") // " + string(rune('a'+i%26)) + "\n")
	}
	block := "```go\n" + code.String() + "```"
	text := prose + "\n\n" + block + "\n\n" + prose
	ref, err := h.ch.Send(context.Background(), channels.Target{Conv: k}, channels.Message{Text: text})
	if err != nil {
		t.Fatal(err)
	}
	posted := h.fk.PostedByBot(k.Chat)
	if len(posted) < 2 || len(ref.IDs) != len(posted) {
		t.Fatalf("%d messages, ref %v", len(posted), ref.IDs)
	}
	whole := 0
	var all strings.Builder
	for _, m := range posted {
		if n := utf8.RuneCountInString(m.Content); n > discordfake.MaxContent {
			t.Errorf("message of %d characters", n)
		}
		if strings.Contains(m.Content, "```go\n"+code.String()+"```") {
			whole++
		}
		if c := strings.Count(m.Content, "```"); c%2 != 0 {
			t.Errorf("unbalanced fence in %q", m.Content)
		}
		all.WriteString(m.Content)
	}
	if whole != 1 {
		t.Errorf("the code block is not whole in one message")
	}
	if strings.Count(all.String(), "Some words") != 120 {
		t.Errorf("text lost or doubled: %d sentences", strings.Count(all.String(), "Some words"))
	}
}

func TestSendPingsNobody(t *testing.T) {
	h := newHarness(t, nil, nil)
	k := conv.Key{Platform: "discord", Workspace: "500", Chat: h.fk.Guild("500")}
	text := "@everyone look, @here too, and <@" + alice.ID + "> and <@&42>"
	if _, err := h.ch.Send(context.Background(), channels.Target{Conv: k}, channels.Message{Text: text}); err != nil {
		t.Fatal(err)
	}
	card := render.Card{Title: "Answer", Status: render.StatusDone, Body: text}
	if _, err := h.ch.Send(context.Background(), channels.Target{Conv: k}, channels.Message{Card: &card}); err != nil {
		t.Fatal(err)
	}
	for _, m := range h.fk.PostedByBot(k.Chat) {
		if p := discordfake.Pings(m); len(p) != 0 {
			t.Errorf("message %q pings %v", m.Text(), p)
		}
		if m.AllowedMentions == nil || m.AllowedMentions.Parse == nil || len(m.AllowedMentions.Parse) != 0 {
			t.Errorf("allowed_mentions = %+v", m.AllowedMentions)
		}
	}
}

func formCard() render.Card {
	return render.Card{Title: "Which one?", Status: render.StatusWaiting, Form: &render.Form{
		Token: "qRUN1", Question: "Pick a colour",
		Fields: []render.FormField{{Label: "Colour", Kind: render.KindChoice, Options: []string{"red", "blue"}, Required: true}},
	}}
}

// TestSendCardIsComponentsV2WithSignedComponents proves a clarification card goes out as one
// Components V2 message (the flag, no content, no embeds) showing the question, its buttons
// signed choices.
func TestSendCardIsComponentsV2WithSignedComponents(t *testing.T) {
	h := newHarness(t, nil, nil)
	k := dmConv(h)
	card := formCard()
	if _, err := h.ch.Send(context.Background(), channels.Target{Conv: k}, channels.Message{Card: &card}); err != nil {
		t.Fatal(err)
	}
	p := h.fk.PostedByBot(k.Chat)
	if len(p) != 1 || !p[0].V2() || p[0].Content != "" || len(p[0].Embeds) != 0 || !strings.Contains(p[0].Text(), "Pick a colour") {
		t.Fatalf("posted = %+v", p)
	}
	ids := discordfake.CustomIDs(p[0].Components)
	if len(ids) != 2 {
		t.Fatalf("custom ids %v", ids)
	}
	for i, id := range ids {
		a, err := render.DecodeAction(h.key, id)
		if err != nil || a.Kind != render.ActionChoose || a.Option != i || a.Token != "qRUN1" {
			t.Errorf("custom id %q: %+v %v", id, a, err)
		}
	}
}

func TestSendLongCardSplitsWithinEmbedLimits(t *testing.T) {
	h := newHarness(t, nil, nil)
	k := dmConv(h)
	card := render.Card{Title: "Long", Status: render.StatusDone, Body: strings.Repeat("A paragraph of text.\n\n", 800)}
	ref, err := h.ch.Send(context.Background(), channels.Target{Conv: k}, channels.Message{Card: &card})
	if err != nil {
		t.Fatal(err)
	}
	p := h.fk.PostedByBot(k.Chat)
	if len(p) < 2 || len(ref.IDs) != len(p) {
		t.Fatalf("%d messages", len(p))
	}
	total := 0
	for _, m := range p {
		total += strings.Count(m.Text(), "A paragraph of text.")
	}
	if total != 800 {
		t.Errorf("%d paragraphs shown, want 800", total)
	}
}

func TestEditReplacesCardWithTextAndCleansUp(t *testing.T) {
	h := newHarness(t, nil, nil)
	k := dmConv(h)
	card := formCard()
	ref, err := h.ch.Send(context.Background(), channels.Target{Conv: k}, channels.Message{Card: &card})
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.ch.Edit(context.Background(), ref, channels.Message{Text: "done"})
	if err != nil {
		t.Fatal(err)
	}
	// The card went out as Components V2, which a message keeps: the text shows in a text
	// display, and the card's container and buttons are gone.
	p := h.fk.PostedByBot(k.Chat)
	if len(p) != 1 || !p[0].V2() || strings.Join(discordfake.TextDisplays(p[0].Components), "|") != "done" ||
		len(discordfake.CustomIDs(p[0].Components)) != 0 || len(p[0].Embeds) != 0 || out.ID() != ref.ID() {
		t.Errorf("after edit: %+v", p)
	}
	if err := h.ch.Delete(context.Background(), ref); err != nil {
		t.Fatal(err)
	}
	if err := h.ch.Delete(context.Background(), ref); err != nil {
		t.Errorf("deleting a deleted message: %v", err)
	}
	_, err = h.ch.Edit(context.Background(), ref, channels.Message{Text: "again"})
	if !errors.Is(err, channels.ErrMessageGone) {
		t.Errorf("editing a deleted message: %v", err)
	}
}

// TestRateLimitsAreHandedBackWithoutDoubling proves a send's 429s (a route's and the global
// one) come back to delivery, whose retries (channels.RetryRateLimited) post each message once.
func TestRateLimitsAreHandedBackWithoutDoubling(t *testing.T) {
	h := newHarness(t, nil, nil)
	k := dmConv(h)
	send := func(text string) error {
		return channels.RetryRateLimited(context.Background(), time.Second, 5, func(ctx context.Context) error {
			_, err := h.ch.Send(ctx, channels.Target{Conv: k}, channels.Message{Text: text})
			return err
		})
	}
	h.fk.RateLimitStorm("POST", discordfake.RouteMessages, 3, 20*time.Millisecond)
	if err := send("once"); err != nil {
		t.Fatal(err)
	}
	h.fk.GlobalRateLimit(2, 20*time.Millisecond)
	if err := send("twice"); err != nil {
		t.Fatal(err)
	}
	p := h.fk.PostedByBot(k.Chat)
	if len(p) != 2 || p[0].Content != "once" || p[1].Content != "twice" {
		t.Errorf("posted = %+v", p)
	}
}

func TestLongRateLimitIsRateLimitError(t *testing.T) {
	h := newHarness(t, nil, func(c *Config) { c.MaxRetryWait = 50 * time.Millisecond })
	k := dmConv(h)
	h.fk.RateLimitStorm("POST", discordfake.RouteMessages, 1, 3*time.Second)
	_, err := h.ch.Send(context.Background(), channels.Target{Conv: k}, channels.Message{Text: "x"})
	var rl *channels.RateLimitError
	if !errors.As(err, &rl) || rl.RetryAfter != 3*time.Second {
		t.Fatalf("err = %v", err)
	}
}

func TestErrorsAreClassified(t *testing.T) {
	cases := []struct {
		name  string
		fault discordfake.Fault
		want  error
	}{
		{"unknown channel is unreachable", discordfake.Fault{Status: http.StatusNotFound, Code: 10003}, channels.ErrUnreachable},
		{"missing access is unreachable", discordfake.Fault{Status: http.StatusForbidden, Code: 50001}, channels.ErrUnreachable},
		{"a refused card body is ErrCardRefused", discordfake.Fault{Status: http.StatusBadRequest, Code: 50035}, channels.ErrCardRefused},
		{"a revoked token is ErrUnauthorized", discordfake.Fault{Status: http.StatusUnauthorized}, channels.ErrUnauthorized},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil, nil)
			k := dmConv(h)
			h.fk.FailNext("POST", discordfake.RouteMessages, 1, tc.fault)
			card := render.Card{Title: "T", Status: render.StatusDone}
			_, err := h.ch.Send(context.Background(), channels.Target{Conv: k}, channels.Message{Card: &card})
			if !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestTypingGoesToTheConversationsChannel(t *testing.T) {
	h := newHarness(t, nil, nil)
	k := dmConv(h)
	for range 3 {
		if err := h.ch.Typing(context.Background(), channels.Target{Conv: k}); err != nil {
			t.Fatal(err)
		}
	}
	poll.Until(t, "the typing call", func() bool { return h.fk.Count("POST", discordfake.RouteTyping) == 1 })
	// Still showing: not sent again until a message ends it.
	if _, err := h.ch.Send(context.Background(), channels.Target{Conv: k}, channels.Message{Text: "answer"}); err != nil {
		t.Fatal(err)
	}
	if n := h.fk.Count("POST", discordfake.RouteTyping); n != 1 {
		t.Errorf("%d typing calls, want 1 while it shows", n)
	}
	if err := h.ch.Typing(context.Background(), channels.Target{Conv: k}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "a second typing call after the message", func() bool { return h.fk.Count("POST", discordfake.RouteTyping) == 2 })
}

func TestSplitContent(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []string
	}{
		{"short", "hello", []string{"hello"}},
		{"empty", "  \n ", nil},
		{"code block moves whole", strings.Repeat("a", 50) + "\n```\n" + strings.Repeat("b", 30) + "\n```",
			[]string{strings.Repeat("a", 50), "```\n" + strings.Repeat("b", 30) + "\n```"}},
		{"paragraphs packed", "one\n\ntwo", []string{"one\n\ntwo"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := splitContent(tc.in, 64)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestSendWithTheSameKeyPostsOnce proves a message sent again under the same channels.Message
// key — the next attempt of a run whose closing message was posted but not recorded — returns
// the message Discord already made (the same nonce, enforce_nonce) instead of posting it twice,
// long messages split in pieces included; without a key every send posts.
func TestSendWithTheSameKeyPostsOnce(t *testing.T) {
	h := newHarness(t, nil, nil)
	k := conv.Key{Platform: "discord", Workspace: "500", Chat: h.fk.Guild("500")}
	long := strings.Repeat("a long answer. ", 300) // three pieces
	m := channels.Message{Text: long, Key: "01RUN:final"}
	first, err := h.ch.Send(context.Background(), channels.Target{Conv: k}, m)
	if err != nil {
		t.Fatal(err)
	}
	again, err := h.ch.Send(context.Background(), channels.Target{Conv: k}, m)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(h.fk.PostedByBot(k.Chat)); n != len(first.IDs) || len(first.IDs) < 2 {
		t.Fatalf("%d messages posted for %d pieces sent twice under one key", n, len(first.IDs))
	}
	if !slices.Equal(first.IDs, again.IDs) {
		t.Errorf("the resend returned %v, want the first send's %v", again.IDs, first.IDs)
	}
	if _, err := h.ch.Send(context.Background(), channels.Target{Conv: k}, channels.Message{Text: "no key"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.ch.Send(context.Background(), channels.Target{Conv: k}, channels.Message{Text: "no key"}); err != nil {
		t.Fatal(err)
	}
	if n := len(h.fk.PostedByBot(k.Chat)); n != len(first.IDs)+2 {
		t.Errorf("%d messages, want %d: sends without a key are not deduplicated", n, len(first.IDs)+2)
	}
}

// postsTo counts the POSTs of messages the fake received on chat, answered or refused.
func postsTo(fk *discordfake.Server, chat string) int {
	n := 0
	for _, c := range fk.Calls() {
		if c.Method == "POST" && c.Route == discordfake.RouteMessages && strings.Contains(c.Path, "/channels/"+chat+"/") {
			n++
		}
	}
	return n
}

// TestClientErrorsAreNotRetried proves a 4xx answer costs one request, never a retry loop:
// Discord counts 401, 403 and 429 answers against the invalid-request budget (10,000 in 10
// minutes, then a ban of the IP), and a retried 400 or 404 would only be refused again.
func TestClientErrorsAreNotRetried(t *testing.T) {
	cases := []struct {
		name  string
		fault discordfake.Fault
	}{
		{"400 bad request", discordfake.Fault{Status: http.StatusBadRequest, Code: 50006, Message: "Cannot send an empty message"}},
		{"403 missing access", discordfake.Fault{Status: http.StatusForbidden, Code: 50001, Message: "Missing Access"}},
		{"404 unknown channel", discordfake.Fault{Status: http.StatusNotFound, Code: 10003, Message: "Unknown Channel"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil, nil)
			k := dmConv(h)
			h.fk.FailNext("POST", discordfake.RouteMessages, 100, tc.fault)
			_, err := h.ch.Send(context.Background(), channels.Target{Conv: k}, channels.Message{Text: "hello"})
			if apiStatus(err) != tc.fault.Status {
				t.Fatalf("err = %v, want HTTP %d", err, tc.fault.Status)
			}
			if n := postsTo(h.fk, k.Chat); n != 1 {
				t.Errorf("%d requests for one send answered %d, want 1", n, tc.fault.Status)
			}
		})
	}
}

// TestRateLimitRetriesAreBounded proves a storm of 429s with a tiny retry_after is waited out,
// where the adapter waits (a later piece of a message), at most maxRateLimitRetries times, each
// after at least minRateLimitWait, then returned as a *channels.RateLimitError — not a loop of
// refused requests until MaxRetryWait runs out; a send's first piece makes one request and
// hands the rate limit (of at least minRateLimitWait) back at once.
func TestRateLimitRetriesAreBounded(t *testing.T) {
	h := newHarness(t, nil, func(c *Config) { c.MaxRetryWait = 30 * time.Second })
	k := dmConv(h)
	h.fk.RateLimitStorm("POST", discordfake.RouteMessages, 1000, time.Millisecond)
	_, err := h.ch.Send(context.Background(), channels.Target{Conv: k}, channels.Message{Text: "hello"})
	var rl *channels.RateLimitError
	if !errors.As(err, &rl) || rl.RetryAfter < minRateLimitWait || postsTo(h.fk, k.Chat) != 1 {
		t.Fatalf("Send: err = %v after %d requests, want a RateLimitError of at least %v after one", err, postsTo(h.fk, k.Chat), minRateLimitWait)
	}
	began := time.Now()
	_, err = h.ch.post(context.Background(), true, k.Chat, createBody{Content: "a later piece", AllowedMentions: allowedMentions{Parse: []string{}}})
	took := time.Since(began)
	if !errors.As(err, &rl) || rl.RetryAfter < minRateLimitWait {
		t.Fatalf("err = %v, want a RateLimitError of at least %v", err, minRateLimitWait)
	}
	if n := postsTo(h.fk, k.Chat) - 1; n != 1+maxRateLimitRetries {
		t.Errorf("%d requests, want %d (one and %d retries)", n, 1+maxRateLimitRetries, maxRateLimitRetries)
	}
	if floor := maxRateLimitRetries * minRateLimitWait; took < floor {
		t.Errorf("gave up after %v, sooner than %d retries %v apart", took, maxRateLimitRetries, minRateLimitWait)
	}
}

// TestClassifyKeepsTokensOutOfContextErrors: a call that ends with its context fails with a
// *url.Error naming the URL, and an interaction's URL holds its token.
func TestClassifyKeepsTokensOutOfContextErrors(t *testing.T) {
	const secret = "aW50ZXJhY3Rpb246MTIzNDU2Nzg5OnNlY3JldHRva2Vu"
	c := &rest{redact: newRedactor("bot-token")}
	for _, end := range []error{context.Canceled, context.DeadlineExceeded} {
		err := c.classify("edit the response", &url.Error{Op: "Patch",
			URL: "https://discord.com/api/v9/webhooks/123456789012345678/" + secret + "/messages/@original", Err: end})
		if !errors.Is(err, end) {
			t.Errorf("%v: errors.Is(%v) = false", end, err)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("the interaction token is in the error: %v", err)
		}
	}
	err := c.classify("post", &url.Error{Op: "Post", URL: "https://discord.com/api/v9/interactions/1234/" + secret + "/callback", Err: errors.New("connection reset")})
	if strings.Contains(err.Error(), secret) {
		t.Errorf("the interaction token is in the error: %v", err)
	}
}
