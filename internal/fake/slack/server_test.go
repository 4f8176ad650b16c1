package slackfake_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/conformance"

	"github.com/gorilla/websocket"
	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"
	"go.uber.org/goleak"

	slackfake "github.com/switchboard-bot/switchboard/internal/fake/slack"
	"github.com/switchboard-bot/switchboard/internal/poll"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func client(s *slackfake.Server) *slack.Client {
	return slack.New(s.BotToken(), slack.OptionAPIURL(s.APIURL()), slack.OptionAppLevelToken(s.AppToken()))
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, what, cond)
}

func TestWebAPIThroughSlackGo(t *testing.T) {
	s := slackfake.New(t)
	api := client(s)
	ctx := context.Background()

	at, err := api.AuthTestContext(ctx)
	if err != nil || at.UserID != slackfake.BotUserID || at.TeamID != slackfake.TeamID || at.BotID != slackfake.BotID {
		t.Fatalf("auth.test = %+v, %v", at, err)
	}
	bad := slack.New("xoxb-wrong", slack.OptionAPIURL(s.APIURL()))
	if _, err := bad.AuthTestContext(ctx); err == nil || err.Error() != "invalid_auth" {
		t.Fatalf("auth.test with a wrong token: %v, want invalid_auth", err)
	}
	if c := s.CallsOf("auth.test"); len(c) != 2 || c[0].Auth != "form" || c[0].Params["token"] != "" {
		t.Fatalf("auth.test calls %+v: want the token read from the form and never recorded", c)
	}

	root := s.NewTS()
	ch, ts, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("hello *there*", false),
		slack.MsgOptionTS(root), slack.MsgOptionDisableLinkUnfurl(),
		slack.MsgOptionBlocks(slack.NewSectionBlock(slack.NewTextBlockObject("mrkdwn", "hi", false, false), nil, nil)))
	if err != nil || ch != "C1" || ts == "" {
		t.Fatalf("chat.postMessage: %q %q %v", ch, ts, err)
	}
	if _, _, _, err := api.UpdateMessageContext(ctx, "C1", ts, slack.MsgOptionText("edited", false)); err != nil {
		t.Fatalf("chat.update: %v", err)
	}
	posted := s.Posted("C1")
	if len(posted) != 1 || posted[0].Text != "edited" || posted[0].Edits != 1 || posted[0].ThreadTS != root || posted[0].UnfurlLinks != "false" {
		t.Fatalf("posted %+v", posted)
	}
	if _, _, _, err := api.UpdateMessageContext(ctx, "C1", "1.000001", slack.MsgOptionText("x", false)); err == nil || err.Error() != "message_not_found" {
		t.Fatalf("chat.update of an unknown message: %v", err)
	}
	if _, _, err := api.DeleteMessageContext(ctx, "C1", ts); err != nil {
		t.Fatalf("chat.delete: %v", err)
	}
	if len(s.Posted("C1")) != 0 {
		t.Fatal("a deleted message is still posted")
	}
	if _, err := api.PostEphemeralContext(ctx, "C1", "U1", slack.MsgOptionText("only you", false)); err != nil {
		t.Fatalf("chat.postEphemeral: %v", err)
	}
	if e := s.Ephemerals(); len(e) != 1 || e[0].User != "U1" || e[0].Text != "only you" {
		t.Fatalf("ephemerals %+v", e)
	}

	view := slack.ModalViewRequest{Type: slack.VTModal, Title: slack.NewTextBlockObject("plain_text", "Q", false, false),
		Blocks: slack.Blocks{BlockSet: []slack.Block{slack.NewSectionBlock(slack.NewTextBlockObject("mrkdwn", "x", false, false), nil, nil)}}}
	if _, err := api.OpenViewContext(ctx, "not-issued", view); err == nil || err.Error() != "invalid_trigger_id" {
		t.Fatalf("views.open with an unknown trigger: %v", err)
	}
	trig := s.NewTriggerID()
	if _, err := api.OpenViewContext(ctx, trig, view); err != nil {
		t.Fatalf("views.open: %v", err)
	}
	if v := s.Views(); len(v) != 1 || v[0].TriggerID != trig || !strings.Contains(v[0].View, `"modal"`) {
		t.Fatalf("views %+v", v)
	}
	if c := s.CallsOf("views.open"); c[len(c)-1].Auth != "bearer" {
		t.Fatalf("views.open token came by %q, want bearer", c[len(c)-1].Auth)
	}
	trig = s.NewTriggerID()
	s.ExpireTriggers()
	if _, err := api.OpenViewContext(ctx, trig, view); err == nil || err.Error() != "expired_trigger_id" {
		t.Fatalf("views.open with an expired trigger: %v", err)
	}

	if err := api.SetAssistantThreadsStatusContext(ctx, slack.AssistantThreadsSetStatusParameters{ChannelID: "D1", ThreadTS: root, Status: "is thinking…"}); err != nil {
		t.Fatalf("setStatus: %v", err)
	}
	if err := api.SetAssistantThreadsStatusContext(ctx, slack.AssistantThreadsSetStatusParameters{ChannelID: "D1", ThreadTS: root}); err != nil {
		t.Fatalf("clearing the status: %v", err)
	}
	if st := s.Statuses(); len(st) != 2 || st[0].Status != "is thinking…" || st[1].Status != "" {
		t.Fatalf("statuses %+v", st)
	}
	if err := api.SetAssistantThreadsSuggestedPromptsContext(ctx, slack.AssistantThreadsSetSuggestedPromptsParameters{ChannelID: "D1", ThreadTS: root,
		Prompts: []slack.AssistantThreadsPrompt{{Title: "a", Message: "b"}}}); err != nil {
		t.Fatalf("setSuggestedPrompts: %v", err)
	}
	if err := api.SetAssistantThreadsTitleContext(ctx, slack.AssistantThreadsSetTitleParameters{ChannelID: "D1", ThreadTS: root, Title: "t"}); err != nil {
		t.Fatalf("setTitle: %v", err)
	}
}

func TestStreaming(t *testing.T) {
	s := slackfake.New(t)
	api := client(s)
	ctx := context.Background()
	root := s.NewTS()
	if _, _, err := api.StartStreamContext(ctx, "C1", slack.MsgOptionTS(root), slack.MsgOptionMarkdownText("a")); err == nil || err.Error() != "missing_recipient_user_id" {
		t.Fatalf("streaming into a channel without the recipient: %v", err)
	}
	_, ts, err := api.StartStreamContext(ctx, "C1", slack.MsgOptionTS(root), slack.MsgOptionMarkdownText("a"),
		slack.MsgOptionRecipientUserID("U1"), slack.MsgOptionRecipientTeamID(slackfake.TeamID))
	if err != nil {
		t.Fatalf("chat.startStream: %v", err)
	}
	if _, _, err := api.AppendStreamContext(ctx, "C1", ts, slack.MsgOptionMarkdownText("b")); err != nil {
		t.Fatalf("chat.appendStream: %v", err)
	}
	if _, _, err := api.StopStreamContext(ctx, "C1", ts, slack.MsgOptionMarkdownText("c")); err != nil {
		t.Fatalf("chat.stopStream: %v", err)
	}
	if _, _, err := api.AppendStreamContext(ctx, "C1", ts, slack.MsgOptionMarkdownText("d")); err == nil || err.Error() != "message_not_in_streaming_state" {
		t.Fatalf("append after stop: %v", err)
	}
	if p := s.Posted("C1"); len(p) != 1 || p[0].Markdown != "abc" || p[0].Streaming || !p[0].Streamed {
		t.Fatalf("streamed %+v", p)
	}
	s.FailNext("chat.startStream", 1, slackfake.Fault{Error: "not_allowed_token_type"})
	if _, _, err := api.StartStreamContext(ctx, "D1", slack.MsgOptionTS(root)); err == nil || err.Error() != "not_allowed_token_type" {
		t.Fatalf("refused stream: %v", err)
	}
}

func TestLimitsAndFaults(t *testing.T) {
	s := slackfake.New(t)
	conformance.ExpectViolations(t, s) // refused bodies, sent on purpose
	api := client(s)
	ctx := context.Background()
	var blocks []slack.Block
	for range 51 {
		blocks = append(blocks, slack.NewDividerBlock())
	}
	if _, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionBlocks(blocks...)); err == nil || err.Error() != "invalid_blocks" {
		t.Fatalf("51 blocks: %v", err)
	}
	long := slack.NewSectionBlock(slack.NewTextBlockObject("mrkdwn", strings.Repeat("x", 3001), false, false), nil, nil)
	if _, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionBlocks(long)); err == nil || err.Error() != "invalid_blocks" {
		t.Fatalf("a 3,001-character section: %v", err)
	}
	if _, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText(strings.Repeat("x", 40001), false)); err == nil || err.Error() != "msg_too_long" {
		t.Fatalf("40,001 characters: %v", err)
	}

	s.RateLimit("chat.postMessage", 2, 0)
	for i := range 2 {
		_, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("x", false))
		var rl *slack.RateLimitedError
		if !errors.As(err, &rl) {
			t.Fatalf("call %d under a 429: %v, want a RateLimitedError", i, err)
		}
	}
	s.FailChannel("C2", "chat.postMessage", 1, slackfake.Fault{Error: "ratelimited"})
	if _, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("x", false)); err != nil {
		t.Fatalf("after the storm: %v", err)
	}
	if _, _, err := api.PostMessageContext(ctx, "C2", slack.MsgOptionText("x", false)); err == nil || err.Error() != "ratelimited" {
		t.Fatalf("C2 fault: %v", err)
	}
	s.FailNext("chat.update", 1, slackfake.Fault{Status: 503})
	if _, _, _, err := api.UpdateMessageContext(ctx, "C1", "1.1", slack.MsgOptionText("x", false)); err == nil {
		t.Fatal("a 503 was not an error")
	}
	if n := s.Count("chat.postMessage"); n != 7 {
		t.Errorf("postMessage count %d, want 7", n)
	}
}

// socketClient runs a slack-go Socket Mode client against s, collecting what it receives and
// acking events_api envelopes when ack says so.
type socketClient struct {
	mu     sync.Mutex
	events []socketmode.Event
}

func (c *socketClient) got(typ socketmode.EventType) []socketmode.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []socketmode.Event
	for _, e := range c.events {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func runSocket(t *testing.T, s *slackfake.Server, ack func(socketmode.Request) bool) *socketClient {
	t.Helper()
	sm := socketmode.New(client(s))
	ctx, cancel := context.WithCancel(context.Background())
	c := &socketClient{}
	var wg sync.WaitGroup
	wg.Go(func() { _ = sm.RunContext(ctx) })
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case ev := <-sm.Events:
				c.mu.Lock()
				c.events = append(c.events, ev)
				c.mu.Unlock()
				if ev.Request != nil && ev.Request.EnvelopeID != "" && ack(*ev.Request) {
					_ = sm.Ack(*ev.Request)
				}
			}
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	return c
}

func TestSocketModeThroughSlackGo(t *testing.T) {
	s := slackfake.New(t)
	s.SetPingInterval(50 * time.Millisecond)
	c := runSocket(t, s, func(r socketmode.Request) bool { return r.RetryAttempt > 0 || r.Type != "events_api" })
	waitFor(t, "hello", func() bool { return len(c.got(socketmode.EventTypeHello)) == 1 })

	// Not acked the first time: redelivered with retry_attempt 1, then acked.
	s.SetRedelivery(100*time.Millisecond, 2)
	ts, env := s.PushMessage(slackfake.Msg{Channel: "D1", ChannelType: "im", User: "U1", Text: "hi"})
	waitFor(t, "the redelivery", func() bool { return len(c.got(socketmode.EventTypeEventsAPI)) == 2 })
	evs := c.got(socketmode.EventTypeEventsAPI)
	if evs[0].Request.EnvelopeID != env || evs[1].Request.RetryAttempt != 1 || evs[1].Request.RetryReason != "timeout" {
		t.Fatalf("deliveries %+v / %+v", evs[0].Request, evs[1].Request)
	}
	waitFor(t, "the ack", func() bool { return s.Acked(evs[1].Request.EnvelopeID) })
	if s.Acked(env) {
		t.Error("the first delivery counts as acked")
	}
	api := evs[1].Data.(slackevents.EventsAPIEvent)
	msg, ok := api.InnerEvent.Data.(*slackevents.MessageEvent)
	if !ok || msg.TimeStamp != ts || msg.Text != "hi" || msg.ChannelType != "im" || api.TeamID != slackfake.TeamID {
		t.Fatalf("decoded %+v / %+v", api, api.InnerEvent.Data)
	}

	env = s.PushAction(slackfake.Action{User: "U1", Channel: "C1", MessageTS: ts, ActionID: "act", Value: "v"})
	waitFor(t, "the interaction's ack", func() bool { return s.Acked(env) })
	cb := c.got(socketmode.EventTypeInteractive)[0].Data.(slack.InteractionCallback)
	if cb.Type != slack.InteractionTypeBlockActions || cb.ActionCallback.BlockActions[0].ActionID != "act" || cb.TriggerID == "" {
		t.Fatalf("interaction %+v", cb)
	}
	env = s.PushSlash(slackfake.Slash{Command: "/bot", Text: "help", User: "U1", Channel: "C1"})
	waitFor(t, "the command's ack", func() bool { return s.Acked(env) })
	if cmd := c.got(socketmode.EventTypeSlashCommand)[0].Data.(slack.SlashCommand); cmd.Command != "/bot" || cmd.Text != "help" {
		t.Fatalf("command %+v", cmd)
	}

	// A disconnect makes the client reconnect, the old socket closed first.
	s.Disconnect("refresh_requested")
	waitFor(t, "a second socket", func() bool { return s.Opened() == 2 && s.Connections() == 1 })
	// A dropped socket too; an envelope sent meanwhile waits for the new one.
	s.DropSockets()
	env = s.PushSlash(slackfake.Slash{Command: "/bot", Text: "again", User: "U1", Channel: "C1"})
	waitFor(t, "a third socket", func() bool { return s.Opened() == 3 })
	waitFor(t, "the command sent after the drop acked", func() bool { return s.Acked(env) })
}

// TestLostAckResentOnTheNextSocket proves LoseAcks: the client's ack is not counted, its socket
// is cut, and the envelope comes again on the new socket with retry_attempt 1; later acks count.
func TestLostAckResentOnTheNextSocket(t *testing.T) {
	s := slackfake.New(t)
	s.SetPingInterval(50 * time.Millisecond)
	c := runSocket(t, s, func(socketmode.Request) bool { return true })
	waitFor(t, "hello", func() bool { return len(c.got(socketmode.EventTypeHello)) == 1 })
	s.LoseAcks(1)
	_, env := s.PushMessage(slackfake.Msg{Channel: "D1", ChannelType: "im", User: "U1", Text: "hi"})
	waitFor(t, "the resend", func() bool { return len(c.got(socketmode.EventTypeEventsAPI)) == 2 })
	evs := c.got(socketmode.EventTypeEventsAPI)
	if evs[0].Request.EnvelopeID != env || evs[1].Request.RetryAttempt != 1 || evs[1].Request.RetryReason != "timeout" {
		t.Fatalf("deliveries %+v / %+v", evs[0].Request, evs[1].Request)
	}
	again := evs[1].Request.EnvelopeID
	waitFor(t, "the resend acked", func() bool { return s.Acked(again) })
	if s.Acked(env) {
		t.Error("the lost ack was counted")
	}
	if s.Opened() != 2 || s.PeakConnections() != 1 {
		t.Errorf("opened %d sockets, %d at once; want the first cut and a second", s.Opened(), s.PeakConnections())
	}
	envs := s.Envelopes()
	if len(envs) != 2 || envs[1].Conn != 2 || string(envs[1].Payload) != string(envs[0].Payload) {
		t.Fatalf("envelopes %+v: want the same payload again on socket 2", envs)
	}
	_, next := s.PushMessage(slackfake.Msg{Channel: "D1", ChannelType: "im", User: "U1", Text: "next"})
	waitFor(t, "the next ack counted", func() bool { return s.Acked(next) })
	if s.Opened() != 2 {
		t.Errorf("opened %d sockets; only one ack was to be lost", s.Opened())
	}
}

// dialSocket opens a Socket Mode websocket on s as a client does and reads its hello.
func dialSocket(t *testing.T, s *slackfake.Server) *websocket.Conn {
	t.Helper()
	_, url, err := client(s).StartSocketModeContext(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ws, resp, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, hello, err := ws.ReadMessage(); err != nil || !strings.Contains(string(hello), `"hello"`) {
		t.Fatalf("hello: %s, %v", hello, err)
	}
	return ws
}

// TestPeakConnectionsCountsSocketsOpenTogether proves PeakConnections counts sockets a client
// holds open at once, and not one it closed just before opening the next (however soon the
// next comes after).
func TestPeakConnectionsCountsSocketsOpenTogether(t *testing.T) {
	s := slackfake.New(t)
	ws := dialSocket(t, s)
	for range 20 {
		ws.Close()
		ws = dialSocket(t, s)
	}
	if n := s.PeakConnections(); n != 1 {
		t.Errorf("PeakConnections %d after sockets closed before the next opened, want 1", n)
	}
	other := dialSocket(t, s)
	if n := s.PeakConnections(); n != 2 {
		t.Errorf("PeakConnections %d with two sockets open, want 2", n)
	}
	other.Close()
	ws.Close()
}

func TestSignedDeliveries(t *testing.T) {
	s := slackfake.New(t)
	var mu sync.Mutex
	var retries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, err := slack.NewSecretsVerifier(r.Header, s.SigningSecret())
		if err != nil {
			http.Error(w, "unsigned", http.StatusUnauthorized)
			return
		}
		body, _ := io.ReadAll(r.Body)
		_, _ = v.Write(body)
		if v.Ensure() != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		mu.Lock()
		retries = append(retries, r.Header.Get("X-Slack-Retry-Num"))
		mu.Unlock()
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			ev, err := slackevents.ParseEvent(body, slackevents.OptionNoVerifyToken())
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			if ev.Type == slackevents.URLVerification {
				var c slackevents.ChallengeResponse
				_ = json.Unmarshal(body, &c)
				_ = json.NewEncoder(w).Encode(slackevents.ChallengeResponse{Challenge: c.Challenge})
				return
			}
		}
		_ = r.ParseForm()
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()

	ev := s.Callback(map[string]any{"type": "app_mention", "channel": "C1", "user": "U1", "text": "hi", "ts": "1.2"})
	cases := []struct {
		name string
		d    slackfake.Delivery
		want int
	}{
		{"good", slackfake.Delivery{}, 200},
		{"bad signature", slackfake.Delivery{BadSignature: true}, 401},
		{"stale", slackfake.Delivery{Stale: true}, 401},
		{"unsigned", slackfake.Delivery{Unsigned: true}, 401},
		{"retry", slackfake.Delivery{RetryNum: 1}, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := s.DeliverEvent(srv.URL, ev, tc.d)
			if err != nil || r.Status != tc.want {
				t.Fatalf("status %d, %v; want %d", r.Status, err, tc.want)
			}
		})
	}
	r, err := s.DeliverEvent(srv.URL, slackfake.URLVerification("chal-123"), slackfake.Delivery{})
	if err != nil || r.Status != 200 || !strings.Contains(string(r.Body), `"challenge":"chal-123"`) {
		t.Fatalf("url_verification: %d %s %v", r.Status, r.Body, err)
	}
	if r, err := s.DeliverInteraction(srv.URL, s.BlockActions(slackfake.Action{User: "U1", Channel: "C1", ActionID: "a"}), slackfake.Delivery{}); err != nil || r.Status != 200 {
		t.Fatalf("interaction: %d %v", r.Status, err)
	}
	if r, err := s.DeliverSlash(srv.URL, slackfake.Slash{Command: "/bot", User: "U1", Channel: "C1"}, slackfake.Delivery{}); err != nil || r.Status != 200 {
		t.Fatalf("slash command: %d %v", r.Status, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(retries) != 5 || retries[1] != "1" {
		t.Fatalf("retry headers %q", retries)
	}
}

func TestOAuthInstallAndRotation(t *testing.T) {
	s := slackfake.New(t)
	ctx := context.Background()
	code := s.IssueCode("T0SECOND")
	opt := slack.OAuthOptionAPIURL(s.APIURL())
	if _, err := slack.GetOAuthV2ResponseContext(ctx, http.DefaultClient, slackfake.ClientID, "wrong", code, "https://x.test/cb", opt); err == nil {
		t.Fatal("a wrong client secret was accepted")
	}
	s.SetTokenRotation(12 * time.Hour)
	resp, err := slack.GetOAuthV2ResponseContext(ctx, http.DefaultClient, slackfake.ClientID, slackfake.ClientSecret, code, "https://x.test/cb", opt)
	if err != nil || resp.Team.ID != "T0SECOND" || !strings.HasPrefix(resp.AccessToken, "xoxb-") || resp.RefreshToken == "" || resp.ExpiresIn != 43200 {
		t.Fatalf("oauth.v2.access: %+v, %v", resp, err)
	}
	if _, err := slack.GetOAuthV2ResponseContext(ctx, http.DefaultClient, slackfake.ClientID, slackfake.ClientSecret, code, "https://x.test/cb", opt); err == nil || err.Error() != "invalid_code" {
		t.Fatalf("a code used twice: %v", err)
	}
	team := slack.New(resp.AccessToken, slack.OptionAPIURL(s.APIURL()))
	if at, err := team.AuthTestContext(ctx); err != nil || at.TeamID != "T0SECOND" {
		t.Fatalf("auth.test with the installed token: %+v %v", at, err)
	}
	if c := s.CallsOf("auth.test"); c[len(c)-1].Team != "T0SECOND" {
		t.Fatalf("the call was recorded for team %q", c[len(c)-1].Team)
	}
	if c := s.CallsOf("oauth.v2.access"); strings.Contains(fmt.Sprint(c), slackfake.ClientSecret) {
		t.Fatal("the client secret was recorded")
	}
	fresh, err := slack.RefreshOAuthV2TokenContext(ctx, http.DefaultClient, slackfake.ClientID, slackfake.ClientSecret, resp.RefreshToken, opt)
	if err != nil || fresh.AccessToken == resp.AccessToken || fresh.Team.ID != "T0SECOND" {
		t.Fatalf("refresh: %+v %v", fresh, err)
	}
	if _, err := team.AuthTestContext(ctx); err == nil || err.Error() != "invalid_auth" {
		t.Fatalf("the rotated-out token: %v, want invalid_auth", err)
	}
	s.RevokeTeam("T0SECOND")
	if _, err := slack.New(fresh.AccessToken, slack.OptionAPIURL(s.APIURL())).AuthTestContext(ctx); err == nil {
		t.Fatal("a revoked team's token still works")
	}
}

// TestFileUploadThroughSlackGo proves the external upload flow as slack-go drives it: an upload
// URL on the fake, the bytes posted there (multipart), the file completed once and shared in a
// thread with its initial comment as a message of the bot — and the failures the flow can meet:
// a bad length, a failed byte upload, a file completed twice or never uploaded, a 429.
func TestFileUploadThroughSlackGo(t *testing.T) {
	s := slackfake.New(t)
	conformance.ExpectViolations(t, s) // refused bodies, sent on purpose
	api := client(s)
	ctx := context.Background()
	data := strings.Repeat("the rest of the answer\n", 3000)
	root := s.NewTS()
	sum, err := api.UploadFileContext(ctx, slack.UploadFileParameters{Filename: "answer.md", FileSize: len(data),
		Reader: strings.NewReader(data), Channel: "C1", ThreadTimestamp: root, InitialComment: "The rest."})
	if err != nil {
		t.Fatalf("UploadFileContext: %v", err)
	}
	ups := s.Uploads()
	if len(ups) != 1 || ups[0].ID != sum.ID || ups[0].Name != "answer.md" || string(ups[0].Data) != data {
		t.Fatalf("uploads %+v, want answer.md with its %d bytes", ups, len(data))
	}
	u := ups[0]
	if u.Channel != "C1" || u.ThreadTS != root || u.InitialComment != "The rest." || u.Team != slackfake.TeamID {
		t.Errorf("shared %q/%q with %q by %q", u.Channel, u.ThreadTS, u.InitialComment, u.Team)
	}
	posted := s.Posted("C1")
	if len(posted) != 1 || posted[0].TS != u.TS || posted[0].ThreadTS != root || len(posted[0].Files) != 1 || posted[0].Files[0] != u.ID {
		t.Fatalf("the share message is %+v", posted)
	}
	for _, c := range s.CallsOf(slackfake.UploadMethod) {
		if c.Status != 200 {
			t.Errorf("upload answered %d", c.Status)
		}
	}
	// Completed once: again is file_not_found, as is a file never uploaded.
	_, err = api.CompleteUploadExternalContext(ctx, slack.CompleteUploadExternalParameters{Files: []slack.FileSummary{{ID: u.ID}}, Channel: "C1"})
	if err == nil || err.Error() != "file_not_found" {
		t.Errorf("completing twice: %v, want file_not_found", err)
	}
	url, err := api.GetUploadURLExternalContext(ctx, slack.GetUploadURLExternalParameters{FileName: "x.md", FileSize: 3})
	if err != nil {
		t.Fatal(err)
	}
	_, err = api.CompleteUploadExternalContext(ctx, slack.CompleteUploadExternalParameters{Files: []slack.FileSummary{{ID: url.FileID}}, Channel: "C1"})
	if err == nil || err.Error() != "file_not_found" {
		t.Errorf("completing a file never uploaded: %v, want file_not_found", err)
	}
	// Bytes that are not the length announced are refused.
	if err := api.UploadToURL(ctx, slack.UploadToURLParameters{UploadURL: url.UploadURL, Filename: "x.md", Content: "four"}); err == nil {
		t.Error("4 bytes for a 3-byte upload were taken")
	}
	// A malformed request: no length.
	resp, err := http.PostForm(s.APIURL()+"files.getUploadURLExternal", map[string][]string{"token": {s.BotToken()}, "filename": {"a"}})
	if err != nil {
		t.Fatal(err)
	}
	var bad struct{ Error string }
	_ = json.NewDecoder(resp.Body).Decode(&bad)
	resp.Body.Close()
	if bad.Error != "invalid_arguments" {
		t.Errorf("no length: %q, want invalid_arguments", bad.Error)
	}
	// Injected failures: the byte upload, and a 429 on completion.
	s.FailNext(slackfake.UploadMethod, 1, slackfake.Fault{Status: 500})
	_, err = api.UploadFileContext(ctx, slack.UploadFileParameters{Filename: "a.md", FileSize: 3, Content: "abc", Channel: "C1"})
	var sc slack.StatusCodeError
	if !errors.As(err, &sc) || sc.Code != 500 {
		t.Errorf("a failed byte upload: %v, want HTTP 500", err)
	}
	s.RateLimit("files.completeUploadExternal", 1, 2)
	_, err = api.UploadFileContext(ctx, slack.UploadFileParameters{Filename: "a.md", FileSize: 3, Content: "abc", Channel: "C1"})
	var rl *slack.RateLimitedError
	if !errors.As(err, &rl) || rl.RetryAfter != 2*time.Second {
		t.Errorf("a rate-limited completion: %v, want Retry-After 2 s", err)
	}
	if n := len(s.Uploads()); n != 1 {
		t.Errorf("%d files completed, want only the first", n)
	}
}

// TestHoldDelaysACallUntilReleased proves Hold: a held call arrives (Count) but is not answered
// (CallsOf) until release, other methods are not held, and Close lets a held call go.
func TestHoldDelaysACallUntilReleased(t *testing.T) {
	s := slackfake.New(t)
	api := client(s)
	release := s.Hold("assistant.threads.setTitle", 1)
	done := make(chan error, 1)
	go func() {
		done <- api.SetAssistantThreadsTitle(slack.AssistantThreadsSetTitleParameters{ChannelID: "D1", ThreadTS: "1.1", Title: "t"})
	}()
	waitFor(t, "the held call to arrive", func() bool { return s.Count("assistant.threads.setTitle") == 1 })
	if _, _, err := api.PostMessage("C1", slack.MsgOptionText("not held", false)); err != nil {
		t.Fatalf("a call of another method while one is held: %v", err)
	}
	if n := len(s.CallsOf("assistant.threads.setTitle")); n != 0 {
		t.Fatalf("the held call was answered before release (%d logged)", n)
	}
	release()
	if err := <-done; err != nil {
		t.Fatalf("the released call: %v", err)
	}
	if n := len(s.CallsOf("assistant.threads.setTitle")); n != 1 {
		t.Fatalf("%d setTitle calls logged after release, want 1", n)
	}
	release() // twice is fine

	// A held call ends with the server.
	s2 := slackfake.Start()
	s2.Hold("auth.test", -1)
	ended := make(chan struct{})
	go func() {
		_, _ = client(s2).AuthTest()
		close(ended)
	}()
	waitFor(t, "the held auth.test to arrive", func() bool { return s2.Count("auth.test") == 1 })
	s2.Close()
	<-ended
}
