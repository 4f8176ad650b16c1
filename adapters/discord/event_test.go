package discord

import (
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/switchboard-bot/switchboard/core/conv"
)

func TestMessageInbound(t *testing.T) {
	bot := botIdentity{id: "900", roles: map[string]bool{"77": true}}
	user := &discordgo.User{ID: "40", Username: "ann", GlobalName: "Ann A."}
	msg := func(mut func(m *discordgo.Message)) *discordgo.Message {
		m := &discordgo.Message{ID: "10", ChannelID: "20", GuildID: "30", Author: user, Content: "hello"}
		mut(m)
		return m
	}
	channel := where{Guild: "30"}
	thread := where{Guild: "30", Parent: "5", Thread: true}
	cases := []struct {
		name      string
		m         *discordgo.Message
		w         where
		opt       inboundOptions
		ok        bool
		conv      conv.Key
		text      string
		addresses bool
	}{
		{"nickname mention", msg(func(m *discordgo.Message) {
			m.Content, m.Mentions = "<@!900> hi", []*discordgo.User{{ID: "900"}}
		}), channel, inboundOptions{replyInThread: true}, true,
			conv.Key{Platform: "discord", Workspace: "30", Chat: "20", Thread: "10"}, "hi", true},
		{"a reply to the bot's message addresses it", msg(func(m *discordgo.Message) {
			m.Type = msgReply
			m.MessageReference = &discordgo.MessageReference{MessageID: "9"}
			m.ReferencedMessage = &discordgo.Message{ID: "9", Author: &discordgo.User{ID: "900"}}
		}), channel, inboundOptions{}, true, conv.Key{Platform: "discord", Workspace: "30", Chat: "20"}, "hello", true},
		{"another role's mention does not", msg(func(m *discordgo.Message) {
			m.Content, m.MentionRoles = "<@&78> hello", []string{"78"}
		}), channel, inboundOptions{replyInThread: true}, true,
			conv.Key{Platform: "discord", Workspace: "30", Chat: "20"}, "<@&78> hello", false},
		{"a thread message keeps its parent", msg(func(m *discordgo.Message) {}), thread, inboundOptions{}, true,
			conv.Key{Platform: "discord", Workspace: "30", Chat: "5", Thread: "20"}, "hello", false},
		{"a system message is ignored", msg(func(m *discordgo.Message) { m.Type = discordgo.MessageTypeThreadCreated }),
			channel, inboundOptions{}, false, conv.Key{}, "", false},
		{"an empty message is ignored", msg(func(m *discordgo.Message) { m.Content = "  " }), channel, inboundOptions{}, false, conv.Key{}, "", false},
		{"only a mention is empty", msg(func(m *discordgo.Message) {
			m.Content, m.Mentions = "<@900>", []*discordgo.User{{ID: "900"}}
		}), channel, inboundOptions{}, false, conv.Key{}, "", false},
		{"the bot's own message is ignored", msg(func(m *discordgo.Message) { m.Author = &discordgo.User{ID: "900", Bot: true} }),
			channel, inboundOptions{}, false, conv.Key{}, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in, ok := messageInbound(tc.m, bot, tc.w, tc.opt, time.Unix(0, 0))
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v (%+v)", ok, tc.ok, in)
			}
			if !ok {
				return
			}
			if in.Conv != tc.conv || in.Text != tc.text || in.AddressesBot != tc.addresses || in.EventID != "10" ||
				in.Identity.ChannelUserID != "40" || in.Identity.DisplayName != "Ann A." {
				t.Errorf("inbound = %+v", in)
			}
		})
	}
}
