package llm

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/fake/modelserver"
)

// newFakeTranscriber starts a fake server that requires testKey and a Transcriber pointed at it.
func newFakeTranscriber(t *testing.T, mutate func(*TranscriberOptions)) (*modelserver.Server, *Transcriber) {
	t.Helper()
	checkLeaks(t)
	s := modelserver.New(t)
	s.SetAPIKey(testKey)
	opts := TranscriberOptions{BaseURL: s.BaseURL(), APIKey: testKey, HTTPClient: s.Client()}
	if mutate != nil {
		mutate(&opts)
	}
	tr, err := NewTranscriber(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s, tr
}

func TestTranscriberSendsTheFileAndReadsTheTranscript(t *testing.T) {
	for _, format := range []string{"", "json", "text"} {
		t.Run("format "+format, func(t *testing.T) {
			s, tr := newFakeTranscriber(t, func(o *TranscriberOptions) { o.Format = format; o.Model = "gpt-4o-mini-transcribe" })
			audio := []byte("OggS\x00\x02 pretend opus")
			got, err := tr.Transcribe(context.Background(), "voice.ogg", "audio/ogg; codecs=opus", audio)
			if err != nil {
				t.Fatal(err)
			}
			if want := "transcript of voice.ogg (19 bytes)"; got != want {
				t.Fatalf("transcript %q, want %q", got, want)
			}
			calls := s.Transcriptions()
			if len(calls) != 1 {
				t.Fatalf("%d calls reached the server", len(calls))
			}
			c := calls[0]
			wantFormat := format
			if wantFormat == "" {
				wantFormat = "json"
			}
			if c.Model != "gpt-4o-mini-transcribe" || c.FileName != "voice.ogg" || c.FileMIME != "audio/ogg" ||
				string(c.File) != string(audio) || c.ResponseFormat != wantFormat || c.Authorization != "Bearer "+testKey {
				t.Fatalf("the server read %+v", c)
			}
		})
	}
}

func TestTranscriberTrimsTheTranscript(t *testing.T) {
	s, tr := newFakeTranscriber(t, nil)
	s.SetTranscribe(func(modelserver.Transcription) modelserver.Reply { return modelserver.Text("  hello there \n") })
	if got, err := tr.Transcribe(context.Background(), "a.mp3", "audio/mpeg", []byte{1}); err != nil || got != "hello there" {
		t.Fatalf("transcript %q, err %v", got, err)
	}
}

func TestTranscriberNamesTheFileSoTheAPIKnowsItsFormat(t *testing.T) {
	tests := []struct {
		name, mime       string
		wantName, wantCT string
	}{
		{"voice.ogg", "audio/ogg", "voice.ogg", "audio/ogg"},
		{"", "audio/ogg", "audio.ogg", "audio/ogg"},
		{"voice.opus", "audio/opus", "voice.opus.ogg", "audio/opus"},
		{"Voice Note.M4A", "", "Voice_Note.M4A", "audio/mp4"},
		{"recording", "video/mp4", "recording.mp4", "video/mp4"},
		{"../../etc/passwd", "audio/mpeg", "passwd.mp3", "audio/mpeg"},
		{`C:\Users\me\memo.wav`, "audio/wav", "memo.wav", "audio/wav"},
		{"a\"b\r\nContent-Type: text/html\r\n.ogg", "audio/ogg", "html__.ogg", "audio/ogg"},
		{"x.flac", "audio/flac\r\nX-Evil: 1", "x.flac", "audio/flac"}, // a malformed type is not sent; the extension's is
		{strings.Repeat("long", 40) + ".webm", "audio/webm", strings.Repeat("long", 40)[160-59:] + ".webm", "audio/webm"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, tr := newFakeTranscriber(t, nil)
			if _, err := tr.Transcribe(context.Background(), tt.name, tt.mime, []byte("data")); err != nil {
				t.Fatal(err)
			}
			c := s.Transcriptions()[0]
			if c.FileName != tt.wantName || c.FileMIME != tt.wantCT {
				t.Fatalf("sent the file as %q (%s), want %q (%s)", c.FileName, c.FileMIME, tt.wantName, tt.wantCT)
			}
		})
	}
}

func TestTranscriberLeavesAnUnknownFormatToTheServer(t *testing.T) {
	_, tr := newFakeTranscriber(t, nil)
	_, err := tr.Transcribe(context.Background(), "memo", "application/x-unknown", []byte("x"))
	if se, ok := errors.AsType[*StatusError](err); !ok || se.StatusCode != http.StatusBadRequest || Temporary(err) {
		t.Fatalf("err = %v, want the server's 400 for a file whose format neither name nor type tells", err)
	}
	if got := uploadName("evil\"\r\nX: y", ""); got != "evil___X__y" {
		t.Errorf("uploadName = %q", got)
	}
}

func TestTranscriberClassifiesFailuresWithoutTheKey(t *testing.T) {
	refused := func(t *testing.T) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		return "http://" + ln.Addr().String() + "/v1"
	}
	quoting := "key " + testKey + " refused"
	tests := []struct {
		name      string
		reply     modelserver.Reply
		wrongKey  bool
		refused   bool
		sentinel  error
		status    int
		temporary bool
	}{
		{name: "wrong key", wrongKey: true, sentinel: ErrAuth},
		{name: "403 quoting the key", reply: modelserver.Reply{Status: http.StatusForbidden, ErrorMessage: quoting}, sentinel: ErrAuth},
		{name: "404", reply: modelserver.NotFound(), sentinel: ErrNotFound},
		{name: "400 quoting the key", reply: modelserver.Reply{Status: http.StatusBadRequest, ErrorMessage: quoting}, status: 400},
		{name: "500 quoting the key", reply: modelserver.Reply{Status: http.StatusInternalServerError, ErrorMessage: quoting}, status: 500, temporary: true},
		{name: "429", reply: modelserver.RateLimited("7"), status: 429, temporary: true},
		{name: "hang past the timeout", reply: modelserver.Hang(), sentinel: ErrTimeout, temporary: true},
		{name: "connection refused", refused: true, sentinel: ErrUnavailable, temporary: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, tr := newFakeTranscriber(t, func(o *TranscriberOptions) {
				o.Timeout = 200 * time.Millisecond
				if tt.refused {
					o.BaseURL, o.HTTPClient = refused(t), nil
				}
			})
			if tt.wrongKey {
				s.SetAPIKey("sk-another")
			}
			s.SetTranscribe(func(modelserver.Transcription) modelserver.Reply { return tt.reply })
			_, err := tr.Transcribe(context.Background(), "v.ogg", "audio/ogg", []byte("x"))
			if err == nil {
				t.Fatal("the call succeeded")
			}
			if strings.Contains(err.Error(), testKey) {
				t.Fatalf("the error holds the key: %v", err)
			}
			if tt.sentinel != nil && !errors.Is(err, tt.sentinel) {
				t.Errorf("err = %v, want %v", err, tt.sentinel)
			}
			if tt.status != 0 {
				se, ok := errors.AsType[*StatusError](err)
				if !ok || se.StatusCode != tt.status {
					t.Fatalf("err = %v, want a *StatusError of HTTP %d", err, tt.status)
				}
				if tt.status == 429 && se.RetryAfter != 7*time.Second {
					t.Errorf("RetryAfter = %v, want 7s", se.RetryAfter)
				}
			}
			if got := Temporary(err); got != tt.temporary {
				t.Errorf("Temporary(%v) = %v, want %v", err, got, tt.temporary)
			}
		})
	}
}

func TestTranscriberStopsWhenTheContextIsDone(t *testing.T) {
	s, tr := newFakeTranscriber(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	s.SetTranscribe(func(modelserver.Transcription) modelserver.Reply {
		cancel() // the call is in flight
		return modelserver.Hang()
	})
	_, err := tr.Transcribe(ctx, "v.ogg", "audio/ogg", []byte("x"))
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout) || Temporary(err) {
		t.Fatalf("err = %v, want the cancellation", err)
	}
}

func TestNewTranscriberRefusesBadOptions(t *testing.T) {
	tests := []struct {
		name string
		opts TranscriberOptions
	}{
		{"relative base URL", TranscriberOptions{BaseURL: "/v1"}},
		{"ftp base URL", TranscriberOptions{BaseURL: "ftp://example.com"}},
		{"srt format", TranscriberOptions{Format: "srt"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewTranscriber(tt.opts); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	tr, err := NewTranscriber(TranscriberOptions{APIKey: testKey})
	if err != nil || tr.opts.BaseURL != DefaultTranscribeBaseURL || tr.opts.Model != DefaultTranscribeModel ||
		tr.opts.Format != "json" || tr.opts.Timeout != DefaultTranscribeTimeout {
		t.Fatalf("defaults %+v, err %v", tr.opts, err)
	}
}
