package discord

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/kit"
	"github.com/switchboard-bot/switchboard/core/conv"
	discordfake "github.com/switchboard-bot/switchboard/internal/fake/discord"
	"github.com/switchboard-bot/switchboard/internal/poll"
)

// noSecret fails t when err's text holds the bot token, or the URL or signature of a.
func noSecret(t *testing.T, fk *discordfake.Server, err error, a conv.Attachment) {
	t.Helper()
	if err == nil {
		return
	}
	secrets := []string{fk.Token(), "hm="}
	if a.URL != "" {
		secrets = append(secrets, a.URL)
	}
	for _, s := range secrets {
		if strings.Contains(err.Error(), s) {
			t.Errorf("the error %q holds %q", err, s)
		}
	}
}

// attached posts a DM from alice carrying a and returns the attachment its Inbound lists
// (the n-th Inbound, counting from 0).
func (h *harness) attached(t *testing.T, n int, dm string, a discordfake.Attachment) conv.Attachment {
	t.Helper()
	h.fk.Post(discordfake.UserMessage{Channel: dm, Author: alice, Attachments: []discordfake.Attachment{a}})
	poll.Until(t, "the message", func() bool { return h.rec.count() > n })
	in := h.rec.all()[n]
	if len(in.Files) != 1 {
		t.Fatalf("files %+v, want one", in.Files)
	}
	return in.Files[0]
}

// TestFetchFileDownloadsFromTheCDN proves an attachment a user sends arrives in the Inbound's
// Files with its size and content type, and that FetchFile returns its bytes from its signed
// CDN URL — without sending the bot token there.
func TestFetchFileDownloadsFromTheCDN(t *testing.T) {
	h := newHarness(t, nil, nil)
	var ch channels.Channel = h.ch
	fetcher, ok := ch.(channels.FileFetcher)
	if !ok {
		t.Fatal("the Discord channel is not a channels.FileFetcher")
	}
	dm := h.fk.DM(alice.ID)
	tests := []discordfake.NewFile{
		{Filename: "notes.txt", ContentType: "text/plain; charset=utf-8", Data: []byte("some notes")},
		{Filename: "voice-message.ogg", ContentType: "audio/ogg", Data: []byte("OggS voice")},
		{Filename: "shot.png", ContentType: "image/png", Data: []byte("\x89PNG\r\n\x1a\n")},
	}
	for i, f := range tests {
		t.Run(f.Filename, func(t *testing.T) {
			att := h.fk.AddFile(dm, f)
			a := h.attached(t, i, dm, att)
			want := conv.Attachment{Name: f.Filename, MIME: f.ContentType, Size: int64(len(f.Data)), URL: att.URL}
			if a != want {
				t.Fatalf("attachment %+v, want %+v", a, want)
			}
			data, err := fetcher.FetchFile(context.Background(), conv.Key{Platform: platform, Chat: dm}, a, 1<<20)
			if err != nil || string(data) != string(f.Data) {
				t.Fatalf("FetchFile = %q, %v; want %q", data, err, f.Data)
			}
		})
	}
	for _, d := range h.fk.Downloads() {
		if d.Authorization {
			t.Errorf("a download carried an Authorization header: %+v", d)
		}
	}
}

// TestFetchFileRefusesFilesOverTheLimit proves an attachment too large is refused with
// conv.ErrFileTooLarge: before any request on the size Discord states, by the answer's
// Content-Length when the size is missing, and after limit+1 bytes when nothing states it.
func TestFetchFileRefusesFilesOverTheLimit(t *testing.T) {
	const limit = 100
	h := newHarness(t, nil, nil)
	dm := h.fk.DM(alice.ID)
	tests := []struct {
		name          string
		file          discordfake.NewFile
		forgetSize    bool
		wantDownloads int
	}{
		{name: "stated by Discord", file: discordfake.NewFile{Filename: "a", Size: 8 << 20, Data: []byte("x")}},
		{name: "stated by the answer", file: discordfake.NewFile{Filename: "b", Data: make([]byte, limit+1)}, forgetSize: true, wantDownloads: 1},
		{name: "stated nowhere", file: discordfake.NewFile{Filename: "c", Data: make([]byte, 10*limit), Unsized: true}, forgetSize: true, wantDownloads: 1},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(h.fk.Downloads())
			a := h.attached(t, i, dm, h.fk.AddFile(dm, tc.file))
			if tc.forgetSize {
				a.Size = 0
			}
			_, err := h.ch.FetchFile(context.Background(), conv.Key{Platform: platform, Chat: dm}, a, limit)
			if !errors.Is(err, conv.ErrFileTooLarge) {
				t.Fatalf("FetchFile = %v, want conv.ErrFileTooLarge", err)
			}
			noSecret(t, h.fk, err, a)
			if n := len(h.fk.Downloads()) - before; n != tc.wantDownloads {
				t.Errorf("%d downloads, want %d", n, tc.wantDownloads)
			}
		})
	}
}

// TestFetchFileFailuresAreClear proves the ways a download fails come back as clear errors
// that hold neither the token nor the signed URL: a link whose signature is gone (expired),
// a CDN error, a connection cut mid-body, an attachment without a URL, and a URL on a host
// that is not Discord's — to which nothing is sent.
func TestFetchFileFailuresAreClear(t *testing.T) {
	h := newHarness(t, nil, nil)
	dm := h.fk.DM(alice.ID)
	key := conv.Key{Platform: platform, Chat: dm}
	fetch := func(a conv.Attachment) error {
		t.Helper()
		_, err := h.ch.FetchFile(context.Background(), key, a, 1<<20)
		if err == nil {
			t.Fatalf("FetchFile(%+v) succeeded", a)
		}
		noSecret(t, h.fk, err, a)
		return err
	}
	att := h.fk.AddFile(dm, discordfake.NewFile{Filename: "a.txt", ContentType: "text/plain", Data: []byte("0123456789")})
	a := conv.Attachment{Name: att.Filename, MIME: att.ContentType, Size: att.Size, URL: att.URL}

	expired := a
	expired.URL = strings.Replace(a.URL, "hm=", "hm=0", 1)
	if err := fetch(expired); !isStatus(err, http.StatusNotFound) || !strings.Contains(err.Error(), "expired") {
		t.Errorf("an expired link: %v", err)
	}
	h.fk.FailFile(att.ID, 1, discordfake.FileFault{Status: http.StatusBadGateway})
	if err := fetch(a); !isStatus(err, http.StatusBadGateway) {
		t.Errorf("a CDN error: %v", err)
	}
	h.fk.FailFile(att.ID, 1, discordfake.FileFault{Cut: true})
	if err := fetch(a); isStatus(err, 0) || errors.Is(err, conv.ErrFileTooLarge) {
		t.Errorf("a cut download: %v", err)
	}
	if err := fetch(conv.Attachment{Name: "x"}); !strings.Contains(err.Error(), "no URL") {
		t.Errorf("no URL: %v", err)
	}

	var hits atomic.Int64
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer elsewhere.Close()
	for _, u := range []string{elsewhere.URL + "/attachments/1/2/a.txt", "https://cdn.discordapp.com.evil.test/attachments/1/2/a", "http://cdn.discordapp.com/attachments/1/2/a"} {
		if err := fetch(conv.Attachment{Name: "x", URL: u}); !errors.Is(err, kit.ErrFileHost) {
			t.Errorf("%s: %v, want kit.ErrFileHost", u, err)
		}
	}
	if hits.Load() != 0 {
		t.Errorf("the other host got %d requests", hits.Load())
	}
}

// isStatus reports whether err is a download answered with status (any status when 0).
func isStatus(err error, status int) bool {
	se, ok := errors.AsType[*kit.DownloadStatusError](err)
	return ok && (status == 0 || se.Status == status)
}
