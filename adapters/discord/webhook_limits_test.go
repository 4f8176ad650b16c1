package discord

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
	"time"
)

// TestWebhookBodiesRefusedUnreadAndQuietly proves the interactions endpoint's bounds before
// the signature check: a body announced past 1 MiB is answered 413 without a read (its body
// fails any read, which would answer 400) and with the connection closed, a body past its read
// deadline 408, and bad signatures 401 with no WARN line (the listener counts and logs those
// at a bounded rate).
func TestWebhookBodiesRefusedUnreadAndQuietly(t *testing.T) {
	h, p := webhookHarness(t)
	for _, tc := range []struct {
		name   string
		length int64
		err    error
		status int
	}{
		{"a gigabyte announced", 1 << 30, errors.New("the body was read"), http.StatusRequestEntityTooLarge},
		{"past the read deadline", 100, fmt.Errorf("read tcp: %w", os.ErrDeadlineExceeded), http.StatusRequestTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/discord/interactions", nil)
			r.Body, r.ContentLength = io.NopCloser(iotest.ErrReader(tc.err)), tc.length
			w := httptest.NewRecorder()
			h.ch.InteractionsHandler().ServeHTTP(w, r)
			if w.Code != tc.status || w.Header().Get("Connection") != "close" {
				t.Fatalf("answered %d (Connection %q), want %d and close", w.Code, w.Header().Get("Connection"), tc.status)
			}
		})
	}
	for range 20 {
		if code, _ := p.post(`{"type":1}`, time.Now(), true); code != http.StatusUnauthorized {
			t.Fatalf("a tampered request answered %d", code)
		}
	}
	if logs := h.logs.String(); strings.Contains(logs, "level=WARN") {
		t.Fatalf("refusals logged at WARN:\n%s", logs)
	}
}
