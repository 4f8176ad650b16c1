package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	telegramfake "github.com/switchboard-bot/switchboard/internal/fake/telegram"
)

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// TestStartupFailuresSayWhatToDo: every way `bot run` can fail to start prints one line naming
// what is wrong and what to do, exits 2 for configuration and 1 for the environment, never
// panics, never shows a secret, and leaves nothing running (goleak in TestMain).
func TestStartupFailuresSayWhatToDo(t *testing.T) {
	t.Parallel()
	const secretTail = "SECRET-never-shown-0123456789"
	const signing = "BOT_AUTH__SIGNING_KEYS=a-signing-key-" + secretTail
	tg := telegramfake.New(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "a-directory"), 0o755); err != nil {
		t.Fatal(err)
	}
	token := "BOT_TELEGRAM__TOKEN=" + tg.Token()
	api := "BOT_TELEGRAM__API_URL=" + tg.URL()

	cases := []struct {
		name    string
		environ []string
		code    int
		lines   int // lines starting with "bot:"; 1 unless several problems are listed
		want    []string
	}{
		{
			name: "no channel configured",
			code: exitConfig, want: []string{"no platform is configured", "telegram.token", "bot chat"},
		},
		{
			name:    "shared redis without signing keys",
			environ: []string{token, api, "BOT_REDIS__URL=redis://127.0.0.1:6379/0"},
			code:    exitConfig, want: []string{"auth.signing_keys", "required with a shared Redis", "openssl rand"},
		},
		{
			name: "redis unreachable",
			environ: []string{token, api, signing, "BOT_REDIS__URL=redis://:pw-" + secretTail + "@" + closedAddr(t) + "/0",
				"BOT_REDIS__CONNECT_TIMEOUT=1s"},
			code: exitEnv, want: []string{"redis does not answer", "check redis.url"},
		},
		{
			name:    "telegram refuses the token",
			environ: []string{"BOT_TELEGRAM__TOKEN=123456:" + secretTail, api},
			code:    exitEnv, want: []string{"telegram: getMe", "refused the bot's credentials", "401", "check telegram.token"},
		},
		{
			name:    "http.addr in use",
			environ: []string{token, api, "BOT_HTTP__ADDR=" + busy.Addr().String()},
			code:    exitEnv, want: []string{"http.addr " + busy.Addr().String(), "address already in use", "another process listens there"},
		},
		{
			name:    "unreadable _file secret",
			environ: []string{"BOT_TELEGRAM__TOKEN_FILE=" + filepath.Join(dir, "missing"), api},
			code:    exitConfig, want: []string{"telegram.token_file", "missing"},
		},
		{
			name:    "a _file secret that is a directory",
			environ: []string{"BOT_TELEGRAM__TOKEN_FILE=" + filepath.Join(dir, "a-directory"), api},
			code:    exitConfig, want: []string{"telegram.token_file"},
		},
		{
			name:    "webhook mode without its url",
			environ: []string{token, api, "BOT_TELEGRAM__MODE=webhook", "BOT_TELEGRAM__WEBHOOK_SECRET=s3cret"},
			code:    exitConfig, want: []string{"telegram.webhook_url: required in webhook mode"},
		},
		{
			name:    "webhook mode without url or secret",
			environ: []string{token, api, "BOT_TELEGRAM__MODE=webhook"},
			code:    exitConfig, lines: 1, want: []string{"telegram.webhook_url", "telegram.webhook_secret"},
		},
		{
			name:    "token pasted with a trailing space",
			environ: []string{"BOT_TELEGRAM__TOKEN=" + tg.Token() + " ", api},
			code:    exitConfig, want: []string{"telegram.token: has spaces or line breaks around it"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			environ := append([]string{"BOT_HTTP__ADDR=127.0.0.1:0"}, tc.environ...)
			var out, errb bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			code := runContext(ctx, []string{"run"}, strings.NewReader(""), &out, &errb, environ)
			all := out.String() + errb.String()
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s", code, tc.code, all)
			}
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("output lacks %q:\n%s", w, all)
				}
			}
			var failures []string
			for _, l := range strings.Split(errb.String(), "\n") {
				if strings.HasPrefix(l, "bot:") {
					failures = append(failures, l)
				}
			}
			if want := max(tc.lines, 1); len(failures) != want {
				t.Errorf("%d lines say what failed, want %d:\n%s", len(failures), want, all)
			}
			for _, bad := range []string{"panic", "goroutine ", secretTail, "pool.go", "bot: bot:"} {
				if strings.Contains(all, bad) {
					t.Errorf("output contains %q:\n%s", bad, all)
				}
			}
			for _, l := range failures {
				for _, p := range []string{"telegram: telegram:", "config: config:", "redis: redis:"} {
					if strings.Contains(l, p) {
						t.Errorf("a prefix is said twice (%q): %s", p, l)
					}
				}
			}
		})
	}
}

// TestStartupWaitsForRedis: a Redis that is down at startup is retried with one log line per
// attempt in the bot's own format; the error names the address, never the URL's password.
func TestStartupWaitsForRedis(t *testing.T) {
	t.Parallel()
	var errb bytes.Buffer
	code := runContext(context.Background(), []string{"run"}, strings.NewReader(""), &bytes.Buffer{}, &errb, []string{
		"BOT_TELEGRAM__TOKEN=123456:abc", "BOT_AUTH__SIGNING_KEYS=a-signing-key-long-enough",
		"BOT_REDIS__URL=redis://:hunter2-password@" + closedAddr(t) + "/0", "BOT_REDIS__CONNECT_TIMEOUT=1500ms",
		"BOT_HTTP__ADDR=127.0.0.1:0",
	})
	if code != exitEnv {
		t.Fatalf("exit %d, want %d:\n%s", code, exitEnv, errb.String())
	}
	attempts := strings.Count(errb.String(), `msg="redis: not answering yet; retrying"`)
	if attempts < 1 {
		t.Errorf("no retry was logged:\n%s", errb.String())
	}
	if strings.Contains(errb.String(), "hunter2") {
		t.Errorf("the password is shown:\n%s", errb.String())
	}
	for _, l := range strings.Split(strings.TrimSpace(errb.String()), "\n") {
		if !strings.HasPrefix(l, "time=") && !strings.HasPrefix(l, "bot: ") {
			t.Errorf("a line not in the bot's format: %q", l)
		}
	}
}
