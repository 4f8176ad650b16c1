package telegramfake

import (
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"

	"github.com/switchboard-bot/switchboard/internal/fake/filehost"
)

// MaxDownloadSize is the largest file a bot may download: getFile refuses a larger one with
// "Bad Request: file is too big", as the Bot API does (20 MB).
const MaxDownloadSize = 20 << 20

// DownloadMethod names the downloads of file bytes (GET /file/bot<token>/<file_path>) for
// Count: not a Bot API method, but counted as one.
const DownloadMethod = "download"

// The kinds of file a user can send, for NewFile.Kind: each is its own field of a message.
const (
	KindDocument  = "document"
	KindPhoto     = "photo"
	KindVoice     = "voice"
	KindAudio     = "audio"
	KindVideo     = "video"
	KindVideoNote = "video_note"
	KindSticker   = "sticker"
)

// NewFile describes a file a user sends, for AddFile.
type NewFile struct {
	// Kind is one of the Kind constants; default KindDocument.
	Kind string
	// Name is the file_name of a document, audio or video (the other kinds have none).
	Name string
	// MimeType is the mime_type of a document, voice note, audio or video, and the
	// Content-Type its bytes are served with (default application/octet-stream).
	MimeType string
	Data     []byte
	// Size, when > 0, is the file_size stated instead of len(Data): a file too large to
	// download (getFile refuses one over MaxDownloadSize) needs no bytes.
	Size int
	// Unsized leaves file_size out of the message and of getFile's answer, and serves the bytes
	// without a Content-Length, as Telegram may for a file whose size it does not state.
	Unsized bool
	// Animated and Video make a sticker an animated (TGS) or a video (WEBM) one.
	Animated, Video bool
	// Path, when set, is the file_path getFile answers instead of the usual
	// "<kind's folder>/file_<n>.<ext>" — a path no real Telegram gives, for a test of what the
	// bot does with one; the bytes are served at it only when it is a clean relative path.
	Path string
}

// UserFile is a file AddFile registered: what a message carries of it (Fields; In.Files puts
// it in a message) and the file_path getFile answers for it.
type UserFile struct {
	Kind         string
	FileID       string
	FileUniqueID string
	Name         string
	MimeType     string
	// Size is the file_size stated, 0 when Unsized.
	Size int
	Path string

	animated, video bool
}

// FileFault is a failure of a file's download: Status answers that HTTP status (with a Bot
// API error body); Cut sends the headers (with the whole Content-Length) and half the bytes,
// then drops the connection.
type FileFault = filehost.Fault

// files are the files users send (AddFile): getFile answers for them and their bytes are served
// at /file/bot<token>/<file_path>.
type files struct {
	mu    *sync.Mutex
	token string
	log   *callLog
	// Guarded by mu.
	stored map[string]*storedFile // by file id
	seq    int
}

// storedFile is a registered file as the fake keeps it.
type storedFile struct {
	UserFile
	body   filehost.File
	faults filehost.Faults
}

// folders are the folders of the file_paths Telegram gives, by kind.
var folders = map[string]string{
	KindDocument: "documents", KindPhoto: "photos", KindVoice: "voice", KindAudio: "music",
	KindVideo: "videos", KindVideoNote: "video_notes", KindSticker: "stickers",
}

// extensions are the extensions of the file_paths of the kinds that have no file name.
var extensions = map[string]string{KindPhoto: ".jpg", KindVoice: ".oga", KindVideoNote: ".mp4", KindSticker: ".webp"}

// AddFile registers f as a file a user sent: getFile answers for its file id and its bytes are
// served at /file/bot<token>/<file_path>. Put the returned UserFile in In.Files to send it in a
// message.
func (fs *files) AddFile(f NewFile) UserFile {
	if f.Kind == "" {
		f.Kind = KindDocument
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.seq++
	n := strconv.Itoa(fs.seq)
	uf := UserFile{Kind: f.Kind, FileID: "BQACAgI-" + f.Kind + "-" + n, FileUniqueID: "AgAD" + n, Name: f.Name, MimeType: f.MimeType,
		Size: f.Size, Path: f.Path, animated: f.Animated, video: f.Video}
	if uf.Size <= 0 {
		uf.Size = len(f.Data)
	}
	if f.Unsized {
		uf.Size = 0
	}
	if uf.Path == "" {
		folder := folders[f.Kind]
		if folder == "" {
			folder = "documents"
		}
		ext := path.Ext(f.Name)
		if ext == "" {
			ext = extensions[f.Kind]
		}
		uf.Path = folder + "/file_" + n + ext
	}
	if fs.stored == nil {
		fs.stored = map[string]*storedFile{}
	}
	fs.stored[uf.FileID] = &storedFile{UserFile: uf, body: filehost.File{Data: append([]byte(nil), f.Data...), ContentType: f.MimeType, Unsized: f.Unsized}}
	return uf
}

// FailFile makes the next n downloads of fileID's bytes fail with f.
func (fs *files) FailFile(fileID string, n int, f FileFault) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if sf := fs.stored[fileID]; sf != nil {
		sf.faults.Fail(n, f)
	}
}

// Fields are the fields of a message that carry f: "document", "photo" (a thumbnail size and
// then f, the largest, as Telegram lists sizes), "voice", "audio", "video", "video_note" or
// "sticker".
func (f UserFile) Fields() map[string]any {
	w := WireMedia{FileID: f.FileID, FileUniqueID: f.FileUniqueID, FileSize: f.Size}
	switch f.Kind {
	case KindPhoto:
		thumb := WireMedia{FileID: f.FileID + "-thumb", FileUniqueID: f.FileUniqueID + "-thumb", FileSize: f.Size / 10, Width: 90, Height: 90}
		w.Width, w.Height = 1280, 1280
		return map[string]any{"photo": []WireMedia{thumb, w}}
	case KindVoice:
		w.MimeType, w.Duration = f.MimeType, 3
	case KindAudio, KindVideo:
		w.FileName, w.MimeType, w.Duration = f.Name, f.MimeType, 3
		if f.Kind == KindVideo {
			w.Width, w.Height = 640, 360
		}
	case KindVideoNote:
		w.Length, w.Duration = 240, 3
	case KindSticker:
		w.Width, w.Height, w.Type, w.IsAnimated, w.IsVideo = 512, 512, "regular", f.animated, f.video
	default:
		return map[string]any{KindDocument: WireDocument{FileID: f.FileID, FileUniqueID: f.FileUniqueID, FileName: f.Name,
			MimeType: f.MimeType, FileSize: f.Size}}
	}
	return map[string]any{f.Kind: w}
}

// WireMedia is a file of a message on the wire other than a document — a photo size, a voice
// note, an audio file, a video, a video note, a sticker — with the fields its kind has.
type WireMedia struct {
	FileID       string `json:"file_id"`
	FileUniqueID string `json:"file_unique_id"`
	FileName     string `json:"file_name,omitempty"`
	MimeType     string `json:"mime_type,omitempty"`
	FileSize     int    `json:"file_size,omitempty"`
	Width        int    `json:"width,omitempty"`
	Height       int    `json:"height,omitempty"`
	Duration     int    `json:"duration,omitempty"`
	// Length is a video note's diameter.
	Length int `json:"length,omitempty"`
	// Type, IsAnimated and IsVideo are a sticker's.
	Type       string `json:"type,omitempty"`
	IsAnimated bool   `json:"is_animated,omitempty"`
	IsVideo    bool   `json:"is_video,omitempty"`
}

// getFile answers a registered file's File object: 400 "invalid file_id" for an unknown one,
// "file is too big" over MaxDownloadSize. The caller holds fs.mu.
func (fs *files) getFile(p map[string]string) (any, *apiError) {
	f := fs.stored[p["file_id"]]
	switch {
	case p["file_id"] == "":
		return nil, badRequest("file_id is empty")
	case f == nil:
		return nil, badRequest("invalid file_id")
	case f.Size > MaxDownloadSize:
		return nil, badRequest("file is too big")
	}
	res := map[string]any{"file_id": f.FileID, "file_unique_id": f.FileUniqueID, "file_path": f.Path}
	if f.Size > 0 {
		res["file_size"] = f.Size
	}
	return res, nil
}

// serveFile serves a registered file's bytes at /file/bot<token>/<file_path>, as Telegram's
// file server does: 404 with a Bot API error body for a wrong token or an unknown path, the
// file's injected faults first.
func (fs *files) serveFile(w http.ResponseWriter, r *http.Request) {
	fs.log.arrived(DownloadMethod)
	rest, _ := strings.CutPrefix(r.URL.Path, "/file/bot")
	token, filePath, _ := strings.Cut(rest, "/")
	status := http.StatusOK
	// The log names the file_path, never the URL: it holds the token.
	defer func() { fs.log.answered(DownloadMethod, map[string]string{"file_path": filePath}, status) }()
	fs.mu.Lock()
	var f *storedFile
	if token == fs.token && r.Method == http.MethodGet {
		for _, sf := range fs.stored {
			if sf.Path == filePath {
				f = sf
				break
			}
		}
	}
	var fault *FileFault
	if f != nil {
		fault = f.faults.Take()
	}
	fs.mu.Unlock()
	switch {
	case f == nil:
		status = http.StatusNotFound
		writeError(w, &apiError{code: status, desc: "Not Found"})
	case fault != nil && !fault.Cut:
		status = fault.Status
		writeError(w, &apiError{code: status, desc: http.StatusText(status)})
	default:
		status = filehost.Serve(w, f.body, fault)
	}
}

// addFile puts f in its field of m.
func (m *WireMessage) addFile(f UserFile) {
	for field, v := range f.Fields() {
		switch v := v.(type) {
		case WireDocument:
			m.Document = &v
		case []WireMedia:
			m.Photo = v
		case WireMedia:
			switch field {
			case KindVoice:
				m.Voice = &v
			case KindAudio:
				m.Audio = &v
			case KindVideo:
				m.Video = &v
			case KindVideoNote:
				m.VideoNote = &v
			case KindSticker:
				m.Sticker = &v
			}
		}
	}
}
