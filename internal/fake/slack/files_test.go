package slackfake_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/fake/filehost"
	slackfake "github.com/switchboard-bot/switchboard/internal/fake/slack"
)

// get fetches url with token as a Bearer header ("" for none) and returns the status, the
// Content-Type, the Content-Length and the body (or the read error's text).
func get(t *testing.T, url, token string) (status int, contentType string, length int64, body string) {
	t.Helper()
	auth := ""
	if token != "" {
		auth = "Bearer " + token
	}
	g := filehost.Get(t, url, auth)
	return g.Status, g.ContentType, g.Length, g.Body
}

// TestSharedFilesNeedTheirWorkspacesToken proves a shared file's url_private and
// url_private_download serve its bytes to a bot token of its workspace, and Slack's login
// page — status 200, text/html — to another workspace's token, a wrong one or none; an unknown
// file is 404; the event's file object carries both URLs.
func TestSharedFilesNeedTheirWorkspacesToken(t *testing.T) {
	s := slackfake.New(t)
	other := s.AddTeam("T0OTHER")
	f := s.AddFile(slackfake.NewFile{Name: "report final.pdf", MIME: "application/pdf", Data: []byte("%PDF-1.7 report")})
	if f.Size != 15 || !strings.HasPrefix(f.URLPrivate, s.URL()+"/files-pri/"+slackfake.TeamID+"-"+f.ID+"/") ||
		!strings.Contains(f.URLPrivateDownload, "/download/") {
		t.Fatalf("file %+v", f)
	}
	for _, u := range []string{f.URLPrivate, f.URLPrivateDownload} {
		if st, ct, n, body := get(t, u, s.BotToken()); st != 200 || ct != "application/pdf" || n != 15 || body != "%PDF-1.7 report" {
			t.Errorf("GET %s: %d %s %d %q", u, st, ct, n, body)
		}
		for name, tok := range map[string]string{"another workspace's token": other, "a wrong token": "xoxb-wrong", "no token": ""} {
			if st, ct, _, body := get(t, u, tok); st != 200 || !strings.HasPrefix(ct, "text/html") || body != slackfake.LoginPage {
				t.Errorf("%s: %d %s %.40q, want the login page", name, st, ct, body)
			}
		}
	}
	if st, _, _, _ := get(t, s.URL()+"/files-pri/"+slackfake.TeamID+"-F404/x", s.BotToken()); st != http.StatusNotFound {
		t.Errorf("an unknown file: %d", st)
	}
	if n := s.Count(slackfake.DownloadMethod); n != 9 {
		t.Errorf("%d downloads counted, want 9", n)
	}
	cb, _ := s.MessageCallback(slackfake.Msg{Channel: "D1", ChannelType: "im", User: "U1", Subtype: "file_share", Files: []slackfake.File{f}})
	obj := cb["event"].(map[string]any)["files"].([]map[string]any)[0]
	if obj["url_private"] != f.URLPrivate || obj["url_private_download"] != f.URLPrivateDownload || obj["size"] != int64(15) {
		t.Errorf("file object %v", obj)
	}
}

// TestSharedFileFaultsAndUnsizedFiles proves a file's download can fail (a status, a
// connection cut mid-body), and that an unsized file is served without a Content-Length.
func TestSharedFileFaultsAndUnsizedFiles(t *testing.T) {
	s := slackfake.New(t)
	f := s.AddFile(slackfake.NewFile{Name: "a.txt", MIME: "text/plain", Data: []byte("0123456789")})
	s.FailFile(f.ID, 1, slackfake.FileFault{Status: http.StatusInternalServerError})
	s.FailFile(f.ID, 1, slackfake.FileFault{Cut: true})
	if st, _, _, _ := get(t, f.URLPrivateDownload, s.BotToken()); st != http.StatusInternalServerError {
		t.Errorf("the failing download: %d", st)
	}
	if _, _, _, body := get(t, f.URLPrivateDownload, s.BotToken()); !strings.HasPrefix(body, "read error") {
		t.Errorf("the cut download read %q", body)
	}
	if _, _, _, body := get(t, f.URLPrivateDownload, s.BotToken()); body != "0123456789" {
		t.Errorf("after the faults: %q", body)
	}
	u := s.AddFile(slackfake.NewFile{Name: "b.bin", Data: []byte("chunked"), Unsized: true})
	if st, ct, n, body := get(t, u.URLPrivateDownload, s.BotToken()); st != 200 || n != -1 || body != "chunked" || ct != "application/octet-stream" {
		t.Errorf("unsized: %d %s %d %q", st, ct, n, body)
	}
}
