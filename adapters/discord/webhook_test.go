package discord

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/poll"
	"github.com/switchboard-bot/switchboard/render"
)

type signedPoster struct {
	t    *testing.T
	priv ed25519.PrivateKey
	srv  *httptest.Server
}

func (p signedPoster) post(body string, at time.Time, tamper bool) (int, map[string]any) {
	p.t.Helper()
	ts := strconv.FormatInt(at.Unix(), 10)
	sig := ed25519.Sign(p.priv, []byte(ts+body))
	if tamper {
		body += " "
	}
	req, _ := http.NewRequest("POST", p.srv.URL, bytes.NewBufferString(body))
	req.Header.Set("X-Signature-Ed25519", hex.EncodeToString(sig))
	req.Header.Set("X-Signature-Timestamp", ts)
	resp, err := p.srv.Client().Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func webhookHarness(t *testing.T) (*harness, signedPoster) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, nil, func(c *Config) { c.PublicKey = pub; c.DeferAfter = 2 * time.Second })
	srv := httptest.NewServer(h.ch.InteractionsHandler())
	t.Cleanup(srv.Close)
	return h, signedPoster{t: t, priv: priv, srv: srv}
}

func TestHTTPInteractionsVerifyAndPong(t *testing.T) {
	_, p := webhookHarness(t)
	now := time.Now()
	cases := []struct {
		name   string
		body   string
		at     time.Time
		tamper bool
		want   int
	}{
		{"ping is answered with pong", `{"type":1,"id":"1","token":"t"}`, now, false, http.StatusOK},
		{"a tampered body is refused", `{"type":1}`, now, true, http.StatusUnauthorized},
		{"an old timestamp is refused", `{"type":1}`, now.Add(-10 * time.Minute), false, http.StatusUnauthorized},
		{"a future timestamp is refused", `{"type":1}`, now.Add(10 * time.Minute), false, http.StatusUnauthorized},
		{"malformed json", `{"type":`, now, false, http.StatusBadRequest},
		{"an interaction without a user", `{"type":3,"id":"1","token":"t","channel_id":"2","data":{"custom_id":"x"}}`, now, false, http.StatusBadRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out := p.post(tc.body, tc.at, tc.tamper)
			if code != tc.want {
				t.Errorf("status %d, want %d", code, tc.want)
			}
			if tc.want == http.StatusOK && out["type"] != float64(1) {
				t.Errorf("answer %v, want PONG", out)
			}
		})
	}
}

func TestHTTPInteractionAnsweredInTheResponse(t *testing.T) {
	h, p := webhookHarness(t)
	h.rec.setOn(func(ctx context.Context, ch channels.Channel, in channels.Inbound) error {
		if in.Interaction != nil && in.Interaction.Data == "modal-please" {
			return ch.(channels.FormOpener).OpenForm(ctx, in.Interaction, render.Form{Token: "qRUN3",
				Fields: []render.FormField{{Label: "Why", Kind: render.KindText, Required: true}}})
		}
		if in.Interaction != nil && in.Interaction.Data != "slow" {
			return ch.(channels.InteractionResponder).RespondInteraction(ctx, in.Interaction, "only you see this")
		}
		return nil
	})
	click := func(id, custom string) string {
		return `{"type":3,"id":"` + id + `","application_id":"900000000000000001","token":"tok` + id +
			`","channel_id":"55","user":{"id":"` + alice.ID + `"},"data":{"custom_id":"` + custom + `","component_type":2},"message":{"id":"66","channel_id":"55"}}`
	}
	code, out := p.post(click("1", "btn"), time.Now(), false)
	data, _ := out["data"].(map[string]any)
	if code != http.StatusOK || out["type"] != float64(cbMessage) || data["content"] != "only you see this" || data["flags"] != float64(flagEphemeral) {
		t.Errorf("answer %d %v", code, out)
	}
	code, out = p.post(click("2", "modal-please"), time.Now(), false)
	if code != http.StatusOK || out["type"] != float64(cbModal) {
		t.Errorf("modal answer %d %v", code, out)
	}
	code, out = p.post(click("3", "slow"), time.Now(), false)
	if code != http.StatusOK || out["type"] != float64(cbDeferredUpdate) {
		t.Errorf("silent answer %d %v", code, out)
	}
	poll.Until(t, "three interactions handed over", func() bool { return h.rec.count() == 3 })
	if n := len(h.fk.Calls()); n == 0 {
		t.Fatal("no REST calls at all")
	}
	for _, c := range h.fk.Calls() {
		if c.Route == "/api/v9/interactions/{id}/{token}/callback" {
			t.Errorf("an HTTP interaction was answered by REST too: %s", c.Path)
		}
	}
}

func TestHTTPInteractionsAfterStopAreRefused(t *testing.T) {
	h, p := webhookHarness(t)
	if err := h.ch.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	body := `{"type":3,"id":"9","token":"t9","channel_id":"55","user":{"id":"1"},"data":{"custom_id":"x","component_type":2}}`
	if code, _ := p.post(body, time.Now(), false); code != http.StatusServiceUnavailable {
		t.Errorf("status %d after Stop, want 503", code)
	}
}

// TestHTTPInteractionStopIntakeWaitsForItsHandler proves StopIntake counts an HTTP interaction
// still being handled among the intake's work, as Telegram's webhook and Slack's HTTP mode do:
// while the Handler holds it, StopIntake waits until its context ends and says so; once the
// Handler returned, StopIntake returns nil, the interaction is answered — its handling never cut
// off by StopIntake — and the next one 503.
func TestHTTPInteractionStopIntakeWaitsForItsHandler(t *testing.T) {
	h, p := webhookHarness(t)
	release, entered := make(chan struct{}), make(chan struct{})
	var released sync.Once
	free := func() { released.Do(func() { close(release) }) }
	t.Cleanup(free) // before the server's Close, which waits for the request, on a failure
	cut := make(chan error, 1)
	h.rec.setOn(func(ctx context.Context, _ channels.Channel, _ channels.Inbound) error {
		close(entered)
		<-release
		cut <- ctx.Err()
		return nil
	})
	click := func(id string) string {
		return `{"type":3,"id":"` + id + `","application_id":"900000000000000001","token":"tok` + id +
			`","channel_id":"55","user":{"id":"` + alice.ID + `"},"data":{"custom_id":"btn","component_type":2},"message":{"id":"66","channel_id":"55"}}`
	}
	answered := make(chan int, 1)
	go func() {
		code, _ := p.post(click("1"), time.Now(), false)
		answered <- code
	}()
	<-entered
	// The bound StopIntake is asked to keep, not a pause: it returns at the bound only if it
	// waits for the handler (which holds the interaction until release).
	bounded, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
	defer cancel()
	if err := h.ch.StopIntake(bounded); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("StopIntake with an interaction being handled = %v, want its context's end", err)
	}
	free()
	if err := h.ch.StopIntake(context.Background()); err != nil {
		t.Fatalf("StopIntake once the interaction was handled: %v", err)
	}
	if code := <-answered; code != http.StatusOK {
		t.Errorf("the interaction being handled at StopIntake was answered %d, want 200", code)
	}
	if err := <-cut; err != nil {
		t.Errorf("the interaction being handled at StopIntake was cut off (its context: %v); want it handled to its end", err)
	}
	if code, _ := p.post(click("2"), time.Now(), false); code != http.StatusServiceUnavailable {
		t.Errorf("an interaction after StopIntake answered %d, want 503", code)
	}
}
