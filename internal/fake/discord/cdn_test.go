package discordfake

import (
	"net/http"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/fake/filehost"
)

// fetch GETs u and returns the status, the Content-Length and the body (or the read error's
// text).
func fetch(t *testing.T, u string) (status int, length int64, body string) {
	t.Helper()
	g := filehost.Get(t, u, "")
	return g.Status, g.Length, g.Body
}

// TestAttachmentsAreServedAtTheirSignedURLs proves an attachment AddFile registered is served
// at its url and proxy_url without a token, 404 "This content is no longer available." once
// its signature is gone, and that a download can fail (a status, a cut connection) or come
// without a Content-Length.
func TestAttachmentsAreServedAtTheirSignedURLs(t *testing.T) {
	s := New(t)
	dm := s.DM("111")
	a := s.AddFile(dm, NewFile{Filename: "notes v2.txt", ContentType: "text/plain; charset=utf-8", Data: []byte("some notes")})
	if a.ID == "" || a.Size != 10 || !strings.Contains(a.URL, "/attachments/"+dm+"/"+a.ID+"/") || !strings.Contains(a.URL, "hm=") || a.ProxyURL == a.URL {
		t.Fatalf("attachment %+v", a)
	}
	for _, u := range []string{a.URL, a.ProxyURL} {
		if st, n, body := fetch(t, u); st != 200 || n != 10 || body != "some notes" {
			t.Errorf("GET %s: %d %d %q", u, st, n, body)
		}
	}
	unsigned, _, _ := strings.Cut(a.URL, "?")
	if st, _, body := fetch(t, unsigned); st != http.StatusNotFound || body != NoLongerAvailable {
		t.Errorf("unsigned: %d %q", st, body)
	}
	if st, _, _ := fetch(t, strings.Replace(a.URL, a.ID, "123", 1)); st != http.StatusNotFound {
		t.Errorf("unknown attachment: %d", st)
	}

	s.FailFile(a.ID, 1, FileFault{Status: http.StatusServiceUnavailable})
	s.FailFile(a.ID, 1, FileFault{Cut: true})
	if st, _, _ := fetch(t, a.URL); st != http.StatusServiceUnavailable {
		t.Errorf("the failing download: %d", st)
	}
	if _, _, body := fetch(t, a.URL); !strings.HasPrefix(body, "read error") {
		t.Errorf("the cut download read %q", body)
	}
	u := s.AddFile(dm, NewFile{Filename: "b.bin", Data: []byte("chunked"), Unsized: true})
	if st, n, body := fetch(t, u.URL); st != 200 || n != -1 || body != "chunked" {
		t.Errorf("unsized: %d %d %q", st, n, body)
	}
	downloads := s.Downloads()
	if len(downloads) != 7 || downloads[0].ID != a.ID || downloads[0].Authorization || downloads[2].Status != http.StatusNotFound {
		t.Errorf("downloads %+v", downloads)
	}

	big := s.AddFile(dm, NewFile{Filename: "big.bin", Size: 1 << 30, Data: []byte("x")})
	if big.Size != 1<<30 {
		t.Errorf("stated size %d", big.Size)
	}
}
