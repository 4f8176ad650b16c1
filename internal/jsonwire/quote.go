// Package jsonwire is the syntax of JSON shared by the few hand-written encoders and decoders
// left beside encoding/json: the model's requests and its streamed chunks (read once per token),
// the event history's encoder, the fake model's streamed chunks. It quotes a string exactly as json.Marshal does, unquotes one exactly as
// json.Unmarshal does, and reads whitespace, numbers and whole values exactly as encoding/json's
// grammar (json.Valid) has them. Each function is fuzzed against encoding/json.
//
// The readers take the input and an index into it and return the index after what they read,
// so that a decoder keeps one cursor and never re-slices its input. Standard library only.
package jsonwire

import "unicode/utf8"

// htmlSafe marks the ASCII bytes json.Marshal writes as they are: all but control characters,
// the quote, the backslash and (escaped for HTML) <, > and &.
var htmlSafe = func() (t [utf8.RuneSelf]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		t[c] = true
	}
	for _, c := range `"\<>&` {
		t[c] = false
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// AppendQuote appends s as a JSON string, with exactly the bytes json.Marshal writes for it:
// HTML-safe (<, > and & escaped), U+2028 and U+2029 escaped, each byte that is not UTF-8
// replaced by \ufffd.
func AppendQuote(dst []byte, s string) []byte { return appendString(dst, s, true) }

// AppendEscaped is AppendQuote without the quotes, for a string the caller builds from several
// pieces.
func AppendEscaped(dst []byte, s string) []byte { return appendString(dst, s, false) }

// appendString is AppendQuote, quotes included only if quote: both wrappers are that small so
// that they cost their callers' inlining nothing but the call.
func appendString(dst []byte, s string, quote bool) []byte {
	if quote {
		dst = append(dst, '"')
	}
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if htmlSafe[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default: // other control bytes, and <, > and &
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(append(dst, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(append(dst, s[start:i]...), '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	if quote {
		dst = append(dst, '"')
	}
	return dst
}
