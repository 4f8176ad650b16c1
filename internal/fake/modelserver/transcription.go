package modelserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"
)

// MaxUploadBytes is the largest audio file the transcription endpoint takes, as the real API's
// 25 MB; a larger one is answered with 413.
const MaxUploadBytes = 25 << 20

// audioFormats are the file name extensions the real API accepts, in the order its error
// message lists them.
var audioFormats = []string{"flac", "m4a", "mp3", "mp4", "mpeg", "mpga", "oga", "ogg", "wav", "webm"}

// Transcription is one /audio/transcriptions request as the server read it, with what the
// server saw around it. It is a copy: changing it does not change what the server recorded.
type Transcription struct {
	// Path is the URL path the request was sent to (/v1/audio/transcriptions or
	// /audio/transcriptions).
	Path string
	// Authorization is the Authorization header as sent.
	Authorization string
	// Received is when the server read the request, from the server's clock.
	Received time.Time

	// Model is the form's model field.
	Model string
	// FileName and FileMIME are the file part's file name and Content-Type, as sent.
	FileName string
	FileMIME string
	// File is the file part's bytes.
	File []byte
	// ResponseFormat is the form's response_format field ("" when absent: json).
	ResponseFormat string
	// Language and Prompt are the form's optional fields of those names.
	Language string
	Prompt   string
}

func (t Transcription) clone() Transcription {
	t.File = append([]byte(nil), t.File...)
	return t
}

// DefaultTranscript is the transcript the server answers when no function is set:
// "transcript of <file name> (<n> bytes)".
func DefaultTranscript(t Transcription) string {
	return fmt.Sprintf("transcript of %s (%d bytes)", t.FileName, len(t.File))
}

// SetTranscribe sets the function that answers transcription requests (nil restores the
// default, DefaultTranscript). Its Reply's Content is the transcript; Status, RetryAfter,
// ErrorMessage, Latency, Hang and Done act as they do on a chat request, and the stream fields
// are ignored. It runs on the request's goroutine, concurrently for concurrent requests.
func (s *Server) SetTranscribe(fn func(Transcription) Reply) {
	s.mu.Lock()
	s.transcribe = fn
	s.mu.Unlock()
}

// Transcriptions returns copies of the valid transcription requests recorded so far, in arrival
// order (none while recording is off).
func (s *Server) Transcriptions() []Transcription {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Transcription, len(s.transcriptions))
	for i, t := range s.transcriptions {
		out[i] = t.clone()
	}
	return out
}

// isTranscriptionPath reports whether path is one the server answers transcriptions on.
func isTranscriptionPath(path string) bool {
	return path == "/v1/audio/transcriptions" || path == "/audio/transcriptions"
}

// serveTranscription answers POST /audio/transcriptions as the real API does: a multipart form
// with a file (whose name's extension names a supported format) and a model, and optional
// response_format (json, text or verbose_json), language and prompt.
func (s *Server) serveTranscription(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeAPIError(w, http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", "Use POST.")
		return
	}
	if !s.authorized(w, r) {
		return
	}
	received := time.Now()
	t, ferr := readTranscription(w, r)
	if ferr != nil {
		writeParamError(w, ferr.status, ferr.param, ferr.msg)
		return
	}
	t.Path, t.Authorization, t.Received = r.URL.Path, r.Header.Get("Authorization"), received

	s.mu.Lock()
	if s.record {
		s.transcriptions = append(s.transcriptions, t.clone())
	}
	fn, latency := s.transcribe, s.latency
	s.mu.Unlock()
	reply := Reply{Content: DefaultTranscript(t)}
	if fn != nil {
		reply = fn(t.clone())
	}
	if reply.Done != nil {
		defer reply.Done()
	}
	if s.fault(w, r, reply, latency) {
		return
	}
	switch t.ResponseFormat {
	case "text":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, reply.Content+"\n")
	case "verbose_json":
		writeJSON(w, struct {
			Task     string   `json:"task"`
			Language string   `json:"language"`
			Duration float64  `json:"duration"`
			Text     string   `json:"text"`
			Segments []string `json:"segments"`
		}{"transcribe", "english", 0, reply.Content, []string{}})
	default:
		writeJSON(w, struct {
			Text string `json:"text"`
		}{reply.Content})
	}
}

// formError is a transcription request the real API refuses: its status, the offending
// parameter ("" for none) and the message of the error body.
type formError struct {
	status     int
	param, msg string
}

// readTranscription reads and checks the form.
func readTranscription(w http.ResponseWriter, r *http.Request) (Transcription, *formError) {
	var t Transcription
	bad := func(param, msg string) (Transcription, *formError) {
		return t, &formError{http.StatusBadRequest, param, msg}
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxUploadBytes+1<<20) // the file and the form around it
	if err := r.ParseMultipartForm(MaxUploadBytes + 1<<20); err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return t, &formError{http.StatusRequestEntityTooLarge, "", fmt.Sprintf("Maximum content size limit (%d) exceeded.", MaxUploadBytes)}
		}
		return bad("", "Could not parse multipart form: "+err.Error())
	}
	defer r.MultipartForm.RemoveAll()
	form := r.MultipartForm
	value := func(k string) string {
		if v := form.Value[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	files := form.File["file"]
	if len(files) == 0 {
		return bad("file", "Missing required parameter: 'file'.")
	}
	t.Model = value("model")
	if t.Model == "" {
		return bad("model", "Missing required parameter: 'model'.")
	}
	t.ResponseFormat, t.Language, t.Prompt = value("response_format"), value("language"), value("prompt")
	switch t.ResponseFormat {
	case "", "json", "text", "verbose_json":
	default:
		return bad("response_format", fmt.Sprintf("Invalid value for 'response_format': %q; want json, text or verbose_json.", t.ResponseFormat))
	}
	fh := files[0]
	t.FileName, t.FileMIME = fh.Filename, fh.Header.Get("Content-Type")
	if ext := strings.TrimPrefix(strings.ToLower(path.Ext(t.FileName)), "."); !slices.Contains(audioFormats, ext) {
		return bad("file", "Invalid file format. Supported formats: ['"+strings.Join(audioFormats, "', '")+"']")
	}
	f, err := fh.Open()
	if err != nil {
		return bad("file", "Could not read the file: "+err.Error())
	}
	defer f.Close()
	if t.File, err = io.ReadAll(f); err != nil {
		return bad("file", "Could not read the file: "+err.Error())
	}
	return t, nil
}

func writeJSON(w http.ResponseWriter, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// writeParamError writes an invalid_request_error naming param (null when "").
func writeParamError(w http.ResponseWriter, status int, param, msg string) {
	body := apiErrorBody{Message: msg, Type: "invalid_request_error", Code: "invalid_request"}
	if param != "" {
		body.Param = &param
	}
	b, _ := json.Marshal(apiError{Error: body})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
