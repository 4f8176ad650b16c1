package attach

import (
	"bytes"
	"encoding/binary"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Byte order marks.
var (
	bomUTF8    = []byte{0xEF, 0xBB, 0xBF}
	bomUTF16BE = []byte{0xFE, 0xFF}
	bomUTF16LE = []byte{0xFF, 0xFE}
)

// binaryByte reports whether c is a byte text does not hold: a control byte other than tab,
// line feed, form feed, carriage return and escape (net/http's and WHATWG's "binary data byte").
func binaryByte(c byte) bool {
	return c <= 0x08 || c == 0x0B || 0x0E <= c && c <= 0x1A || 0x1C <= c && c <= 0x1F
}

// isText reports whether data is text: valid UTF-8 (after an optional byte order mark), or
// UTF-16 of either order after its byte order mark, without binary control characters.
// Empty data is text.
func isText(data []byte) bool {
	switch {
	case bytes.HasPrefix(data, bomUTF8):
		data = data[len(bomUTF8):]
	case bytes.HasPrefix(data, bomUTF16BE):
		return isUTF16Text(data[2:], binary.BigEndian)
	case bytes.HasPrefix(data, bomUTF16LE):
		return isUTF16Text(data[2:], binary.LittleEndian)
	}
	for _, c := range data {
		if binaryByte(c) {
			return false
		}
	}
	return utf8.Valid(data)
}

// isUTF16Text reports whether data (after its byte order mark) is whole UTF-16 code units with
// every surrogate paired and no binary control character. UTF-32LE, whose mark begins as
// UTF-16LE's, fails here on its NUL units.
func isUTF16Text(data []byte, order binary.ByteOrder) bool {
	if len(data)%2 != 0 {
		return false
	}
	for i := 0; i < len(data); i += 2 {
		u := order.Uint16(data[i:])
		switch {
		case u < 0x20 && binaryByte(byte(u)):
			return false
		case 0xD800 <= u && u < 0xDC00: // a high surrogate: a low one must follow
			if i+3 >= len(data) {
				return false
			}
			if lo := order.Uint16(data[i+2:]); lo < 0xDC00 || lo > 0xDFFF {
				return false
			}
			i += 2
		case 0xDC00 <= u && u <= 0xDFFF: // a low surrogate alone
			return false
		}
	}
	return true
}

// ExtractText returns data's text: decoded from UTF-16 when data starts with a UTF-16 byte
// order mark, else read as UTF-8 (a UTF-8 byte order mark dropped, each byte that is not
// UTF-8 read as U+FFFD); control characters other than tab and line feed removed (NUL, escape,
// C1 controls among them); line ends normalized to "\n" (CRLF and a lone CR both). The text is
// cut after maxChars runes (none when maxChars < 1); cut reports whether any text was left
// out. The result is valid UTF-8 whatever data holds.
func ExtractText(data []byte, maxChars int) (text string, cut bool) {
	maxChars = max(maxChars, 0)
	d := runeReader{data: data}
	switch {
	case bytes.HasPrefix(data, bomUTF16BE):
		d.data, d.order = data[2:], binary.BigEndian
	case bytes.HasPrefix(data, bomUTF16LE):
		d.data, d.order = data[2:], binary.LittleEndian
	case bytes.HasPrefix(data, bomUTF8):
		d.data = data[3:]
	}
	var b strings.Builder
	b.Grow(min(len(d.data), 4*maxChars))
	n := 0
	afterCR := false
	for {
		r, ok := d.next()
		if !ok {
			return b.String(), false
		}
		if r == '\n' && afterCR {
			afterCR = false
			continue // the LF of a CRLF, whose CR was written as "\n"
		}
		afterCR = r == '\r'
		if r == '\r' {
			r = '\n'
		}
		if r != '\n' && r != '\t' && unicode.IsControl(r) {
			continue
		}
		if n == maxChars {
			return b.String(), true
		}
		b.WriteRune(r)
		n++
	}
}

// runeReader reads the runes of UTF-8 (order nil) or UTF-16 text.
type runeReader struct {
	data  []byte
	order binary.ByteOrder
	i     int
}

// next returns the next rune; U+FFFD for a byte that is not UTF-8 or an unpaired surrogate. A
// last odd byte of UTF-16 is not a character and is dropped.
func (d *runeReader) next() (rune, bool) {
	rest := d.data[d.i:]
	if d.order == nil {
		if len(rest) == 0 {
			return 0, false
		}
		r, size := utf8.DecodeRune(rest)
		d.i += size
		return r, true
	}
	if len(rest) < 2 {
		return 0, false
	}
	u := rune(d.order.Uint16(rest))
	d.i += 2
	if !utf16.IsSurrogate(u) {
		return u, true
	}
	if len(rest) >= 4 {
		if r := utf16.DecodeRune(u, rune(d.order.Uint16(rest[2:]))); r != utf8.RuneError {
			d.i += 2
			return r, true
		}
	}
	return utf8.RuneError, true
}
