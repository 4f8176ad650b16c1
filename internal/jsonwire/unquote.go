package jsonwire

import (
	"bytes"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// plainASCII marks the bytes a JSON string holds as they are and that are whole characters:
// ASCII but the quote, the backslash and control characters. (Bytes from 0x80 on are read as
// UTF-8.)
var plainASCII = func() (t [256]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// SkipPlain returns the index of the first byte of b from i on that a JSON string does not hold
// as it is and decode to itself: a quote, a backslash, a control character or a byte that is
// not UTF-8 (len(b) if there is none). A string whose text runs from i to SkipPlain(b, i), where
// its closing quote stands, needs no unquoting.
func SkipPlain(b []byte, i int) int {
	for {
		for _, c := range b[i:] { // ranging, and a 256-entry table: no bounds checks
			if !plainASCII[c] {
				break
			}
			i++
		}
		if i >= len(b) || b[i] < utf8.RuneSelf {
			return i
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
}

// Unquote decodes the JSON string whose opening quote is b[i] as json.Unmarshal decodes it into
// a string: escapes resolved, a surrogate pair of \u escapes read as one rune, an unpaired
// surrogate and each byte that is not UTF-8 read as U+FFFD. end is the index after its closing
// quote.
//
// When ok is false, there is no valid string at i and end is where it goes wrong: at a control
// character, at the backslash of a malformed escape or of one that b cuts short, or len(b) when
// the string is not closed (i when b[i] is not a quote).
func Unquote(b []byte, i int) (s string, end int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return "", i, false
	}
	j := SkipPlain(b, i+1)
	if j < len(b) && b[j] == '"' {
		return string(b[i+1 : j]), j + 1, true
	}
	return unquote(b, i, j)
}

// UnquoteRest is Unquote for a caller that has already read the start of the string: b[i] is
// its opening quote and j is SkipPlain(b, i+1). A caller that keeps the plain case for itself
// (to intern it, say) saves reading it again.
func UnquoteRest(b []byte, i, j int) (s string, end int, ok bool) {
	if j < len(b) && b[j] == '"' {
		return string(b[i+1 : j]), j + 1, true
	}
	return unquote(b, i, j)
}

// unquote finishes a string that needs rewriting: its opening quote is b[start] and
// b[start+1:i] is the plain part already read.
func unquote(b []byte, start, i int) (string, int, bool) {
	var sb strings.Builder
	sb.Grow(quoteEnd(b, start, i) - start - 1) // escapes only shrink; U+FFFD for a stray byte grows, rarely
	sb.Write(b[start+1 : i])
	for i < len(b) {
		switch c := b[i]; {
		case c == '"':
			return sb.String(), i + 1, true
		case c < ' ':
			return "", i, false
		case c == '\\':
			if i+1 >= len(b) {
				return "", i, false
			}
			switch e := b[i+1]; e {
			case '"', '\\', '/':
				sb.WriteByte(e)
			case 'b':
				sb.WriteByte('\b')
			case 'f':
				sb.WriteByte('\f')
			case 'n':
				sb.WriteByte('\n')
			case 'r':
				sb.WriteByte('\r')
			case 't':
				sb.WriteByte('\t')
			case 'u':
				r := u4(b[i:])
				if r < 0 {
					return "", i, false
				}
				i += 6
				if utf16.IsSurrogate(r) {
					// A valid pair is one rune; anything else leaves this half as U+FFFD and the
					// next escape, if any, to be read on its own.
					if dec := utf16.DecodeRune(r, u4(b[i:])); dec != unicode.ReplacementChar {
						sb.WriteRune(dec)
						i += 6
						continue
					}
					r = unicode.ReplacementChar
				}
				sb.WriteRune(r)
				continue
			default:
				return "", i, false
			}
			i += 2
		default:
			// Copy the run of bytes that need no rewriting in one go.
			j := SkipPlain(b, i)
			if j == i {
				sb.WriteRune(utf8.RuneError) // a byte that is not UTF-8
				i++
				continue
			}
			sb.Write(b[i:j])
			i = j
		}
	}
	return "", len(b), false
}

// quoteEnd returns where the string whose opening quote is b[start] ends: the index of the
// first quote from i (i > start) that no backslash escapes, or len(b).
func quoteEnd(b []byte, start, i int) int {
	for {
		k := bytes.IndexByte(b[i:], '"')
		if k < 0 {
			return len(b)
		}
		i += k
		n := 0
		for p := i - 1; p > start && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return i
		}
		i++
	}
}

// u4 is the value of the \uXXXX escape b starts with, or -1.
func u4(b []byte) rune {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range b[2:6] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}
