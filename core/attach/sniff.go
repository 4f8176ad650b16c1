package attach

import (
	"bytes"
	"mime"
	"net/http"
	"path"
	"strings"
)

// Kind is what a file is, for what the model can be given of it.
type Kind int

// The kinds of file. The zero Kind is Other: what is not known to be readable is not read.
const (
	// Other is anything the model cannot be given: executables, archives, PDFs, images and
	// audio of formats it does not take.
	Other Kind = iota
	// Image is a picture a vision model takes: PNG, JPEG, GIF or WEBP.
	Image
	// Text is text: valid UTF-8 (or UTF-16 with a byte order mark) without binary control
	// bytes, so plain text, Markdown, CSV, JSON, source code, HTML.
	Text
	// Audio is sound a transcription model takes: MP3, MP4/M4A, OGG (Opus, Vorbis, FLAC),
	// WAV, FLAC or WebM.
	Audio
)

// String is the kind's lower-case name.
func (k Kind) String() string {
	switch k {
	case Image:
		return "image"
	case Text:
		return "text"
	case Audio:
		return "audio"
	}
	return "other"
}

// Media types Sniff reports for what net/http does not know.
const (
	mimeELF    = "application/x-executable"
	mimePE     = "application/vnd.microsoft.portable-executable"
	mimeMachO  = "application/x-mach-binary"
	mimeBinary = "application/octet-stream"
)

// Sniff decides what data is by its bytes, never by the file's name or the platform's declared
// type alone: a PNG named notes.txt is an Image, an executable named cat.png is Other. name and
// declared only break ties the bytes leave open: a text file's exact type (text/markdown for
// notes.md), and whether a video container (MP4, WebM, OGG) holds a voice note (declared
// audio/*, or an audio file extension), which makes it Audio.
//
// The media type returned has no parameters. Sniff reads all of data (to tell text from
// binary) and is deterministic.
func Sniff(data []byte, name, declared string) (Kind, string) {
	if isText(data) {
		return Text, textType(data, name, declared)
	}
	mt := binaryType(data)
	switch mt {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return Image, mt
	case "audio/mpeg", "audio/mp4", "audio/ogg", "audio/wav", "audio/flac":
		return Audio, mt
	case "video/mp4", "video/webm", "video/ogg", "application/ogg":
		if declaresAudio(name, declared) {
			return Audio, audioOf[mt]
		}
	}
	return Other, mt
}

// audioOf is the audio type of a container sniffed as video (or as a bare OGG stream).
var audioOf = map[string]string{
	"video/mp4": "audio/mp4", "video/webm": "audio/webm", "video/ogg": "audio/ogg", "application/ogg": "audio/ogg",
}

// audioExts are file extensions of sound.
var audioExts = map[string]bool{".m4a": true, ".mp3": true, ".ogg": true, ".oga": true, ".opus": true,
	".weba": true, ".wav": true, ".flac": true, ".aac": true}

// declaresAudio reports whether the platform's type or the name's extension says audio.
func declaresAudio(name, declared string) bool {
	if mt, _, err := mime.ParseMediaType(declared); err == nil && strings.HasPrefix(mt, "audio/") {
		return true
	}
	return audioExts[strings.ToLower(path.Ext(name))]
}

// binaryType is the media type of data that is not text: the signatures net/http does not
// know (executables, FLAC, bare MP3 frames, the codec inside an OGG, the brand of an MP4),
// then net/http.DetectContentType's.
func binaryType(data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte("\x7fELF")):
		return mimeELF
	case bytes.HasPrefix(data, []byte("MZ")):
		return mimePE // as text it would have been Text: binary after "MZ" is a DOS or PE program
	case hasAnyPrefix(data, "\xfe\xed\xfa\xce", "\xfe\xed\xfa\xcf", "\xce\xfa\xed\xfe", "\xcf\xfa\xed\xfe"):
		return mimeMachO
	case bytes.HasPrefix(data, []byte("fLaC")):
		return "audio/flac"
	case bytes.HasPrefix(data, []byte("OggS")):
		return oggType(data)
	case len(data) >= 12 && string(data[4:8]) == "ftyp":
		return ftypType(data)
	case mp3Frame(data):
		return "audio/mpeg"
	}
	mt := http.DetectContentType(data)
	if i := strings.IndexByte(mt, ';'); i >= 0 {
		mt = mt[:i]
	}
	switch mt {
	case "audio/wave":
		return "audio/wav"
	case "text/plain", "text/html", "text/xml":
		// net/http reads only the first 512 bytes: these bytes looked like text there but are
		// not text as a whole.
		return mimeBinary
	}
	return mt
}

func hasAnyPrefix(data []byte, prefixes ...string) bool {
	for _, p := range prefixes {
		if bytes.HasPrefix(data, []byte(p)) {
			return true
		}
	}
	return false
}

// oggType reads the codec of an OGG stream's first packet: Opus, Vorbis, FLAC and Speex are
// sound, Theora is video, anything else a bare OGG stream. The first page's header is 27
// bytes, then a segment table of data[26] entries, then the packet.
func oggType(data []byte) string {
	if len(data) < 27 {
		return "application/ogg"
	}
	start := 27 + int(data[26])
	if start > len(data) {
		return "application/ogg"
	}
	switch p := data[start:]; {
	case hasAnyPrefix(p, "OpusHead", "\x01vorbis", "\x7fFLAC", "Speex   "):
		return "audio/ogg"
	case bytes.HasPrefix(p, []byte("\x80theora")):
		return "video/ogg"
	}
	return "application/ogg"
}

// ftypType reads an ISO media file's major brand: Apple's audio brands are sound, HEIF and AVIF
// images (which models do not take), QuickTime and 3GPP their own videos, the rest MP4 video.
func ftypType(data []byte) string {
	switch brand := string(data[8:12]); {
	case brand == "M4A " || brand == "M4B " || brand == "M4P " || brand == "F4A " || brand == "F4B ":
		return "audio/mp4"
	case brand == "heic" || brand == "heix" || brand == "mif1" || brand == "msf1":
		return "image/heic"
	case brand == "avif" || brand == "avis":
		return "image/avif"
	case brand == "qt  ":
		return "video/quicktime"
	case strings.HasPrefix(brand, "3gp") || strings.HasPrefix(brand, "3g2"):
		return "video/3gpp"
	}
	return "video/mp4"
}

// mp3Frame reports whether data starts with an MPEG audio frame header (an MP3 without an ID3
// tag): 11 sync bits, a version that is not reserved, layer III or II (not AAC's ADTS, layer
// "0", nor layer I, whose header FF FE… is also UTF-16LE's byte order mark), a bitrate that
// is not "bad" and a sample rate that is not reserved.
func mp3Frame(data []byte) bool {
	if len(data) < 4 || data[0] != 0xFF || data[1]&0xE0 != 0xE0 {
		return false
	}
	version, layer := data[1]>>3&3, data[1]>>1&3
	bitrate, rate := data[2]>>4, data[2]>>2&3
	return version != 1 && (layer == 1 || layer == 2) && bitrate != 15 && rate != 3
}

// textTypes are the types of text files, by extension.
var textTypes = map[string]string{
	".txt": "text/plain", ".text": "text/plain", ".log": "text/plain",
	".md": "text/markdown", ".markdown": "text/markdown",
	".csv": "text/csv", ".tsv": "text/tab-separated-values",
	".json": "application/json", ".jsonl": "application/jsonl", ".ndjson": "application/jsonl",
	".yaml": "application/yaml", ".yml": "application/yaml", ".toml": "application/toml",
	".xml": "text/xml", ".html": "text/html", ".htm": "text/html", ".css": "text/css",
	".js": "text/javascript", ".mjs": "text/javascript", ".svg": "image/svg+xml",
}

// textType is the type of a text file: from its name's extension when that is a text type, else
// the platform's when it says text, else what net/http reads in the bytes (text/plain,
// text/html or text/xml).
func textType(data []byte, name, declared string) string {
	if mt, ok := textTypes[strings.ToLower(path.Ext(name))]; ok {
		return mt
	}
	if mt, _, err := mime.ParseMediaType(declared); err == nil && isTextType(mt) {
		return mt
	}
	mt := http.DetectContentType(data)
	if i := strings.IndexByte(mt, ';'); i >= 0 {
		mt = mt[:i]
	}
	if strings.HasPrefix(mt, "text/") {
		return mt
	}
	return "text/plain" // text that begins like a binary format, say "BM" (BMP) or "%PDF-"
}

// isTextType reports whether the media type mt names text.
func isTextType(mt string) bool {
	if strings.HasPrefix(mt, "text/") {
		return true
	}
	for _, t := range textTypes {
		if t == mt {
			return true
		}
	}
	return false
}
