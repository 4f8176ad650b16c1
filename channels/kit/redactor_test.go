package kit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/logbuf"
)

const testToken = "123456:SECRET-token"

// TestRedactorHidesSecretsInErrors proves Error hides every secret and pattern match in an
// error's text, keeps a *url.Error's cause for errors.Is, and returns a clean error as it is.
func TestRedactorHidesSecretsInErrors(t *testing.T) {
	r := NewRedactor(testToken, "")
	r.Add("xoxb-later")
	r.AddPattern(regexp.MustCompile(`(interactions/\d+/)[^/?\s"]+`))
	clean := errors.New("nothing secret")
	if r.Error(clean) != clean || r.Error(nil) != nil {
		t.Fatal("a clean error was not returned as it is")
	}
	for _, tc := range []struct {
		name  string
		err   error
		cause error // kept for errors.Is; nil: none expected
	}{
		{"url error", &url.Error{Op: "Post", URL: "https://api.example/bot" + testToken + "/getMe", Err: context.Canceled}, context.Canceled},
		{"url error with a dirty cause", &url.Error{Op: "Get", URL: "https://x/" + testToken, Err: errors.New("dial " + testToken)}, nil},
		{"wrapped", fmt.Errorf("call: %w", errors.New("token "+testToken+" refused")), nil},
		{"added later", errors.New("auth xoxb-later"), nil},
		{"pattern", errors.New("POST https://discord.com/api/v9/interactions/1234/aW50ZXJhY3Rpb24/callback: reset"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := r.Error(tc.err)
			s := got.Error()
			if strings.Contains(s, "SECRET") || strings.Contains(s, "xoxb-later") || strings.Contains(s, "aW50ZXJhY3Rpb24") {
				t.Fatalf("a secret is left: %s", s)
			}
			if !strings.Contains(s, Redacted) {
				t.Fatalf("nothing marked as hidden: %s", s)
			}
			if tc.cause != nil && !errors.Is(got, tc.cause) {
				t.Fatalf("%v lost its cause %v", got, tc.cause)
			}
		})
	}
	if got := r.String("https://discord.com/api/v9/interactions/1234/abc/callback"); got != "https://discord.com/api/v9/interactions/1234/"+Redacted+"/callback" {
		t.Fatalf("pattern kept %q", got)
	}
}

// TestRedactorLoggerHidesSecretsInLogLines proves a logger from Logger never writes a secret,
// whether it is in the message, a string, an error, a group or an attribute given With.
func TestRedactorLoggerHidesSecretsInLogLines(t *testing.T) {
	var buf logbuf.Buffer
	r := NewRedactor(testToken)
	log := r.Logger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	log.With("url", "https://x/bot"+testToken).Warn("calling "+testToken, "err", errors.New("refused "+testToken),
		"n", 3, slog.Group("g", "v", testToken), "stringer", stringer("s:"+testToken))
	log.WithGroup("call").Debug("ok", "clean", "value")
	s := buf.String()
	if strings.Contains(s, "SECRET") {
		t.Fatalf("a log line holds the token:\n%s", s)
	}
	if strings.Count(s, Redacted) < 5 || !strings.Contains(s, "n=3") || !strings.Contains(s, "call.clean=value") {
		t.Fatalf("the lines were not kept apart from the secrets:\n%s", s)
	}
}

type stringer string

func (s stringer) String() string { return string(s) }
