package slack

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
	slackfake "github.com/switchboard-bot/switchboard/internal/fake/slack"
)

// noSecret fails t when err's text holds a token of the fake or a file URL.
func noSecret(t *testing.T, fake *slackfake.Server, err error, secrets ...string) {
	t.Helper()
	if err == nil {
		return
	}
	for _, s := range append([]string{fake.BotToken(), "/files-pri/", "xoxb-"}, secrets...) {
		if s != "" && strings.Contains(err.Error(), s) {
			t.Errorf("the error %q holds %q", err, s)
		}
	}
}

// shared pushes a DM from ann sharing f in team's workspace and returns its Inbound (the n-th
// handed over, counting from 0).
func (h *harness) shared(t *testing.T, n int, team string, f slackfake.File) channels.Inbound {
	t.Helper()
	h.fake.PushMessage(slackfake.Msg{Channel: "D1", ChannelType: "im", User: ann, Team: team, Subtype: "file_share", Files: []slackfake.File{f}})
	return h.waitInbound(t, n+1)[n]
}

// TestFetchFileDownloadsWithTheWorkspacesToken proves a file a user shares arrives in the
// Inbound's Files with its url_private_download and size, and that FetchFile returns its bytes,
// fetched with the bot token of the conversation's workspace.
func TestFetchFileDownloadsWithTheWorkspacesToken(t *testing.T) {
	h := start(t, nil)
	var ch channels.Channel = h.ch
	fetcher, ok := ch.(channels.FileFetcher)
	if !ok {
		t.Fatal("the Slack channel is not a channels.FileFetcher")
	}
	tests := []struct {
		name string
		file slackfake.NewFile
	}{
		{"a pdf", slackfake.NewFile{Name: "report.pdf", MIME: "application/pdf", Data: []byte("%PDF-1.7 report")}},
		{"an image", slackfake.NewFile{Name: "shot 1.png", MIME: "image/png", Data: []byte("\x89PNG\r\n\x1a\n")}},
		{"an html file", slackfake.NewFile{Name: "page.html", MIME: "text/html", Data: []byte("<html>mine</html>")}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := h.fake.AddFile(tc.file)
			in := h.shared(t, i, "", f)
			want := conv.Attachment{Name: tc.file.Name, MIME: tc.file.MIME, Size: int64(len(tc.file.Data)), URL: f.URLPrivateDownload}
			if len(in.Files) != 1 || in.Files[0] != want {
				t.Fatalf("files %+v, want %+v", in.Files, want)
			}
			data, err := fetcher.FetchFile(context.Background(), in.Conv, in.Files[0], 1<<20)
			if err != nil || string(data) != string(tc.file.Data) {
				t.Fatalf("FetchFile = %q, %v; want %q", data, err, tc.file.Data)
			}
		})
	}
	for _, c := range h.fake.CallsOf(slackfake.DownloadMethod) {
		if c.Auth != "bearer" || c.Team != slackfake.TeamID || c.Status != 200 {
			t.Errorf("download %+v, want the workspace's token in a Bearer header", c)
		}
	}
}

// TestFetchFileUsesTheInstalledWorkspacesToken proves that with OAuth installs each
// conversation's file is fetched with its own workspace's token: another workspace's token
// gets Slack's login page, which FetchFile reports as ErrLoginPage (and ErrAuth), not as the
// file.
func TestFetchFileUsesTheInstalledWorkspacesToken(t *testing.T) {
	h := startOAuth(t, nil)
	if status, _ := h.install(t, "T0SECOND"); status != 200 {
		t.Fatalf("install: %d", status)
	}
	f := h.fake.AddFile(slackfake.NewFile{Team: "T0SECOND", Name: "two.txt", MIME: "text/plain", Data: []byte("from two")})
	in := h.shared(t, 0, "T0SECOND", f)
	if in.Conv.Workspace != "T0SECOND" {
		t.Fatalf("conversation %+v", in.Conv)
	}
	data, err := h.ch.FetchFile(context.Background(), in.Conv, in.Files[0], 1<<20)
	if err != nil || string(data) != "from two" {
		t.Fatalf("FetchFile = %q, %v", data, err)
	}
	if c := h.fake.CallsOf(slackfake.DownloadMethod); len(c) != 1 || c[0].Team != "T0SECOND" {
		t.Fatalf("downloads %+v, want one with T0SECOND's token", c)
	}

	// The configured token's own workspace asking for the second workspace's file.
	home := in.Conv
	home.Workspace = slackfake.TeamID
	_, err = h.ch.FetchFile(context.Background(), home, in.Files[0], 1<<20)
	if !errors.Is(err, ErrLoginPage) || !errors.Is(err, ErrAuth) {
		t.Fatalf("another workspace's token: %v, want ErrLoginPage", err)
	}
	noSecret(t, h.fake, err, h.fake.TeamToken("T0SECOND"))
}

// TestFetchFileRefusesFilesOverTheLimit proves a file too large is refused with
// conv.ErrFileTooLarge: before any request when the event states its size, by the answer's
// Content-Length when only that does, and after limit+1 bytes when nothing does.
func TestFetchFileRefusesFilesOverTheLimit(t *testing.T) {
	const limit = 100
	h := start(t, nil)
	tests := []struct {
		name          string
		file          slackfake.NewFile
		forgetSize    bool
		wantDownloads int
	}{
		{name: "stated in the event", file: slackfake.NewFile{Name: "a", Data: make([]byte, limit+1)}},
		{name: "stated by the answer", file: slackfake.NewFile{Name: "b", Data: make([]byte, limit+1)}, forgetSize: true, wantDownloads: 1},
		{name: "stated nowhere", file: slackfake.NewFile{Name: "c", Data: make([]byte, 10*limit), Unsized: true}, forgetSize: true, wantDownloads: 1},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := h.fake.Count(slackfake.DownloadMethod)
			in := h.shared(t, i, "", h.fake.AddFile(tc.file))
			a := in.Files[0]
			if tc.forgetSize {
				a.Size = 0
			}
			_, err := h.ch.FetchFile(context.Background(), in.Conv, a, limit)
			if !errors.Is(err, conv.ErrFileTooLarge) {
				t.Fatalf("FetchFile = %v, want conv.ErrFileTooLarge", err)
			}
			noSecret(t, h.fake, err)
			if n := h.fake.Count(slackfake.DownloadMethod) - before; n != tc.wantDownloads {
				t.Errorf("%d downloads, want %d", n, tc.wantDownloads)
			}
		})
	}
}

// TestFetchFileFailuresAreClear proves the ways a download fails come back as clear errors
// that hold neither the token nor the URL: a file of a workspace the token does not serve
// (the login page), an unknown file, a server error, a connection cut mid-body, a file
// without a URL, and a URL on a host that is not Slack's — to which nothing is sent.
func TestFetchFileFailuresAreClear(t *testing.T) {
	h := start(t, nil)
	key := conv.Key{Platform: platform, Workspace: slackfake.TeamID, Chat: "D1"}
	fetch := func(a conv.Attachment) error {
		t.Helper()
		_, err := h.ch.FetchFile(context.Background(), key, a, 1<<20)
		if err == nil {
			t.Fatalf("FetchFile(%+v) succeeded", a)
		}
		noSecret(t, h.fake, err, a.URL)
		return err
	}
	attachment := func(f slackfake.File) conv.Attachment {
		return conv.Attachment{Name: f.Name, MIME: f.MIME, Size: f.Size, URL: f.URLPrivateDownload}
	}

	foreign := h.fake.AddFile(slackfake.NewFile{Team: "T0OTHER", Name: "x.txt", MIME: "text/plain", Data: []byte("x")})
	if err := fetch(attachment(foreign)); !errors.Is(err, ErrLoginPage) || !strings.Contains(err.Error(), "login page") {
		t.Errorf("another workspace's file: %v", err)
	}

	mine := h.fake.AddFile(slackfake.NewFile{Name: "y.txt", MIME: "text/plain", Data: []byte("0123456789")})
	unknown := attachment(mine)
	unknown.URL = strings.Replace(unknown.URL, mine.ID, "F000000404", 1)
	if err := fetch(unknown); !isStatus(err, http.StatusNotFound) {
		t.Errorf("an unknown file: %v", err)
	}
	h.fake.FailFile(mine.ID, 1, slackfake.FileFault{Status: http.StatusInternalServerError})
	if err := fetch(attachment(mine)); !isStatus(err, http.StatusInternalServerError) {
		t.Errorf("a server error: %v", err)
	}
	h.fake.FailFile(mine.ID, 1, slackfake.FileFault{Cut: true})
	if err := fetch(attachment(mine)); isStatus(err, 0) || errors.Is(err, conv.ErrFileTooLarge) {
		t.Errorf("a cut download: %v", err)
	}
	if err := fetch(conv.Attachment{Name: "hidden"}); !strings.Contains(err.Error(), "no URL") {
		t.Errorf("a file without a URL: %v", err)
	}

	var hits, auths atomic.Int64
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.Header.Get("Authorization") != "" {
			auths.Add(1)
		}
	}))
	defer elsewhere.Close()
	for _, u := range []string{elsewhere.URL + "/files-pri/T-F1/x.txt", "https://files.slack.com.evil.test/files-pri/T-F1/x", "http://files.slack.com/files-pri/T-F1/x"} {
		if err := fetch(conv.Attachment{Name: "x", URL: u}); !errors.Is(err, kit.ErrFileHost) {
			t.Errorf("%s: %v, want kit.ErrFileHost", u, err)
		}
	}
	if hits.Load() != 0 || auths.Load() != 0 {
		t.Errorf("the other host got %d requests, %d with a token", hits.Load(), auths.Load())
	}
}

// isStatus reports whether err is a download answered with status (any status when 0).
func isStatus(err error, status int) bool {
	se, ok := errors.AsType[*kit.DownloadStatusError](err)
	return ok && (status == 0 || se.Status == status)
}

// TestLoginPageIsToldFromAnHTMLFile proves the login page check: an HTML answer is the login
// page unless the file itself is HTML of the size Slack stated.
func TestLoginPageIsToldFromAnHTMLFile(t *testing.T) {
	page := kit.Downloaded{Data: []byte(slackfake.LoginPage), ContentType: "text/html; charset=utf-8"}
	tests := []struct {
		name string
		got  kit.Downloaded
		a    conv.Attachment
		want bool
	}{
		{"a pdf answered with HTML", page, conv.Attachment{MIME: "application/pdf", Size: 10}, true},
		{"no type stated", page, conv.Attachment{}, true},
		{"an HTML file of another size", page, conv.Attachment{MIME: "text/html", Size: 3}, true},
		{"an HTML file of that size", page, conv.Attachment{MIME: "text/html", Size: int64(len(slackfake.LoginPage))}, false},
		{"an HTML file of no stated size", page, conv.Attachment{MIME: "text/html; charset=utf-8"}, false},
		{"a pdf", kit.Downloaded{Data: []byte("%PDF"), ContentType: "application/pdf"}, conv.Attachment{MIME: "application/pdf"}, false},
		{"no content type", kit.Downloaded{Data: []byte("x")}, conv.Attachment{MIME: "text/plain"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := loginPage(tc.got, tc.a); got != tc.want {
				t.Fatalf("loginPage = %v, want %v", got, tc.want)
			}
		})
	}
}
