package slack

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	slackfake "github.com/switchboard-bot/switchboard/internal/fake/slack"
)

type httpHarness struct {
	*harness
	srv       *httptest.Server
	malformed *atomic.Int32
}

func startHTTP(t *testing.T, rec *recorder) *httpHarness {
	t.Helper()
	fake := slackfake.New(t)
	var malformed atomic.Int32
	h := startWith(t, fake, func(c *Config) {
		c.Mode = ModeHTTP
		c.AppToken = ""
		c.OnMalformed = func() { malformed.Add(1) }
	}, rec)
	mux := http.NewServeMux()
	mux.Handle(DefaultEventsPath, h.ch.EventsHandler())
	mux.Handle(DefaultInteractionsPath, h.ch.InteractionsHandler())
	mux.Handle(DefaultCommandsPath, h.ch.CommandsHandler())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &httpHarness{harness: h, srv: srv, malformed: &malformed}
}

func TestHTTPEventsSignatures(t *testing.T) {
	h := startHTTP(t, &recorder{})
	url := h.srv.URL + DefaultEventsPath
	ev := func(text string) map[string]any {
		return h.fake.Callback(map[string]any{"type": "message", "channel_type": "im", "channel": "D1", "user": ann,
			"text": text, "ts": h.fake.NewTS(), "team": slackfake.TeamID})
	}
	cases := []struct {
		name    string
		d       slackfake.Delivery
		status  int
		handled bool
	}{
		{"good", slackfake.Delivery{}, 200, true},
		{"bad signature", slackfake.Delivery{BadSignature: true}, 401, false},
		{"stale", slackfake.Delivery{Stale: true}, 401, false},
		{"unsigned", slackfake.Delivery{Unsigned: true}, 401, false},
		{"retry", slackfake.Delivery{RetryNum: 2, RetryReason: "http_timeout"}, 200, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(h.rec.got())
			r, err := h.fake.DeliverEvent(url, ev(tc.name), tc.d)
			if err != nil || r.Status != tc.status {
				t.Fatalf("status %d, %v; want %d", r.Status, err, tc.status)
			}
			if got := len(h.rec.got()) - before; (got == 1) != tc.handled {
				t.Fatalf("handed over %d, want handled=%v", got, tc.handled)
			}
			if r.Took > 3*time.Second {
				t.Errorf("answered in %s, over Slack's 3 s", r.Took)
			}
		})
	}
	r, err := h.fake.DeliverEvent(url, slackfake.URLVerification("chal-42"), slackfake.Delivery{})
	if err != nil || r.Status != 200 || strings.TrimSpace(string(r.Body)) != `{"challenge":"chal-42"}` {
		t.Fatalf("url_verification: %d %q %v", r.Status, r.Body, err)
	}
	r, err = h.fake.DeliverEvent(url, slackfake.URLVerification("chal-43"), slackfake.Delivery{BadSignature: true})
	if err != nil || r.Status != 401 {
		t.Fatalf("url_verification with a bad signature: %d, %v", r.Status, err)
	}
	r, err = h.fake.Deliver(url, "application/json", []byte(`{"type":"event_callback",`), slackfake.Delivery{})
	if err != nil || r.Status != 200 || h.malformed.Load() != 1 {
		t.Fatalf("malformed body: %d, %v, counted %d", r.Status, err, h.malformed.Load())
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d", resp.StatusCode)
	}
}

func TestHTTPHandlerFailureIsRetried(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	h := startHTTP(t, &recorder{fail: func(channels.Inbound) error {
		if fail.Load() {
			return errors.New("redis is down")
		}
		return nil
	}})
	body := h.fake.Callback(map[string]any{"type": "message", "channel_type": "im", "channel": "D1", "user": ann, "text": "hi", "ts": "1.5"})
	r, err := h.fake.DeliverEvent(h.srv.URL+DefaultEventsPath, body, slackfake.Delivery{})
	if err != nil || r.Status != 500 {
		t.Fatalf("a refused delivery answered %d, %v; want 500 so Slack retries", r.Status, err)
	}
	fail.Store(false)
	r, err = h.fake.DeliverEvent(h.srv.URL+DefaultEventsPath, body, slackfake.Delivery{RetryNum: 1})
	if err != nil || r.Status != 200 || len(h.rec.got()) != 1 || h.rec.got()[0].EventID != "msg:D1:1.5" {
		t.Fatalf("the retry: %d, %v, %+v", r.Status, err, h.rec.got())
	}
}

func TestHTTPInteractionsAndCommands(t *testing.T) {
	h := startHTTP(t, &recorder{})
	r, err := h.fake.DeliverInteraction(h.srv.URL+DefaultInteractionsPath,
		h.fake.BlockActions(slackfake.Action{User: ann, Channel: "C1", MessageTS: "1.1", ActionID: "act"}), slackfake.Delivery{})
	if err != nil || r.Status != 200 {
		t.Fatalf("interaction: %d %v", r.Status, err)
	}
	r, err = h.fake.DeliverSlash(h.srv.URL+DefaultCommandsPath, slackfake.Slash{Command: "/bot", Text: "status", User: ann, Channel: "C1"}, slackfake.Delivery{})
	if err != nil || r.Status != 200 {
		t.Fatalf("command: %d %v", r.Status, err)
	}
	got := h.rec.got()
	if len(got) != 2 || got[0].Interaction == nil || got[0].Interaction.Data != "act" || got[1].Command != "status" {
		t.Fatalf("inbound %+v", got)
	}
	r, err = h.fake.DeliverSlash(h.srv.URL+DefaultCommandsPath, slackfake.Slash{Command: "/bot", User: ann, Channel: "C1"}, slackfake.Delivery{Stale: true})
	if err != nil || r.Status != 401 || len(h.rec.got()) != 2 {
		t.Fatalf("stale command: %d %v", r.Status, err)
	}
	r, err = h.fake.Deliver(h.srv.URL+DefaultInteractionsPath, "application/x-www-form-urlencoded", []byte("payload=%7Bnot-json"), slackfake.Delivery{})
	if err != nil || r.Status != 200 || h.malformed.Load() != 1 {
		t.Fatalf("malformed interaction: %d %v, counted %d", r.Status, err, h.malformed.Load())
	}
}

func TestHTTPAfterStopIs503(t *testing.T) {
	h := startHTTP(t, &recorder{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.ch.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := h.fake.DeliverEvent(h.srv.URL+DefaultEventsPath, h.fake.Callback(map[string]any{"type": "message", "channel": "D1", "user": ann, "text": "x", "ts": "1.1", "channel_type": "im"}), slackfake.Delivery{})
	if err != nil || r.Status != 503 {
		t.Fatalf("after Stop: %d %v", r.Status, err)
	}
	if h.ch.Ready() == nil {
		t.Error("ready after Stop")
	}
}

// TestHTTPStopIntakeWaitsForTheDeliveryBeingHandedOver proves StopIntake counts an HTTP
// delivery still being handed over among the intake's work: while the Handler holds it,
// StopIntake waits until its context ends and says the intake is still running; once the
// Handler returned, StopIntake returns nil, the delivery is answered 200, and the next one 503.
func TestHTTPStopIntakeWaitsForTheDeliveryBeingHandedOver(t *testing.T) {
	release, entered := make(chan struct{}), make(chan struct{})
	h := startHTTP(t, &recorder{fail: func(channels.Inbound) error { close(entered); <-release; return nil }})
	var released sync.Once
	free := func() { released.Do(func() { close(release) }) }
	t.Cleanup(free) // before the server's Close, which waits for the delivery, on a failure
	event := func(ts string) map[string]any {
		return h.fake.Callback(map[string]any{"type": "message", "channel": "D1", "user": ann, "text": "x", "ts": ts, "channel_type": "im"})
	}
	answered := make(chan int, 1)
	go func() {
		r, err := h.fake.DeliverEvent(h.srv.URL+DefaultEventsPath, event("1.1"), slackfake.Delivery{})
		if err != nil {
			answered <- 0
			return
		}
		answered <- r.Status
	}()
	<-entered
	// The bound StopIntake is asked to keep, not a pause: it returns at the bound only if it
	// waits for the delivery. (An ended context proved nothing: Wait's select may pick it over
	// work already done.)
	bounded, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
	defer cancel()
	if err := h.ch.StopIntake(bounded); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("StopIntake with a delivery being handed over = %v, want its context's end", err)
	}
	free()
	if err := h.ch.StopIntake(context.Background()); err != nil {
		t.Fatalf("StopIntake once the delivery was handed over: %v", err)
	}
	if status := <-answered; status != http.StatusOK {
		t.Errorf("the delivery being handed over at StopIntake was answered %d, want 200", status)
	}
	r, err := h.fake.DeliverEvent(h.srv.URL+DefaultEventsPath, event("1.2"), slackfake.Delivery{})
	if err != nil || r.Status != http.StatusServiceUnavailable {
		t.Fatalf("a delivery after StopIntake: %d %v, want 503", r.Status, err)
	}
}

// TestHTTPStartContextEndStopsTheIntake proves Start's ctx bounds HTTP mode's intake as it does
// Socket Mode's (the contract's StartContextEndStopsInboundWhileSendWorks): once it ends,
// deliveries get 503 so that Slack retries them elsewhere, Ready fails, and sending still works.
func TestHTTPStartContextEndStopsTheIntake(t *testing.T) {
	fake := slackfake.New(t)
	ch, _ := newChannel(t, fake, func(c *Config) { c.Mode, c.AppToken = ModeHTTP, "" })
	rec := &recorder{}
	startCtx, endStart := context.WithCancel(context.Background())
	defer endStart()
	if err := ch.Start(startCtx, rec); err != nil {
		t.Fatalf("Start: %v", err)
	}
	stopAtCleanup(t, ch)
	srv := httptest.NewServer(ch.EventsHandler())
	t.Cleanup(srv.Close)
	deliver := func(ts string) int {
		t.Helper()
		r, err := fake.DeliverEvent(srv.URL, fake.Callback(map[string]any{"type": "message", "channel": "D1", "user": ann,
			"text": "x", "ts": ts, "channel_type": "im"}), slackfake.Delivery{})
		if err != nil {
			t.Fatal(err)
		}
		return r.Status
	}
	if status := deliver("1.1"); status != http.StatusOK || len(rec.got()) != 1 {
		t.Fatalf("a delivery before Start's context ended: %d, %d handed over", status, len(rec.got()))
	}
	endStart()
	eventually(t, "not ready once Start's context ended", func() bool { return ch.Ready() != nil })
	if status := deliver("1.2"); status != http.StatusServiceUnavailable {
		t.Fatalf("a delivery after Start's context ended answered %d, want 503", status)
	}
	if _, err := ch.Send(context.Background(), channels.Target{Conv: threadConv("")}, channels.Message{Text: "still sending"}); err != nil {
		t.Fatalf("Send after Start's context ended: %v", err)
	}
	if n := len(rec.got()); n != 1 {
		t.Fatalf("%d deliveries handed over, want only the one before Start's context ended", n)
	}
}

func TestHTTPSlowInteractionAnsweredInTime(t *testing.T) {
	release := make(chan struct{})
	h := startHTTP(t, &recorder{fail: func(in channels.Inbound) error {
		if in.Interaction != nil {
			<-release
		}
		return nil
	}})
	h.ch.dispatcher.ackDeadline = 100 * time.Millisecond
	r, err := h.fake.DeliverInteraction(h.srv.URL+DefaultInteractionsPath,
		h.fake.BlockActions(slackfake.Action{User: ann, Channel: "C1", MessageTS: "1.1", ActionID: "slow"}), slackfake.Delivery{})
	if err != nil || r.Status != 200 || r.Took > 2*time.Second {
		t.Fatalf("slow interaction: %d in %s, %v", r.Status, r.Took, err)
	}
	if len(h.rec.got()) != 0 {
		t.Fatal("answered after the handling, not before")
	}
	close(release)
	eventually(t, "the handling finished", func() bool { return len(h.rec.got()) == 1 })
}

func TestHTTPSlackHousekeepingRequests(t *testing.T) {
	h := startHTTP(t, &recorder{})
	r, err := h.fake.Deliver(h.srv.URL+DefaultCommandsPath, "application/x-www-form-urlencoded", []byte("ssl_check=1&token=x"), slackfake.Delivery{Unsigned: true})
	if err != nil || r.Status != 200 {
		t.Fatalf("ssl_check: %d %v", r.Status, err)
	}
	r, err = h.fake.DeliverEvent(h.srv.URL+DefaultEventsPath, map[string]any{"type": "app_rate_limited", "team_id": slackfake.TeamID, "minute_rate_limited": 1518467820}, slackfake.Delivery{})
	if err != nil || r.Status != 200 || h.malformed.Load() != 0 {
		t.Fatalf("app_rate_limited: %d %v, malformed %d", r.Status, err, h.malformed.Load())
	}
	if len(h.rec.got()) != 0 {
		t.Fatal("housekeeping requests were handed over")
	}
}
