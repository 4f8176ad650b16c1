package telegramfake

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/fake/filehost"
)

// download GETs path on s and returns the status, the Content-Length and the body (or the
// read error's text).
func download(t *testing.T, s *Server, path string) (status int, length int64, body string) {
	t.Helper()
	g := filehost.Get(t, s.URL()+path, "")
	return g.Status, g.Length, g.Body
}

// TestFilesAreServedAsTheBotAPIServesThem proves the fake's file flow: a registered file rides
// in a message's field of its kind, getFile answers its file_path and size, and its bytes are
// served at /file/bot<token>/<file_path> — 404 for a wrong token or an unknown path; getFile
// refuses an unknown file id and one over 20 MB as Telegram does.
func TestFilesAreServedAsTheBotAPIServesThem(t *testing.T) {
	s := New(t)
	voice := s.AddFile(NewFile{Kind: KindVoice, MimeType: "audio/ogg", Data: []byte("OggS voice")})
	huge := s.AddFile(NewFile{Name: "big.iso", Size: MaxDownloadSize + 1, Data: []byte("x")})

	s.PushMessage(In{Chat: Private(User{ID: 5}), From: User{ID: 5}, Files: []UserFile{voice}})
	var upd struct {
		Message WireMessage `json:"message"`
	}
	if err := json.Unmarshal(s.TakeUpdates()[0], &upd); err != nil {
		t.Fatal(err)
	}
	if v := upd.Message.Voice; v == nil || v.FileID != voice.FileID || v.FileSize != len("OggS voice") || v.MimeType != "audio/ogg" {
		t.Fatalf("the message's voice is %+v", upd.Message.Voice)
	}

	a := call(t, s, "getFile", url.Values{"file_id": {voice.FileID}})
	var f struct {
		FileID   string `json:"file_id"`
		FileSize int    `json:"file_size"`
		FilePath string `json:"file_path"`
	}
	if err := json.Unmarshal(a.Result, &f); !a.OK || err != nil || f.FileID != voice.FileID || f.FileSize != 10 || f.FilePath != voice.Path ||
		!strings.HasPrefix(f.FilePath, "voice/") {
		t.Fatalf("getFile: %+v %+v", a, f)
	}
	if st, n, body := download(t, s, "/file/bot"+s.Token()+"/"+f.FilePath); st != 200 || n != 10 || body != "OggS voice" {
		t.Fatalf("download: %d, %d bytes stated, %q", st, n, body)
	}
	for name, path := range map[string]string{
		"wrong token":  "/file/bot123:wrong/" + f.FilePath,
		"unknown path": "/file/bot" + s.Token() + "/voice/file_999.oga",
	} {
		if st, _, _ := download(t, s, path); st != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", name, st)
		}
	}
	for id, want := range map[string]string{huge.FileID: "Bad Request: file is too big", "nope": "Bad Request: invalid file_id"} {
		if a := call(t, s, "getFile", url.Values{"file_id": {id}}); a.OK || a.ErrorCode != 400 || a.Description != want {
			t.Errorf("getFile(%s) = %+v, want 400 %q", id, a, want)
		}
	}
	if n := s.Count(DownloadMethod); n != 3 {
		t.Errorf("%d downloads counted, want 3", n)
	}
}

// TestFileFaultsAndUnsizedFiles proves a file's download can fail (a status, a connection cut
// mid-body) and that an unsized file is served without a Content-Length or a file_size.
func TestFileFaultsAndUnsizedFiles(t *testing.T) {
	s := New(t)
	doc := s.AddFile(NewFile{Name: "a.pdf", MimeType: "application/pdf", Data: []byte("0123456789")})
	path := "/file/bot" + s.Token() + "/" + doc.Path
	s.FailFile(doc.FileID, 1, FileFault{Status: http.StatusInternalServerError})
	s.FailFile(doc.FileID, 1, FileFault{Cut: true})
	if st, _, _ := download(t, s, path); st != http.StatusInternalServerError {
		t.Errorf("the failing download answered %d", st)
	}
	if st, _, body := download(t, s, path); st != 200 || !strings.HasPrefix(body, "read error") {
		t.Errorf("the cut download: %d %q, want a read error", st, body)
	}
	if st, _, body := download(t, s, path); st != 200 || body != "0123456789" {
		t.Errorf("after the faults: %d %q", st, body)
	}

	unsized := s.AddFile(NewFile{Kind: KindVideo, Name: "clip.mp4", MimeType: "video/mp4", Data: []byte("video"), Unsized: true})
	if unsized.Size != 0 || !strings.HasSuffix(unsized.Path, ".mp4") {
		t.Fatalf("unsized file %+v", unsized)
	}
	if st, n, body := download(t, s, "/file/bot"+s.Token()+"/"+unsized.Path); st != 200 || n != -1 || body != "video" {
		t.Errorf("unsized download: %d, %d bytes stated, %q", st, n, body)
	}
	a := call(t, s, "getFile", url.Values{"file_id": {unsized.FileID}})
	if !a.OK || strings.Contains(string(a.Result), "file_size") {
		t.Errorf("getFile of an unsized file: %s", a.Result)
	}
}

// TestUserFileFieldsByKind proves each kind rides in its own field of a message, a photo as
// its sizes with the file last.
func TestUserFileFieldsByKind(t *testing.T) {
	s := New(t)
	for _, tc := range []struct {
		kind, field string
	}{
		{KindDocument, "document"}, {KindPhoto, "photo"}, {KindVoice, "voice"}, {KindAudio, "audio"},
		{KindVideo, "video"}, {KindVideoNote, "video_note"}, {KindSticker, "sticker"},
	} {
		f := s.AddFile(NewFile{Kind: tc.kind, Data: []byte("data")})
		raw, err := json.Marshal(f.Fields())
		if err != nil {
			t.Fatal(err)
		}
		var fields map[string]json.RawMessage
		_ = json.Unmarshal(raw, &fields)
		if len(fields) != 1 || fields[tc.field] == nil || !strings.Contains(string(fields[tc.field]), f.FileID) {
			t.Errorf("%s: fields %s", tc.kind, raw)
		}
		if tc.kind == KindPhoto {
			var sizes []WireMedia
			if err := json.Unmarshal(fields["photo"], &sizes); err != nil || len(sizes) != 2 || sizes[1].FileID != f.FileID {
				t.Errorf("photo sizes %s", fields["photo"])
			}
		}
	}
}
