package telegram

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/conv"
	telegramfake "github.com/switchboard-bot/switchboard/internal/fake/telegram"
)

func TestRestartWithOffsetStoreNeitherReplaysNorSkips(t *testing.T) {
	fake := telegramfake.New(t)
	store := &MemoryOffsets{}
	seen := map[string]int{}
	record := func(rec *recorder) {
		for _, in := range rec.got() {
			seen[in.EventID]++
		}
	}
	var pushed []int64
	push := func(n int) {
		for i := range n {
			id, _ := fake.PushPrivate(ann, "m"+strconv.Itoa(i))
			pushed = append(pushed, id)
		}
	}
	push(5)
	// First process: handles a few, then is stopped mid-stream while more arrive.
	ch1, _ := newChannel(t, fake, func(c *Config) { c.Offsets = store })
	rec1 := &recorder{}
	if err := ch1.Start(context.Background(), rec1); err != nil {
		t.Fatal(err)
	}
	eventually(t, "first batch", func() bool { return len(rec1.got()) == 5 })
	push(3)
	eventually(t, "second batch", func() bool { return len(rec1.got()) == 8 })
	if err := ch1.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	record(rec1)
	push(4) // arrive while no process runs
	// Second process, same store: continues exactly where the first stopped.
	ch2, _ := newChannel(t, fake, func(c *Config) { c.Offsets = store })
	rec2 := &recorder{}
	if err := ch2.Start(context.Background(), rec2); err != nil {
		t.Fatal(err)
	}
	eventually(t, "after restart", func() bool { return len(rec2.got()) == 4 })
	push(2)
	eventually(t, "live after restart", func() bool { return len(rec2.got()) == 6 })
	if err := ch2.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	record(rec2)
	for _, id := range pushed {
		if n := seen[eventID(id)]; n != 1 {
			t.Errorf("update %d handled %d times, want once", id, n)
		}
	}
	if off, _ := store.LoadOffset(context.Background()); off != pushed[len(pushed)-1]+1 {
		t.Fatalf("saved offset = %d, want %d", off, pushed[len(pushed)-1]+1)
	}
}

func TestHandlerErrorStopsOffsetAndRetries(t *testing.T) {
	fake := telegramfake.New(t)
	var refusals atomic.Int32
	rec := &recorder{fail: func(in channels.Inbound) error {
		if in.Text == "second" && refusals.Add(1) <= 2 {
			return errors.New("queue unavailable")
		}
		return nil
	}}
	store := &MemoryOffsets{}
	h := startWith(t, fake, func(c *Config) { c.Offsets = store }, rec)
	fake.PushPrivate(ann, "first")
	fake.PushPrivate(ann, "second")
	fake.PushPrivate(ann, "third")
	got := h.waitInbound(t, 3)
	if len(got) != 3 || got[0].Text != "first" || got[1].Text != "second" || got[2].Text != "third" {
		t.Fatalf("handed over %+v, want first, second, third once each in order", got)
	}
	if refusals.Load() != 3 {
		t.Fatalf("second was tried %d times, want 3", refusals.Load())
	}
}

func TestStopAbortsInFlightLongPollPromptly(t *testing.T) {
	fake := telegramfake.New(t)
	ch, _ := newChannel(t, fake, func(c *Config) { c.PollTimeout = time.Minute })
	if err := ch.Start(context.Background(), &recorder{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a long poll in flight", func() bool { return fake.Count("getUpdates") >= 1 })
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := ch.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if took := time.Since(began); took > time.Second {
		t.Fatalf("Stop took %v with a one-minute poll in flight", took)
	}
	if err := ch.Ready(); !errors.Is(err, ErrNotReady) {
		t.Fatalf("Ready after Stop = %v", err)
	}
	if err := ch.Stop(context.Background()); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

func TestWebhookChecksSecretAndPayload(t *testing.T) {
	fake := telegramfake.New(t)
	const secret = "s3cret-token_value"
	rec := &recorder{}
	h := startWith(t, fake, func(c *Config) {
		c.Mode, c.WebhookURL, c.WebhookSecret = ModeWebhook, "https://bot.example/telegram", secret
	}, rec)
	if wh := fake.Webhook(); wh.URL != "https://bot.example/telegram" || wh.SecretToken != secret {
		t.Fatalf("webhook registered as %+v", wh)
	}
	if err := h.ch.Ready(); err != nil {
		t.Fatalf("Ready: %v", err)
	}
	srv := httptest.NewServer(h.ch.WebhookHandler())
	defer srv.Close()
	good := `{"update_id":5,"message":{"message_id":3,"from":{"id":42,"is_bot":false,"first_name":"Ann"},"chat":{"id":42,"type":"private"},"date":1,"text":"via webhook"}}`
	tests := []struct {
		name   string
		secret string
		body   string
		status int
	}{
		{"good secret", secret, good, 200},
		{"redelivery is deduped", secret, good, 200},
		{"bad secret", "wrong", good, 401},
		{"missing secret", "", good, 401},
		{"secret prefix", secret[:5], good, 401},
		// Malformed updates are acknowledged and skipped, so Telegram does not redeliver them
		// ahead of the updates behind them (TestWebhookAcknowledgesMalformedUpdatesAndGoesOn).
		{"malformed json", secret, `{"update_id":`, 200},
		{"no update id", secret, `{"message":{}}`, 200},
		{"message without chat", secret, `{"update_id":9,"message":{"message_id":1}}`, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(tt.body))
			if tt.secret != "" {
				req.Header.Set(SecretHeader, tt.secret)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("status = %d, want %d", resp.StatusCode, tt.status)
			}
		})
	}
	if got := rec.got(); len(got) != 1 || got[0].Text != "via webhook" || got[0].EventID != "telegram:update:5" {
		t.Fatalf("handed over %+v, want the one good update once", got)
	}
	if fake.Count("getUpdates") != 0 {
		t.Fatal("webhook mode polled")
	}
}

// webhookRig is a Channel in webhook mode, started under startCtx, its WebhookHandler served.
type webhookRig struct {
	ch  *Channel
	srv *httptest.Server
}

func startWebhook(t *testing.T, startCtx context.Context, h channels.Handler) *webhookRig {
	t.Helper()
	fake := telegramfake.New(t)
	ch, _ := newChannel(t, fake, func(c *Config) {
		c.Mode, c.WebhookURL, c.WebhookSecret = ModeWebhook, "https://bot.example/telegram", "webhook-secret"
	})
	if err := ch.Start(startCtx, h); err != nil {
		t.Fatalf("Start: %v", err)
	}
	stopAtEnd(t, ch)
	srv := httptest.NewServer(ch.WebhookHandler())
	t.Cleanup(srv.Close)
	return &webhookRig{ch: ch, srv: srv}
}

// post delivers update id of chat 42 and returns the status it was answered.
func (w *webhookRig) post(t *testing.T, id int64) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, w.srv.URL, strings.NewReader(webhookBody(id, 42, "hi")))
	req.Header.Set(SecretHeader, "webhook-secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestWebhookStopIntakeWaitsForTheDeliveryBeingHandedOver proves StopIntake counts a webhook
// delivery still being handed over among the intake's work: while the Handler holds it,
// StopIntake waits until its context ends and says the intake is still running (it returned
// nil at once before); once the Handler returned, StopIntake returns nil, the delivery is
// answered 200, and the next one 503.
func TestWebhookStopIntakeWaitsForTheDeliveryBeingHandedOver(t *testing.T) {
	release, entered := make(chan struct{}), make(chan struct{})
	w := startWebhook(t, context.Background(), &recorder{fail: func(channels.Inbound) error { close(entered); <-release; return nil }})
	var released sync.Once
	free := func() { released.Do(func() { close(release) }) }
	t.Cleanup(free) // before the server's Close, which waits for the delivery, on a failure
	answered := make(chan int, 1)
	go func() { answered <- w.post(t, 1) }()
	<-entered
	// The bound StopIntake is asked to keep, not a pause: it returns at the bound only if it
	// waits for the delivery (the Handler holds it until release).
	bounded, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
	defer cancel()
	if err := w.ch.StopIntake(bounded); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("StopIntake with a delivery being handed over = %v, want its context's end", err)
	}
	free()
	if err := w.ch.StopIntake(context.Background()); err != nil {
		t.Fatalf("StopIntake once the delivery was handed over: %v", err)
	}
	if status := <-answered; status != http.StatusOK {
		t.Errorf("the delivery being handed over at StopIntake was answered %d, want 200", status)
	}
	if status := w.post(t, 2); status != http.StatusServiceUnavailable {
		t.Fatalf("a delivery after StopIntake answered %d, want 503", status)
	}
}

// TestWebhookStartContextEndStopsTheIntake proves Start's ctx bounds webhook mode's intake as it
// does polling's (the contract's StartContextEndStopsInboundWhileSendWorks): once it ends,
// deliveries get 503 so that Telegram delivers them again, and Ready fails.
func TestWebhookStartContextEndStopsTheIntake(t *testing.T) {
	startCtx, endStart := context.WithCancel(context.Background())
	defer endStart()
	rec := &recorder{}
	w := startWebhook(t, startCtx, rec)
	if status := w.post(t, 1); status != http.StatusOK || len(rec.got()) != 1 {
		t.Fatalf("a delivery before Start's context ended: %d, %d handed over", status, len(rec.got()))
	}
	endStart()
	eventually(t, "not ready once Start's context ended", func() bool { return w.ch.Ready() != nil })
	if status := w.post(t, 2); status != http.StatusServiceUnavailable {
		t.Fatalf("a delivery after Start's context ended answered %d, want 503", status)
	}
	if n := len(rec.got()); n != 1 {
		t.Fatalf("%d deliveries handed over, want only the one before Start's context ended", n)
	}
}

func TestTokenNeverAppearsInLogsOrErrors(t *testing.T) {
	fake := telegramfake.New(t)
	ch, logs := newChannel(t, fake, nil)
	token := fake.Token()
	var errs []error
	// A server that dies mid-call: the HTTP layer's *url.Error holds the URL with the token.
	dead := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hj, _ := w.(http.Hijacker)
		conn, _, _ := hj.Hijack()
		conn.Close()
	}))
	defer dead.Close()
	deadCh, deadLogs := newChannel(t, fake, func(c *Config) { c.APIURL = dead.URL })
	errs = append(errs, deadCh.Start(context.Background(), &recorder{}))
	// Armed before Start: a getUpdates already in flight would long-poll past the wait below.
	fake.FailNext("getUpdates", 3, telegramfake.Fault{Status: 502})
	if err := ch.Start(context.Background(), &recorder{}); err != nil {
		t.Fatal(err)
	}
	defer ch.Stop(context.Background())
	eventually(t, "poll errors logged", func() bool { return fake.Count("getUpdates") >= 4 })
	fake.FailNext("sendMessage", 1, telegramfake.Fault{Status: 400, Description: "Bad Request: chat not found"})
	_, err := ch.Send(context.Background(), channels.Target{Conv: conv.Key{Platform: "telegram", Chat: "42"}}, channels.Message{Text: "x"})
	errs = append(errs, err)
	ch.api.http = &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return nil, errors.New("dial failed for " + r.URL.String())
	})}
	_, err = ch.Send(context.Background(), channels.Target{Conv: conv.Key{Platform: "telegram", Chat: "42"}}, channels.Message{Text: "x"})
	errs = append(errs, err)
	for i, err := range errs {
		if err == nil {
			t.Fatalf("error %d: want an error", i)
		}
		if strings.Contains(err.Error(), token) || strings.Contains(err.Error(), "TEST-fake-token") {
			t.Fatalf("error %d holds the token: %v", i, err)
		}
	}
	if !strings.Contains(logs.String(), "polling failed") || !strings.Contains(errs[0].Error(), redacted) {
		t.Fatalf("the test did not exercise logged and URL-bearing errors: %v\n%s", errs[0], logs.String())
	}
	for _, l := range []string{logs.String(), deadLogs.String(), Config{Token: token}.String()} {
		if strings.Contains(l, "TEST-fake-token") {
			t.Fatalf("log holds the token:\n%s", l)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestNewRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no token", Config{}},
		{"token with slash", Config{Token: "1:a/b"}},
		{"unknown mode", Config{Token: "1:a", Mode: "push"}},
		{"webhook without url", Config{Token: "1:a", Mode: ModeWebhook, WebhookSecret: "x"}},
		{"webhook without secret", Config{Token: "1:a", Mode: ModeWebhook, WebhookURL: "https://x"}},
		{"webhook bad secret chars", Config{Token: "1:a", Mode: ModeWebhook, WebhookURL: "https://x", WebhookSecret: "a b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.cfg); err == nil {
				t.Fatal("New accepted a bad config")
			}
		})
	}
}
