package lead

import (
	"context"
	"errors"
	"log/slog"
	"strings"

	"github.com/switchboard-bot/switchboard/core/agent"
	"github.com/switchboard-bot/switchboard/core/attach"
	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/core/runs"
)

// FileOptions say how the files a message brings reach the model (see core/attach).
type FileOptions struct {
	// Fetch downloads one file of conversation k with its platform's authentication, refusing
	// more than limit bytes (conv.ErrFileTooLarge). Nil: files are named to the model, not read.
	Fetch func(ctx context.Context, k conv.Key, a conv.Attachment, limit int64) ([]byte, error)
	// MaxBytes, MaxTextChars and MaxFiles bound what is read (attach.Options).
	MaxBytes     int64
	MaxTextChars int
	MaxFiles     int
	// Transcriber turns voice notes into text; nil describes them.
	Transcriber attach.Transcriber
}

// fileReader reads the files a message brings for the lead, as opts say, and logs the ones
// that could not be read.
type fileReader struct {
	opts FileOptions
	log  *slog.Logger
}

// prepare adds what env's files say to the input: their text, their images where the
// profile's model sees them, and the notices for the user of files that could not be read.
func (r fileReader) prepare(ctx context.Context, env *runs.Envelope, p place, in *agent.Input) []string {
	if len(env.Attachments) == 0 {
		return nil
	}
	f := r.opts
	var fetch attach.Fetcher
	if f.Fetch != nil {
		fetch = func(ctx context.Context, a conv.Attachment, limit int64) ([]byte, error) {
			data, err := f.Fetch(ctx, env.Conv, a, limit)
			if err != nil && ctx.Err() == nil {
				r.failed(env, "download", a, err)
			}
			return data, err
		}
	}
	var tr attach.Transcriber
	if f.Transcriber != nil {
		tr = loggedTranscriber{r: r, env: env, tr: f.Transcriber}
	}
	res := attach.Prepare(ctx, env.Attachments, fetch, attach.Options{MaxBytes: f.MaxBytes, MaxTextChars: f.MaxTextChars,
		MaxFiles: f.MaxFiles, Vision: p.prof.Vision, Transcriber: tr})
	if res.Text != "" {
		in.Content = strings.TrimSpace(in.Content + "\n\n" + res.Text)
	}
	in.Images = res.Images
	return res.Notices
}

// failed logs a file of env that could not be downloaded or transcribed, for an operator
// (a missing scope, an expired link, a transcription endpoint down): its type, size and the
// error — with the file's URL cut out, should an error quote it (the adapters' do not; a
// Telegram file URL holds the bot token). A file over the size limit is expected: Info.
func (r fileReader) failed(env *runs.Envelope, what string, a conv.Attachment, err error) {
	msg := err.Error()
	if a.URL != "" {
		msg = strings.ReplaceAll(msg, a.URL, "<file url>")
	}
	log := r.log.Warn
	if errors.Is(err, conv.ErrFileTooLarge) {
		log = r.log.Info
	}
	log("lead: a file the user sent could not be read", "run", env.RunID, "platform", env.Conv.Platform,
		"step", what, "type", a.MIME, "size", a.Size, "err", msg)
}

// loggedTranscriber logs the transcriptions that fail.
type loggedTranscriber struct {
	r   fileReader
	env *runs.Envelope
	tr  attach.Transcriber
}

func (l loggedTranscriber) Transcribe(ctx context.Context, name, mime string, data []byte) (string, error) {
	text, err := l.tr.Transcribe(ctx, name, mime, data)
	if err != nil && ctx.Err() == nil {
		l.r.failed(l.env, "transcription", conv.Attachment{MIME: mime, Size: int64(len(data))}, err)
	}
	return text, err
}
