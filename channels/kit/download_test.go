package kit

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/internal/poll"
)

// secretPath is a file path that carries a token, as Telegram's file URLs do; secretQuery a
// signature, as Discord's CDN URLs carry.
const (
	secretPath  = "/file/bot123456:SECRET-token/documents/file_1.pdf"
	secretQuery = "ex=1&hm=SECRETsignature"
)

// fileHost is a test file host: it answers each path with the handler registered for it and
// counts the requests and the Authorization headers it saw.
type fileHost struct {
	srv   *httptest.Server
	hits  atomic.Int64
	auths atomic.Int64
}

func newFileHost(t *testing.T, routes map[string]http.HandlerFunc) *fileHost {
	t.Helper()
	h := &fileHost{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.hits.Add(1)
		if r.Header.Get("Authorization") != "" {
			h.auths.Add(1)
		}
		if f := routes[r.URL.Path]; f != nil {
			f(w, r)
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// noSecretIn fails t when err's text holds the URL or any secret part of it.
func noSecretIn(t *testing.T, err error, url string) {
	t.Helper()
	if err == nil {
		return
	}
	for _, s := range []string{url, "SECRET", secretPath} {
		if strings.Contains(err.Error(), s) {
			t.Errorf("the error %q holds %q", err, s)
		}
	}
}

// TestFileDownloadGuarantees proves FileDownload's contract on a real HTTP server: the bytes of
// a 2xx answer with its Content-Type; a file too large refused whether its size is stated
// (before the body is read) or not (after limit+1 bytes); non-2xx answers as
// *DownloadStatusError (429 as a rate limit); a body cut short as an error; and no error
// quoting the URL, its token or its signature.
func TestFileDownloadGuarantees(t *testing.T) {
	const limit = 100
	host := newFileHost(t, map[string]http.HandlerFunc{
		"/ok" + secretPath: func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer tok" {
				http.Error(w, "no", http.StatusForbidden)
				return
			}
			w.Header().Set("Content-Type", "application/pdf")
			_, _ = w.Write([]byte("%PDF-1.7 hello"))
		},
		"/exact": func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(strings.Repeat("x", limit)))
		},
		"/stated-too-large": func(w http.ResponseWriter, r *http.Request) {
			// States more than the limit, sends a little, then holds the rest back until the
			// client goes away: a client that read the body would wait here.
			w.Header().Set("Content-Length", "100000")
			_, _ = w.Write([]byte("partial"))
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		},
		"/unstated-too-large": func(w http.ResponseWriter, r *http.Request) {
			// Chunked, without end: the client must stop reading by itself.
			chunk := []byte(strings.Repeat("y", 64))
			for r.Context().Err() == nil {
				if _, err := w.Write(chunk); err != nil {
					return
				}
				w.(http.Flusher).Flush()
			}
		},
		"/gone": func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "gone", http.StatusNotFound)
		},
		"/busy": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusTooManyRequests)
		},
		"/broken": func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusBadGateway)
		},
		"/cut" + secretPath: func(w http.ResponseWriter, r *http.Request) {
			conn, buf, err := w.(http.Hijacker).Hijack()
			if err != nil {
				return
			}
			defer conn.Close()
			_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 50\r\nContent-Type: text/plain\r\n\r\nonly ten b")
			_ = buf.Flush()
		},
	})
	d := FileDownload{Client: host.srv.Client(), Header: http.Header{"Authorization": {"Bearer tok"}}, Origins: []string{host.srv.URL + "/api/"}}
	tests := []struct {
		name     string
		path     string
		size     int64 // as the platform states it
		unsent   bool  // refused before a request
		wantData string
		wantType string
		check    func(t *testing.T, err error)
	}{
		{name: "ok with the header", path: "/ok" + secretPath + "?" + secretQuery, wantData: "%PDF-1.7 hello", wantType: "application/pdf"},
		{name: "exactly the limit", path: "/exact", wantData: strings.Repeat("x", limit)},
		{name: "stated too large by the platform", path: "/exact", size: limit + 1, unsent: true, check: tooLarge},
		{name: "stated too large by the answer", path: "/stated-too-large", check: tooLarge},
		{name: "unstated too large", path: "/unstated-too-large", check: tooLarge},
		{name: "not found", path: "/gone", check: status(http.StatusNotFound)},
		{name: "server error", path: "/broken", check: status(http.StatusBadGateway)},
		{name: "rate limited", path: "/busy", check: func(t *testing.T, err error) {
			status(http.StatusTooManyRequests)(t, err)
			if rl, ok := errors.AsType[*channels.RateLimitError](err); !ok || rl.RetryAfter != 3*time.Second {
				t.Errorf("err = %v, want a rate limit of 3s", err)
			}
		}},
		{name: "cut mid-body", path: "/cut" + secretPath + "?" + secretQuery, check: func(t *testing.T, err error) {
			if err == nil || errors.Is(err, conv.ErrFileTooLarge) {
				t.Errorf("err = %v, want a failed read", err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			url := host.srv.URL + tc.path
			before := host.hits.Load()
			got, err := d.Get(ctx, url, tc.size, limit)
			noSecretIn(t, err, url)
			if sent := host.hits.Load() != before; sent == tc.unsent {
				t.Errorf("a request was sent: %v, want %v", sent, !tc.unsent)
			}
			if ctx.Err() != nil {
				t.Fatalf("the download waited for the whole body: %v", err)
			}
			if tc.check != nil {
				tc.check(t, err)
				return
			}
			if err != nil || string(got.Data) != tc.wantData || got.ContentType != tc.wantType && tc.wantType != "" {
				t.Fatalf("Get = %q (%q), %v; want %q (%q)", got.Data, got.ContentType, err, tc.wantData, tc.wantType)
			}
		})
	}
	if got, err := d.Get(context.Background(), host.srv.URL+"/exact", 0, math.MaxInt64); err != nil || len(got.Data) != limit {
		t.Errorf("with the largest limit: %d bytes, %v", len(got.Data), err)
	}
}

func tooLarge(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, conv.ErrFileTooLarge) {
		t.Errorf("err = %v, want conv.ErrFileTooLarge", err)
	}
}

func status(code int) func(t *testing.T, err error) {
	return func(t *testing.T, err error) {
		t.Helper()
		if se, ok := errors.AsType[*DownloadStatusError](err); !ok || se.Status != code {
			t.Errorf("err = %v, want HTTP %d", err, code)
		}
	}
}

// TestFileDownloadSendsNothingOffItsHosts proves the host allowlist: a URL on another host (or
// another port, scheme, or with user info) is refused before anything is sent, and a redirect
// to another host is not followed, so the credentials never reach it; a redirect within the
// hosts is followed.
func TestFileDownloadSendsNothingOffItsHosts(t *testing.T) {
	foreign := newFileHost(t, map[string]http.HandlerFunc{
		"/f": func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("foreign")) },
	})
	var home *fileHost
	home = newFileHost(t, map[string]http.HandlerFunc{
		"/away": func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, foreign.srv.URL+"/f", http.StatusFound)
		},
		"/moved": func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, home.srv.URL+"/here", http.StatusFound)
		},
		"/here": func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("home")) },
	})
	d := FileDownload{Client: home.srv.Client(), Header: http.Header{"Authorization": {"Bearer tok"}},
		Origins: []string{"https://files.example.test", home.srv.URL}}
	for _, url := range []string{
		foreign.srv.URL + "/f",
		strings.Replace(home.srv.URL, "http://", "https://", 1) + "/here",
		strings.Replace(home.srv.URL, "http://", "http://user:pass@", 1) + "/here",
		"ftp://files.example.test/f",
		"files.example.test/f",
		"http://files.example.test/f", // the allowed host, over plain HTTP
		home.srv.URL + "/away",
	} {
		_, err := d.Get(context.Background(), url, 0, 100)
		if !errors.Is(err, ErrFileHost) {
			t.Errorf("Get(%s) = %v, want ErrFileHost", url, err)
		}
		noSecretIn(t, err, url)
	}
	if n := foreign.hits.Load(); n != 0 {
		t.Errorf("the foreign host got %d requests", n)
	}
	got, err := d.Get(context.Background(), home.srv.URL+"/moved", 0, 100)
	if err != nil || string(got.Data) != "home" {
		t.Fatalf("a redirect within the hosts: %q, %v", got.Data, err)
	}
	if _, err := (FileDownload{}).Get(context.Background(), home.srv.URL+"/here", 0, 100); !errors.Is(err, ErrFileHost) {
		t.Errorf("the zero FileDownload fetched: %v", err)
	}
}

// TestFileDownloadTransportErrorsHideTheURL proves the transport's errors (*url.Error, which
// quotes the URL) come back without the URL but with their cause: a refused connection, a
// cancelled context, an unreadable URL.
func TestFileDownloadTransportErrorsHideTheURL(t *testing.T) {
	host := newFileHost(t, map[string]http.HandlerFunc{
		"/slow" + secretPath: func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() },
	})
	d := FileDownload{Client: host.srv.Client(), Origins: []string{host.srv.URL}}

	ctx, cancel := context.WithCancel(context.Background())
	url := host.srv.URL + "/slow" + secretPath + "?" + secretQuery
	done := make(chan error, 1)
	go func() {
		_, err := d.Get(ctx, url, 0, 100)
		done <- err
	}()
	poll.Until(t, "the request to arrive", func() bool { return host.hits.Load() == 1 })
	cancel()
	err := <-done
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
	noSecretIn(t, err, url)

	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL + secretPath + "?" + secretQuery
	closed.Close()
	_, err = FileDownload{Origins: []string{closed.URL}}.Get(context.Background(), closedURL, 0, 100)
	if err == nil {
		t.Fatal("a closed server answered")
	}
	noSecretIn(t, err, closedURL)

	bad := "http://[::1" + secretPath
	if _, err := d.Get(context.Background(), bad, 0, 100); err == nil {
		t.Error("an unreadable URL was fetched")
	} else {
		noSecretIn(t, err, bad)
	}
	for _, tc := range []struct {
		url         string
		size, limit int64
	}{{host.srv.URL + "/x", 0, 0}, {host.srv.URL + "/x", 0, -1}, {"", 0, 100}} {
		if _, err := d.Get(context.Background(), tc.url, tc.size, tc.limit); err == nil || errors.Is(err, conv.ErrFileTooLarge) {
			t.Errorf("Get(%q, %d, %d) = %v, want a refusal", tc.url, tc.size, tc.limit, err)
		}
	}
	if n := host.hits.Load(); n != 1 {
		t.Errorf("%d requests, want only the cancelled one", n)
	}
}
