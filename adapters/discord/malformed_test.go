package discord

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	discordfake "github.com/switchboard-bot/switchboard/internal/fake/discord"
	"github.com/switchboard-bot/switchboard/internal/poll"
)

func TestDecodeMessageRefusesMalformed(t *testing.T) {
	cases := []struct {
		name string
		data string
	}{
		{"not json", `{`},
		{"an array", `[]`},
		{"no id", `{"channel_id":"1","author":{"id":"2"}}`},
		{"no channel", `{"id":"1","author":{"id":"2"}}`},
		{"no author", `{"id":"1","channel_id":"2"}`},
		{"author without id", `{"id":"1","channel_id":"2","author":{}}`},
		{"id of the wrong type", `{"id":1,"channel_id":"2","author":{"id":"3"}}`},
		{"mentions not a list", `{"id":"1","channel_id":"2","author":{"id":"3"},"mentions":"x"}`},
		{"timestamp garbage", `{"id":"1","channel_id":"2","author":{"id":"3"},"timestamp":"yesterday"}`},
		{"oversized", `{"id":"1","channel_id":"2","author":{"id":"3"},"content":"` + strings.Repeat("x", maxEventBytes) + `"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := decodeMessage([]byte(tc.data)); !errors.Is(err, errMalformed) {
				t.Errorf("decodeMessage = %v, want errMalformed", err)
			}
		})
	}
}

func TestDecodeInteractionRefusesMalformed(t *testing.T) {
	cases := []struct {
		name string
		data string
	}{
		{"not json", `nope`},
		{"no token", `{"id":"1","type":3,"channel_id":"2","user":{"id":"3"},"data":{"custom_id":"x"}}`},
		{"no user", `{"id":"1","type":3,"token":"t","channel_id":"2","data":{"custom_id":"x"}}`},
		{"no channel", `{"id":"1","type":3,"token":"t","user":{"id":"3"},"data":{"custom_id":"x"}}`},
		{"data of the wrong shape", `{"id":"1","type":3,"token":"t","channel_id":"2","user":{"id":"3"},"data":[1]}`},
		{"command options garbage", `{"id":"1","type":2,"token":"t","channel_id":"2","user":{"id":"3"},"data":{"name":"bot","options":7}}`},
		{"modal components garbage", `{"id":"1","type":5,"token":"t","channel_id":"2","user":{"id":"3"},"data":{"custom_id":"m","components":[{"type":"x"}]}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := decodeInteraction([]byte(tc.data)); !errors.Is(err, errMalformed) {
				t.Errorf("decodeInteraction = %v, want errMalformed", err)
			}
		})
	}
}

func TestInteractionsTheBotDoesNotHandleAreIgnored(t *testing.T) {
	cases := []struct {
		name string
		data string
	}{
		{"ping", `{"id":"1","type":1,"token":"t","channel_id":"2","user":{"id":"3"}}`},
		{"autocomplete", `{"id":"1","type":4,"token":"t","channel_id":"2","user":{"id":"3"},"data":{"name":"bot"}}`},
		{"another command", `{"id":"1","type":2,"token":"t","channel_id":"2","user":{"id":"3"},"data":{"name":"other","options":[{"name":"x","type":1}]}}`},
		{"command without subcommand", `{"id":"1","type":2,"token":"t","channel_id":"2","user":{"id":"3"},"data":{"name":"bot"}}`},
		{"component without custom id", `{"id":"1","type":3,"token":"t","channel_id":"2","user":{"id":"3"},"data":{}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ix, err := decodeInteraction([]byte(tc.data))
			if err != nil {
				t.Fatal(err)
			}
			if in, ok := interactionInbound(ix, where{}, time.Now(), permAdministrator); ok {
				t.Errorf("handled: %+v", in)
			}
		})
	}
}

func TestMalformedGatewayEventsAreSkippedAndCounted(t *testing.T) {
	var malformed atomic.Int64
	h := newHarness(t, nil, func(c *Config) { c.OnMalformedEvent = func() { malformed.Add(1) } })
	dm := h.fk.DM(alice.ID)
	h.fk.Dispatch("MESSAGE_CREATE", map[string]any{"id": 5, "channel_id": dm})
	h.fk.Dispatch("MESSAGE_CREATE", map[string]any{"channel_id": dm, "content": "no id, no author"})
	h.fk.Dispatch("INTERACTION_CREATE", map[string]any{"id": "1", "type": 3})
	h.fk.Dispatch("GUILD_CREATE", map[string]any{"roles": "x"})
	h.fk.Dispatch("THREAD_CREATE", map[string]any{"id": []int{1}})
	h.fk.Post(discordfake.UserMessage{Channel: dm, Author: alice, Content: "still here"})
	poll.Until(t, "the good message", func() bool { return h.rec.count() == 1 })
	if n := malformed.Load(); n != 5 {
		t.Errorf("%d malformed events counted, want 5", n)
	}
	if h.rec.all()[0].Text != "still here" {
		t.Errorf("inbound = %+v", h.rec.all())
	}
}

var messageSeeds = []string{
	`{"id":"10","channel_id":"20","guild_id":"30","author":{"id":"40","username":"a"},"content":"<@900> hi","mentions":[{"id":"900"}],"type":0}`,
	`{"id":"10","channel_id":"20","author":{"id":"40","bot":true},"content":"dm","attachments":[{"id":"1","filename":"f","url":"https://x/f","size":3}]}`,
	`{"id":"10","channel_id":"20","guild_id":"30","author":{"id":"40"},"content":"<@&77> x","mention_roles":["77"],"type":19,"message_reference":{"message_id":"9"},"referenced_message":{"id":"9","channel_id":"20","author":{"id":"900"}}}`,
	`{"id":"10","channel_id":"20","author":{"id":"40"},"type":7}`,
	`{}`,
}

func FuzzDecodeMessage(f *testing.F) {
	for _, s := range messageSeeds {
		f.Add([]byte(s))
	}
	bot := botIdentity{id: "900", roles: map[string]bool{"77": true}}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := decodeMessage(data)
		if err != nil {
			return
		}
		for _, w := range []where{{}, {Guild: "30", Parent: "5", Thread: true}} {
			for _, opt := range []inboundOptions{{replyInThread: true}, {mentionOnly: true}} {
				in, ok := messageInbound(m, bot, w, opt, time.Unix(0, 0))
				if ok && (in.EventID == "" || in.Conv.Platform != "discord" || in.Conv.Chat == "") {
					t.Fatalf("inbound without event id or conversation: %+v", in)
				}
			}
		}
	})
}

var interactionSeeds = []string{
	`{"id":"1","application_id":"900","type":3,"token":"t","channel_id":"2","guild_id":"3","member":{"user":{"id":"4"}},"data":{"custom_id":"c","component_type":2},"message":{"id":"5","channel_id":"2"},"channel":{"id":"2","type":11,"parent_id":"6"}}`,
	`{"id":"1","type":3,"token":"t","channel_id":"2","user":{"id":"4"},"data":{"custom_id":"s","component_type":3,"values":["a","b"]}}`,
	`{"id":"1","type":5,"token":"t","channel_id":"2","user":{"id":"4"},"data":{"custom_id":"m","components":[{"type":1,"components":[{"type":4,"custom_id":"i","value":"v"}]}]}}`,
	`{"id":"1","type":2,"token":"t","channel_id":"2","user":{"id":"4"},"data":{"name":"bot","options":[{"name":"allow","type":1,"options":[{"name":"args","type":3,"value":"1 2"}]}]}}`,
	`{"id":"1","type":2,"token":"t","channel_id":"2","user":{"id":"4"},"data":{"name":"bot","options":[null]}}`,
	`{"id":"1","type":2,"token":"t","channel_id":"2","guild_id":"3","member":{"user":{"id":"4"},"permissions":"-1"},"data":{"name":"botadmin","options":[{"name":"stats","type":1}]}}`,
}

func FuzzDecodeInteraction(f *testing.F) {
	for _, s := range interactionSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ix, err := decodeInteraction(data)
		if err != nil {
			return
		}
		for _, w := range []where{{}, {Guild: "3", Parent: "6", Thread: true}} {
			in, ok := interactionInbound(ix, w, time.Unix(0, 0), 1<<5)
			if ok && (in.EventID == "" || in.Identity.ChannelUserID == "") {
				t.Fatalf("inbound without event id or user: %+v", in)
			}
		}
	})
}

func FuzzDecodeGuildAndChannel(f *testing.F) {
	f.Add([]byte(`{"id":"1","roles":[{"id":"2","tags":{"bot_id":"900"}}],"channels":[{"id":"3","type":0}],"threads":[{"id":"4","type":11,"parent_id":"3"}]}`))
	f.Add([]byte(`{"id":"4","type":11,"guild_id":"1","parent_id":"3"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = decodeGuild(data)
		_, _ = decodeChannel(data)
	})
}

func TestDecodeReady(t *testing.T) {
	cases := []struct {
		name, data string
		ok         bool
		resume     string
	}{
		{"good", `{"session_id":"s","resume_gateway_url":"wss://r.discord.gg","user":{"id":"1"},"application":{"id":"2"}}`, true, "wss://r.discord.gg"},
		{"not json", `{`, false, ""},
		{"no session", `{"user":{"id":"1"}}`, false, ""},
		{"no user", `{"session_id":"s"}`, false, ""},
		{"user of the wrong type", `{"session_id":"s","user":"x"}`, false, ""},
		{"a resume URL that is not a websocket is dropped", `{"session_id":"s","user":{"id":"1"},"resume_gateway_url":"file:///etc/passwd"}`, true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := decodeReady([]byte(tc.data))
			if (err == nil) != tc.ok || (err != nil && !errors.Is(err, errMalformed)) {
				t.Fatalf("err = %v", err)
			}
			if tc.ok && r.ResumeURL != tc.resume {
				t.Errorf("resume URL %q", r.ResumeURL)
			}
		})
	}
}

func FuzzDecodeReady(f *testing.F) {
	f.Add([]byte(`{"session_id":"s","resume_gateway_url":"wss://r.discord.gg","user":{"id":"1"},"application":{"id":"2"}}`))
	f.Add([]byte(`{"session_id":"","user":{}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := decodeReady(data)
		if err == nil && (r.SessionID == "" || r.User.ID == "") {
			t.Fatalf("accepted READY without session or user: %+v", r)
		}
	})
}
