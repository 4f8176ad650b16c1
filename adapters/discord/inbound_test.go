package discord

import (
	"context"
	"fmt"
	"testing"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/conv"
	discordfake "github.com/switchboard-bot/switchboard/internal/fake/discord"
	"github.com/switchboard-bot/switchboard/internal/poll"
)

func TestDMIsTheConversation(t *testing.T) {
	h := newHarness(t, nil, nil)
	dm := h.fk.DM(alice.ID)
	id := h.fk.Post(discordfake.UserMessage{Channel: dm, Author: alice, Content: "hello there"})
	poll.Until(t, "the DM", func() bool { return h.rec.count() == 1 })
	in := h.rec.all()[0]
	want := conv.Key{Platform: "discord", Chat: dm}
	if in.Conv != want || !in.Direct || !in.AddressesBot || in.EventID != id || in.MessageID != id ||
		in.Identity.ChannelUserID != alice.ID || in.Identity.DisplayName != "alice" || in.Text != "hello there" {
		t.Errorf("inbound = %+v", in)
	}
}

func TestChannelMentionIsKeyedByTheThreadItStarts(t *testing.T) {
	h := newHarness(t, nil, nil)
	ch := h.fk.Guild("500")
	id := h.fk.Post(discordfake.UserMessage{Channel: ch, Author: alice, Content: "what is up?", MentionBot: true})
	poll.Until(t, "the mention", func() bool { return h.rec.count() == 1 })
	in := h.rec.all()[0]
	want := conv.Key{Platform: "discord", Workspace: "500", Chat: ch, Thread: id}
	if in.Conv != want || in.Direct || !in.AddressesBot || in.Text != "what is up?" {
		t.Fatalf("inbound = %+v", in)
	}
	// The first outbound call starts the thread from the message and posts in it.
	ref, err := h.ch.Send(context.Background(), channels.Target{Conv: in.Conv, ReplyTo: in.MessageID}, channels.Message{Text: "answer"})
	if err != nil {
		t.Fatal(err)
	}
	th, ok := h.fk.ChannelInfo(id)
	if !ok || th.Type != discordfake.ChannelPublicThread || th.ParentID != ch || th.Name != "what is up?" {
		t.Fatalf("thread = %+v %v", th, ok)
	}
	posted := h.fk.PostedByBot(id)
	if len(posted) != 1 || posted[0].Content != "answer" || ref.ID() != posted[0].ID || len(h.fk.PostedByBot(ch)) != 0 {
		t.Errorf("posted in thread %+v, ref %v", posted, ref)
	}
	if _, err := h.ch.Send(context.Background(), channels.Target{Conv: in.Conv}, channels.Message{Text: "more"}); err != nil {
		t.Fatal(err)
	}
	if n := h.fk.Count("POST", discordfake.RouteThreadFromMsg); n != 1 {
		t.Errorf("%d thread creations, want 1", n)
	}

	// A follow-up in the thread, without a mention, is in the same conversation.
	h.fk.Post(discordfake.UserMessage{Channel: id, Author: alice, Content: "and then?"})
	poll.Until(t, "the follow-up", func() bool { return h.rec.count() == 2 })
	f := h.rec.all()[1]
	if f.Conv != want || f.AddressesBot || f.Text != "and then?" {
		t.Errorf("follow-up = %+v", f)
	}
}

func TestUnmentionedChannelMessageIsNotAddressed(t *testing.T) {
	h := newHarness(t, nil, nil)
	ch := h.fk.Guild("500")
	h.fk.Post(discordfake.UserMessage{Channel: ch, Author: alice, Content: "just chatting"})
	poll.Until(t, "the message", func() bool { return h.rec.count() == 1 })
	in := h.rec.all()[0]
	if in.AddressesBot || in.Direct || in.Conv != (conv.Key{Platform: "discord", Workspace: "500", Chat: ch}) {
		t.Errorf("inbound = %+v", in)
	}
}

func TestRoleMentionAddressesTheBot(t *testing.T) {
	h := newHarness(t, nil, nil)
	ch := h.fk.Guild("500")
	h.fk.Post(discordfake.UserMessage{Channel: ch, Author: alice, Content: "help", MentionRole: true})
	poll.Until(t, "the message", func() bool { return h.rec.count() == 1 })
	if in := h.rec.all()[0]; !in.AddressesBot || in.Text != "help" || in.Conv.Thread != in.MessageID {
		t.Errorf("inbound = %+v", in)
	}
}

func TestReplyInThreadOffAnswersInTheChannel(t *testing.T) {
	h := newHarness(t, nil, func(c *Config) { c.ReplyInThread = false })
	ch := h.fk.Guild("500")
	id := h.fk.Post(discordfake.UserMessage{Channel: ch, Author: alice, Content: "hi", MentionBot: true})
	poll.Until(t, "the message", func() bool { return h.rec.count() == 1 })
	in := h.rec.all()[0]
	if in.Conv.Thread != "" || !in.AddressesBot {
		t.Fatalf("inbound = %+v", in)
	}
	if _, err := h.ch.Send(context.Background(), channels.Target{Conv: in.Conv, ReplyTo: id}, channels.Message{Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	p := h.fk.PostedByBot(ch)
	if len(p) != 1 || p[0].ReplyTo != id || p[0].AllowedMentions == nil || !p[0].AllowedMentions.RepliedUser ||
		len(p[0].AllowedMentions.Parse) != 0 {
		t.Errorf("reply = %+v", p)
	}
}

func TestThreadRepliesMentionDropsUnmentionedThreadMessages(t *testing.T) {
	h := newHarness(t, nil, func(c *Config) { c.ThreadReplies = ThreadRepliesMention })
	ch := h.fk.Guild("500")
	th := h.fk.UserThread(ch)
	h.fk.Post(discordfake.UserMessage{Channel: th, Author: alice, Content: "not for the bot"})
	h.fk.Post(discordfake.UserMessage{Channel: th, Author: alice, Content: "for the bot", MentionBot: true})
	poll.Until(t, "the mention", func() bool { return h.rec.count() >= 1 })
	ins := h.rec.all()
	if len(ins) != 1 || ins[0].Text != "for the bot" || ins[0].Conv != (conv.Key{Platform: "discord", Workspace: "500", Chat: ch, Thread: th}) {
		t.Errorf("inbound = %+v", ins)
	}
}

func TestOwnMessagesIgnoredOtherBotsMarked(t *testing.T) {
	h := newHarness(t, nil, nil)
	dm := h.fk.DM(alice.ID)
	h.fk.Post(discordfake.UserMessage{Channel: dm, Author: discordfake.User{ID: discordfake.BotID, Bot: true}, Content: "me"})
	h.fk.Post(discordfake.UserMessage{Channel: dm, Author: discordfake.User{ID: "333", Bot: true}, Content: "other bot"})
	poll.Until(t, "the other bot", func() bool { return h.rec.count() >= 1 })
	ins := h.rec.all()
	if len(ins) != 1 || !ins[0].FromBot || ins[0].Text != "other bot" {
		t.Errorf("inbound = %+v", ins)
	}
}

func TestAttachmentsBecomeFiles(t *testing.T) {
	h := newHarness(t, nil, nil)
	dm := h.fk.DM(alice.ID)
	h.fk.Post(discordfake.UserMessage{Channel: dm, Author: alice, Attachments: []discordfake.Attachment{
		{Filename: "notes.txt", ContentType: "text/plain", Size: 12, URL: "https://cdn.example/notes.txt"}}})
	poll.Until(t, "the file", func() bool { return h.rec.count() == 1 })
	in := h.rec.all()[0]
	want := conv.Attachment{Name: "notes.txt", MIME: "text/plain", Size: 12, URL: "https://cdn.example/notes.txt"}
	if len(in.Files) != 1 || in.Files[0] != want || in.Text != "" {
		t.Errorf("files = %+v", in.Files)
	}
}

func TestChannelOrderIsKept(t *testing.T) {
	h := newHarness(t, nil, nil)
	a, b := h.fk.DM(alice.ID), h.fk.DM(bob.ID)
	// A slow first hand-over must not let later messages of its channel overtake it.
	release := make(chan struct{})
	first := true
	h.rec.setOn(func(ctx context.Context, _ channels.Channel, in channels.Inbound) error {
		if in.Conv.Chat == a && first {
			first = false
			<-release
		}
		return nil
	})
	const n = 30
	for i := range n {
		h.fk.Post(discordfake.UserMessage{Channel: a, Author: alice, Content: fmt.Sprint(i)})
		h.fk.Post(discordfake.UserMessage{Channel: b, Author: bob, Content: fmt.Sprint(i)})
	}
	poll.Until(t, "channel b while a waits", func() bool { return h.rec.count() == n })
	close(release)
	poll.Until(t, "all messages", func() bool { return h.rec.count() == 2*n })
	next := map[string]int{}
	for _, in := range h.rec.all() {
		if in.Text != fmt.Sprint(next[in.Conv.Chat]) {
			t.Fatalf("channel %s: got %q, want %d", in.Conv.Chat, in.Text, next[in.Conv.Chat])
		}
		next[in.Conv.Chat]++
	}
}

func TestNoThreadPermissionAnswersInTheChannel(t *testing.T) {
	h := newHarness(t, nil, nil)
	ch := h.fk.Guild("500")
	id := h.fk.Post(discordfake.UserMessage{Channel: ch, Author: alice, Content: "hi", MentionBot: true})
	poll.Until(t, "the mention", func() bool { return h.rec.count() == 1 })
	h.fk.FailNext("POST", discordfake.RouteThreadFromMsg, 1, discordfake.Fault{Status: 403, Code: 50013, Message: "Missing Permissions"})
	in := h.rec.all()[0]
	if _, err := h.ch.Send(context.Background(), channels.Target{Conv: in.Conv, ReplyTo: id}, channels.Message{Text: "answer"}); err != nil {
		t.Fatal(err)
	}
	if p := h.fk.PostedByBot(ch); len(p) != 1 || p[0].Content != "answer" || p[0].ReplyTo != id {
		t.Errorf("channel shows %+v", p)
	}
}

// TestMentionOnlyIntentsWithoutThePortalSwitch proves MentionOnlyIntents start a bot whose
// Message Content Intent is off (no 4014): mentions and DMs reach the router with their text,
// guild messages without a mention (which Discord sends empty) do not.
func TestMentionOnlyIntentsWithoutThePortalSwitch(t *testing.T) {
	fk := discordfake.New(t)
	fk.AllowPrivilegedIntents(0)
	h := newHarness(t, fk, func(c *Config) { c.Intents, c.ThreadReplies = MentionOnlyIntents, ThreadRepliesMention })
	if ids := fk.Identifies(); len(ids) != 1 || !ids[0].Accepted || ids[0].Intents&discordfake.IntentMessageContent != 0 {
		t.Fatalf("identifies %+v: want one, accepted, without the message content intent", ids)
	}
	ch := fk.Guild("500")
	fk.Post(discordfake.UserMessage{Channel: ch, Author: bob, Content: "not for the bot"})
	fk.Post(discordfake.UserMessage{Channel: ch, Author: alice, Content: "for the bot", MentionBot: true})
	fk.Post(discordfake.UserMessage{Channel: fk.DM(alice.ID), Author: alice, Content: "a DM"})
	poll.Until(t, "the mention and the DM", func() bool { return h.rec.count() == 2 })
	got := map[string]bool{}
	for _, in := range h.rec.all() {
		got[in.Text] = true
	}
	if !got["for the bot"] || !got["a DM"] {
		t.Errorf("inbound %+v, want the mention and the DM", h.rec.all())
	}
	if err := h.ch.Ready(); err != nil {
		t.Errorf("Ready: %v", err)
	}
}
