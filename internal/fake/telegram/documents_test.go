package telegramfake

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// upload posts a sendDocument with the given fields and, when data is not nil, a document part.
func upload(t *testing.T, s *Server, fields map[string]string, name string, data []byte) answer {
	t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	for k, v := range fields {
		_ = w.WriteField(k, v)
	}
	if data != nil {
		part, _ := w.CreateFormFile("document", name)
		_, _ = part.Write(data)
	}
	_ = w.Close()
	resp, err := http.Post(s.URL()+"/bot"+s.Token()+"/sendDocument", w.FormDataContentType(), &body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a answer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		t.Fatal(err)
	}
	return a
}

// TestSendDocumentKeepsTheUploadAndChecksItsLimits proves sendDocument keeps a multipart upload
// as a message with its file and caption, answers with a document field, and refuses what the
// Bot API refuses: no document, an empty file, a file id it cannot know, a caption past 1,024.
func TestSendDocumentKeepsTheUploadAndChecksItsLimits(t *testing.T) {
	s := Start()
	defer s.Close()
	a := upload(t, s, map[string]string{"chat_id": "42", "caption": "the rest"}, "answer.md", []byte("# hi\n"))
	if !a.OK {
		t.Fatalf("sendDocument: %s", a.Description)
	}
	var w WireMessage
	if err := json.Unmarshal(a.Result, &w); err != nil || w.Document == nil || w.Document.FileName != "answer.md" || w.Document.FileSize != 5 || w.Caption != "the rest" {
		t.Fatalf("result %s (%v)", a.Result, err)
	}
	posted := s.Posted(42)
	if len(posted) != 1 || posted[0].Document == nil || string(posted[0].Document.Data) != "# hi\n" || posted[0].Text != "the rest" {
		t.Fatalf("posted %+v", posted)
	}
	for name, tc := range map[string]struct {
		fields map[string]string
		data   []byte
		want   string
	}{
		"no document":   {map[string]string{"chat_id": "42"}, nil, "there is no document"},
		"empty file":    {map[string]string{"chat_id": "42"}, []byte{}, "file must be non-empty"},
		"file id":       {map[string]string{"chat_id": "42", "document": "AgADBAAD"}, nil, "wrong file identifier"},
		"long caption":  {map[string]string{"chat_id": "42", "caption": strings.Repeat("x", 1025)}, []byte("x"), "caption is too long"},
		"no such chat":  {map[string]string{"chat_id": "x"}, []byte("x"), "chat not found"},
		"broken markup": {map[string]string{"chat_id": "42", "caption": "<b>x", "parse_mode": "HTML"}, []byte("x"), "can't parse entities"},
	} {
		if a := upload(t, s, tc.fields, "f.md", tc.data); a.OK || a.ErrorCode != 400 || !strings.Contains(a.Description, tc.want) {
			t.Errorf("%s: ok %v, %d %q; want 400 %q", name, a.OK, a.ErrorCode, a.Description, tc.want)
		}
	}
	if a := call(t, s, "sendDocument", url.Values{"chat_id": {"42"}}); a.OK {
		t.Error("a form without a file was accepted")
	}
	if len(s.Posted(42)) != 1 {
		t.Error("a refused upload was kept")
	}
}
