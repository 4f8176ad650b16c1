package discord

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/conv"
	discordfake "github.com/switchboard-bot/switchboard/internal/fake/discord"
	"github.com/switchboard-bot/switchboard/render"
)

// TestSendFileAttachesToAMessageInTheThread proves SendFile posts one message with the file as
// its attachment (a multipart post through discordgo) in the conversation's thread — started
// from the message the conversation is keyed by — with the caption as plain content that pings
// no one, cut to 2,000 characters, and that the ref names that message.
func TestSendFileAttachesToAMessageInTheThread(t *testing.T) {
	h := newHarness(t, nil, nil)
	guild := "700000000000000009"
	ch := h.fk.Guild(guild)
	mid := h.fk.Post(discordfake.UserMessage{Channel: ch, Author: alice, Content: "tell me everything", MentionBot: true})
	k := conv.Key{Platform: "discord", Workspace: guild, Chat: ch, Thread: mid}
	data := bytes.Repeat([]byte("## the rest\n\nmore of the answer\n"), 2000) // 64 KB
	caption := "@everyone *look* " + strings.Repeat("c", 2500)
	ref, err := h.ch.SendFile(context.Background(), channels.Target{Conv: k}, channels.File{Name: "answer.md", Data: data, Caption: caption})
	if err != nil {
		t.Fatalf("SendFile: %v", err)
	}
	posted := h.fk.PostedByBot(mid)
	if len(posted) != 1 || ref.ID() != posted[0].ID || len(ref.IDs) != 1 {
		t.Fatalf("posted in the thread %+v, ref %+v", posted, ref)
	}
	m := posted[0]
	if len(m.Files) != 1 || m.Files[0].Name != "answer.md" || !bytes.Equal(m.Files[0].Data, data) ||
		!strings.HasPrefix(m.Files[0].ContentType, "text/markdown") {
		t.Fatalf("the files are %+v, want answer.md with the %d bytes", m.Files, len(data))
	}
	if n := utf8.RuneCountInString(m.Content); n != discordfake.MaxContent || !strings.HasSuffix(m.Content, "…") {
		t.Errorf("the caption is %d characters, want it cut to %d", n, discordfake.MaxContent)
	}
	if !strings.Contains(m.Content, `\*look\*`) {
		t.Errorf("the caption's markdown is not escaped: %.40q", m.Content)
	}
	if pings := discordfake.Pings(m); len(pings) != 0 || m.AllowedMentions == nil || len(m.AllowedMentions.Parse) != 0 {
		t.Errorf("the file's message pings %v (allowed_mentions %+v)", pings, m.AllowedMentions)
	}
	if n := len(h.fk.PostedByBot(ch)); n != 0 {
		t.Errorf("%d bot messages in the channel itself, want the file in the thread", n)
	}
}

// TestSendFileWithAKeyPostsOnce proves a file sent again with the same key — a later attempt of
// its run after a crash left the first post unrecorded — carries the same enforced nonce, so
// Discord returns the message it already made: one file shown, the same ref. Without a key each
// post is new.
func TestSendFileWithAKeyPostsOnce(t *testing.T) {
	h := newHarness(t, nil, nil)
	k := dmConv(h)
	f := channels.File{Name: "answer.md", Data: []byte("the rest of the answer\n"), Caption: "The rest.", Key: "01RUN:file"}
	first, err := h.ch.SendFile(context.Background(), channels.Target{Conv: k}, f)
	if err != nil {
		t.Fatalf("SendFile: %v", err)
	}
	again, err := h.ch.SendFile(context.Background(), channels.Target{Conv: k}, f)
	if err != nil {
		t.Fatalf("SendFile again: %v", err)
	}
	if again.ID() != first.ID() {
		t.Errorf("the resend made message %s, want the first one back (%s)", again.ID(), first.ID())
	}
	posted := h.fk.PostedByBot(k.Chat)
	if len(posted) != 1 || posted[0].Nonce == "" {
		t.Fatalf("posted %+v, want one message with a nonce", posted)
	}
	f.Key = ""
	for range 2 {
		if _, err := h.ch.SendFile(context.Background(), channels.Target{Conv: k}, f); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(h.fk.PostedByBot(k.Chat)); n != 3 {
		t.Errorf("%d messages after two posts without a key, want 3", n)
	}
}

// TestDiscordPagesCountsWhatSendPosts proves Pages is the number of messages Send posts.
func TestDiscordPagesCountsWhatSendPosts(t *testing.T) {
	h := newHarness(t, nil, nil)
	k := dmConv(h)
	var paras []string
	for range 200 {
		paras = append(paras, "A paragraph of an answer that is long enough to fill some of a message, and a bit.")
	}
	long := strings.Join(paras, "\n\n") // about 17,000 characters
	card := render.Card{Title: "Answer", Status: render.StatusDone, Body: long}
	for _, m := range []channels.Message{{Text: "short"}, {Text: long}, {Card: &card}} {
		n, err := h.ch.Pages(m)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := h.ch.Send(context.Background(), channels.Target{Conv: k}, m)
		if err != nil {
			t.Fatal(err)
		}
		if n != len(ref.IDs) {
			t.Errorf("Pages = %d, Send posted %d", n, len(ref.IDs))
		}
	}
	if n, _ := h.ch.Pages(channels.Message{Card: &card}); n < 3 {
		t.Errorf("Pages of a 17,000-character card = %d, want several", n)
	}
}

// TestDiscordSendFileErrors proves each way a file post fails is a clear error without the
// token: a refusal (an unknown channel is channels.ErrUnreachable), a 429 longer than
// MaxRetryWait (*channels.RateLimitError), a file over 10 MiB (refused before any call); and
// that a short 429 is waited out and the file sent again whole, once.
func TestDiscordSendFileErrors(t *testing.T) {
	data := []byte("the rest of the answer\n")
	cases := []struct {
		name   string
		inject func(fk *discordfake.Server)
		data   []byte
		check  func(t *testing.T, err error)
	}{
		{"refused", func(fk *discordfake.Server) {
			fk.FailNext("POST", discordfake.RouteMessages, 1, discordfake.Fault{Status: http.StatusForbidden, Code: 50013, Message: "Missing Permissions"})
		}, data, func(t *testing.T, err error) {
			if !errors.Is(err, channels.ErrUnreachable) || !strings.Contains(err.Error(), "Missing Permissions") {
				t.Fatalf("err = %v, want Discord's refusal as ErrUnreachable", err)
			}
		}},
		{"rate limited past the wait", func(fk *discordfake.Server) {
			fk.RateLimitStorm("POST", discordfake.RouteMessages, 1, 3*time.Second)
		}, data, func(t *testing.T, err error) {
			var rl *channels.RateLimitError
			if !errors.As(err, &rl) || rl.RetryAfter != 3*time.Second {
				t.Fatalf("err = %v, want a RateLimitError of 3 s", err)
			}
		}},
		{"too large", nil, bytes.Repeat([]byte("x"), MaxFileBytes+1), func(t *testing.T, err error) {
			if !strings.Contains(err.Error(), "10 MiB") {
				t.Fatalf("err = %v, want the size limit named", err)
			}
		}},
		{"empty", nil, nil, func(t *testing.T, err error) {
			if !strings.Contains(err.Error(), "empty") {
				t.Fatalf("err = %v", err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil, func(c *Config) { c.MaxRetryWait = 50 * time.Millisecond })
			k := dmConv(h)
			if tc.inject != nil {
				tc.inject(h.fk)
			}
			_, err := h.ch.SendFile(context.Background(), channels.Target{Conv: k}, channels.File{Name: "answer.md", Data: tc.data, Caption: "The rest."})
			if err == nil {
				t.Fatal("SendFile succeeded")
			}
			tc.check(t, err)
			if strings.Contains(err.Error(), h.fk.Token()) {
				t.Errorf("the error shows the token: %v", err)
			}
			if n := len(h.fk.FilesPosted(k.Chat)); n != 0 {
				t.Errorf("%d files posted, want none", n)
			}
		})
	}
	t.Run("short rate limit", func(t *testing.T) {
		h := newHarness(t, nil, nil)
		k := dmConv(h)
		h.fk.RateLimitStorm("POST", discordfake.RouteMessages, 2, 20*time.Millisecond)
		// Handed back and sent again, as delivery does: the file is posted once.
		err := channels.RetryRateLimited(context.Background(), time.Second, 5, func(ctx context.Context) error {
			_, err := h.ch.SendFile(ctx, channels.Target{Conv: k}, channels.File{Name: "answer.md", Data: data, Caption: "The rest."})
			return err
		})
		if err != nil {
			t.Fatalf("SendFile: %v", err)
		}
		files := h.fk.FilesPosted(k.Chat)
		if len(files) != 1 || !bytes.Equal(files[0].Data, data) {
			t.Fatalf("files %+v, want the one file whole", files)
		}
	})
}

// TestDiscordPagesThenSendSendsTheCardAsRendered proves a card counted by Pages and then sent
// is posted as sending it afresh posts it, and that a different card of the same run sent after
// it is that card, never the one counted.
func TestDiscordPagesThenSendSendsTheCardAsRendered(t *testing.T) {
	h := newHarness(t, nil, nil)
	k := dmConv(h)
	ctx := context.Background()
	card := render.Card{Title: "Answer", Status: render.StatusDone, Body: "The **answer** is 42.", Footer: render.Footer{RunID: "01RUNPAGES"}}
	send := func(c render.Card) discordfake.Message {
		t.Helper()
		ref, err := h.ch.Send(ctx, channels.Target{Conv: k}, channels.Message{Card: &c})
		if err != nil {
			t.Fatal(err)
		}
		m, ok := h.fk.Message(ref.ID())
		if !ok {
			t.Fatalf("the message %s was not posted", ref.ID())
		}
		return m
	}
	fresh := send(card)
	if _, err := h.ch.Pages(channels.Message{Card: &card}); err != nil {
		t.Fatal(err)
	}
	kept := send(card)
	if kept.Content != fresh.Content || kept.Flags != fresh.Flags || !reflect.DeepEqual(kept.Components, fresh.Components) ||
		!reflect.DeepEqual(kept.Embeds, fresh.Embeds) || !strings.Contains(kept.Text(), "42") {
		t.Fatalf("sent after Pages %+v, sent afresh %+v: want the same", kept, fresh)
	}
	if _, err := h.ch.Pages(channels.Message{Card: &card}); err != nil {
		t.Fatal(err)
	}
	changed := card
	changed.Body = "Changed after counting."
	if m := send(changed); !strings.Contains(m.Text(), "Changed after counting.") || strings.Contains(m.Text(), "42") {
		t.Fatalf("posted %q, want the changed card", m.Text())
	}
}
