package llm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Defaults of a Transcriber: OpenAI's Whisper.
const (
	DefaultTranscribeBaseURL = "https://api.openai.com/v1"
	DefaultTranscribeModel   = openai.Whisper1
	DefaultTranscribeTimeout = 2 * time.Minute
)

// TranscriberOptions configures a Transcriber. Zero values take the defaults above.
type TranscriberOptions struct {
	// BaseURL is the API root the client appends "/audio/transcriptions" to, e.g.
	// "https://api.openai.com/v1" or a local Whisper server's.
	BaseURL string
	// APIKey is sent as a bearer token (none when empty). It never appears in errors or logs.
	APIKey string
	// Model names the transcription model, e.g. "whisper-1" or "gpt-4o-mini-transcribe".
	Model string
	// Format is the response_format asked for: "json" (the default) or "text".
	Format string
	// Timeout bounds one Transcribe call. Negative: no bound.
	Timeout time.Duration
	// HTTPClient replaces http.DefaultClient.
	HTTPClient *http.Client
}

// Transcriber turns audio into text with an OpenAI-compatible /audio/transcriptions endpoint.
// Safe for concurrent use.
type Transcriber struct {
	opts   TranscriberOptions
	host   string
	client *openai.Client
}

// NewTranscriber returns a Transcriber with opts, defaults filled in. It fails when BaseURL is
// not an absolute http(s) URL or Format is neither "json" nor "text".
func NewTranscriber(opts TranscriberOptions) (*Transcriber, error) {
	if opts.BaseURL == "" {
		opts.BaseURL = DefaultTranscribeBaseURL
	}
	u, err := url.Parse(opts.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("llm: transcriber: base URL %q is not an absolute http(s) URL", opts.BaseURL)
	}
	if opts.Model == "" {
		opts.Model = DefaultTranscribeModel
	}
	switch opts.Format {
	case "":
		opts.Format = string(openai.AudioResponseFormatJSON)
	case string(openai.AudioResponseFormatJSON), string(openai.AudioResponseFormatText):
	default:
		return nil, fmt.Errorf("llm: transcriber: format %q is neither json nor text", opts.Format)
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTranscribeTimeout
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	cfg := openai.DefaultConfig(opts.APIKey)
	cfg.BaseURL = strings.TrimRight(opts.BaseURL, "/")
	cfg.HTTPClient = capturingDoer{hc} // for the status and Retry-After of a failure
	return &Transcriber{opts: opts, host: u.Host, client: openai.NewClientWithConfig(cfg)}, nil
}

// Transcribe returns the text spoken in data, an audio file called name of type mime (both as
// the platform gave them: they are cleaned here, and the file name sent ends in the extension
// the API needs to know the format, taken from mime when name has none it knows). The
// transcript is trimmed of surrounding white space; silence is "".
//
// Failures are classified as the chat client's: errors.Is(err, ErrAuth) for 401/403,
// errors.Is(err, ErrNotFound) for 404, *StatusError for other HTTP failures, ErrTimeout when
// Timeout passed, the context's error (wrapped) when ctx is done, ErrUnavailable for transport
// failures. Temporary tells which may pass; nothing is retried here. No error holds the key.
func (t *Transcriber) Transcribe(ctx context.Context, name, mimeType string, data []byte) (string, error) {
	cctx := ctx
	if t.opts.Timeout > 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(ctx, t.opts.Timeout)
		defer cancel()
	}
	rec := &exchange{}
	cctx = context.WithValue(cctx, exchangeKey{}, rec)
	ct := audioContentType(mimeType)
	file := uploadName(name, ct)
	if ct == "" {
		// Not go-openai's fallback, mime.TypeByExtension: it reads the host's mime.types.
		ct = extContentType[strings.ToLower(path.Ext(file))]
	}
	resp, err := t.client.CreateTranscription(cctx, openai.AudioRequest{
		Model:    t.opts.Model,
		FilePath: file,
		Reader:   audioReader{bytes.NewReader(data), ct},
		Format:   openai.AudioResponseFormat(t.opts.Format),
	})
	if err != nil {
		return "", t.classify(ctx, cctx, err, rec)
	}
	return strings.TrimSpace(resp.Text), nil
}

// audioReader is the file part's body. go-openai takes the part's Content-Type from its
// ContentType method, and from the file name's extension when it has none.
type audioReader struct {
	*bytes.Reader
	contentType string
}

// ContentType is the part's type; "" leaves it to go-openai (application/octet-stream here,
// since the file name's extension is not one the table above knows).
func (r audioReader) ContentType() string { return r.contentType }

// audioContentType is the media type mimeType names, without parameters, or "" when it is not
// a well-formed type (it comes from the platform, and goes into a header).
func audioContentType(mimeType string) string {
	mt, _, err := mime.ParseMediaType(mimeType)
	if err != nil || !strings.Contains(mt, "/") {
		return ""
	}
	return mt
}

// uploadExt is the extension the API reads the format from, per media type.
var uploadExt = map[string]string{
	"audio/ogg": ".ogg", "audio/opus": ".ogg", "application/ogg": ".ogg", "video/ogg": ".ogg",
	"audio/mpeg": ".mp3", "audio/mp3": ".mp3",
	"audio/mp4": ".m4a", "audio/m4a": ".m4a", "audio/x-m4a": ".m4a", "audio/aac": ".m4a", "video/mp4": ".mp4",
	"audio/wav": ".wav", "audio/wave": ".wav", "audio/x-wav": ".wav", "audio/vnd.wave": ".wav",
	"audio/webm": ".webm", "video/webm": ".webm",
	"audio/flac": ".flac", "audio/x-flac": ".flac",
}

// extContentType is the media type of each extension the OpenAI API accepts: the file part's
// Content-Type when the platform gave none.
var extContentType = map[string]string{".flac": "audio/flac", ".m4a": "audio/mp4", ".mp3": "audio/mpeg",
	".mp4": "video/mp4", ".mpeg": "audio/mpeg", ".mpga": "audio/mpeg", ".oga": "audio/ogg", ".ogg": "audio/ogg",
	".wav": "audio/wav", ".webm": "audio/webm"}

// uploadName is name made safe for a multipart header (letters, digits, '.', '-' and '_'
// only, at most 64 bytes; "audio" when nothing is left) and ending in an extension the API
// knows: name's own when it is one, else contentType's.
func uploadName(name, contentType string) string {
	var b strings.Builder
	for _, r := range path.Base(strings.ReplaceAll(name, `\`, "/")) {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	clean := strings.Trim(b.String(), "._")
	if len(clean) > 64 {
		clean = clean[len(clean)-64:] // keep the end: the extension
	}
	if extContentType[strings.ToLower(path.Ext(clean))] != "" {
		return clean
	}
	if clean == "" {
		clean = "audio"
	}
	return clean + uploadExt[contentType]
}

// classify turns a failed call into an error for the caller, as OpenAI.classify does for chat
// calls. Server text is kept only when it cannot hold the key: auth failures carry none
// (servers quote the key back), other messages are redacted.
func (t *Transcriber) classify(ctx, cctx context.Context, err error, x *exchange) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("llm: transcribe: call to %s: %w", t.host, cerr)
	}
	if cerr := cctx.Err(); cerr != nil {
		return fmt.Errorf("llm: transcribe: call to %s timed out after %v: %w: %w", t.host, t.opts.Timeout, ErrTimeout, cerr)
	}
	status, msg := x.status, ""
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	switch {
	case errors.As(err, &apiErr):
		msg = apiErr.Message
		if apiErr.HTTPStatusCode != 0 {
			status = apiErr.HTTPStatusCode
		}
	case errors.As(err, &reqErr):
		msg = string(reqErr.Body)
		if reqErr.HTTPStatusCode != 0 {
			status = reqErr.HTTPStatusCode
		}
	}
	if k := t.opts.APIKey; k != "" {
		msg = strings.ReplaceAll(msg, k, "[redacted]")
	}
	msg = shorten(strings.TrimSpace(msg), 300)
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return fmt.Errorf("%w (%s answered HTTP %d to a transcription; check the API key)", ErrAuth, t.host, status)
	case status == http.StatusNotFound:
		return fmt.Errorf("%w (%s answered HTTP 404 for transcription model %q: %s)", ErrNotFound, t.host, t.opts.Model, msg)
	case status >= 400:
		ra, _ := parseRetryAfter(x.retryAfter, time.Now())
		return &StatusError{Provider: t.host, StatusCode: status, RetryAfter: ra, Message: msg}
	case isTransient(err):
		return fmt.Errorf("llm: transcribe: call to %s: %w: %w", t.host, ErrUnavailable, err)
	}
	return fmt.Errorf("llm: transcribe: call to %s: %w", t.host, err)
}
