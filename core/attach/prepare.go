package attach

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io/fs"
	"strconv"
	"strings"

	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/core/llm"
)

// outcome is what became of one file: its section of Result.Text, or, for an image to show,
// the section's header (Prepare numbers the images) and the image; and a notice for the user.
type outcome struct {
	section string
	header  string
	image   *llm.Image
	notice  string
}

// one fetches and reads the file a, called name (cleaned).
func one(ctx context.Context, a conv.Attachment, name string, fetch Fetcher, opts Options) outcome {
	limit := "the " + humanSize(opts.MaxBytes) + " limit"
	tooLarge := func(size int64) outcome {
		return outcome{
			section: "[" + describe("Attached file", name, "", size) + ": could not be read — it is larger than " + limit + "]",
			notice:  "\"" + name + "\" could not be read: it is larger than " + limit + ".",
		}
	}
	if a.Size > opts.MaxBytes {
		return tooLarge(a.Size)
	}
	if fetch == nil {
		size := a.Size
		if size <= 0 {
			size = -1 // unknown
		}
		return outcome{section: "[" + describe("Attached file", name, "", size) + ": not read — files are not downloaded here]"}
	}
	var data []byte
	err := ctx.Err()
	if err == nil {
		data, err = fetch(ctx, a, opts.MaxBytes)
	}
	switch {
	case errors.Is(err, conv.ErrFileTooLarge):
		return tooLarge(-1)
	case err != nil:
		why := "the download failed" + fetchClass(err)
		return outcome{
			section: "[" + describe("Attached file", name, "", -1) + ": could not be read — " + why + "]",
			notice:  "\"" + name + "\" could not be read: " + why + ".",
		}
	case int64(len(data)) > opts.MaxBytes: // a Fetcher that ignored its limit
		return tooLarge(int64(len(data)))
	case len(data) == 0:
		return outcome{section: "[" + describe("Attached file", name, "", 0) + ": the file is empty]"}
	}

	size := int64(len(data))
	kind, mt := Sniff(data, a.Name, a.MIME)
	switch kind {
	case Text:
		text, cut := ExtractText(data, opts.MaxTextChars)
		return outcome{section: framed(describe("Attached file", name, mt, size), text, name, func(f string) string {
			if cut {
				return "its first " + strconv.Itoa(opts.MaxTextChars) + " characters are between the two " + f + " lines below; the rest was cut"
			}
			return "its text is between the two " + f + " lines below"
		})}
	case Image:
		header := describe("Attached image", name, mt, size)
		switch {
		case !wholeImage(data, mt):
			return outcome{section: "[" + header + ": damaged or incomplete, not shown]"}
		case !opts.Vision:
			return outcome{section: "[" + header + ": not shown — this model cannot see images]"}
		}
		return outcome{header: header, image: &llm.Image{MIME: mt, Data: data}}
	case Audio:
		return transcribe(ctx, name, mt, data, opts)
	}
	return outcome{section: "[" + describe("Attached file", name, mt, size) + ": not readable here]"}
}

// transcribe reads an audio file as its transcript.
func transcribe(ctx context.Context, name, mt string, data []byte, opts Options) outcome {
	header := describe("Attached audio", name, mt, int64(len(data)))
	if opts.Transcriber == nil {
		return outcome{section: "[" + header + ": not transcribed — audio cannot be transcribed here]"}
	}
	transcript, err := opts.Transcriber.Transcribe(ctx, name, mt, data)
	if err != nil {
		why := "the transcription failed"
		switch {
		case errors.Is(err, llm.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
			why = "the transcription timed out"
		case errors.Is(err, context.Canceled):
			why = "the transcription was cancelled"
		case llm.Temporary(err):
			why = "the transcription service is unavailable for now"
		}
		return outcome{
			section: "[" + header + ": could not be transcribed — " + why + "]",
			notice:  "\"" + name + "\" could not be transcribed: " + why + ".",
		}
	}
	// The transcript is the user's words as much as a file's text is: cleaned and framed alike.
	text, cut := ExtractText([]byte(strings.TrimSpace(transcript)), opts.MaxTextChars)
	if text == "" {
		return outcome{section: "[" + header + ": no speech was recognized in it]"}
	}
	return outcome{section: framed(header, text, name, func(f string) string {
		if cut {
			return "the first " + strconv.Itoa(opts.MaxTextChars) + " characters of its transcript are between the two " + f + " lines below; the rest was cut"
		}
		return "its transcript is between the two " + f + " lines below"
	})}
}

// fetchClass is what may be told of a fetch error: its class, never its text (which may quote
// a URL holding a token).
func fetchClass(err error) string {
	var timeout interface{ Timeout() bool }
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &timeout) && timeout.Timeout():
		return " (timed out)"
	case errors.Is(err, context.Canceled):
		return " (cancelled)"
	case errors.Is(err, fs.ErrNotExist):
		return " (not found)"
	}
	return ""
}

// pngEnd is a PNG's last chunk, IEND, whole.
var pngEnd = []byte("\x00\x00\x00\x00IEND\xae\x42\x60\x82")

// wholeImage reports whether data, sniffed as mt, is an image the model can be sent: its header
// decodes and its end is there. A damaged or cut image would fail the whole model call, the
// user's message with it. Only headers and trailers are read, never the pixels.
func wholeImage(data []byte, mt string) bool {
	r := bytes.NewReader(data)
	switch mt {
	case "image/png":
		_, err := png.DecodeConfig(r)
		return err == nil && bytes.HasSuffix(data, pngEnd)
	case "image/jpeg":
		_, err := jpeg.DecodeConfig(r)
		return err == nil && bytes.LastIndex(data, []byte{0xFF, 0xD9}) > 2 // EOI; cameras may append after it
	case "image/gif":
		_, err := gif.DecodeConfig(r)
		return err == nil && data[len(data)-1] == 0x3B // the trailer
	case "image/webp":
		// RIFF's length field counts the bytes after it: a cut file holds fewer.
		return len(data) >= 20 && int64(binary.LittleEndian.Uint32(data[4:8]))+8 <= int64(len(data))
	}
	return false
}
