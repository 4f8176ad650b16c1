package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// healthServer answers /healthz, and nothing else, with status; it returns its port.
func healthServer(t *testing.T, status int) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(status)
		_, _ = w.Write([]byte("body-with-S3CRET-never-shown\n"))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	return port
}

// closedPort returns a port on 127.0.0.1 that nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	_ = ln.Close()
	return port
}

// secretEnv is configuration a container would carry: none of it may be printed.
var secretEnv = []string{
	"BOT_TELEGRAM__TOKEN=123456:S3CRET-telegram-token-in-the-env",
	"BOT_LLM__API_KEY=sk-S3CRET-model-key",
	"BOT_AUTH__SIGNING_KEYS=S3CRET-signing-key-0123456789",
	"BOT_REDIS__URL=redis://:S3CRET-redis-password@127.0.0.1:6379/0",
}

// TestHealthcheckExitsZeroOnlyOn200: `bot healthcheck` finds the listener from -addr, the config
// file or BOT_HTTP__ADDR, exits 0 when /healthz answers 200 and 1 with a one-line reason
// otherwise, and never prints a secret.
func TestHealthcheckExitsZeroOnlyOn200(t *testing.T) {
	t.Parallel()
	okPort := healthServer(t, http.StatusOK)
	badPort := healthServer(t, http.StatusServiceUnavailable)
	redirect := httptest.NewServer(http.RedirectHandler("/elsewhere", http.StatusFound))
	t.Cleanup(redirect.Close)
	_, redirectPort, _ := net.SplitHostPort(redirect.Listener.Addr().String())
	hang := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(hang.Close)
	_, hangPort, _ := net.SplitHostPort(hang.Listener.Addr().String())
	closed := closedPort(t)

	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgFile, []byte("http:\n  addr: 127.0.0.1:"+okPort+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	badFile := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(badFile, []byte("telegram:\n  tokne: S3CRET-in-a-misspelt-key\nruns:\n  workers: many\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		args    []string
		environ []string
		code    int
		want    string // in stderr when code is 1, in stdout when 0
	}{
		{"200 from BOT_HTTP__ADDR on every interface", nil, append([]string{"BOT_HTTP__ADDR=:" + okPort}, secretEnv...), 0,
			"http://127.0.0.1:" + okPort + "/healthz: 200 OK"},
		{"200 from 0.0.0.0", nil, []string{"BOT_HTTP__ADDR=0.0.0.0:" + okPort}, 0, "200 OK"},
		{"200 from [::]", nil, []string{"BOT_HTTP__ADDR=[::]:" + okPort}, 0, "127.0.0.1:" + okPort},
		{"200 from the config file", []string{"-c", cfgFile}, secretEnv, 0, "200 OK"},
		{"200 from BOT_CONFIG", nil, append([]string{"BOT_CONFIG=" + cfgFile}, secretEnv...), 0, "200 OK"},
		{"-addr beats the configuration", []string{"-addr", "127.0.0.1:" + okPort}, []string{"BOT_HTTP__ADDR=:" + closed}, 0, "200 OK"},
		{"503", nil, append([]string{"BOT_HTTP__ADDR=:" + badPort}, secretEnv...), 1, "503 Service Unavailable, want 200 OK"},
		{"a redirect is not followed", []string{"-addr", "127.0.0.1:" + redirectPort}, nil, 1, "302 Found"},
		{"closed port", nil, append([]string{"BOT_HTTP__ADDR=:" + closed}, secretEnv...), 1, "connection refused"},
		{"no answer in time", []string{"-addr", "127.0.0.1:" + hangPort, "-timeout", "200ms"}, nil, 1, "no answer within 200ms"},
		{"bad configuration", []string{"-c", badFile}, secretEnv, 1, "configuration: "},
		{"bad -addr", []string{"-addr", "http://127.0.0.1:8080"}, nil, 1, "is not host:port"},
		{"bad flag is 1, not 2", []string{"-port", "8080"}, nil, 1, "flag provided but not defined"},
		{"stray argument", []string{"now"}, nil, 1, `unexpected argument "now"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := runContext(context.Background(), append([]string{"healthcheck"}, tt.args...), strings.NewReader(""), &out, &errb, tt.environ)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, out.String(), errb.String())
			}
			got := out.String()
			if code != 0 {
				got = errb.String()
				if errb.Len() == 0 {
					t.Fatal("no reason given")
				}
				if tt.name != "bad flag is 1, not 2" { // the flag package prints its usage
					if lines := strings.Count(strings.TrimSuffix(got, "\n"), "\n"); lines != 0 || !strings.HasPrefix(got, "bot healthcheck: ") {
						t.Errorf("reason is not one line starting with %q:\n%s", "bot healthcheck: ", got)
					}
				}
			}
			if !strings.Contains(got, tt.want) {
				t.Errorf("output lacks %q:\nstdout: %s\nstderr: %s", tt.want, out.String(), errb.String())
			}
			if all := out.String() + errb.String(); strings.Contains(all, "S3CRET") {
				t.Errorf("output shows a secret:\n%s", all)
			}
		})
	}
}
