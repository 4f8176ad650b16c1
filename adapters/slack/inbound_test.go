package slack

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/internal/chantest"
	slackfake "github.com/switchboard-bot/switchboard/internal/fake/slack"
)

func TestSocketDirectMessageHandedOverThenAcked(t *testing.T) {
	h := start(t, nil)
	if h.ch.BotUserID() != slackfake.BotUserID {
		t.Fatalf("bot user %q after Start", h.ch.BotUserID())
	}
	ts, env := h.fake.PushMessage(slackfake.Msg{Channel: "D1", ChannelType: "im", User: ann, Text: "hello bot"})
	in := h.waitInbound(t, 1)[0]
	want := conv.Key{Platform: "slack", Workspace: slackfake.TeamID, Chat: "D1"}
	if in.Conv != want || !in.Direct || !in.AddressesBot || in.Text != "hello bot" || in.MessageID != ts || in.FromBot {
		t.Fatalf("inbound %+v", in)
	}
	if in.Identity.ChannelUserID != annID || in.EventID != "msg:D1:"+ts {
		t.Fatalf("identity %q, event id %q", in.Identity.ChannelUserID, in.EventID)
	}
	eventually(t, "the ack", func() bool { return h.fake.Acked(env) })
}

func TestSocketEnvelopeNotAckedWhenTheHandlerFails(t *testing.T) {
	fake := slackfake.New(t)
	var calls atomic.Int32
	rec := &recorder{fail: func(channels.Inbound) error {
		if calls.Add(1) == 1 {
			return errors.New("redis is down")
		}
		return nil
	}}
	h := startWith(t, fake, nil, rec)
	fake.SetRedelivery(200*time.Millisecond, 3)
	_, env := fake.PushMessage(slackfake.Msg{Channel: "D1", ChannelType: "im", User: ann, Text: "hi"})
	got := h.waitInbound(t, 1)
	if calls.Load() != 2 {
		t.Fatalf("handler called %d times, want 2 (refused, then the redelivery)", calls.Load())
	}
	if fake.Acked(env) {
		t.Error("the refused envelope was acked; Slack would not redeliver it")
	}
	envs := fake.Envelopes()
	if len(envs) != 2 || envs[1].RetryAttempt != 1 {
		t.Fatalf("envelopes %+v", envs)
	}
	eventually(t, "the redelivery acked", func() bool { return fake.Acked(envs[1].ID) })
	if !strings.HasPrefix(got[0].EventID, "msg:D1:") {
		t.Errorf("event id %q", got[0].EventID)
	}
}

func TestSocketMentionPairSharesOneEventID(t *testing.T) {
	h := start(t, nil)
	ts, envs := h.fake.PushMentionPair(slackfake.Msg{Channel: "C1", User: ann, Text: slackfake.Mention() + " what's up?"})
	got := h.waitInbound(t, 2)
	for _, in := range got {
		if in.EventID != "msg:C1:"+ts || in.Text != "what's up?" || !in.AddressesBot || in.Direct {
			t.Fatalf("inbound %+v", in)
		}
		// A top-level mention is answered in a thread rooted at it.
		if in.Conv.Thread != ts {
			t.Fatalf("thread %q, want the mention's ts %q", in.Conv.Thread, ts)
		}
	}
	eventually(t, "both acks", func() bool { return h.fake.Acked(envs[0]) && h.fake.Acked(envs[1]) })
}

func TestSocketChannelMessagesWithoutMention(t *testing.T) {
	h := start(t, nil)
	// A top-level message without a mention is not read at all.
	_, env := h.fake.PushMessage(slackfake.Msg{Channel: "C1", User: ann, Text: "just chatting"})
	eventually(t, "the ack of the ignored message", func() bool { return h.fake.Acked(env) })
	// A thread reply is handed over unaddressed: the router answers it if the bot is in the thread.
	root := h.fake.NewTS()
	ts, _ := h.fake.PushMessage(slackfake.Msg{Channel: "C1", User: ann, Text: "follow-up", ThreadTS: root})
	got := h.waitInbound(t, 1)
	if len(got) != 1 || got[0].MessageID != ts || got[0].AddressesBot || got[0].Conv.Thread != root {
		t.Fatalf("inbound %+v", got)
	}
}

func TestSocketThreadRepliesMentionOnly(t *testing.T) {
	h := start(t, func(c *Config) { c.ThreadReplies = RepliesMention })
	root := h.fake.NewTS()
	_, env := h.fake.PushMessage(slackfake.Msg{Channel: "C1", User: ann, Text: "follow-up", ThreadTS: root})
	eventually(t, "the ack", func() bool { return h.fake.Acked(env) })
	h.fake.PushMention(slackfake.Msg{Channel: "C1", User: ann, Text: "<@" + slackfake.BotUserID + "|bot> now", ThreadTS: root})
	got := h.waitInbound(t, 1)
	if len(got) != 1 || got[0].Text != "now" || got[0].Conv.Thread != root {
		t.Fatalf("inbound %+v", got)
	}
}

func TestSocketIgnoresEditsDeletionsAndMarksBots(t *testing.T) {
	h := start(t, nil)
	var envs []string
	for _, sub := range []string{"message_changed", "message_deleted", "channel_join"} {
		_, e := h.fake.PushMessage(slackfake.Msg{Channel: "D1", ChannelType: "im", User: ann, Text: "x", Subtype: sub})
		envs = append(envs, e)
	}
	_, e := h.fake.PushMessage(slackfake.Msg{Channel: "D1", ChannelType: "im", User: "U0OTHERBOT", Text: "beep", BotID: "B9", Subtype: "bot_message"})
	envs = append(envs, e)
	_, e = h.fake.PushMessage(slackfake.Msg{Channel: "D1", ChannelType: "im", User: slackfake.BotUserID, Text: "my own"})
	envs = append(envs, e)
	eventually(t, "every ack", func() bool {
		for _, e := range envs {
			if !h.fake.Acked(e) {
				return false
			}
		}
		return true
	})
	got := h.rec.got()
	if len(got) != 1 || !got[0].FromBot || got[0].Text != "beep" {
		t.Fatalf("inbound %+v, want the other bot's message handed over with FromBot (the router refuses it), the bot's own dropped", got)
	}
}

func TestSocketFilesBecomeAttachments(t *testing.T) {
	h := start(t, nil)
	h.fake.PushMessage(slackfake.Msg{Channel: "D1", ChannelType: "im", User: ann, Subtype: "file_share",
		Files: []slackfake.File{{ID: "F1", Name: "report.pdf", MIME: "application/pdf", Size: 1234}}})
	in := h.waitInbound(t, 1)[0]
	if len(in.Files) != 1 || in.Files[0].Name != "report.pdf" || in.Files[0].MIME != "application/pdf" || in.Files[0].Size != 1234 ||
		!strings.Contains(in.Files[0].URL, "F1") {
		t.Fatalf("files %+v", in.Files)
	}
}

func TestSocketReconnectsOnDisconnectAndDrop(t *testing.T) {
	h := start(t, nil)
	h.fake.Disconnect("refresh_requested")
	eventually(t, "a new socket after refresh_requested", func() bool { return h.fake.Opened() == 2 && h.fake.Connections() == 1 })
	h.fake.DropSockets()
	_, env := h.fake.PushMessage(slackfake.Msg{Channel: "D1", ChannelType: "im", User: ann, Text: "after the drop"})
	eventually(t, "the message sent during the outage acked", func() bool { return h.fake.Acked(env) })
	if got := h.waitInbound(t, 1); got[0].Text != "after the drop" {
		t.Fatalf("inbound %+v", got)
	}
	if h.fake.Connections() != 1 {
		t.Errorf("%d sockets open, want 1 (the old ones closed)", h.fake.Connections())
	}
}

// TestSocketLinkDisabledBacksOff proves Slack's link_disabled disconnect — Socket Mode switched
// off in the app's settings — is not met with an immediate reconnect, as refresh_requested is,
// but with the backoff of a failed open and a log line that says what to do; and that the
// connection comes back once Slack serves it again.
func TestSocketLinkDisabledBacksOff(t *testing.T) {
	fake := slackfake.New(t)
	fake.SetPingInterval(100 * time.Millisecond)
	w := &chantest.Waits{}
	h := startPrepared(t, fake, nil, &recorder{}, func(ch *Channel) { ch.clock.Sleep = w.Wait })
	logs := h.logs
	fake.Disconnect("refresh_requested")
	eventually(t, "a new socket after refresh_requested", func() bool { return fake.Opened() == 2 && fake.Connections() == 1 })
	if got := w.All(); len(got) != 0 {
		t.Fatalf("waits %v before reconnecting as Slack asked, want none", got)
	}
	fake.Disconnect("link_disabled")
	eventually(t, "a new socket after the backoff", func() bool { return fake.Opened() == 3 && fake.Connections() == 1 })
	if got := w.All(); len(got) != 1 || got[0] != reconnectBackoff(1) {
		t.Fatalf("waits %v after link_disabled, want one of %v", got, reconnectBackoff(1))
	}
	if l := logs.String(); !strings.Contains(l, "link_disabled") || !strings.Contains(l, "switch it on in the app's settings") {
		t.Fatalf("the log does not say Socket Mode was switched off and what to do:\n%s", l)
	}
	_, env := fake.PushMessage(slackfake.Msg{Channel: "D1", ChannelType: "im", User: ann, Text: "back"})
	eventually(t, "the message after the backoff acked", func() bool { return fake.Acked(env) })
	if got := h.waitInbound(t, 1); got[0].Text != "back" {
		t.Fatalf("inbound %+v", got)
	}
}

func TestSocketSeveralConnections(t *testing.T) {
	fake := slackfake.New(t)
	h := startWith(t, fake, func(c *Config) { c.Connections = 3 }, &recorder{})
	if fake.Connections() != 3 {
		t.Fatalf("%d sockets, want 3", fake.Connections())
	}
	for range 6 {
		fake.PushMessage(slackfake.Msg{Channel: "D1", ChannelType: "im", User: ann, Text: "x"})
	}
	h.waitInbound(t, 6)
	seen := map[int]bool{}
	for _, e := range fake.Envelopes() {
		seen[e.Conn] = true
	}
	if len(seen) != 3 {
		t.Errorf("envelopes went over %d sockets, want all 3", len(seen))
	}
}

func TestReadyByInboundLife(t *testing.T) {
	fake := slackfake.New(t)
	fake.SetPingInterval(20 * time.Millisecond)
	h := startWith(t, fake, func(c *Config) { c.ReadyWindow = 300 * time.Millisecond }, &recorder{})
	if err := h.ch.Ready(); err != nil {
		t.Fatalf("Ready after start: %v", err)
	}
	// The socket stays open but carries nothing: not ready, though connected.
	fake.SetPingInterval(0)
	fake.Disconnect("refresh_requested")
	eventually(t, "the new, silent socket", func() bool { return fake.Opened() == 2 })
	eventually(t, "not ready", func() bool { return h.ch.Ready() != nil })
	if !errors.Is(h.ch.Ready(), ErrNotReady) || fake.Connections() != 1 {
		t.Fatalf("Ready %v with %d sockets", h.ch.Ready(), fake.Connections())
	}
	fake.PushMessage(slackfake.Msg{Channel: "D1", ChannelType: "im", User: ann, Text: "x"})
	eventually(t, "ready again after an envelope", func() bool { return h.ch.Ready() == nil })
}

// TestStartFailsClearlyOnBadTokens proves a bot or app token Slack refuses fails Start with an
// error wrapping channels.ErrUnauthorized (so the operator is told to check the tokens) and
// ErrAuth, never showing the token.
func TestStartFailsClearlyOnBadTokens(t *testing.T) {
	fake := slackfake.New(t)
	ch, _ := newChannel(t, fake, func(c *Config) { c.BotToken = "xoxb-revoked-SECRET-do-not-show" })
	err := ch.Start(context.Background(), &recorder{})
	if err == nil || !errors.Is(err, ErrAuth) || !errors.Is(err, channels.ErrUnauthorized) || strings.Contains(err.Error(), "SECRET") {
		t.Fatalf("Start with a wrong bot token: %v", err)
	}
	ch2, _ := newChannel(t, fake, func(c *Config) { c.AppToken = "xapp-wrong-SECRET-do-not-show"; c.CallTimeout = time.Second })
	err = ch2.Start(context.Background(), &recorder{})
	if err == nil || !errors.Is(err, channels.ErrUnauthorized) || strings.Contains(err.Error(), "SECRET") {
		t.Fatalf("Start with a wrong app token: %v", err)
	}
	if err := ch2.Ready(); err == nil {
		t.Error("a channel that failed to start is ready")
	}
	for _, code := range []string{"invalid_auth", "not_authed", "token_revoked", "token_expired", "account_inactive"} {
		fake.FailNext("auth.test", 1, slackfake.Fault{Error: code})
		ch, _ := newChannel(t, fake, nil)
		if err := ch.Start(context.Background(), &recorder{}); !errors.Is(err, channels.ErrUnauthorized) {
			t.Errorf("auth.test answering %s: Start = %v, want channels.ErrUnauthorized", code, err)
		}
	}
	fake.FailNext("auth.test", 1, slackfake.Fault{Error: "missing_scope"})
	ch3, _ := newChannel(t, fake, nil)
	if err := ch3.Start(context.Background(), &recorder{}); !errors.Is(err, ErrAuth) || errors.Is(err, channels.ErrUnauthorized) {
		t.Errorf("auth.test answering missing_scope: Start = %v, want ErrAuth without ErrUnauthorized (the token is valid)", err)
	}
}

func TestNewValidates(t *testing.T) {
	good := Config{BotToken: "xoxb-1", AppToken: "xapp-1"}
	cases := []struct {
		name string
		mut  func(*Config)
	}{
		{"no bot token", func(c *Config) { c.BotToken = "" }},
		{"user token", func(c *Config) { c.BotToken = "xoxp-1" }},
		{"socket without app token", func(c *Config) { c.AppToken = "" }},
		{"http without secret", func(c *Config) { c.Mode = ModeHTTP }},
		{"bad mode", func(c *Config) { c.Mode = "rtm" }},
		{"too many connections", func(c *Config) { c.Connections = 11 }},
		{"bad thread replies", func(c *Config) { c.ThreadReplies = "some" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := good
			tc.mut(&cfg)
			if _, err := New(cfg); err == nil {
				t.Fatal("New accepted it")
			}
		})
	}
	if s := (Config{BotToken: "xoxb-SECRET", AppToken: "xapp-SECRET", SigningSecret: "SECRET"}).String(); strings.Contains(s, "SECRET") {
		t.Errorf("Config.String shows a secret: %s", s)
	}
}

func TestStopFinishesAcksThenCloses(t *testing.T) {
	fake := slackfake.New(t)
	release, entered := make(chan struct{}), make(chan struct{})
	rec := &recorder{fail: func(channels.Inbound) error { close(entered); <-release; return nil }}
	ch, _ := newChannel(t, fake, nil)
	if err := ch.Start(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	_, env := fake.PushMessage(slackfake.Msg{Channel: "D1", ChannelType: "im", User: ann, Text: "slow"})
	<-entered
	stopped := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		stopped <- ch.Stop(ctx)
	}()
	close(release)
	if err := <-stopped; err != nil {
		t.Fatalf("Stop: %v", err)
	}
	// The fake records the ack when it reads the frame, which was written before the close.
	eventually(t, "the ack of the envelope being handed over at Stop", func() bool { return fake.Acked(env) })
	eventually(t, "the socket closed", func() bool { return fake.Connections() == 0 })
}

// countingMetrics records the adapter's counts.
type countingMetrics struct {
	mu                   sync.Mutex
	up, down, reconnects int
	acks                 map[string]int
	limited              map[string]int
}

func (m *countingMetrics) Connection(_ int, up bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if up {
		m.up++
	} else {
		m.down++
	}
}
func (m *countingMetrics) Reconnect() { m.mu.Lock(); m.reconnects++; m.mu.Unlock() }
func (m *countingMetrics) Ack(r string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.acks[r]++
}
func (m *countingMetrics) RateLimited(method string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.limited[method]++
}
func (m *countingMetrics) read(f func(*countingMetrics) bool) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return f(m)
}

func TestMetricsOfConnectionsAcksAndRateLimits(t *testing.T) {
	m := &countingMetrics{acks: map[string]int{}, limited: map[string]int{}}
	fake := slackfake.New(t)
	var refuse atomic.Bool
	refuse.Store(true)
	rec := &recorder{fail: func(channels.Inbound) error {
		if refuse.Swap(false) {
			return errors.New("down")
		}
		return nil
	}}
	h := startWith(t, fake, func(c *Config) { c.Metrics = m }, rec)
	// Start returns at the socket's hello; the connection is counted just after it.
	eventually(t, "the connection counted", func() bool {
		return m.read(func(m *countingMetrics) bool { return m.up == 1 && m.reconnects == 0 })
	})
	fake.Disconnect("refresh_requested")
	eventually(t, "the reconnect counted", func() bool {
		return m.read(func(m *countingMetrics) bool { return m.reconnects == 1 && m.up == 2 && m.down == 1 })
	})
	// The fake hands an envelope to any open socket: wait until the old one is gone, or the
	// next envelope may go to a socket that is closing (lost until Slack would resend it).
	eventually(t, "the old socket closed", func() bool { return fake.Connections() == 1 })
	fake.PushMessage(slackfake.Msg{Channel: "D1", ChannelType: "im", User: ann, Text: "refused"})
	fake.PushMessage(slackfake.Msg{Channel: "D1", ChannelType: "im", User: ann, Text: "taken"})
	eventually(t, "the acks counted", func() bool {
		return m.read(func(m *countingMetrics) bool { return m.acks["refused"] == 1 && m.acks["acked"] == 1 })
	})
	fake.RateLimit("chat.postMessage", 2, 0)
	err := channels.RetryRateLimited(context.Background(), time.Second, 5, func(ctx context.Context) error {
		_, err := h.ch.Send(ctx, channels.Target{Conv: threadConv("")}, channels.Message{Text: "x"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !m.read(func(m *countingMetrics) bool { return m.limited["chat.postMessage"] == 2 }) {
		t.Fatalf("rate limits counted %v", m.limited)
	}
}

// TestSlowInteractionAckedWithinSlacksLimit proves a click whose handling outlasts the ack
// deadline is acknowledged anyway (Slack shows the user an error after 3 s), while the handling
// goes on; over HTTP the same click is answered 200 in time.
func TestSlowInteractionAckedWithinSlacksLimit(t *testing.T) {
	fake := slackfake.New(t)
	release := make(chan struct{})
	var finished atomic.Bool
	rec := &recorder{fail: func(in channels.Inbound) error {
		if in.Interaction != nil {
			<-release
			finished.Store(true)
		}
		return nil
	}}
	ch, _ := newChannel(t, fake, nil)
	ch.dispatcher.ackDeadline = 100 * time.Millisecond
	if err := ch.Start(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = ch.Stop(ctx)
	})
	env := fake.PushAction(slackfake.Action{User: ann, Channel: "C1", MessageTS: "1.1", ActionID: "slow"})
	eventually(t, "the ack before the handling ends", func() bool { return fake.Acked(env) })
	if finished.Load() {
		t.Fatal("the handling finished before the ack; the test proves nothing")
	}
	close(release)
	eventually(t, "the handling finished", func() bool { return len(rec.got()) == 1 })
	if n := len(fake.Acks()); n != 1 {
		t.Errorf("%d acks, want exactly 1", n)
	}
}

// TestSocketLoopOutlivesAFailedReconnect proves that when slack-go's own reconnect fails for
// good (apps.connections.open refused), the adapter starts it again with backoff and intake
// resumes.
func TestSocketLoopOutlivesAFailedReconnect(t *testing.T) {
	fake := slackfake.New(t)
	var waits []time.Duration
	var mu sync.Mutex
	ch, logs := newChannel(t, fake, nil)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	ch.clock.Sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		waits = append(waits, d)
		mu.Unlock()
		return ctx.Err()
	}
	if err := ch.Start(context.Background(), &recorder{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = ch.Stop(ctx)
	})
	h := &harness{fake: fake, ch: ch}
	h.fake.FailNext("apps.connections.open", 2, slackfake.Fault{Error: "invalid_auth"})
	h.fake.Disconnect("refresh_requested")
	eventually(t, "the new socket", func() bool { return h.fake.Opened() == 2 && h.fake.Connections() == 1 })
	_, env := h.fake.PushMessage(slackfake.Msg{Channel: "D1", ChannelType: "im", User: ann, Text: "after the outage"})
	eventually(t, "intake resumed", func() bool { return h.fake.Acked(env) })
	mu.Lock()
	defer mu.Unlock()
	if len(waits) != 2 || waits[0] != time.Second || waits[1] != 2*time.Second {
		t.Fatalf("backoff waits %v, want 1s then 2s", waits)
	}
}

// TestSocketSilentSocketReplaced proves a socket that reads nothing — not even Slack's pings —
// for the ping timeout is closed and a new one opened, and intake goes on over it.
func TestSocketSilentSocketReplaced(t *testing.T) {
	fake := slackfake.New(t)
	fake.SetPingInterval(0)
	ch, _ := newChannel(t, fake, nil)
	ch.sockets.pingTimeout = 200 * time.Millisecond
	rec := &recorder{}
	if err := ch.Start(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = ch.Stop(ctx)
	})
	eventually(t, "a new socket for the silent one", func() bool { return fake.Opened() >= 2 })
	// Sockets opened from now on are pinged: once the silent one is replaced by one, intake
	// goes on over it.
	fake.SetPingInterval(20 * time.Millisecond)
	n := fake.Opened()
	eventually(t, "a pinged socket", func() bool { return fake.Opened() > n && fake.Connections() == 1 })
	_, env := fake.PushMessage(slackfake.Msg{Channel: "D1", ChannelType: "im", User: ann, Text: "still there"})
	eventually(t, "the message acked", func() bool { return fake.Acked(env) })
	if got := rec.got(); len(got) != 1 || got[0].Text != "still there" {
		t.Fatalf("inbound %+v", got)
	}
}

// TestAssistantThreadRedeliveredOffersPromptsOnce proves a redelivered assistant_thread_started
// (the same event_id, retry_attempt 1, after an ack Slack did not get) sets the suggested
// prompts once; and that when the first offer failed, the redelivery offers them again.
func TestAssistantThreadRedeliveredOffersPromptsOnce(t *testing.T) {
	h := start(t, func(c *Config) { c.SuggestedPrompts = []string{"What can you do?"} })
	started := func() map[string]any {
		return h.fake.Callback(map[string]any{"type": "assistant_thread_started",
			"assistant_thread": map[string]any{"user_id": ann, "channel_id": "D1", "thread_ts": h.fake.NewTS()}})
	}
	env := h.fake.Send("events_api", started())
	eventually(t, "the ack", func() bool { return h.fake.Acked(env) })
	again := h.fake.Redeliver(env, "timeout")
	eventually(t, "the redelivery's ack", func() bool { return h.fake.Acked(again) })
	if envs := h.fake.Envelopes(); len(envs) != 2 || envs[1].RetryAttempt != 1 || string(envs[1].Payload) != string(envs[0].Payload) {
		t.Fatalf("envelopes %+v, want the same payload again with retry_attempt 1", envs)
	}
	// The offer goes out after the ack; the redelivery was dropped before its own ack, so one
	// offer is all there will be.
	eventually(t, "the one offer", func() bool { return h.fake.Count("assistant.threads.setSuggestedPrompts") == 1 })

	// The offer fails (Slack answered an error): its id is given back, and a redelivery (of an
	// envelope whose ack was lost) offers the prompts again.
	h.fake.FailNext("assistant.threads.setSuggestedPrompts", 1, slackfake.Fault{Error: "internal_error"})
	env = h.fake.Send("events_api", started())
	eventually(t, "the ack", func() bool { return h.fake.Acked(env) })
	eventually(t, "the failed offer, given back", func() bool {
		return strings.Contains(h.logs.String(), "offering the suggested prompts failed")
	})
	again = h.fake.Redeliver(env, "timeout")
	eventually(t, "the redelivery's ack", func() bool { return h.fake.Acked(again) })
	eventually(t, "the offer made again", func() bool { return len(h.fake.CallsOf("assistant.threads.setSuggestedPrompts")) == 3 })
	calls := h.fake.CallsOf("assistant.threads.setSuggestedPrompts")
	if len(calls) != 3 || calls[1].Error != "internal_error" || calls[2].Error != "" {
		t.Fatalf("calls %+v; want the failed offer made again on redelivery", calls)
	}
}

// TestRecentEventsIsBounded proves the adapter's own dedupe holds at most maxRecentEvents ids,
// forgetting the oldest first, and that a released id is new again.
func TestRecentEventsIsBounded(t *testing.T) {
	var r recentEvents
	for range 2 {
		if !r.claim("") {
			t.Fatal("an empty id is never a duplicate")
		}
	}
	for i := range maxRecentEvents {
		if !r.claim(fmt.Sprint("ev", i)) {
			t.Fatalf("ev%d new, reported seen", i)
		}
	}
	if r.claim("ev0") || r.claim(fmt.Sprint("ev", maxRecentEvents-1)) {
		t.Fatal("a remembered id was claimed again")
	}
	r.claim("one-more")
	if len(r.slot) != maxRecentEvents {
		t.Fatalf("%d ids remembered, want %d", len(r.slot), maxRecentEvents)
	}
	if !r.claim("ev0") {
		t.Fatal("the oldest id was not forgotten")
	}
	r.release("ev5")
	if !r.claim("ev5") || r.claim("ev5") {
		t.Fatal("a released id is new once again")
	}
	// take (an assistant thread's first message, which titles it) forgets what it finds.
	if !r.take("ev6") || r.take("ev6") || r.take("never-claimed") {
		t.Fatal("take reports a remembered id once, and nothing else")
	}
}

// TestSocketSelectClickBecomesValues proves a choice in a select on a card (block_actions with
// selected_option for static_select, selected_options for a multi-select) reaches the Handler
// as Interaction.Values under the select's action id, and a button click carries none.
func TestSocketSelectClickBecomesValues(t *testing.T) {
	h := start(t, nil)
	card := h.fake.NewTS()
	cases := []struct {
		name   string
		action slackfake.Action
		want   map[string][]string
	}{
		{"static_select", slackfake.Action{Type: "static_select", ActionID: "pick", Selected: []string{"opt-2"}},
			map[string][]string{"pick": {"opt-2"}}},
		{"multi_static_select", slackfake.Action{Type: "multi_static_select", ActionID: "many", Selected: []string{"a", "c"}},
			map[string][]string{"many": {"a", "c"}}},
		{"button", slackfake.Action{ActionID: "go", Value: "1"}, nil},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.action
			a.User, a.Channel, a.MessageTS = ann, "C1", card
			env := h.fake.PushAction(a)
			in := h.waitInbound(t, i+1)[i]
			eventually(t, "the ack", func() bool { return h.fake.Acked(env) })
			it := in.Interaction
			if it == nil || it.Data != a.ActionID || it.Message.ID() != card || in.Identity.ChannelUserID != annID || in.Conv.Chat != "C1" {
				t.Fatalf("inbound %+v / %+v", in, it)
			}
			if !reflect.DeepEqual(it.Values, tc.want) {
				t.Fatalf("Values %v, want %v", it.Values, tc.want)
			}
		})
	}
}
