package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/conv"
	telegramfake "github.com/switchboard-bot/switchboard/internal/fake/telegram"
)

// noSecret fails t when err's text holds the bot token or a file URL of the fake.
func noSecret(t *testing.T, fake *telegramfake.Server, err error) {
	t.Helper()
	if err == nil {
		return
	}
	for _, s := range []string{fake.Token(), "/file/bot", fake.URL()} {
		if strings.Contains(err.Error(), s) {
			t.Errorf("the error %q holds %q", err, s)
		}
	}
}

// fileOf is the one attachment of the next inbound, after n before it.
func (h *harness) fileOf(t *testing.T, n int) conv.Attachment {
	t.Helper()
	in := h.waitInbound(t, n+1)[n]
	if len(in.Files) != 1 {
		t.Fatalf("inbound files %+v, want one", in.Files)
	}
	return in.Files[0]
}

// TestFetchFileDownloadsWhatUsersSend proves a voice note, a document and a photo a user sends
// arrive as attachments of their Inbound and that FetchFile returns their bytes — through
// getFile and the file URL, which holds the token.
func TestFetchFileDownloadsWhatUsersSend(t *testing.T) {
	h := start(t, nil)
	var ch channels.Channel = h.ch
	fetcher, ok := ch.(channels.FileFetcher)
	if !ok {
		t.Fatal("the Telegram channel is not a channels.FileFetcher")
	}
	tests := []struct {
		file     telegramfake.NewFile
		wantName string
		wantMIME string
	}{
		{telegramfake.NewFile{Kind: telegramfake.KindVoice, MimeType: "audio/ogg", Data: []byte("OggS\x00voice")}, "voice.ogg", "audio/ogg"},
		{telegramfake.NewFile{Name: "notes.pdf", MimeType: "application/pdf", Data: []byte("%PDF-1.7 notes")}, "notes.pdf", "application/pdf"},
		{telegramfake.NewFile{Kind: telegramfake.KindPhoto, Data: []byte("\xff\xd8\xff jpeg")}, "photo.jpg", "image/jpeg"},
	}
	for i, tc := range tests {
		t.Run(tc.wantName, func(t *testing.T) {
			uf := h.fake.AddFile(tc.file)
			h.fake.PushMessage(telegramfake.In{Chat: telegramfake.Private(ann), From: ann, Files: []telegramfake.UserFile{uf}})
			a := h.fileOf(t, i)
			if a.Name != tc.wantName || a.MIME != tc.wantMIME || a.Size != int64(len(tc.file.Data)) || a.URL != fileRef(uf.FileID) {
				t.Fatalf("attachment %+v, want %s %s of %d bytes", a, tc.wantName, tc.wantMIME, len(tc.file.Data))
			}
			data, err := fetcher.FetchFile(context.Background(), conv.Key{Platform: platform, Chat: "42"}, a, 1<<20)
			if err != nil || string(data) != string(tc.file.Data) {
				t.Fatalf("FetchFile = %q, %v; want %q", data, err, tc.file.Data)
			}
		})
	}
}

// TestFetchFileRefusesFilesOverTheLimit proves a file too large is refused with
// conv.ErrFileTooLarge at the first point its size is known: the update's file_size (no call
// made), getFile's (no download), Telegram's own 20 MB refusal, or the bytes as they come
// when no size is stated.
func TestFetchFileRefusesFilesOverTheLimit(t *testing.T) {
	const limit = 100
	tests := []struct {
		name          string
		file          telegramfake.NewFile
		forgetSize    bool // the attachment as if the update had stated no size
		limit         int64
		wantGetFile   int
		wantDownloads int
	}{
		{name: "stated in the update", file: telegramfake.NewFile{Data: make([]byte, limit+1)}, limit: limit},
		{name: "stated by getFile", file: telegramfake.NewFile{Data: make([]byte, limit+1)}, forgetSize: true, limit: limit, wantGetFile: 1},
		{name: "over what Telegram serves bots", file: telegramfake.NewFile{Size: telegramfake.MaxDownloadSize + 1, Data: []byte("x")},
			forgetSize: true, limit: 50 << 20, wantGetFile: 1},
		{name: "stated nowhere", file: telegramfake.NewFile{Data: make([]byte, 10*limit), Unsized: true}, limit: limit, wantGetFile: 1, wantDownloads: 1},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, nil)
			uf := h.fake.AddFile(tc.file)
			h.fake.PushMessage(telegramfake.In{Chat: telegramfake.Private(ann), From: ann, Files: []telegramfake.UserFile{uf}})
			a := h.fileOf(t, 0)
			if tc.forgetSize {
				a.Size = 0
			}
			_, err := h.ch.FetchFile(context.Background(), conv.Key{Platform: platform, Chat: "42"}, a, tc.limit)
			if !errors.Is(err, conv.ErrFileTooLarge) {
				t.Fatalf("case %d: FetchFile = %v, want conv.ErrFileTooLarge", i, err)
			}
			noSecret(t, h.fake, err)
			if g, d := h.fake.Count("getFile"), h.fake.Count(telegramfake.DownloadMethod); g != tc.wantGetFile || d != tc.wantDownloads {
				t.Errorf("%d getFile and %d downloads, want %d and %d", g, d, tc.wantGetFile, tc.wantDownloads)
			}
		})
	}
}

// TestFetchFileFailuresAreClearAndHideTheToken proves the ways a download fails come back as
// clear errors that name neither the token nor the file URL: an unknown file id (getFile's
// refusal), the file server's error status, a connection cut mid-body, a reference that is
// not Telegram's, and a file_path that would leave the bot's file folder (refused unfetched).
func TestFetchFileFailuresAreClearAndHideTheToken(t *testing.T) {
	h := start(t, nil)
	key := conv.Key{Platform: platform, Chat: "42"}
	fetch := func(a conv.Attachment) error {
		t.Helper()
		_, err := h.ch.FetchFile(context.Background(), key, a, 1<<20)
		if err == nil {
			t.Fatalf("FetchFile(%+v) succeeded", a)
		}
		noSecret(t, h.fake, err)
		return err
	}

	err := fetch(conv.Attachment{Name: "x", URL: fileRef("no-such-file")})
	if ae, ok := errors.AsType[*APIError](err); !ok || ae.Method != "getFile" || !strings.Contains(ae.Description, "invalid file_id") {
		t.Errorf("unknown file: %v", err)
	}

	doc := h.fake.AddFile(telegramfake.NewFile{Name: "a.txt", Data: []byte("0123456789")})
	a := conv.Attachment{Name: "a.txt", URL: fileRef(doc.FileID)}
	h.fake.FailFile(doc.FileID, 1, telegramfake.FileFault{Status: http.StatusNotFound})
	if err := fetch(a); !strings.Contains(err.Error(), "HTTP 404") {
		t.Errorf("a link that expired: %v", err)
	}
	h.fake.FailFile(doc.FileID, 1, telegramfake.FileFault{Cut: true})
	if err := fetch(a); errors.Is(err, conv.ErrFileTooLarge) {
		t.Errorf("a cut download: %v", err)
	}

	for _, ref := range []string{"https://api.telegram.org/file/bot1/x", "telegram-file:", ""} {
		if err := fetch(conv.Attachment{Name: "x", URL: ref}); !strings.Contains(err.Error(), "not a Telegram file") {
			t.Errorf("reference %q: %v", ref, err)
		}
	}

	before := h.fake.Count(telegramfake.DownloadMethod)
	for _, p := range []string{"../../bot" + h.fake.Token() + "/getMe", "/var/lib/telegram-bot-api/documents/file_1.pdf", "documents/a b?.pdf"} {
		odd := h.fake.AddFile(telegramfake.NewFile{Data: []byte("x"), Path: p})
		if err := fetch(conv.Attachment{Name: "x", URL: fileRef(odd.FileID)}); !errors.Is(err, errMalformedFile) {
			t.Errorf("file_path %q: %v", p, err)
		}
	}
	if n := h.fake.Count(telegramfake.DownloadMethod) - before; n != 0 {
		t.Errorf("%d downloads of unsafe file paths", n)
	}
	if strings.Contains(h.logs.String(), h.fake.Token()) {
		t.Errorf("the token is in the logs:\n%s", h.logs.String())
	}
}

// TestAttachmentsListEveryKindOfFile proves each kind of file a message can carry becomes one
// attachment, named and typed sensibly, a photo as its largest size only.
func TestAttachmentsListEveryKindOfFile(t *testing.T) {
	tests := []struct {
		name  string
		field string
		want  conv.Attachment
	}{
		{"document", `"document":{"file_id":"D","file_unique_id":"d","file_name":"r.pdf","mime_type":"application/pdf","file_size":9}`,
			conv.Attachment{Name: "r.pdf", MIME: "application/pdf", Size: 9, URL: "telegram-file:D"}},
		{"document without a name", `"document":{"file_id":"D","file_unique_id":"d"}`,
			conv.Attachment{Name: "document", URL: "telegram-file:D"}},
		{"photo", `"photo":[{"file_id":"small","file_unique_id":"s","width":90,"height":90,"file_size":1},{"file_id":"big","file_unique_id":"b","width":1280,"height":960,"file_size":80}]`,
			conv.Attachment{Name: "photo.jpg", MIME: "image/jpeg", Size: 80, URL: "telegram-file:big"}},
		{"voice", `"voice":{"file_id":"V","file_unique_id":"v","duration":3,"mime_type":"audio/ogg","file_size":7}`,
			conv.Attachment{Name: "voice.ogg", MIME: "audio/ogg", Size: 7, URL: "telegram-file:V"}},
		{"voice without a type", `"voice":{"file_id":"V","file_unique_id":"v","duration":3}`,
			conv.Attachment{Name: "voice.ogg", MIME: "audio/ogg", URL: "telegram-file:V"}},
		{"audio", `"audio":{"file_id":"A","file_unique_id":"a","duration":3,"file_name":"song.mp3","mime_type":"audio/mpeg","file_size":5}`,
			conv.Attachment{Name: "song.mp3", MIME: "audio/mpeg", Size: 5, URL: "telegram-file:A"}},
		{"audio without a name", `"audio":{"file_id":"A","file_unique_id":"a","duration":3,"mime_type":"audio/mp4"}`,
			conv.Attachment{Name: "audio.m4a", MIME: "audio/mp4", URL: "telegram-file:A"}},
		{"video", `"video":{"file_id":"W","file_unique_id":"w","width":640,"height":360,"duration":3,"mime_type":"video/mp4","file_size":4}`,
			conv.Attachment{Name: "video.mp4", MIME: "video/mp4", Size: 4, URL: "telegram-file:W"}},
		{"video note", `"video_note":{"file_id":"N","file_unique_id":"n","length":240,"duration":3,"file_size":3}`,
			conv.Attachment{Name: "video_note.mp4", MIME: "video/mp4", Size: 3, URL: "telegram-file:N"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw := `{"update_id":1,"message":{"message_id":2,"from":{"id":9,"first_name":"A"},"chat":{"id":9,"type":"private"},"date":1,` + tc.field + `}}`
			u, err := decodeUpdate([]byte(raw))
			if err != nil {
				t.Fatal(err)
			}
			in, ok := toInbound(u, botIdentity{id: 1, username: "me_bot"}, time.Time{})
			if !ok || len(in.Files) != 1 || in.Files[0] != tc.want {
				t.Fatalf("files %+v (ok %v), want %+v", in.Files, ok, tc.want)
			}
		})
	}
	// A sticker is a reaction, not something to read: no file, so a sticker alone asks nothing.
	raw := `{"update_id":1,"message":{"message_id":2,"from":{"id":9,"first_name":"A"},"chat":{"id":9,"type":"private"},"date":1,"sticker":{"file_id":"S","file_unique_id":"s","type":"regular","width":512,"height":512,"is_animated":false,"is_video":false,"file_size":2}}}`
	u, err := decodeUpdate([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if in, _ := toInbound(u, botIdentity{id: 1, username: "me_bot"}, time.Time{}); len(in.Files) != 0 {
		t.Errorf("a sticker listed as files %+v", in.Files)
	}
}

// TestDecodeFileReadsGetFilesAnswer proves decodeFile takes what getFile answers and refuses
// a file_path that is missing, absolute, climbs out of its folder or needs escaping.
func TestDecodeFileReadsGetFilesAnswer(t *testing.T) {
	tests := []struct {
		body    string
		ok      bool
		size    int64
		path    string
		comment string
	}{
		{`{"file_id":"F","file_unique_id":"u","file_size":12,"file_path":"documents/file_3.pdf"}`, true, 12, "documents/file_3.pdf", "a document"},
		{`{"file_id":"F","file_unique_id":"u","file_path":"voice/file_1.oga"}`, true, 0, "voice/file_1.oga", "no size"},
		{`{"file_id":"F","file_unique_id":"u","file_size":12}`, false, 0, "", "no path (a file over 20 MB)"},
		{`{"file_id":"F","file_path":"/var/lib/telegram-bot-api/x/documents/file_3.pdf"}`, false, 0, "", "a local server's absolute path"},
		{`{"file_id":"F","file_path":"documents/../../getMe"}`, false, 0, "", "climbing out"},
		{`{"file_id":"F","file_path":"documents//file"}`, false, 0, "", "an empty segment"},
		{`{"file_id":"F","file_path":"documents/file?x=1"}`, false, 0, "", "a query"},
		{`{"file_id":"F","file_path":"documents/file 1.pdf"}`, false, 0, "", "a space"},
		{`{"file_id":"F","file_path":"documents/f.pdf","file_size":-1}`, false, 0, "", "a negative size"},
		{`{"file_id":"F","file_path":5}`, false, 0, "", "a path of the wrong type"},
		{`[]`, false, 0, "", "not an object"},
		{`null`, false, 0, "", "null"},
	}
	for _, tc := range tests {
		t.Run(tc.comment, func(t *testing.T) {
			f, err := decodeFile([]byte(tc.body))
			if tc.ok != (err == nil) || tc.ok && (f.size != tc.size || f.path != tc.path || f.id != "F") {
				t.Fatalf("decodeFile(%s) = %+v, %v", tc.body, f, err)
			}
			if err != nil && !errors.Is(err, errMalformedFile) {
				t.Fatalf("the error %v does not wrap errMalformedFile", err)
			}
		})
	}
}

// FuzzDecodeFile checks that decodeFile reads what encoding/json reads and that every path it
// accepts, joined to the file URL, names a file under /file/bot<token>/ and nothing else: no
// query, no fragment, no segment that climbs out.
func FuzzDecodeFile(f *testing.F) {
	f.Add([]byte(`{"file_id":"F","file_unique_id":"u","file_size":12,"file_path":"documents/file_3.pdf"}`))
	f.Add([]byte(`{"file_id":"F","file_path":"../x"}`))
	f.Add([]byte(`{"file_path":"a/./b"}`))
	f.Add([]byte(`{"file_path":"%2e%2e/x"}`))
	const base = "https://api.telegram.org/file/bot123:tok/"
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := decodeFile(data)
		if err != nil {
			return
		}
		var w struct {
			FileID   string `json:"file_id"`
			FileSize int64  `json:"file_size"`
			FilePath string `json:"file_path"`
		}
		if json.Unmarshal(data, &w) != nil || w.FileID != got.id || w.FileSize != got.size || w.FilePath != got.path {
			t.Fatalf("decodeFile = %+v, encoding/json %+v", got, w)
		}
		u, err := url.Parse(base + got.path)
		if err != nil || u.RawQuery != "" || u.Fragment != "" || u.Host != "api.telegram.org" ||
			path.Clean(u.Path) != u.Path || !strings.HasPrefix(u.Path, "/file/bot123:tok/") || u.EscapedPath() != u.Path {
			t.Fatalf("the path %q makes the URL %v (%v)", got.path, u, err)
		}
	})
}
