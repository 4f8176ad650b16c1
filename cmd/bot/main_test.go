package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestCheckConfigRedactsSecretsAndListsEveryProblem(t *testing.T) {
	t.Parallel()
	const token = "123456:SECRET-TELEGRAM-TOKEN-abcdef"
	const key = "sk-SECRET-MODEL-KEY-0123456789"
	cases := []struct {
		name       string
		environ    []string
		code       int
		wantOut    []string
		wantErr    []string
		neverShown []string
	}{
		{
			name:       "valid",
			environ:    []string{"BOT_TELEGRAM__TOKEN=" + token, "BOT_LLM__API_KEY=" + key},
			code:       0,
			wantOut:    []string{"[redacted]", "telegram:"},
			wantErr:    []string{"configuration OK"},
			neverShown: []string{token, key, "SECRET"},
		},
		{
			name:       "invalid values are all listed",
			environ:    []string{"BOT_TELEGRAM__TOKEN=" + token, "BOT_RUNS__WORKERS=0", "BOT_RUNS__FOLLOWUP=sometimes"},
			code:       2,
			wantErr:    []string{"runs.workers", "runs.followup"},
			neverShown: []string{token, "SECRET"},
		},
		{
			name:    "nothing to serve",
			environ: nil,
			code:    2,
			wantErr: []string{"telegram.token: no platform is configured"},
		},
		{
			name: "what run would refuse: a pasted token, an http webhook, a @username",
			environ: []string{"BOT_TELEGRAM__TOKEN= " + token, "BOT_TELEGRAM__MODE=webhook",
				"BOT_TELEGRAM__WEBHOOK_URL=http://bot.example:9999/tg", "BOT_TELEGRAM__WEBHOOK_SECRET=s3cret",
				"BOT_ACCESS__TELEGRAM__ALLOW=@alice", "BOT_REDIS__URL=redis://10.0.0.5:6379/0"},
			code: 2,
			wantErr: []string{"telegram.token: has spaces", "telegram.webhook_url: Telegram posts only to https",
				"access.telegram.allow[0]", "auth.signing_keys"},
			neverShown: []string{token, "SECRET"},
		},
		{
			name:       "unknown key",
			environ:    []string{"BOT_TELEGRAM__TOKNE=" + token},
			code:       2,
			wantErr:    []string{"TOKNE"},
			neverShown: []string{token, "SECRET"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := runContext(context.Background(), []string{"check-config"}, strings.NewReader(""), &out, &errb, tc.environ)
			all := out.String() + errb.String()
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out.String(), errb.String())
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out.String(), w) {
					t.Errorf("stdout lacks %q:\n%s", w, out.String())
				}
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(errb.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, errb.String())
				}
			}
			for _, s := range tc.neverShown {
				if strings.Contains(all, s) {
					t.Errorf("output contains the secret %q:\n%s", s, all)
				}
			}
		})
	}
}

func TestUnknownCommandIsAUsageError(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	if code := runContext(context.Background(), []string{"frobnicate"}, strings.NewReader(""), &out, &errb, nil); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	if !strings.Contains(errb.String(), "usage: bot") {
		t.Fatalf("no usage shown: %s", errb.String())
	}
}

// TestHelpForEachCommand: `bot <cmd> --help` and `bot help <cmd>` print that command's usage to
// stdout and exit 0; a bad flag is a usage error (2) that shows the command's usage.
func TestHelpForEachCommand(t *testing.T) {
	t.Parallel()
	for _, c := range commands {
		for _, args := range [][]string{{c.name, "--help"}, {c.name, "-h"}, {"help", c.name}} {
			var out, errb bytes.Buffer
			code := runContext(context.Background(), args, strings.NewReader(""), &out, &errb, nil)
			if code != 0 || !strings.HasPrefix(out.String(), "usage: bot "+c.name) || errb.Len() != 0 {
				t.Errorf("bot %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out.String(), errb.String())
			}
		}
	}
	var out, errb bytes.Buffer
	if code := runContext(context.Background(), []string{"help"}, strings.NewReader(""), &out, &errb, nil); code != 0 ||
		!strings.Contains(out.String(), "check-config") {
		t.Errorf("bot help: exit %d\n%s", code, out.String())
	}
	out.Reset()
	if code := runContext(context.Background(), []string{"run", "-x"}, strings.NewReader(""), &out, &errb, nil); code != 2 ||
		!strings.Contains(errb.String(), "usage: bot run") {
		t.Errorf("bot run -x: exit %d\n%s", code, errb.String())
	}
	errb.Reset()
	if code := runContext(context.Background(), []string{"help", "frobnicate"}, strings.NewReader(""), &out, &errb, nil); code != 2 ||
		!strings.Contains(errb.String(), "unknown command") {
		t.Errorf("bot help frobnicate: exit %d\n%s", code, errb.String())
	}
}
