package slack

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"testing/iotest"

	slackfake "github.com/switchboard-bot/switchboard/internal/fake/slack"
)

// TestWebhookBodiesRefusedUnreadAndQuietly proves the HTTP handlers' bounds before the
// signature check: a body announced past 1 MiB is answered 413 without a read (its body fails
// any read, which would answer 400) and with the connection closed, a body past its read
// deadline 408, and a bad signature 401 with no WARN line (the listener counts and logs those
// at a bounded rate; a line each would let anyone fill the log).
func TestWebhookBodiesRefusedUnreadAndQuietly(t *testing.T) {
	h := startHTTP(t, &recorder{})
	for _, path := range []string{DefaultEventsPath, DefaultInteractionsPath, DefaultCommandsPath} {
		for _, tc := range []struct {
			name   string
			length int64
			err    error
			status int
		}{
			{"a gigabyte announced", 1 << 30, errors.New("the body was read"), http.StatusRequestEntityTooLarge},
			{"past the read deadline", 100, fmt.Errorf("read tcp: %w", os.ErrDeadlineExceeded), http.StatusRequestTimeout},
		} {
			t.Run(path+": "+tc.name, func(t *testing.T) {
				r := httptest.NewRequest(http.MethodPost, path, nil)
				r.Body, r.ContentLength = io.NopCloser(iotest.ErrReader(tc.err)), tc.length
				w := httptest.NewRecorder()
				h.srv.Config.Handler.ServeHTTP(w, r)
				if w.Code != tc.status || w.Header().Get("Connection") != "close" {
					t.Fatalf("answered %d (Connection %q), want %d and close", w.Code, w.Header().Get("Connection"), tc.status)
				}
			})
		}
	}
	ev := h.fake.Callback(map[string]any{"type": "message", "channel_type": "im", "channel": "D1", "user": ann,
		"text": "forged", "ts": h.fake.NewTS(), "team": slackfake.TeamID})
	for range 20 {
		if r, err := h.fake.DeliverEvent(h.srv.URL+DefaultEventsPath, ev, slackfake.Delivery{BadSignature: true}); err != nil || r.Status != http.StatusUnauthorized {
			t.Fatalf("a forged event: %d, %v", r.Status, err)
		}
	}
	if logs := h.logs.String(); strings.Contains(logs, "level=WARN") {
		t.Fatalf("refusals logged at WARN:\n%s", logs)
	}
	if got := h.rec.got(); len(got) != 0 {
		t.Fatalf("handed over %d", len(got))
	}
}
