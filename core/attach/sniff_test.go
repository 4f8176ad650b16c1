package attach

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

func TestSniffDecidesByTheBytes(t *testing.T) {
	text600 := strings.Repeat("a line of text\n", 40)
	tests := []struct {
		name           string
		data           []byte
		file, declared string
		kind           Kind
		mime           string
	}{
		// Images are what their bytes say, whatever they are called.
		{"png", pngFile(t), "cat.png", "image/png", Image, "image/png"},
		{"a PNG named .txt", pngFile(t), "notes.txt", "text/plain", Image, "image/png"},
		{"jpeg without a name", jpegFile(t), "", "", Image, "image/jpeg"},
		{"gif", gifFile(t), "a.gif", "", Image, "image/gif"},
		{"webp declared octet-stream", webpFile(), "x.bin", "application/octet-stream", Image, "image/webp"},
		{"heic is an image no model takes", ftypFile("heic"), "IMG.HEIC", "image/heic", Other, "image/heic"},

		// Executables are Other, whatever they are called.
		{"an ELF named .png", elfFile(), "cat.png", "image/png", Other, mimeELF},
		{"a PE named .txt", peFile(), "readme.txt", "text/plain", Other, mimePE},
		{"mach-o", append([]byte("\xcf\xfa\xed\xfe"), make([]byte, 28)...), "tool", "", Other, mimeMachO},
		{"text that starts with MZ", []byte("MZ is a fine pair of letters.\n"), "mz.txt", "", Text, "text/plain"},

		// Text is valid UTF-8 or UTF-16 without binary control bytes; its type comes from the
		// name or the platform when the bytes leave it open.
		{"markdown", []byte("# Title\n\nSome *words*.\n"), "notes.md", "application/octet-stream", Text, "text/markdown"},
		{"csv", []byte("a,b\n1,2\r\n"), "data.CSV", "", Text, "text/csv"},
		{"json", []byte(`{"a": [1, 2]}`), "data.json", "", Text, "application/json"},
		{"go source", []byte("package main\n\nfunc main() {}\n"), "main.go", "", Text, "text/plain"},
		{"html by its bytes", []byte("<!DOCTYPE html><html><body>hi</body></html>"), "page", "", Text, "text/html"},
		{"the platform's text type", []byte("x;y\n"), "export", "text/csv; charset=utf-8", Text, "text/csv"},
		{"the platform's non-text type is not believed", []byte("just words\n"), "photo", "image/jpeg", Text, "text/plain"},
		{"a malformed declared type", []byte("words\n"), "x", "text/(csv", Text, "text/plain"},
		{"text that starts like a BMP", []byte("BMW and Audi\n"), "cars", "", Text, "text/plain"},
		{"escape and form feed are text", []byte("\x1b[31mred\x1b[0m\f\n"), "log", "", Text, "text/plain"},
		{"utf-8 with a BOM", []byte("\xef\xbb\xbfhello"), "", "", Text, "text/plain"},
		{"utf-16le", utf16File("héllo 🦊\r\n", binary.LittleEndian), "u.txt", "", Text, "text/plain"},
		{"utf-16be", utf16File("hello", binary.BigEndian), "", "", Text, "text/plain"},
		{"empty", nil, "empty.txt", "", Text, "text/plain"},

		// Not text after all.
		{"binary named .txt", []byte{0, 1, 2, 3, 0xfe, 0x80}, "notes.txt", "text/plain", Other, mimeBinary},
		{"invalid utf-8", []byte("caf\xe9 cr\xe8me\n"), "menu.txt", "text/plain", Other, mimeBinary},
		{"a NUL after 600 bytes of text", []byte(text600 + "\x00"), "log.txt", "", Other, mimeBinary},
		{"utf-16 of odd length", append(utf16File("hi", binary.LittleEndian), 'x'), "", "", Other, mimeBinary},
		{"utf-16 with a lone surrogate", binary.LittleEndian.AppendUint16([]byte{0xFF, 0xFE}, 0xD800), "", "", Other, mimeBinary},
		{"utf-32le", []byte{0xFF, 0xFE, 0, 0, 'h', 0, 0, 0}, "", "", Other, mimeBinary},
		{"pdf", []byte("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n"), "doc.pdf", "application/pdf", Other, "application/pdf"},
		{"zip named .md", []byte("PK\x03\x04\x14\x00\x00\x00"), "notes.md", "text/markdown", Other, "application/zip"},

		// Audio by its bytes.
		{"ogg opus voice note", oggFile("OpusHead"), "", "", Audio, "audio/ogg"},
		{"ogg vorbis", oggFile("\x01vorbis"), "song", "", Audio, "audio/ogg"},
		{"m4a", ftypFile("M4A "), "memo", "", Audio, "audio/mp4"},
		{"wav", wavFile(), "", "", Audio, "audio/wav"},
		{"flac", []byte("fLaC\x00\x00\x00\x22"), "", "", Audio, "audio/flac"},
		{"mp3 with ID3", []byte("ID3\x03\x00\x00\x00\x00\x00\x00"), "", "", Audio, "audio/mpeg"},
		{"mp3 frame", []byte{0xFF, 0xFB, 0x90, 0x44, 0, 0}, "", "", Audio, "audio/mpeg"},
		{"aac adts is not mp3", []byte{0xFF, 0xF1, 0x50, 0x80, 0, 0x1F, 0xFC}, "a.aac", "audio/aac", Other, mimeBinary},
		{"an executable declared audio", elfFile(), "voice.ogg", "audio/ogg", Other, mimeELF},

		// Containers the bytes leave open: audio when the platform or the name says so.
		{"mp4 declared audio", ftypFile("isom"), "voice", "audio/mp4", Audio, "audio/mp4"},
		{"mp4 named .m4a", ftypFile("mp42"), "Voice.M4A", "", Audio, "audio/mp4"},
		{"mp4 video", ftypFile("isom"), "clip.mp4", "video/mp4", Other, "video/mp4"},
		{"webm declared audio", []byte("\x1a\x45\xdf\xa3\x9f\x42\x86\x81\x01"), "", "audio/webm;codecs=opus", Audio, "audio/webm"},
		{"webm video", []byte("\x1a\x45\xdf\xa3\x9f\x42\x86\x81\x01"), "clip.webm", "video/webm", Other, "video/webm"},
		{"ogg theora declared audio", oggFile("\x80theora"), "", "audio/ogg", Audio, "audio/ogg"},
		{"ogg theora", oggFile("\x80theora"), "", "", Other, "video/ogg"},
		{"ogg of an unknown codec named .opus", oggFile("Mystery!"), "voice.opus", "", Audio, "audio/ogg"},
		{"ogg of an unknown codec", oggFile("Mystery!"), "x", "", Other, "application/ogg"},
		{"ogg cut in its header", []byte("OggS\x00\x02\x00"), "v.ogg", "", Audio, "audio/ogg"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind, mt := Sniff(tt.data, tt.file, tt.declared)
			if kind != tt.kind || mt != tt.mime {
				t.Fatalf("Sniff = %v %q, want %v %q", kind, mt, tt.kind, tt.mime)
			}
		})
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{Other: "other", Image: "image", Text: "text", Audio: "audio", Kind(42): "other"} {
		if k.String() != want {
			t.Errorf("Kind(%d).String() = %q, want %q", int(k), k.String(), want)
		}
	}
}

// FuzzSniff checks that Sniff never panics, is deterministic, reports a bare media type, and
// lets the name and the declared type decide nothing the bytes decide: whether data is text or
// an image, and that no executable is anything but Other.
func FuzzSniff(f *testing.F) {
	f.Add(pngFile(f), "notes.txt", "text/plain")
	f.Add(oggFile("OpusHead"), "voice.ogg", "audio/ogg")
	f.Add(ftypFile("isom"), "v.m4a", "audio/mp4")
	f.Add(utf16File("hi", binary.LittleEndian), "", "")
	f.Add(elfFile(), "cat.png", "image/png")
	f.Add([]byte("OggS"), "", "audio/")
	f.Add([]byte("\xff\xfe\x00\xd8"), "", "")
	f.Fuzz(func(t *testing.T, data []byte, name, declared string) {
		kind, mt := Sniff(data, name, declared)
		if k2, mt2 := Sniff(bytes.Clone(data), name, declared); k2 != kind || mt2 != mt {
			t.Fatalf("Sniff is not deterministic: %v %q then %v %q", kind, mt, k2, mt2)
		}
		if mt == "" || strings.ContainsAny(mt, "; \r\n") || !strings.Contains(mt, "/") {
			t.Fatalf("media type %q is not a bare type/subtype", mt)
		}
		bare, _ := Sniff(data, "", "")
		if (kind == Text) != (bare == Text) || (kind == Image) != (bare == Image) {
			t.Fatalf("the name %q or type %q turned %v into %v", name, declared, bare, kind)
		}
		if (kind == Text) != isText(data) {
			t.Fatalf("Sniff says %v, isText says %v", kind, isText(data))
		}
		if hasAnyPrefix(data, "\x7fELF", "MZ") && kind != Other && kind != Text {
			t.Fatalf("an executable sniffed as %v", kind)
		}
	})
}
