package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestCheckConfigRedactsSecretsAndListsEveryProblem(t *testing.T) {
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
			code:       1,
			wantErr:    []string{"runs.workers", "runs.followup"},
			neverShown: []string{token, "SECRET"},
		},
		{
			name:       "unknown key",
			environ:    []string{"BOT_TELEGRAM__TOKNE=" + token},
			code:       1,
			wantErr:    []string{"TOKNE"},
			neverShown: []string{token, "SECRET"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := runContext(context.Background(), []string{"check-config"}, strings.NewReader(""), &out, &errb, tc.environ)
			all := out.String() + errb.String()
			if code != tc.code && !(tc.code == 1 && code == 2) {
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
	var out, errb bytes.Buffer
	if code := runContext(context.Background(), []string{"frobnicate"}, strings.NewReader(""), &out, &errb, nil); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	if !strings.Contains(errb.String(), "usage: bot") {
		t.Fatalf("no usage shown: %s", errb.String())
	}
}
