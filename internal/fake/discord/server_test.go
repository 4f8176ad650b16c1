package discordfake

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/conformance"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"
	"go.uber.org/goleak"

	"github.com/switchboard-bot/switchboard/internal/poll"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// rewrite sends discordgo's https://discord.com requests to the fake.
type rewrite struct{ base *url.URL }

func (rw rewrite) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host, r.Host = rw.base.Scheme, rw.base.Host, rw.base.Host
	return http.DefaultTransport.RoundTrip(r)
}

// session is a real discordgo session whose REST calls go to the fake.
func dgSession(t *testing.T, s *Server, token string) *discordgo.Session {
	t.Helper()
	dg, err := discordgo.New("Bot " + token)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(s.URL())
	// A bound that fails a hung call, with room for a 10 MiB post under the race detector on a
	// busy machine (seconds there; 0.4 s without it).
	dg.Client = &http.Client{Transport: rewrite{u}, Timeout: 30 * time.Second}
	dg.ShouldReconnectOnError = false
	dg.ShouldRetryOnRateLimit = false
	dg.LogLevel = -1
	return dg
}

func TestFakeGatewayServesDiscordgo(t *testing.T) {
	s := New(t)
	s.SetHeartbeatInterval(30 * time.Millisecond)
	ch := s.Guild("500")
	dg := dgSession(t, s, s.Token())
	dg.Identify.Intents = discordgo.IntentsGuildMessages | discordgo.IntentsDirectMessages | discordgo.IntentMessageContent
	var mu sync.Mutex
	var got []*discordgo.MessageCreate
	var ready *discordgo.Ready
	dg.AddHandler(func(_ *discordgo.Session, r *discordgo.Ready) { mu.Lock(); ready = r; mu.Unlock() })
	dg.AddHandler(func(_ *discordgo.Session, m *discordgo.MessageCreate) { mu.Lock(); got = append(got, m); mu.Unlock() })
	dg.SyncEvents = true
	if err := dg.Open(); err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer dg.Close()
	id := s.Post(UserMessage{Channel: ch, Author: User{ID: "42"}, Content: "hello", MentionBot: true})
	poll.Until(t, "the MESSAGE_CREATE", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 1 })
	mu.Lock()
	m := got[0]
	if m.ID != id || m.GuildID != "500" || m.Author.ID != "42" || !strings.HasSuffix(m.Content, "hello") ||
		len(m.Mentions) != 1 || m.Mentions[0].ID != BotID {
		t.Errorf("message = %+v", m.Message)
	}
	if ready == nil || ready.SessionID == "" || ready.User.ID != BotID {
		t.Errorf("READY = %+v", ready)
	}
	mu.Unlock()
	poll.Until(t, "heartbeats answered", func() bool { return s.Heartbeats() >= 3 })
	if ids := s.Identifies(); len(ids) != 1 || !ids[0].Accepted || ids[0].Intents&IntentMessageContent == 0 {
		t.Errorf("identifies = %+v", ids)
	}
}

func TestFakeGatewayWithoutContentIntentBlanksUnmentionedContent(t *testing.T) {
	s := New(t)
	ch := s.Guild("500")
	dg := dgSession(t, s, s.Token())
	dg.Identify.Intents = discordgo.IntentsGuildMessages
	var mu sync.Mutex
	var got []string
	dg.SyncEvents = true
	dg.AddHandler(func(_ *discordgo.Session, m *discordgo.MessageCreate) {
		mu.Lock()
		got = append(got, m.Content)
		mu.Unlock()
	})
	if err := dg.Open(); err != nil {
		t.Fatal(err)
	}
	defer dg.Close()
	s.Post(UserMessage{Channel: ch, Author: User{ID: "42"}, Content: "secret"})
	s.Post(UserMessage{Channel: ch, Author: User{ID: "42"}, Content: "hi", MentionBot: true})
	poll.Until(t, "two messages", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 2 })
	if got[0] != "" || got[1] != "<@"+BotID+"> hi" {
		t.Errorf("contents = %q", got)
	}
}

func TestFakeGatewayRefusals(t *testing.T) {
	cases := []struct {
		name    string
		token   string
		allowed int
		want    int
	}{
		{"wrong token is 4004", "wrong", IntentMessageContent, CloseAuthenticationFailed},
		{"content intent switched off is 4014", DefaultToken, 0, CloseDisallowedIntents},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := New(t)
			s.AllowPrivilegedIntents(tc.allowed)
			dg := dgSession(t, s, tc.token)
			dg.Identify.Intents = discordgo.IntentsGuildMessages | discordgo.IntentMessageContent
			err := dg.Open()
			var ce *websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != tc.want {
				t.Fatalf("Open = %v, want close %d", err, tc.want)
			}
		})
	}
}

func TestFakeRESTMessagesThroughDiscordgo(t *testing.T) {
	s := New(t)
	conformance.ExpectViolations(t, s) // refused bodies, sent on purpose
	ch := s.Guild("500")
	dg := dgSession(t, s, s.Token())
	m, err := dg.ChannelMessageSendComplex(ch, &discordgo.MessageSend{Content: "one",
		Embeds:          []*discordgo.MessageEmbed{{Title: "T", Description: "D"}},
		AllowedMentions: &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}}})
	if err != nil {
		t.Fatal(err)
	}
	content := "two"
	if _, err := dg.ChannelMessageEditComplex(&discordgo.MessageEdit{ID: m.ID, Channel: ch, Content: &content}); err != nil {
		t.Fatal(err)
	}
	posted := s.PostedByBot(ch)
	if len(posted) != 1 || posted[0].Content != "two" || posted[0].Edits != 1 || posted[0].Embeds[0].Title != "T" {
		t.Fatalf("posted = %+v", posted)
	}
	if err := dg.ChannelMessageDelete(ch, m.ID); err != nil {
		t.Fatal(err)
	}
	if len(s.PostedByBot(ch)) != 0 {
		t.Error("deleted message still shown")
	}
	_, err = dg.ChannelMessageSend(ch, strings.Repeat("x", MaxContent+1))
	var re *discordgo.RESTError
	if !errors.As(err, &re) || re.Response.StatusCode != 400 || re.Message == nil || re.Message.Code != 50035 {
		t.Errorf("oversized content: %v", err)
	}
	_, err = dg.ChannelMessageSend("999", "x")
	if !errors.As(err, &re) || re.Message == nil || re.Message.Code != 10003 {
		t.Errorf("unknown channel: %v", err)
	}
	if err := dg.ChannelTyping(ch); err != nil {
		t.Errorf("typing: %v", err)
	}
}

func TestFakeNonceEnforcedReturnsTheFirstMessage(t *testing.T) {
	s := New(t)
	ch := s.Guild("500")
	dg := dgSession(t, s, s.Token())
	body := map[string]any{"content": "once", "nonce": "run1-0", "enforce_nonce": true}
	var ids []string
	for range 2 {
		raw, err := dg.RequestWithBucketID("POST", discordgo.EndpointChannelMessages(ch), body, discordgo.EndpointChannelMessages(ch))
		if err != nil {
			t.Fatal(err)
		}
		var m struct{ ID string }
		_ = json.Unmarshal(raw, &m)
		ids = append(ids, m.ID)
	}
	if ids[0] != ids[1] || len(s.Posted(ch)) != 1 {
		t.Errorf("ids %v, posted %d", ids, len(s.Posted(ch)))
	}
}

func TestFakeThreadFromMessage(t *testing.T) {
	s := New(t)
	conformance.ExpectViolations(t, s) // refused bodies, sent on purpose
	ch := s.Guild("500")
	dg := dgSession(t, s, s.Token())
	mid := s.Post(UserMessage{Channel: ch, Author: User{ID: "42"}, Content: "q"})
	ep := discordgo.EndpointChannelMessageThread(ch, mid)
	// discordgo's ThreadStart sends "invitable", which this route does not take.
	_, err := dg.MessageThreadStartComplex(ch, mid, &discordgo.ThreadStart{Name: "q", AutoArchiveDuration: 1440})
	var re *discordgo.RESTError
	if !errors.As(err, &re) || re.Message == nil || re.Message.Code != 50035 || !strings.Contains(string(re.ResponseBody), `"invitable"`) {
		t.Fatalf("discordgo's body: %v, want 400 Invalid Form Body naming invitable", err)
	}
	raw, err := dg.RequestWithBucketID("POST", ep, map[string]any{"name": "q", "auto_archive_duration": 1440, "rate_limit_per_user": nil}, ep)
	if err != nil {
		t.Fatal(err)
	}
	var th discordgo.Channel
	if err := json.Unmarshal(raw, &th); err != nil || th.ID != mid || th.ParentID != ch || th.Type != discordgo.ChannelTypeGuildPublicThread {
		t.Errorf("thread = %+v %v", th, err)
	}
	if c, _ := s.ChannelInfo(mid); c.AutoArchiveDuration != 1440 {
		t.Errorf("auto_archive_duration %d, want 1440", c.AutoArchiveDuration)
	}
	_, err = dg.RequestWithBucketID("POST", ep, map[string]any{"name": "q"}, ep)
	if !errors.As(err, &re) || re.Message == nil || re.Message.Code != 160004 {
		t.Errorf("second thread: %v", err)
	}
	for _, bad := range []map[string]any{{"name": ""}, {"name": "q", "auto_archive_duration": 30}, {"name": "q", "type": 11},
		{"name": "q", "rate_limit_per_user": 30000}} {
		mid := s.Post(UserMessage{Channel: ch, Author: User{ID: "42"}, Content: "q"})
		ep := discordgo.EndpointChannelMessageThread(ch, mid)
		if _, err := dg.RequestWithBucketID("POST", ep, bad, ep); !errors.As(err, &re) || re.Message == nil || re.Message.Code != 50035 {
			t.Errorf("body %v: %v, want 400 Invalid Form Body", bad, err)
		}
	}
	got, err := dg.Channel(mid)
	if err != nil || got.ParentID != ch {
		t.Errorf("GET channel: %+v %v", got, err)
	}
}

// TestFakeThreadFromMessageIgnoresChosenFields proves IgnoreThreadFields lets discordgo's
// ThreadStart body (with invitable) start a thread, while a field not chosen is still refused.
func TestFakeThreadFromMessageIgnoresChosenFields(t *testing.T) {
	s := New(t)
	conformance.ExpectViolations(t, s) // invitable is still no param of the route
	s.IgnoreThreadFields("invitable")
	ch := s.Guild("501")
	dg := dgSession(t, s, s.Token())
	mid := s.Post(UserMessage{Channel: ch, Author: User{ID: "42"}, Content: "q"})
	th, err := dg.MessageThreadStartComplex(ch, mid, &discordgo.ThreadStart{Name: "q", AutoArchiveDuration: 1440})
	if err != nil || th.ID != mid || th.ParentID != ch {
		t.Fatalf("discordgo's body with invitable ignored: %+v %v", th, err)
	}
	mid = s.Post(UserMessage{Channel: ch, Author: User{ID: "42"}, Content: "q"})
	ep := discordgo.EndpointChannelMessageThread(ch, mid)
	var re *discordgo.RESTError
	if _, err := dg.RequestWithBucketID("POST", ep, map[string]any{"name": "q", "type": 11}, ep); !errors.As(err, &re) || re.Message == nil || re.Message.Code != 50035 {
		t.Errorf("type: %v, want 400 Invalid Form Body", err)
	}
}

func TestFakeInteractionCallbacks(t *testing.T) {
	s := New(t)
	ch := s.Guild("500")
	dg := dgSession(t, s, s.Token())
	dg.Identify.Intents = discordgo.IntentsGuilds
	ixs := make(chan *discordgo.InteractionCreate, 4)
	dg.AddHandler(func(_ *discordgo.Session, i *discordgo.InteractionCreate) { ixs <- i })
	if err := dg.Open(); err != nil {
		t.Fatal(err)
	}
	defer dg.Close()
	id := s.Slash(ch, User{ID: "42"}, "bot", "status", "")
	i := <-ixs
	if i.ID != id || i.ApplicationCommandData().Name != "bot" || i.ApplicationCommandData().Options[0].Name != "status" {
		t.Fatalf("interaction = %+v", i.Interaction)
	}
	if err := dg.InteractionRespond(i.Interaction, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredChannelMessageWithSource}); err != nil {
		t.Fatal(err)
	}
	err := dg.InteractionRespond(i.Interaction, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredChannelMessageWithSource})
	var re *discordgo.RESTError
	if !errors.As(err, &re) || re.Message == nil || re.Message.Code != 40060 {
		t.Errorf("second ack: %v", err)
	}
	text := "done"
	if _, err := dg.InteractionResponseEdit(i.Interaction, &discordgo.WebhookEdit{Content: &text}); err != nil {
		t.Fatal(err)
	}
	if _, err := dg.FollowupMessageCreate(i.Interaction, true, &discordgo.WebhookParams{Content: "psst", Flags: discordgo.MessageFlagsEphemeral}); err != nil {
		t.Fatal(err)
	}
	got, _ := s.InteractionByID(id)
	if d, ok := got.Acked(); !ok || d > AckDeadline {
		t.Errorf("acked %v %v", d, ok)
	}
	r := got.Replies()
	if len(r) != 2 || r[0].Content != "done" || r[1].Content != "psst" || !r[1].Ephemeral {
		t.Errorf("replies = %+v", r)
	}
	if p := s.PostedByBot(ch); len(p) != 1 || p[0].Content != "done" {
		t.Errorf("visible = %+v", p)
	}
}

func TestFakeCommandsBulkOverwrite(t *testing.T) {
	s := New(t)
	conformance.ExpectViolations(t, s) // refused bodies, sent on purpose
	dg := dgSession(t, s, s.Token())
	ep := discordgo.EndpointApplicationGlobalCommands(ApplicationID)
	body := `[{"name":"bot","description":"talk","type":1,"default_member_permissions":"8","options":[` +
		`{"type":1,"name":"ask","description":"ask","options":[{"type":3,"name":"text","description":"what","required":true,"autocomplete":false}]}]}]`
	if _, err := dg.RequestWithBucketID("PUT", ep, json.RawMessage(body), ep); err != nil {
		t.Fatal(err)
	}
	have, err := dg.ApplicationCommands(ApplicationID, "")
	if err != nil || len(have) != 1 || have[0].Name != "bot" || have[0].ID == "" || *have[0].DefaultMemberPermissions != 8 {
		t.Fatalf("commands = %+v %v", have, err)
	}
	if s.CommandOverwrites() != 1 || len(s.Commands("")) != 1 || len(s.Commands("500")) != 0 || string(s.CommandsSent("")) != body {
		t.Error("overwrite not recorded")
	}
	// discordgo's ApplicationCommand sends "options": null, and on a subcommand "required" and
	// "autocomplete", which it does not take.
	perm := int64(discordgo.PermissionAdministrator)
	cmds := []*discordgo.ApplicationCommand{{Name: "bot", Description: "talk", DefaultMemberPermissions: &perm}}
	refused := func(what string, err error, field string) {
		t.Helper()
		var re *discordgo.RESTError
		if !errors.As(err, &re) || re.Response.StatusCode != http.StatusBadRequest || re.Message == nil || re.Message.Code != 50035 ||
			!strings.Contains(string(re.ResponseBody), `"`+field+`":{"_errors"`) {
			t.Errorf("%s: %v, want 400 Invalid Form Body naming %s", what, err, field)
		}
	}
	_, err = dg.ApplicationCommandBulkOverwrite(ApplicationID, "", cmds)
	refused("discordgo's command", err, "options")
	cmds[0].Options = []*discordgo.ApplicationCommandOption{{Type: discordgo.ApplicationCommandOptionSubCommand, Name: "ask", Description: "ask",
		Options: []*discordgo.ApplicationCommandOption{}}}
	_, err = dg.ApplicationCommandBulkOverwrite(ApplicationID, "", cmds)
	refused("discordgo's subcommand", err, "autocomplete")
	for _, tc := range []struct{ body, field string }{
		{`[{"name":"bot","description":"talk","options":[{"type":1,"name":"a","description":"a","autocomplete":false}]}]`, "autocomplete"},
		{`[{"name":"bot","description":"talk","options":[{"type":1,"name":"a","description":"a","required":false}]}]`, "required"},
		{`[{"name":"bot","description":"talk","invitable":true}]`, "invitable"},
		{`[{"name":"bot","description":"talk","options":[{"type":3,"name":"a","description":"a","choices":null}]}]`, "choices"},
		{`[{"name":"Bot","description":"talk"}]`, "name"},
	} {
		_, err := dg.RequestWithBucketID("PUT", ep, json.RawMessage(tc.body), ep)
		refused(tc.body, err, tc.field)
	}
	if s.CommandOverwrites() != 1 {
		t.Errorf("%d overwrites, want the one accepted", s.CommandOverwrites())
	}
}

func TestFakeRateLimits(t *testing.T) {
	s := New(t)
	ch := s.Guild("500")
	dg := dgSession(t, s, s.Token())
	s.RateLimitStorm("POST", RouteMessages, 1, 20*time.Millisecond)
	_, err := dg.ChannelMessageSend(ch, "x")
	var rl *discordgo.RateLimitError
	if !errors.As(err, &rl) || rl.RetryAfter != 20*time.Millisecond {
		t.Fatalf("429: %v", err)
	}
	dg.ShouldRetryOnRateLimit = true
	s.GlobalRateLimit(2, 10*time.Millisecond)
	if _, err := dg.ChannelMessageSend(ch, "y"); err != nil {
		t.Fatalf("retried send: %v", err)
	}
	if n := len(s.PostedByBot(ch)); n != 1 {
		t.Errorf("posted %d", n)
	}
	if _, err := dg.User("@me"); err != nil {
		t.Errorf("users/@me after the storm: %v", err)
	}
}

// rawClient is a minimal gateway client for what discordgo cannot do (resume on
// resume_gateway_url).
type rawClient struct {
	t  *testing.T
	ws *websocket.Conn
}

func dialRaw(t *testing.T, u string) *rawClient {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial(u+"/?v=9&encoding=json", nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &rawClient{t: t, ws: ws}
	if p := c.read(); p.Op != 10 {
		t.Fatalf("first frame op %d", p.Op)
	}
	return c
}

type rawFrame struct {
	Op int             `json:"op"`
	T  string          `json:"t"`
	S  int64           `json:"s"`
	D  json.RawMessage `json:"d"`
}

func (c *rawClient) read() rawFrame {
	c.t.Helper()
	_ = c.ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	var f rawFrame
	if err := c.ws.ReadJSON(&f); err != nil {
		c.t.Fatalf("read: %v", err)
	}
	return f
}

func (c *rawClient) send(op int, d any) {
	c.t.Helper()
	if err := c.ws.WriteJSON(map[string]any{"op": op, "d": d}); err != nil {
		c.t.Fatal(err)
	}
}

func TestFakeResumeReplaysMissedEventsOnlyOnResumeURL(t *testing.T) {
	s := New(t)
	ch := s.Guild("500")
	gw := s.wsURL("/gw")
	c := dialRaw(t, gw)
	c.send(2, map[string]any{"token": s.Token(), "intents": 1<<9 | IntentMessageContent})
	ready := c.read()
	var rd struct {
		SessionID string `json:"session_id"`
		ResumeURL string `json:"resume_gateway_url"`
	}
	_ = json.Unmarshal(ready.D, &rd)
	if ready.T != "READY" || rd.SessionID == "" || !strings.HasSuffix(rd.ResumeURL, "/resume") {
		t.Fatalf("READY %+v", rd)
	}
	if f := c.read(); f.T != "GUILD_CREATE" {
		t.Fatalf("want GUILD_CREATE, got %s", f.T)
	}
	a := s.Post(UserMessage{Channel: ch, Author: User{ID: "42"}, Content: "a", MentionBot: true})
	last := c.read()
	if last.T != "MESSAGE_CREATE" {
		t.Fatalf("got %s", last.T)
	}
	s.Drop()
	_ = c.ws.Close()
	b := s.Post(UserMessage{Channel: ch, Author: User{ID: "42"}, Content: "b", MentionBot: true})

	// On the generic URL the resume is refused (op 9), as a client ignoring resume_gateway_url risks.
	wrong := dialRaw(t, gw)
	wrong.send(6, map[string]any{"token": s.Token(), "session_id": rd.SessionID, "seq": last.S})
	if f := wrong.read(); f.Op != 9 {
		t.Fatalf("resume on the generic URL: op %d", f.Op)
	}
	_ = wrong.ws.Close()

	r := dialRaw(t, rd.ResumeURL)
	defer r.ws.Close()
	r.send(6, map[string]any{"token": s.Token(), "session_id": rd.SessionID, "seq": last.S})
	missed := r.read()
	var m struct{ ID string }
	_ = json.Unmarshal(missed.D, &m)
	if missed.T != "MESSAGE_CREATE" || m.ID != b || missed.S != last.S+1 {
		t.Fatalf("replayed %s %s seq %d (a=%s)", missed.T, m.ID, missed.S, a)
	}
	if f := r.read(); f.T != "RESUMED" {
		t.Fatalf("want RESUMED, got %s", f.T)
	}
	res := s.Resumes()
	if len(res) != 2 || res[0].Accepted || !res[1].Accepted || res[1].Replayed != 1 {
		t.Errorf("resumes = %+v", res)
	}
}

func TestFakeGatewayMalformedPayloadsClose(t *testing.T) {
	cases := []struct {
		name string
		send string
		want int
	}{
		{"not json", "{", CloseDecodeError},
		{"unknown opcode", `{"op":42}`, CloseUnknownOpcode},
		{"identify without intents", `{"op":2,"d":{"token":"x"}}`, CloseDecodeError},
		{"presence before identify", `{"op":3,"d":{}}`, CloseNotAuthenticated},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := New(t)
			c := dialRaw(t, s.wsURL("/gw"))
			defer c.ws.Close()
			_ = c.ws.WriteMessage(websocket.TextMessage, []byte(tc.send))
			_ = c.ws.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, _, err := c.ws.ReadMessage()
			var ce *websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != tc.want {
				t.Errorf("got %v, want close %d", err, tc.want)
			}
		})
	}
}

// TestMessagesWithFilesThroughDiscordgo proves a multipart message post (payload_json and
// files[n], as discordgo's ChannelMessageSendComplex sends it) is taken with its files kept and
// shown as attachments, and that Discord's refusals are answered: an unknown channel, too many
// files, more than 10 MiB, a body that is not multipart as it claims.
func TestMessagesWithFilesThroughDiscordgo(t *testing.T) {
	s := New(t)
	conformance.ExpectViolations(t, s) // refused bodies, sent on purpose
	ch := s.Guild("500")
	dg := dgSession(t, s, s.Token())
	data := strings.Repeat("the rest of the answer\n", 2000)
	sent, err := dg.ChannelMessageSendComplex(ch, &discordgo.MessageSend{Content: "The rest.",
		Files:           []*discordgo.File{{Name: "answer.md", ContentType: "text/markdown", Reader: strings.NewReader(data)}},
		AllowedMentions: &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}}})
	if err != nil {
		t.Fatalf("send with a file: %v", err)
	}
	if len(sent.Attachments) != 1 || sent.Attachments[0].Filename != "answer.md" || sent.Attachments[0].Size != len(data) {
		t.Fatalf("the answer's attachments: %+v", sent.Attachments)
	}
	files := s.FilesPosted(ch)
	if len(files) != 1 || files[0].Name != "answer.md" || string(files[0].Data) != data || files[0].ContentType != "text/markdown" {
		t.Fatalf("files %+v", files)
	}
	m, _ := s.Message(sent.ID)
	if m.Content != "The rest." || m.AllowedMentions == nil || len(m.AllowedMentions.Parse) != 0 {
		t.Errorf("the message is %+v", m)
	}
	// A file alone is a message.
	if _, err := dg.ChannelMessageSendComplex(ch, &discordgo.MessageSend{Files: []*discordgo.File{{Name: "a.txt", Reader: strings.NewReader("a")}}}); err != nil {
		t.Errorf("a file without content: %v", err)
	}

	refused := func(what string, status int, send func() error) {
		t.Helper()
		var re *discordgo.RESTError
		if err := send(); !errors.As(err, &re) || re.Response.StatusCode != status {
			t.Errorf("%s: %v, want HTTP %d", what, err, status)
		}
	}
	refused("unknown channel", 404, func() error {
		_, err := dg.ChannelMessageSendComplex("1", &discordgo.MessageSend{Files: []*discordgo.File{{Name: "a", Reader: strings.NewReader("a")}}})
		return err
	})
	var eleven []*discordgo.File
	for range 11 {
		eleven = append(eleven, &discordgo.File{Name: "a.txt", Reader: strings.NewReader("a")})
	}
	refused("11 files", 400, func() error {
		_, err := dg.ChannelMessageSendComplex(ch, &discordgo.MessageSend{Files: eleven})
		return err
	})
	refused("over 10 MiB", 413, func() error {
		big := strings.NewReader(strings.Repeat("x", MaxAttachmentBytes+1))
		_, err := dg.ChannelMessageSendComplex(ch, &discordgo.MessageSend{Files: []*discordgo.File{{Name: "big.md", Reader: big}}})
		return err
	})
	refused("not multipart", 400, func() error {
		_, err := dg.RequestRaw("POST", discordgo.EndpointChannelMessages(ch), "multipart/form-data; boundary=xyz", []byte("garbage"), "", 0)
		return err
	})
	if n := len(s.FilesPosted(ch)); n != 2 {
		t.Errorf("%d files posted, want the two taken", n)
	}
}

// TestFakeRefusesEmbedFieldsOutOfBounds: as Discord, a field needs a name of 1–256 characters
// and a value of 1–1,024, and a footer takes up to 2,048.
func TestFakeRefusesEmbedFieldsOutOfBounds(t *testing.T) {
	s := New(t)
	conformance.ExpectViolations(t, s) // refused bodies, sent on purpose
	ch := s.Guild("500")
	dg := dgSession(t, s, s.Token())
	field := func(name, value string) *discordgo.MessageEmbed {
		return &discordgo.MessageEmbed{Title: "T", Fields: []*discordgo.MessageEmbedField{{Name: name, Value: value}}}
	}
	tests := []struct {
		name  string
		embed *discordgo.MessageEmbed
		ok    bool
	}{
		{"at the limits", field(strings.Repeat("n", 256), strings.Repeat("é", 1024)), true},
		{"value too long", field("n", strings.Repeat("v", 1025)), false},
		{"name too long", field(strings.Repeat("n", 257), "v"), false},
		{"empty value", field("n", ""), false},
		{"empty name", field("", "v"), false},
		{"footer too long", &discordgo.MessageEmbed{Title: "T", Footer: &discordgo.MessageEmbedFooter{Text: strings.Repeat("f", 2049)}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := dg.ChannelMessageSendComplex(ch, &discordgo.MessageSend{Embeds: []*discordgo.MessageEmbed{tt.embed}})
			var re *discordgo.RESTError
			if tt.ok && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !tt.ok && (!errors.As(err, &re) || re.Message == nil || re.Message.Code != 50035) {
				t.Fatalf("err = %v, want 50035 Invalid Form Body", err)
			}
		})
	}
}
