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

func TestDecodeGuildRefusesMalformed(t *testing.T) {
	cases := []struct {
		name string
		data string
	}{
		{"not json", `{"id":`},
		{"an array", `[{"id":"1"}]`},
		{"a string", `"1"`},
		{"null", `null`},
		{"no id", `{"roles":[]}`},
		{"empty id", `{"id":""}`},
		{"id of the wrong type", `{"id":1}`},
		{"roles not a list", `{"id":"1","roles":"x"}`},
		{"a role of the wrong shape", `{"id":"1","roles":[7]}`},
		{"role tags of the wrong shape", `{"id":"1","roles":[{"id":"2","tags":[1]}]}`},
		{"channels not a list", `{"id":"1","channels":{"id":"3"}}`},
		{"a channel type that is not a number", `{"id":"1","channels":[{"id":"3","type":"text"}]}`},
		{"threads garbage", `{"id":"1","threads":[{"id":4}]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if g, err := decodeGuild([]byte(tc.data)); !errors.Is(err, errMalformed) {
				t.Errorf("decodeGuild = %+v, %v; want errMalformed", g, err)
			}
		})
	}
}

func TestDecodeGuildDropsWhatItCannotPlace(t *testing.T) {
	g, err := decodeGuild([]byte(`{"id":"1",
		"roles":[{"id":"","tags":{"bot_id":"900"}},{"id":"2","tags":{"bot_id":"900"}},{"id":"5"}],
		"channels":[{"type":0},{"id":"3","type":0}],
		"threads":[{"id":"4","type":11},{"id":"6","type":11,"parent_id":"3"},{"parent_id":"3"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Roles) != 2 || g.Roles[0].ID != "2" || g.Roles[0].Tags == nil || g.Roles[0].Tags.BotID != "900" || g.Roles[1].ID != "5" {
		t.Errorf("roles %+v, want 2 (the bot's) and 5", g.Roles)
	}
	if len(g.Channels) != 1 || g.Channels[0].ID != "3" {
		t.Errorf("channels %+v, want only 3", g.Channels)
	}
	if len(g.Threads) != 1 || g.Threads[0].ID != "6" || g.Threads[0].ParentID != "3" {
		t.Errorf("threads %+v, want only 6 (in 3)", g.Threads)
	}
}

func TestDecodeChannelRefusesMalformed(t *testing.T) {
	cases := []struct {
		name string
		data string
	}{
		{"not json", `{`},
		{"an array", `[]`},
		{"null", `null`},
		{"no id", `{"type":0,"guild_id":"1"}`},
		{"id of the wrong type", `{"id":4,"type":0}`},
		{"type of the wrong type", `{"id":"4","type":"thread"}`},
		{"parent of the wrong type", `{"id":"4","type":11,"parent_id":3}`},
		{"a thread without parent", `{"id":"4","type":11,"guild_id":"1"}`},
		{"a private thread without parent", `{"id":"4","type":12,"guild_id":"1","parent_id":""}`},
		{"oversized", `{"id":"4","type":0,"name":"` + strings.Repeat("x", maxEventBytes) + `"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if c, err := decodeChannel([]byte(tc.data)); !errors.Is(err, errMalformed) {
				t.Errorf("decodeChannel = %+v, %v; want errMalformed", c, err)
			}
		})
	}
	c, err := decodeChannel([]byte(`{"id":"4","type":11,"guild_id":"1","parent_id":"3","name":"t"}`))
	if err != nil || c != (channelInfo{ID: "4", Type: 11, GuildID: "1", ParentID: "3"}) {
		t.Errorf("a good thread: %+v, %v", c, err)
	}
}

// FuzzDecodeGuildAndChannel: whatever the input, a decoded guild has an id and only roles and
// channels with ids and threads with parents; a decoded channel has an id, and a parent when it
// is a thread — so nothing learned from them keys a conversation without a chat.
func FuzzDecodeGuildAndChannel(f *testing.F) {
	f.Add([]byte(`{"id":"1","roles":[{"id":"2","tags":{"bot_id":"900"}}],"channels":[{"id":"3","type":0}],"threads":[{"id":"4","type":11,"parent_id":"3"}]}`))
	f.Add([]byte(`{"id":"4","type":11,"guild_id":"1","parent_id":"3"}`))
	f.Add([]byte(`{"id":"1","roles":[{}],"channels":[{}],"threads":[{"id":"4"}]}`))
	f.Add([]byte(`{"id":"4","type":12}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if g, err := decodeGuild(data); err == nil {
			if g.ID == "" {
				t.Fatalf("accepted a guild without id: %+v", g)
			}
			for _, r := range g.Roles {
				if r.ID == "" {
					t.Fatalf("kept a role without id: %+v", g)
				}
			}
			for _, c := range g.Channels {
				if c.ID == "" {
					t.Fatalf("kept a channel without id: %+v", g)
				}
			}
			for _, th := range g.Threads {
				if th.ID == "" || th.ParentID == "" {
					t.Fatalf("kept a thread without id or parent: %+v", g)
				}
			}
		} else if !errors.Is(err, errMalformed) {
			t.Fatalf("decodeGuild error %v is not errMalformed", err)
		}
		if c, err := decodeChannel(data); err == nil {
			if c.ID == "" || (isThreadType(c.Type) && c.ParentID == "") {
				t.Fatalf("accepted a channel without id, or a thread without parent: %+v", c)
			}
		} else if !errors.Is(err, errMalformed) {
			t.Fatalf("decodeChannel error %v is not errMalformed", err)
		}
	})
}

func TestDecodeHello(t *testing.T) {
	cases := []struct {
		name string
		data string
		want time.Duration // 0: refused
	}{
		{"discord's", `{"op":10,"d":{"heartbeat_interval":41250},"s":null,"t":null}`, 41250 * time.Millisecond},
		{"a fraction of a millisecond", `{"op":10,"d":{"heartbeat_interval":1.5}}`, 1500 * time.Microsecond},
		{"a day, the most", `{"op":10,"d":{"heartbeat_interval":86400000}}`, 24 * time.Hour},
		{"not json", `{"op":10,`, 0},
		{"an array", `[10]`, 0},
		{"another op", `{"op":0,"t":"READY","d":{"heartbeat_interval":41250}}`, 0},
		{"op 11", `{"op":11}`, 0},
		{"no d", `{"op":10}`, 0},
		{"d null", `{"op":10,"d":null}`, 0},
		{"d not an object", `{"op":10,"d":41250}`, 0},
		{"no interval", `{"op":10,"d":{}}`, 0},
		{"interval null", `{"op":10,"d":{"heartbeat_interval":null}}`, 0},
		{"interval a string", `{"op":10,"d":{"heartbeat_interval":"41250"}}`, 0},
		{"interval zero", `{"op":10,"d":{"heartbeat_interval":0}}`, 0},
		{"interval negative", `{"op":10,"d":{"heartbeat_interval":-5}}`, 0},
		{"interval under a millisecond", `{"op":10,"d":{"heartbeat_interval":0.2}}`, 0},
		{"interval over a day", `{"op":10,"d":{"heartbeat_interval":86400001}}`, 0},
		{"interval that overflows a duration", `{"op":10,"d":{"heartbeat_interval":1e300}}`, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeHello([]byte(tc.data))
			if tc.want == 0 {
				if err == nil {
					t.Fatalf("accepted: %v", got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("decodeHello = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func FuzzDecodeHello(f *testing.F) {
	f.Add([]byte(`{"op":10,"d":{"heartbeat_interval":41250}}`))
	f.Add([]byte(`{"op":10,"d":{"heartbeat_interval":-1e400}}`))
	f.Add([]byte(`{"op":10,"d":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := decodeHello(data)
		if err == nil && (d < time.Millisecond || d > maxHeartbeatInterval) {
			t.Fatalf("accepted a heartbeat interval of %v", d)
		}
	})
}

func TestDecodeInvalidSession(t *testing.T) {
	cases := []struct {
		name      string
		d         string
		resumable bool
		ok        bool
	}{
		{"resumable", `true`, true, true},
		{"not resumable", `false`, false, true},
		{"missing", ``, false, false},
		{"null", `null`, false, false},
		{"a string", `"true"`, false, false},
		{"a number", `1`, false, false},
		{"an object", `{"resumable":true}`, false, false},
		{"not json", `tru`, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := decodeInvalidSession([]byte(tc.d))
			if (err == nil) != tc.ok || r != tc.resumable {
				t.Errorf("decodeInvalidSession(%q) = %v, %v", tc.d, r, err)
			}
			if err != nil && !errors.Is(err, errMalformed) {
				t.Errorf("error %v is not errMalformed", err)
			}
		})
	}
}

func FuzzDecodeInvalidSession(f *testing.F) {
	for _, s := range []string{`true`, `false`, `null`, `"x"`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, d []byte) {
		r, err := decodeInvalidSession(d)
		if err != nil && r {
			t.Fatalf("%q: resumable despite the error %v", d, err)
		}
		if r && strings.TrimSpace(string(d)) != "true" {
			t.Fatalf("%q read as resumable", d)
		}
	})
}

func TestInteractionType(t *testing.T) {
	cases := []struct {
		name string
		body string
		typ  int
		ok   bool
	}{
		{"ping", `{"type":1}`, 1, true},
		{"component", `{"type":3,"id":"1","data":{"custom_id":"x"}}`, 3, true},
		{"no type", `{}`, 0, true},
		{"not json", `{"type":`, 0, false},
		{"an array", `[{"type":1}]`, 0, false},
		{"a string type", `{"type":"1"}`, 0, false},
		{"a fractional type", `{"type":1.5}`, 0, false},
		{"a huge type", `{"type":1e40}`, 0, false},
		{"empty", ``, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			typ, err := interactionType([]byte(tc.body))
			if (err == nil) != tc.ok || typ != tc.typ {
				t.Errorf("interactionType(%q) = %d, %v", tc.body, typ, err)
			}
			if err != nil && !errors.Is(err, errMalformed) {
				t.Errorf("error %v is not errMalformed", err)
			}
		})
	}
}

func FuzzInteractionType(f *testing.F) {
	f.Add([]byte(`{"type":1}`))
	f.Add([]byte(`{"type":"1"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		typ, err := interactionType(body)
		if err != nil && typ != 0 {
			t.Fatalf("type %d with error %v", typ, err)
		}
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
