package telegram

import (
	"context"
	"strconv"
	"testing"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/conv"
	telegramfake "github.com/switchboard-bot/switchboard/internal/fake/telegram"
)

func TestPrivateMessageBecomesDirectInbound(t *testing.T) {
	h := start(t, nil)
	upd, msg := h.fake.PushPrivate(ann, "hello there")
	in := h.waitInbound(t, 1)[0]
	want := channels.Inbound{
		EventID:      "telegram:update:" + strconv.FormatInt(upd, 10),
		Conv:         conv.Key{Platform: "telegram", Chat: "42"},
		Identity:     conv.Identity{Platform: "telegram", ChannelUserID: "42", DisplayName: "Ann Lee"},
		Text:         "hello there",
		AddressesBot: true,
		Direct:       true,
		MessageID:    strconv.Itoa(msg),
	}
	in.ReceivedAt = want.ReceivedAt
	if in.EventID != want.EventID || in.Conv != want.Conv || in.Identity != want.Identity || in.Text != want.Text ||
		in.AddressesBot != want.AddressesBot || in.Direct != want.Direct || in.MessageID != want.MessageID || in.FromBot {
		t.Fatalf("inbound = %+v\nwant %+v", in, want)
	}
	if err := h.ch.Ready(); err != nil {
		t.Fatalf("Ready after a poll: %v", err)
	}
}

func TestGroupMessagesCarryMentionGating(t *testing.T) {
	h := start(t, nil)
	const group = -1001
	bob := telegramfake.User{ID: 7, FirstName: "Bob"}
	botMsg, err := h.ch.Send(context.Background(), channels.Target{Conv: conv.Key{Platform: "telegram", Chat: strconv.Itoa(group)}}, channels.Message{Text: "I am here"})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	botMsgID, _ := strconv.Atoi(botMsg.ID())
	tests := []struct {
		name      string
		in        telegramfake.In
		addressed bool
		text      string
		replyTo   string
	}{
		{"plain chatter", telegramfake.In{Text: "lunch?"}, false, "lunch?", ""},
		{"leading mention", telegramfake.In{Text: "@" + telegramfake.BotUsername + " what is 2+2"}, true, "what is 2+2", ""},
		{"mention inside", telegramfake.In{Text: "hey @" + telegramfake.BotUsername + " help"}, true, "hey @" + telegramfake.BotUsername + " help", ""},
		{"other mention", telegramfake.In{Text: "@somebody_else hi"}, false, "@somebody_else hi", ""},
		{"reply to the bot", telegramfake.In{Text: "and then?", ReplyTo: botMsgID}, true, "and then?", botMsg.ID()},
		{"text mention", telegramfake.In{Text: "Switchboard go", Entities: []telegramfake.Entity{{Type: "text_mention", Offset: 0, Length: 11, User: &telegramfake.User{ID: telegramfake.BotID}}}}, true, "Switchboard go", ""},
		{"caption mention", telegramfake.In{Text: "@" + telegramfake.BotUsername + " look", Caption: true}, true, "look", ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Chat, tt.in.From = telegramfake.Group(group), bob
			h.fake.PushMessage(tt.in)
			in := h.waitInbound(t, i+1)[i]
			if in.Direct || in.AddressesBot != tt.addressed || in.Text != tt.text || in.ReplyTo != tt.replyTo {
				t.Fatalf("got Direct=%v AddressesBot=%v Text=%q ReplyTo=%q; want addressed=%v text=%q replyTo=%q",
					in.Direct, in.AddressesBot, in.Text, in.ReplyTo, tt.addressed, tt.text, tt.replyTo)
			}
			if in.Conv != (conv.Key{Platform: "telegram", Chat: strconv.Itoa(group)}) {
				t.Fatalf("conv = %+v", in.Conv)
			}
		})
	}
}

func TestGroupCommandsAddressedToThisBotOnly(t *testing.T) {
	h := start(t, nil)
	bob := telegramfake.User{ID: 7, FirstName: "Bob"}
	h.fake.PushGroup(-5, bob, "/new@other_bot")
	h.fake.PushGroup(-5, bob, "/new@"+telegramfake.BotUsername+" fresh start")
	h.fake.PushGroup(-5, bob, "/help")
	h.waitInbound(t, 2)
	eventually(t, "all updates confirmed", func() bool { return h.fake.Pending() == 0 })
	got := h.rec.got()
	if len(got) != 2 {
		t.Fatalf("got %d inbound, want 2 (the other bot's command dropped): %+v", len(got), got)
	}
	if got[0].Text != "/new fresh start" || !got[0].AddressesBot {
		t.Fatalf("addressed command = %q addressed=%v, want %q", got[0].Text, got[0].AddressesBot, "/new fresh start")
	}
	if got[1].Text != "/help" || !got[1].AddressesBot {
		t.Fatalf("bare command = %q addressed=%v", got[1].Text, got[1].AddressesBot)
	}
}

func TestForumTopicBecomesConversationThread(t *testing.T) {
	h := start(t, nil)
	h.fake.PushTopic(-100777, 55, ann, "in a topic")
	in := h.waitInbound(t, 1)[0]
	want := conv.Key{Platform: "telegram", Chat: "-100777", Thread: "55"}
	if in.Conv != want {
		t.Fatalf("conv = %+v, want %+v", in.Conv, want)
	}
	if in.ReplyTo != "" {
		t.Fatalf("topic root counted as a reply: %q", in.ReplyTo)
	}
	// The answer stays in the topic.
	ref, err := h.ch.Send(context.Background(), channels.Target{Conv: in.Conv, ReplyTo: in.MessageID}, channels.Message{Text: "answer"})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	id, _ := strconv.Atoi(ref.ID())
	m, _ := h.fake.Message(-100777, id)
	if m.ThreadID != 55 || strconv.Itoa(m.ReplyTo) != in.MessageID {
		t.Fatalf("sent thread=%d replyTo=%d, want 55 and %s", m.ThreadID, m.ReplyTo, in.MessageID)
	}
}

func TestCallbackQueryBecomesInteractionAndIsAlwaysAnswered(t *testing.T) {
	tests := []struct {
		name   string
		notice string
	}{
		{"handler answers with a notice", "This form is not yours."},
		{"handler leaves it unanswered", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := telegramfake.New(t)
			rec := &recorder{}
			if tt.notice != "" {
				rec.respond = func(ctx context.Context, ch channels.Channel, in channels.Inbound) {
					if err := ch.(channels.InteractionResponder).RespondInteraction(ctx, in.Interaction, tt.notice); err != nil {
						t.Errorf("RespondInteraction: %v", err)
					}
				}
			}
			h := startWith(t, fake, nil, rec)
			ref, err := h.ch.Send(context.Background(), channels.Target{Conv: conv.Key{Platform: "telegram", Chat: "42"}}, channels.Message{Text: "pick"})
			if err != nil {
				t.Fatalf("Send: %v", err)
			}
			msgID, _ := strconv.Atoi(ref.ID())
			_, qid := fake.PushCallback(42, msgID, ann, "1bxx.data")
			in := h.waitInbound(t, 1)[0]
			if in.Interaction == nil || in.Interaction.ID != qid || in.Interaction.Data != "1bxx.data" ||
				in.Interaction.Message.ID() != ref.ID() || in.Identity.ChannelUserID != "42" {
				t.Fatalf("interaction inbound = %+v (interaction %+v)", in, in.Interaction)
			}
			eventually(t, "callback answered", func() bool { _, ok := fake.CallbackAnswer(qid); return ok })
			if text, _ := fake.CallbackAnswer(qid); text != tt.notice {
				t.Fatalf("answer text = %q, want %q", text, tt.notice)
			}
		})
	}
}
