package telegram

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"

	telegramfake "github.com/switchboard-bot/switchboard/internal/fake/telegram"
)

// TestWebhookBodiesBoundedAndRefusalsQuiet proves the webhook's bounds: a wrong secret is
// refused (401) before the body is read, with no WARN line (the listener counts and logs those
// at a bounded rate); with the right secret, a body announced past 1 MiB is acknowledged
// unread and skipped as malformed (Telegram would redeliver it for ever, holding up the
// updates behind it), with the connection closed so nothing of it is drained; and a body past
// its read deadline is answered 408. A body that must not be read fails any read (400).
func TestWebhookBodiesBoundedAndRefusalsQuiet(t *testing.T) {
	fake := telegramfake.New(t)
	const secret = "s3cret-token_value"
	var malformed atomic.Int32
	rec := &recorder{}
	h := startWith(t, fake, func(c *Config) {
		c.Mode, c.WebhookURL, c.WebhookSecret = ModeWebhook, "https://bot.example/telegram", secret
		c.OnMalformedUpdate = func() { malformed.Add(1) }
	}, rec)
	unread := errors.New("the body was read")
	for _, tc := range []struct {
		name   string
		secret string
		length int64
		err    error
		status int
	}{
		{"a wrong secret", "forged", 100, unread, http.StatusUnauthorized},
		{"a gigabyte announced", secret, 1 << 30, unread, http.StatusOK},
		{"past the read deadline", secret, 100, fmt.Errorf("read tcp: %w", os.ErrDeadlineExceeded), http.StatusRequestTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/telegram", nil)
			r.Body, r.ContentLength = io.NopCloser(iotest.ErrReader(tc.err)), tc.length
			r.Header.Set(SecretHeader, tc.secret)
			w := httptest.NewRecorder()
			h.ch.WebhookHandler().ServeHTTP(w, r)
			if w.Code != tc.status {
				t.Fatalf("answered %d, want %d", w.Code, tc.status)
			}
			if tc.status != http.StatusUnauthorized && w.Header().Get("Connection") != "close" {
				t.Fatal("the connection is kept for the unread rest of the body")
			}
		})
	}
	if n := malformed.Load(); n != 1 {
		t.Fatalf("counted %d malformed, want the oversized one", n)
	}
	for range 20 {
		r := httptest.NewRequest(http.MethodPost, "/telegram", strings.NewReader("{}"))
		r.Header.Set(SecretHeader, "forged")
		h.ch.WebhookHandler().ServeHTTP(httptest.NewRecorder(), r)
	}
	for line := range strings.SplitSeq(h.logs.String(), "\n") {
		if strings.Contains(line, "level=WARN") && strings.Contains(line, "secret") {
			t.Fatalf("a wrong secret logged at WARN: %s", line)
		}
	}
	if got := rec.got(); len(got) != 0 {
		t.Fatalf("handed over %d", len(got))
	}
}
