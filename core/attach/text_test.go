package attach

import (
	"encoding/binary"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestExtractText(t *testing.T) {
	tests := []struct {
		name     string
		data     []byte
		maxChars int
		want     string
		cut      bool
	}{
		{"plain", []byte("hello\tworld\n"), 100, "hello\tworld\n", false},
		{"empty", nil, 100, "", false},
		{"crlf and lone cr become lf", []byte("a\r\nb\rc\n\r\n"), 100, "a\nb\nc\n\n", false},
		{"controls removed", []byte("a\x00b\x1b[1mc\x7fd\u0085e\x0cf\x08"), 100, "ab[1mcdef", false},
		{"invalid utf-8 read as U+FFFD", []byte("caf\xe9!"), 100, "caf\ufffd!", false},
		{"a cut utf-8 sequence", []byte("ok \xe2\x82"), 100, "ok \ufffd\ufffd", false},
		{"utf-8 bom dropped", []byte("\xef\xbb\xbfhi"), 100, "hi", false},
		{"utf-16le", utf16File("héllo 🦊\r\n", binary.LittleEndian), 100, "héllo 🦊\n", false},
		{"utf-16be", utf16File("日本語", binary.BigEndian), 100, "日本語", false},
		{"utf-16 lone surrogates", binary.LittleEndian.AppendUint16(binary.LittleEndian.AppendUint16([]byte{0xFF, 0xFE, 'a', 0}, 0xDC00), 0xD800), 100, "a\ufffd\ufffd", false},
		{"utf-16 odd last byte dropped", append(utf16File("hi", binary.BigEndian), 'x'), 100, "hi", false},
		{"utf-16 NULs removed", []byte{0xFF, 0xFE, 'a', 0, 0, 0, 'b', 0}, 100, "ab", false},
		{"cut at a rune boundary", []byte("héllo"), 2, "hé", true},
		{"cut counts runes, not bytes", []byte("🦊🦊🦊"), 2, "🦊🦊", true},
		{"exactly the limit is not cut", []byte("abc"), 3, "abc", false},
		{"only removed characters past the limit", []byte("abc\x00\x01"), 3, "abc", false},
		{"a crlf at the limit counts once", []byte("ab\r\n"), 3, "ab\n", false},
		{"zero chars", []byte("abc"), 0, "", true},
		{"negative chars", []byte("abc"), -5, "", true},
		{"zero chars of nothing", []byte("\x00"), 0, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, cut := ExtractText(tt.data, tt.maxChars)
			if got != tt.want || cut != tt.cut {
				t.Fatalf("ExtractText = %q, %v; want %q, %v", got, cut, tt.want, tt.cut)
			}
		})
	}
}

// FuzzExtractText checks that ExtractText never panics and keeps its promises whatever the
// bytes: valid UTF-8, at most maxChars runes, no control characters but tab and line feed, and
// a cut text is the start of the whole one.
func FuzzExtractText(f *testing.F) {
	f.Add([]byte("hello\r\nworld"), 5)
	f.Add(utf16File("héllo 🦊", binary.LittleEndian), 3)
	f.Add([]byte{0xFE, 0xFF, 0xD8, 0x3D}, 10)
	f.Add([]byte("\xef\xbb\xbf\xff\x00\r"), 1)
	f.Add([]byte("abc"), -1)
	f.Fuzz(func(t *testing.T, data []byte, maxChars int) {
		maxChars %= 1 << 12
		text, cut := ExtractText(data, maxChars)
		if !utf8.ValidString(text) {
			t.Fatalf("%q is not valid UTF-8", text)
		}
		if n := utf8.RuneCountInString(text); n > max(maxChars, 0) {
			t.Fatalf("%d runes, more than %d", n, maxChars)
		}
		for _, r := range text {
			if unicode.IsControl(r) && r != '\n' && r != '\t' {
				t.Fatalf("control character %U left in %q", r, text)
			}
		}
		whole, wholeCut := ExtractText(data, len(data)+1)
		if wholeCut {
			t.Fatalf("cut at %d runes of %d bytes", len(data)+1, len(data))
		}
		if !strings.HasPrefix(whole, text) || cut != (text != whole) {
			t.Fatalf("ExtractText(%d) = %q (cut %v), the whole text is %q", maxChars, text, cut, whole)
		}
	})
}
