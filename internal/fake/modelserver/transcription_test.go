package modelserver

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strings"
	"testing"
)

// form is a transcription request's multipart body.
type form struct {
	fileName, fileMIME string
	file               []byte
	noFile             bool
	fields             map[string]string
}

func (f form) encode(t *testing.T) (body []byte, contentType string) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	if !f.noFile {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", `form-data; name="file"; filename="`+f.fileName+`"`)
		h.Set("Content-Type", f.fileMIME)
		part, err := w.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := part.Write(f.file); err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range f.fields {
		if err := w.WriteField(k, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), w.FormDataContentType()
}

func postForm(t *testing.T, s *Server, path, auth, contentType string, body []byte) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, s.RootURL()+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func voiceForm(format string) form {
	f := form{fileName: "voice.ogg", fileMIME: "audio/ogg", file: []byte("OggS\x00 not really opus"),
		fields: map[string]string{"model": "whisper-1"}}
	if format != "" {
		f.fields["response_format"] = format
	}
	return f
}

func TestTranscriptionAnswersInEachResponseFormat(t *testing.T) {
	const want = "transcript of voice.ogg (21 bytes)"
	tests := []struct {
		format, path string
		check        func(t *testing.T, ct string, body []byte)
	}{
		{"", "/v1/audio/transcriptions", func(t *testing.T, ct string, body []byte) {
			var v map[string]any
			if err := json.Unmarshal(body, &v); err != nil || ct != "application/json" || len(v) != 1 || v["text"] != want {
				t.Fatalf("body %s (%s), want {\"text\":%q}", body, ct, want)
			}
		}},
		{"json", "/audio/transcriptions", func(t *testing.T, ct string, body []byte) {
			var v struct{ Text string }
			if err := json.Unmarshal(body, &v); err != nil || v.Text != want {
				t.Fatalf("body %s, want the text %q", body, want)
			}
		}},
		{"text", "/v1/audio/transcriptions", func(t *testing.T, ct string, body []byte) {
			if string(body) != want+"\n" || !strings.HasPrefix(ct, "text/plain") {
				t.Fatalf("body %q (%s), want the transcript and a newline", body, ct)
			}
		}},
		{"verbose_json", "/v1/audio/transcriptions", func(t *testing.T, ct string, body []byte) {
			var v struct {
				Task, Text string
				Segments   []any
			}
			if err := json.Unmarshal(body, &v); err != nil || v.Task != "transcribe" || v.Text != want || v.Segments == nil {
				t.Fatalf("body %s", body)
			}
		}},
	}
	for _, tt := range tests {
		t.Run("format "+tt.format, func(t *testing.T) {
			s := New(t)
			f := voiceForm(tt.format)
			f.fields["language"], f.fields["prompt"] = "en", "names: Ann"
			body, ct := f.encode(t)
			resp, b := postForm(t, s, tt.path, "Bearer k", ct, body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			tt.check(t, resp.Header.Get("Content-Type"), b)
			got := s.Transcriptions()
			if len(got) != 1 {
				t.Fatalf("recorded %d transcriptions, want 1", len(got))
			}
			r := got[0]
			if r.Path != tt.path || r.Authorization != "Bearer k" || r.Received.IsZero() || r.Model != "whisper-1" ||
				r.FileName != "voice.ogg" || r.FileMIME != "audio/ogg" || string(r.File) != string(f.file) ||
				r.ResponseFormat != tt.format || r.Language != "en" || r.Prompt != "names: Ann" {
				t.Fatalf("recorded %+v", r)
			}
			got[0].File[0] = 'X'
			if s.Transcriptions()[0].File[0] != 'O' {
				t.Error("Transcriptions returned a shared copy")
			}
		})
	}
}

func TestTranscriptionRefusesWhatTheRealAPIRefuses(t *testing.T) {
	withField := func(f form, k, v string) form {
		f.fields[k] = v
		return f
	}
	noModel := voiceForm("")
	delete(noModel.fields, "model")
	noFile := voiceForm("")
	noFile.noFile = true
	badExt := voiceForm("")
	badExt.fileName = "voice.exe"
	noExt := voiceForm("")
	noExt.fileName = "voice"
	tests := []struct {
		name        string
		form        form
		contentType string // replaces the form's
		key, auth   string
		wantStatus  int
		wantParam   string
		wantInMsg   string
	}{
		{name: "no file", form: noFile, wantStatus: 400, wantParam: "file", wantInMsg: "'file'"},
		{name: "no model", form: noModel, wantStatus: 400, wantParam: "model", wantInMsg: "'model'"},
		{name: "unknown response format", form: withField(voiceForm(""), "response_format", "xml"), wantStatus: 400, wantParam: "response_format"},
		{name: "unsupported file extension", form: badExt, wantStatus: 400, wantParam: "file", wantInMsg: "Invalid file format"},
		{name: "file name without extension", form: noExt, wantStatus: 400, wantParam: "file", wantInMsg: "Invalid file format"},
		{name: "not a multipart body", form: voiceForm(""), contentType: "application/json", wantStatus: 400, wantInMsg: "multipart"},
		{name: "wrong key", form: voiceForm(""), key: "sk-right", auth: "Bearer sk-wrong", wantStatus: 401, wantInMsg: "sk-wrong"},
		{name: "no key", form: voiceForm(""), key: "sk-right", wantStatus: 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(t)
			s.SetAPIKey(tt.key)
			body, ct := tt.form.encode(t)
			if tt.contentType != "" {
				ct = tt.contentType
			}
			resp, b := postForm(t, s, "/v1/audio/transcriptions", tt.auth, ct, body)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status = %d, want %d: %s", resp.StatusCode, tt.wantStatus, b)
			}
			var e apiError
			if err := json.Unmarshal(b, &e); err != nil {
				t.Fatalf("error body %s: %v", b, err)
			}
			if e.Error.Type != "invalid_request_error" || !strings.Contains(e.Error.Message, tt.wantInMsg) {
				t.Errorf("error %+v, want a message containing %q", e.Error, tt.wantInMsg)
			}
			if tt.wantParam != "" && (e.Error.Param == nil || *e.Error.Param != tt.wantParam) {
				t.Errorf("param = %v, want %q", e.Error.Param, tt.wantParam)
			}
			if n := len(s.Transcriptions()); n != 0 {
				t.Errorf("recorded %d refused transcriptions", n)
			}
		})
	}
}

func TestTranscriptionAcceptsTheKey(t *testing.T) {
	s := New(t)
	s.SetAPIKey("sk-right")
	body, ct := voiceForm("").encode(t)
	if resp, b := postForm(t, s, "/v1/audio/transcriptions", "Bearer sk-right", ct, body); resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
}

func TestTranscriptionRefusesAFileOverTheLimit(t *testing.T) {
	s := New(t)
	f := voiceForm("")
	f.file = make([]byte, MaxUploadBytes+2<<20)
	body, ct := f.encode(t)
	resp, b := postForm(t, s, "/v1/audio/transcriptions", "", ct, body)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), "Maximum content size") {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
}

func TestTranscriptionIsScriptedByItsFunction(t *testing.T) {
	s := New(t)
	var seen []string
	s.SetTranscribe(func(tr Transcription) Reply {
		seen = append(seen, tr.FileName)
		switch tr.FileName {
		case "busy.ogg":
			return RateLimited("2")
		case "broken.ogg":
			return Reply{Status: http.StatusInternalServerError, ErrorMessage: "decoder crashed"}
		}
		return Text("hello from " + tr.Model)
	})
	send := func(name string) (*http.Response, []byte) {
		f := voiceForm("")
		f.fileName = name
		body, ct := f.encode(t)
		return postForm(t, s, "/v1/audio/transcriptions", "", ct, body)
	}
	if resp, b := send("ok.ogg"); resp.StatusCode != 200 || string(b) != `{"text":"hello from whisper-1"}` {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	if resp, _ := send("busy.ogg"); resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "2" {
		t.Fatalf("status %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if resp, b := send("broken.ogg"); resp.StatusCode != 500 || !strings.Contains(string(b), "decoder crashed") {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	s.SetTranscribe(nil)
	if _, b := send("back.ogg"); !strings.Contains(string(b), "transcript of back.ogg") {
		t.Fatalf("the default transcript did not come back: %s", b)
	}
	if strings.Join(seen, ",") != "ok.ogg,busy.ogg,broken.ogg" {
		t.Errorf("the function saw %v", seen)
	}
	if s.Count() != 0 {
		t.Errorf("Count = %d: transcriptions are not chat requests", s.Count())
	}
}
