package slack

import (
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	slackfake "github.com/switchboard-bot/switchboard/internal/fake/slack"
)

var testSelf = self{userID: "UBOT", botID: "BBOT", threads: RepliesAll, replyInThread: true}

func TestDecodeCallbackMalformed(t *testing.T) {
	cases := []struct{ name, body string }{
		{"empty", ``},
		{"not json", `hello`},
		{"array", `[]`},
		{"truncated", `{"type":"event_callback","team_id":"T1","event":{"type":"message"`},
		{"no type", `{"team_id":"T1","event":{"type":"message"}}`},
		{"unknown type", `{"type":"block_actions","team_id":"T1"}`},
		{"no team", `{"type":"event_callback","event":{"type":"message"}}`},
		{"no event", `{"type":"event_callback","team_id":"T1"}`},
		{"event not an object", `{"type":"event_callback","team_id":"T1","event":"message"}`},
		{"event without type", `{"type":"event_callback","team_id":"T1","event":{"channel":"C1"}}`},
		{"wrong field types", `{"type":"event_callback","team_id":"T1","event":{"type":"message","ts":12}}`},
		{"files not a list", `{"type":"event_callback","team_id":"T1","event":{"type":"message","files":{}}}`},
		{"authorizations not a list", `{"type":"event_callback","enterprise_id":"E1","event":{"type":"app_uninstalled"},"authorizations":{}}`},
		{"is_enterprise_install not a bool", `{"type":"event_callback","enterprise_id":"E1","event":{"type":"app_uninstalled"},"is_enterprise_install":"yes"}`},
		{"challenge missing", `{"type":"url_verification"}`},
		{"huge", `{"type":"event_callback","team_id":"T1","event":{"type":"message","text":"` + strings.Repeat("x", maxPayloadBytes) + `"}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := decodeCallback([]byte(tc.body)); !errors.Is(err, errMalformed) {
				t.Fatalf("decodeCallback: %v, want errMalformed", err)
			}
		})
	}
}

func TestEventInboundSkipsWhatIsNotForTheBot(t *testing.T) {
	now := time.Now()
	cases := []struct {
		name string
		ev   innerEvent
	}{
		{"no channel", innerEvent{Type: "message", ChannelType: "im", User: "U1", Text: "x", TS: "1.1"}},
		{"no ts", innerEvent{Type: "message", ChannelType: "im", Channel: "D1", User: "U1", Text: "x"}},
		{"empty text", innerEvent{Type: "message", ChannelType: "im", Channel: "D1", User: "U1", Text: "  ", TS: "1.1"}},
		{"only the mention", innerEvent{Type: "app_mention", Channel: "C1", User: "U1", Text: "<@UBOT>", TS: "1.1"}},
		{"edit", innerEvent{Type: "message", Subtype: "message_changed", ChannelType: "im", Channel: "D1", TS: "1.1"}},
		{"deletion", innerEvent{Type: "message", Subtype: "message_deleted", ChannelType: "im", Channel: "D1", TS: "1.1"}},
		{"top-level unmentioned", innerEvent{Type: "message", ChannelType: "channel", Channel: "C1", User: "U1", Text: "x", TS: "1.1"}},
		{"reaction", innerEvent{Type: "reaction_added", User: "U1"}},
		{"user tokens revoked", innerEvent{Type: "tokens_revoked"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if in, kind := eventInbound(callback{TeamID: "T1"}, tc.ev, testSelf, now); kind != kindIgnore {
				t.Fatalf("kind %d, inbound %+v; want ignored", kind, in)
			}
		})
	}
}

func TestConversationKeysAndIdentity(t *testing.T) {
	now := time.Now()
	cb := callback{TeamID: "T1"}
	in, _ := eventInbound(cb, innerEvent{Type: "app_mention", Channel: "C1", User: "U1", Text: "<@UBOT> hi", TS: "5.5"}, testSelf, now)
	if in.Conv.Workspace != "T1" || in.Conv.Chat != "C1" || in.Conv.Thread != "5.5" || in.Identity.ChannelUserID != "T1:U1" || in.Text != "hi" {
		t.Fatalf("mention: %+v", in)
	}
	flat := testSelf
	flat.replyInThread = false
	in, _ = eventInbound(cb, innerEvent{Type: "app_mention", Channel: "C1", User: "U1", Text: "<@UBOT> hi", TS: "5.5"}, flat, now)
	if in.Conv.Thread != "" {
		t.Fatalf("reply_in_thread off: thread %q", in.Conv.Thread)
	}
	grid := callback{TeamID: "T1", EnterpriseID: "E1"}
	in, _ = eventInbound(grid, innerEvent{Type: "message", ChannelType: "im", Channel: "D1", User: "W1", UserTeam: "T2", Text: "hi", TS: "6.6"}, testSelf, now)
	if in.Conv.Workspace != "E1/T1" || in.Identity.ChannelUserID != "E1:W1" || in.Conv.Thread != "" {
		t.Fatalf("grid DM: %+v", in)
	}
	in, _ = eventInbound(cb, innerEvent{Type: "message", ChannelType: "channel", Channel: "C1", User: "U2", UserTeam: "T9", Text: "hey <@UBOT|bot>, look", TS: "7.7", ThreadTS: "5.5"}, testSelf, now)
	if in.Identity.ChannelUserID != "T9:U2" || in.Conv.Thread != "5.5" || !in.AddressesBot || in.Text != "hey , look" {
		t.Fatalf("shared-channel user: %+v", in)
	}
}

func TestStripMention(t *testing.T) {
	cases := []struct {
		in, out string
		found   bool
	}{
		{"<@UBOT> hello", "hello", true},
		{"<@UBOT|switchboard>: hello", "hello", true},
		{"hello <@UBOT>", "hello", true},
		{"<@UBOTX> hello", "<@UBOTX> hello", false},
		{"<@UOTHER> hello", "<@UOTHER> hello", false},
		{"<@UBOT", "<@UBOT", false},
		{"a <@UBOT> b <@UBOT> c", "a  b  c", true},
		{"", "", false},
	}
	for _, tc := range cases {
		out, found := stripMention(tc.in, "UBOT")
		if out != tc.out || found != tc.found {
			t.Errorf("stripMention(%q) = %q, %v; want %q, %v", tc.in, out, found, tc.out, tc.found)
		}
	}
}

func TestDecodeInteractionMalformed(t *testing.T) {
	cases := []struct{ name, body string }{
		{"empty", ``},
		{"not json", `payload`},
		{"no type", `{"user":{"id":"U1"}}`},
		{"no user", `{"type":"block_actions"}`},
		{"user not an object", `{"type":"block_actions","user":"U1"}`},
		{"actions not a list", `{"type":"block_actions","user":{"id":"U1"},"actions":{}}`},
		{"state values wrong", `{"type":"view_submission","user":{"id":"U1"},"view":{"state":{"values":[1]}}}`},
		{"huge", `{"type":"block_actions","user":{"id":"U1"},"x":"` + strings.Repeat("x", maxPayloadBytes) + `"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := decodeInteraction([]byte(tc.body)); !errors.Is(err, errMalformed) {
				t.Fatalf("decodeInteraction: %v, want errMalformed", err)
			}
		})
	}
}

func TestInteractionInboundSkips(t *testing.T) {
	cases := []struct{ name, body string }{
		{"no actions", `{"type":"block_actions","user":{"id":"U1"},"container":{"channel_id":"C1","message_ts":"1.1"}}`},
		{"no message", `{"type":"block_actions","user":{"id":"U1"},"actions":[{"action_id":"a"}]}`},
		{"view without callback", `{"type":"view_submission","user":{"id":"U1"},"view":{"private_metadata":"{}"}}`},
		{"foreign modal", `{"type":"view_submission","user":{"id":"U1"},"view":{"callback_id":"x","private_metadata":"not ours"}}`},
		{"modal of another platform", `{"type":"view_submission","user":{"id":"U1"},"view":{"callback_id":"x","private_metadata":"{\"c\":\"telegram::1:\"}"}}`},
		{"view closed", `{"type":"view_closed","user":{"id":"U1"}}`},
		{"shortcut", `{"type":"shortcut","user":{"id":"U1"}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			it, err := decodeInteraction([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if in, _, ok := interactionInbound(it, time.Now()); ok {
				t.Fatalf("handed over %+v", in)
			}
		})
	}
}

func TestSlashInboundMalformed(t *testing.T) {
	good := url.Values{"user_id": {"U1"}, "team_id": {"T1"}, "channel_id": {"C1"}, "command": {"/bot"}, "text": {"help"}}
	cases := []struct {
		name string
		del  string
		set  [2]string
	}{
		{"no user", "user_id", [2]string{}},
		{"no team", "team_id", [2]string{}},
		{"no channel", "channel_id", [2]string{}},
		{"no command", "command", [2]string{}},
		{"another command", "", [2]string{"command", "/other"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := url.Values{}
			for k, vs := range good {
				v[k] = vs
			}
			if tc.del != "" {
				v.Del(tc.del)
			}
			if tc.set[0] != "" {
				v.Set(tc.set[0], tc.set[1])
			}
			if _, err := slashInbound(v, "/bot", time.Now()); !errors.Is(err, errMalformed) {
				t.Fatalf("slashInbound: %v, want errMalformed", err)
			}
		})
	}
	for _, body := range []string{``, `[]`, `"x"`, `{"user_id":`} {
		if _, err := slashValues([]byte(body)); !errors.Is(err, errMalformed) {
			t.Errorf("slashValues(%q): %v, want errMalformed", body, err)
		}
	}
}

// TestSocketMalformedFramesSkipped proves frames slack-go cannot read (garbage, an unknown
// type, an events_api payload that is not an event) neither stop intake nor stay unacked, and
// the message behind them is handed over.
func TestSocketMalformedFramesSkipped(t *testing.T) {
	var malformed atomic.Int32
	fake := slackfake.New(t)
	h := startWith(t, fake, func(c *Config) { c.OnMalformed = func() { malformed.Add(1) } }, &recorder{})
	fake.SendRaw([]byte(`{not json`))
	fake.SendRaw([]byte(`{"type":"mystery","envelope_id":"e-x"}`))
	bad := fake.Send("events_api", map[string]any{"type": "event_callback", "event": "not an object"})
	_, env := fake.PushMessage(slackfake.Msg{Channel: "D1", ChannelType: "im", User: ann, Text: "after the junk"})
	eventually(t, "the good message acked", func() bool { return fake.Acked(env) })
	eventually(t, "the bad envelope acked", func() bool { return fake.Acked(bad) })
	if got := h.rec.got(); len(got) != 1 || got[0].Text != "after the junk" {
		t.Fatalf("inbound %+v", got)
	}
	if n := malformed.Load(); n < 2 {
		t.Errorf("%d malformed payloads counted, want the unknown type and the bad event", n)
	}
}

func FuzzDecodeCallback(f *testing.F) {
	f.Add([]byte(`{"type":"event_callback","team_id":"T1","event_id":"Ev1","event":{"type":"app_mention","channel":"C1","user":"U1","text":"<@UBOT> hi","ts":"1.1"}}`))
	f.Add([]byte(`{"type":"event_callback","team_id":"T1","enterprise_id":"E1","event":{"type":"message","channel_type":"im","channel":"D1","user":"U1","text":"hi","ts":"1.1","files":[{"id":"F1","name":"a.txt","size":3}]}}`))
	f.Add([]byte(`{"type":"event_callback","team_id":"T1","event":{"type":"message","channel":"C1","user":"U1","text":"x","ts":"1.2","thread_ts":"1.1"}}`))
	f.Add([]byte(`{"type":"event_callback","team_id":"T1","event":{"type":"message","subtype":"message_changed","channel":"C1","message":{"text":"x"}}}`))
	f.Add([]byte(`{"type":"url_verification","challenge":"c"}`))
	f.Add([]byte(`{"type":"event_callback","team_id":"T1","event":{"type":"tokens_revoked","tokens":{"bot":["U1"]}}}`))
	f.Add([]byte(`{"type":"event_callback","enterprise_id":"E1","event":{"type":"app_uninstalled"},"authorizations":[{"enterprise_id":"E1","team_id":null,"is_enterprise_install":true}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		cb, ev, err := decodeCallback(data)
		if err != nil {
			if !errors.Is(err, errMalformed) {
				t.Fatalf("error %v does not wrap errMalformed", err)
			}
			return
		}
		if ent := cb.orgWide(); ent != "" && ent != cb.EnterpriseID && cb.EnterpriseID != "" {
			t.Fatalf("org-wide for %q, but the callback names enterprise %q", ent, cb.EnterpriseID)
		}
		in, kind := eventInbound(cb, ev, testSelf, time.Now())
		if kind == kindMessage && (in.Conv.Chat == "" || in.EventID == "" || in.MessageID == "" || in.Conv.Platform != "slack") {
			t.Fatalf("a handed-over event lacks its key: %+v", in)
		}
	})
}

func FuzzDecodeInteraction(f *testing.F) {
	c := slackfake.New(f)
	f.Add(mustJSON(f, c.BlockActions(slackfake.Action{User: "U1", Channel: "C1", MessageTS: "1.1", ActionID: "a", Value: "v"})))
	f.Add(mustJSON(f, c.BlockActions(slackfake.Action{User: "U1", Channel: "C1", MessageTS: "1.1", ActionID: "a", Type: "static_select", Selected: []string{"x"}})))
	f.Add(mustJSON(f, c.ViewSubmission(slackfake.Submission{User: "U1", View: slackfake.View{View: `{"callback_id":"cb","private_metadata":"{\"c\":\"slack:T1:C1:1.1\",\"m\":\"1.2\",\"f\":[\"a\"]}"}`},
		Values: map[string]map[string][]string{"f0": {"x": {"v"}}}, Texts: map[string]map[string]string{"free": {"y": "text"}}})))
	f.Fuzz(func(t *testing.T, data []byte) {
		it, err := decodeInteraction(data)
		if err != nil {
			if !errors.Is(err, errMalformed) {
				t.Fatalf("error %v does not wrap errMalformed", err)
			}
			return
		}
		in, _, ok := interactionInbound(it, time.Now())
		if ok && (in.Interaction == nil || in.Conv.Chat == "" || in.Identity.ChannelUserID == "") {
			t.Fatalf("a handed-over interaction lacks its parts: %+v", in)
		}
	})
}

func FuzzSlashCommand(f *testing.F) {
	f.Add([]byte(`{"user_id":"U1","team_id":"T1","channel_id":"C1","command":"/bot","text":"allow T1:U2","trigger_id":"1.2.3"}`))
	f.Add([]byte(`{"user_id":"U1","team_id":"T1","channel_id":"D1","command":"/BOT","text":""}`))
	f.Add([]byte(`{"user_id":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := slashValues(data)
		if err != nil {
			return
		}
		in, err := slashInbound(v, "/bot", time.Now())
		if err != nil {
			if !errors.Is(err, errMalformed) {
				t.Fatalf("error %v does not wrap errMalformed", err)
			}
			return
		}
		if in.Command == "" || !strings.HasPrefix(in.MessageID, ephemeralPrefix) {
			t.Fatalf("command inbound %+v", in)
		}
	})
}

func FuzzHTTPPayload(f *testing.F) {
	f.Add(typeInteractive, []byte("payload=%7B%22type%22%3A%22block_actions%22%7D"))
	f.Add(typeSlash, []byte("user_id=U1&team_id=T1&channel_id=C1&command=%2Fbot&text=help"))
	f.Add(typeEvents, []byte(`{"type":"url_verification","challenge":"c"}`))
	f.Fuzz(func(t *testing.T, typ string, body []byte) {
		ch, err := New(Config{BotToken: "xoxb-1", AppToken: "xapp-1"})
		if err != nil {
			t.Fatal(err)
		}
		if p, err := httpPayload(typ, body); err == nil {
			_, _ = ch.dispatcher.decodeDelivery(typ, p)
		}
	})
}

func mustJSON(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// TestAssistantThreadEventID proves assistant_thread_started's Inbound carries Slack's event_id
// (what its redeliveries repeat), or the thread when the callback has none.
func TestAssistantThreadEventID(t *testing.T) {
	ev := innerEvent{Type: "assistant_thread_started"}
	ev.AssistantThread.ChannelID, ev.AssistantThread.ThreadTS = "D1", "1.5"
	for _, tc := range []struct{ eventID, want string }{{"Ev1", "ev:Ev1"}, {"", "assistant:D1:1.5"}} {
		in, kind := eventInbound(callback{TeamID: "T1", EventID: tc.eventID}, ev, testSelf, time.Now())
		if kind != kindAssistant || in.EventID != tc.want {
			t.Errorf("event_id %q: kind %d, EventID %q; want %q", tc.eventID, kind, in.EventID, tc.want)
		}
	}
}
