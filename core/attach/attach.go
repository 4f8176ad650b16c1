// Package attach turns the files users send with a message into what the model can take: the
// text of text files and transcripts of voice notes (framed as the file's content, which the
// file cannot break out of), images for a model that sees, and a line about every other file.
// It decides what a file is by its bytes, never by the name or type the platform reports.
//
// It imports the standard library, core/conv and core/llm only: the bytes come through a
// Fetcher and transcripts through a Transcriber, both the caller's.
package attach

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/core/llm"
)

// Defaults of Options' zero values.
const (
	DefaultMaxBytes     = 20 << 20
	DefaultMaxTextChars = 20_000
	DefaultMaxFiles     = 10
)

// parallel is how many files of one message are fetched (and transcribed) at once.
const parallel = 3

// maxListed is how many files past MaxFiles are named one by one; the rest are counted.
const maxListed = 20

// Fetcher downloads a's bytes; a nil Fetcher downloads nothing (files are named to the model,
// not read). It must stop with an error wrapping conv.ErrFileTooLarge once
// more than limit bytes come, and should return promptly once ctx is done. Its errors are never
// shown (they may quote a URL that holds a token); only their class is told: conv.ErrFileTooLarge,
// a timeout (context.DeadlineExceeded, or an error with a Timeout() bool method saying true),
// context.Canceled, or fs.ErrNotExist for a file the platform no longer has.
type Fetcher func(ctx context.Context, a conv.Attachment, limit int64) ([]byte, error)

// Transcriber turns audio into text; *llm.Transcriber is one. name and mime are the file's
// cleaned name and its sniffed type.
type Transcriber interface {
	Transcribe(ctx context.Context, name, mime string, data []byte) (string, error)
}

var _ Transcriber = (*llm.Transcriber)(nil)

// Options bound what Prepare reads. Zero values take the defaults above.
type Options struct {
	// MaxBytes is the largest file read: a file whose declared Size is larger is not
	// downloaded; one that turns out larger is cut off by the Fetcher (conv.ErrFileTooLarge).
	MaxBytes int64
	// MaxTextChars is how many characters of one text file (or one transcript) the model reads.
	MaxTextChars int
	// MaxFiles is how many files of one message are read; the rest are listed by name only.
	MaxFiles int
	// Vision says the model takes images: they go in Result.Images. Without it an image is
	// described and not sent.
	Vision bool
	// Transcriber transcribes voice notes and other audio; nil: audio is described, not
	// transcribed.
	Transcriber Transcriber
}

// Result is what Prepare made of a message's files.
type Result struct {
	// Text is what the model reads about the files, to append to the user's message: one
	// section per file, in the order of the files, separated by blank lines (see frame.go for
	// the format). Empty when there were no files.
	Text string
	// Images are the images to send with the message, in the order Text numbers them ("shown
	// below as image 1"); only when Options.Vision.
	Images []llm.Image
	// Notices are short lines for the user about files that could not be read (too large, the
	// download or the transcription failed, past MaxFiles). They name files by their cleaned
	// names and never hold a URL or an error's text.
	Notices []string
}

// Prepare fetches files (at most a few at once, in no particular order) and returns what the
// model and the user are told about them, in the files' order. It does not fail: a file that
// cannot be read is described as such, in Text and in Notices. Once ctx is done the files not
// yet fetched are reported as not read.
func Prepare(ctx context.Context, files []conv.Attachment, fetch Fetcher, opts Options) Result {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.MaxTextChars <= 0 {
		opts.MaxTextChars = DefaultMaxTextChars
	}
	if opts.MaxFiles <= 0 {
		opts.MaxFiles = DefaultMaxFiles
	}
	read := files[:min(len(files), opts.MaxFiles)]
	outs := make([]outcome, len(read))
	var wg sync.WaitGroup
	sem := make(chan struct{}, parallel)
	for i, a := range read {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			outs[i] = one(ctx, a, cleanName(a.Name, "file "+strconv.Itoa(i+1)), fetch, opts)
		})
	}
	wg.Wait()

	var res Result
	var sections []string
	for _, o := range outs {
		if o.image != nil {
			res.Images = append(res.Images, *o.image)
			o.section = "[" + o.header + ": shown below as image " + strconv.Itoa(len(res.Images)) + "]"
		}
		sections = append(sections, o.section)
		if o.notice != "" {
			res.Notices = append(res.Notices, o.notice)
		}
	}
	if rest := files[len(read):]; len(rest) > 0 {
		for i, a := range rest[:min(len(rest), maxListed)] {
			name := cleanName(a.Name, "file "+strconv.Itoa(len(read)+i+1))
			sections = append(sections, fmt.Sprintf("[Attached file \"%s\": not read — only the first %d files of a message are read]", name, opts.MaxFiles))
		}
		if len(rest) > maxListed {
			sections = append(sections, fmt.Sprintf("[… and %d more files, not read]", len(rest)-maxListed))
		}
		res.Notices = append(res.Notices, fmt.Sprintf("Only the first %d files were read; %d more were not.", opts.MaxFiles, len(rest)))
	}
	res.Text = strings.Join(sections, "\n\n")
	return res
}
