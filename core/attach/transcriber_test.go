package attach

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/core/llm"
	"github.com/switchboard-bot/switchboard/internal/fake/modelserver"
)

// TestPrepareTranscribesWithTheRealTranscriber sends a Telegram-style voice note (no file name,
// the platform's type with parameters) through llm.Transcriber to the fake model server.
func TestPrepareTranscribesWithTheRealTranscriber(t *testing.T) {
	const key = "sk-attach-SECRET-KEY"
	s := modelserver.New(t)
	s.SetAPIKey(key)
	voice := oggFile("OpusHead")
	p := &platform{files: map[string]stored{"": {data: voice}}}
	files := attachments("")
	files[0].MIME = "audio/ogg; codecs=opus"
	transcriber := func(t *testing.T, key string) *llm.Transcriber {
		t.Helper()
		tr, err := llm.NewTranscriber(llm.TranscriberOptions{BaseURL: s.BaseURL(), APIKey: key, HTTPClient: s.Client()})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}

	t.Run("transcribed", func(t *testing.T) {
		res := prepare(t, p, files, Options{Transcriber: transcriber(t, key)})
		want := fmt.Sprintf("[Attached audio \"file 1\" (audio/ogg, %d bytes): its transcript is between the two ``` lines below]\n"+
			"```\ntranscript of file_1.ogg (%d bytes)\n```\n[end of \"file 1\"]", len(voice), len(voice))
		if res.Text != want || len(res.Notices) != 0 {
			t.Fatalf("Text =\n%s\nwant\n%s\nnotices %q", res.Text, want, res.Notices)
		}
		calls := s.Transcriptions()
		if len(calls) != 1 || calls[0].FileName != "file_1.ogg" || calls[0].FileMIME != "audio/ogg" || !bytes.Equal(calls[0].File, voice) {
			t.Fatalf("the server got %+v", calls)
		}
	})
	t.Run("refused", func(t *testing.T) {
		res := prepare(t, p, files, Options{Transcriber: transcriber(t, "sk-wrong-SECRET-KEY")})
		if !strings.HasSuffix(res.Text, ": could not be transcribed — the transcription failed]") ||
			len(res.Notices) != 1 || res.Notices[0] != `"file 1" could not be transcribed: the transcription failed.` {
			t.Fatalf("Text =\n%s\nnotices %q", res.Text, res.Notices)
		}
		for _, s := range append([]string{res.Text}, res.Notices...) {
			if strings.Contains(s, "SECRET") {
				t.Fatalf("a key leaked into %q", s)
			}
		}
	})
	t.Run("server down", func(t *testing.T) {
		s.SetTranscribe(func(modelserver.Transcription) modelserver.Reply { return modelserver.ServerError() })
		defer s.SetTranscribe(nil)
		res := prepare(t, p, files, Options{Transcriber: transcriber(t, key)})
		if len(res.Notices) != 1 || res.Notices[0] != `"file 1" could not be transcribed: the transcription service is unavailable for now.` {
			t.Fatalf("notices %q", res.Notices)
		}
	})
}
