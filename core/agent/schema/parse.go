package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// maxNesting is how deeply arrays and objects may nest, as in encoding/json.
const maxNesting = 10000

// errSyntax is wrapped by every Parse error.
var errSyntax = errors.New("schema: not valid JSON")

// Parse decodes a JSON document into a generic tree, keeping numbers exact: objects become
// map[string]any (a repeated key keeps its last value), arrays []any, strings string, numbers
// json.Number, and true, false and null bool and nil. The document must hold exactly one value,
// with only whitespace around it. The tree is the one encoding/json's Decoder builds with
// UseNumber (invalid UTF-8 and lone surrogates in strings become U+FFFD), without its
// reflection and buffering: it is parsed once per structured run and once per captured value.
func Parse(raw []byte) (any, error) {
	p := parser{in: raw}
	p.space()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i != len(p.in) {
		return nil, p.fail("trailing data after the JSON value")
	}
	return v, nil
}

type parser struct {
	in []byte
	i  int
}

func (p *parser) fail(what string) error {
	return fmt.Errorf("%w: %s at offset %d", errSyntax, what, p.i)
}

func (p *parser) space() {
	for p.i < len(p.in) {
		switch p.in[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) value(depth int) (any, error) {
	if p.i >= len(p.in) {
		return nil, p.fail("unexpected end of input")
	}
	switch c := p.in[p.i]; {
	case c == '{':
		return p.object(depth + 1)
	case c == '[':
		return p.array(depth + 1)
	case c == '"':
		return p.string()
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	}
	return nil, p.fail("unexpected character")
}

func (p *parser) literal(word string) error {
	if len(p.in)-p.i < len(word) || string(p.in[p.i:p.i+len(word)]) != word {
		return p.fail("invalid literal")
	}
	p.i += len(word)
	return nil
}

func (p *parser) object(depth int) (any, error) {
	if depth > maxNesting {
		return nil, p.fail("exceeded max depth")
	}
	p.i++ // {
	m := make(map[string]any)
	p.space()
	if p.i < len(p.in) && p.in[p.i] == '}' {
		p.i++
		return m, nil
	}
	for {
		if p.i >= len(p.in) || p.in[p.i] != '"' {
			return nil, p.fail("expected a string key")
		}
		k, err := p.string()
		if err != nil {
			return nil, err
		}
		p.space()
		if p.i >= len(p.in) || p.in[p.i] != ':' {
			return nil, p.fail("expected ':' after an object key")
		}
		p.i++
		p.space()
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		m[k] = v
		p.space()
		if p.i >= len(p.in) {
			return nil, p.fail("unexpected end of input in an object")
		}
		switch p.in[p.i] {
		case ',':
			p.i++
			p.space()
		case '}':
			p.i++
			return m, nil
		default:
			return nil, p.fail("expected ',' or '}' in an object")
		}
	}
}

func (p *parser) array(depth int) (any, error) {
	if depth > maxNesting {
		return nil, p.fail("exceeded max depth")
	}
	p.i++ // [
	a := make([]any, 0)
	p.space()
	if p.i < len(p.in) && p.in[p.i] == ']' {
		p.i++
		return a, nil
	}
	for {
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		p.space()
		if p.i >= len(p.in) {
			return nil, p.fail("unexpected end of input in an array")
		}
		switch p.in[p.i] {
		case ',':
			p.i++
			p.space()
		case ']':
			p.i++
			return a, nil
		default:
			return nil, p.fail("expected ',' or ']' in an array")
		}
	}
}

// number scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? and keeps its text.
func (p *parser) number() (any, error) {
	start := p.i
	if p.in[p.i] == '-' {
		p.i++
	}
	switch {
	case p.i < len(p.in) && p.in[p.i] == '0':
		p.i++
	case p.i < len(p.in) && p.in[p.i] >= '1' && p.in[p.i] <= '9':
		p.digits()
	default:
		return nil, p.fail("invalid number")
	}
	if p.i < len(p.in) && p.in[p.i] == '.' {
		p.i++
		if p.digits() == 0 {
			return nil, p.fail("invalid number")
		}
	}
	if p.i < len(p.in) && (p.in[p.i] == 'e' || p.in[p.i] == 'E') {
		p.i++
		if p.i < len(p.in) && (p.in[p.i] == '+' || p.in[p.i] == '-') {
			p.i++
		}
		if p.digits() == 0 {
			return nil, p.fail("invalid number")
		}
	}
	return json.Number(p.in[start:p.i]), nil
}

func (p *parser) digits() int {
	n := 0
	for p.i < len(p.in) && p.in[p.i] >= '0' && p.in[p.i] <= '9' {
		p.i++
		n++
	}
	return n
}

// string reads a quoted string at p.i. Text without escapes or invalid UTF-8 is converted as
// is; otherwise it is decoded as encoding/json decodes it.
func (p *parser) string() (string, error) {
	p.i++ // opening quote
	start := p.i
	for p.i < len(p.in) {
		c := p.in[p.i]
		switch {
		case c == '"':
			s := string(p.in[start:p.i])
			p.i++
			return s, nil
		case c == '\\' || c < ' ':
			return p.slowString(start)
		case c < utf8.RuneSelf:
			p.i++
		default:
			r, size := utf8.DecodeRune(p.in[p.i:])
			if r == utf8.RuneError && size == 1 {
				return p.slowString(start)
			}
			p.i += size
		}
	}
	return "", p.fail("unterminated string")
}

func (p *parser) slowString(start int) (string, error) {
	b := make([]byte, 0, p.i-start+16)
	b = append(b, p.in[start:p.i]...)
	for p.i < len(p.in) {
		c := p.in[p.i]
		switch {
		case c == '"':
			p.i++
			return string(b), nil
		case c < ' ':
			return "", p.fail("control character in a string")
		case c == '\\':
			if p.i+1 >= len(p.in) {
				return "", p.fail("unterminated string")
			}
			switch e := p.in[p.i+1]; e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r := hex4(p.in[p.i+2:])
				if r < 0 {
					return "", p.fail("invalid \\u escape")
				}
				p.i += 6
				if utf16.IsSurrogate(r) {
					if r2 := pairedEscape(p.in[p.i:]); r2 >= 0 {
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							b = utf8.AppendRune(b, d)
							p.i += 6
							continue
						}
					}
					r = utf8.RuneError
				}
				b = utf8.AppendRune(b, r)
				continue
			default:
				return "", p.fail("invalid escape")
			}
			p.i += 2
		case c < utf8.RuneSelf:
			b = append(b, c)
			p.i++
		default:
			r, size := utf8.DecodeRune(p.in[p.i:])
			b = utf8.AppendRune(b, r) // invalid UTF-8 becomes U+FFFD, one per byte
			p.i += size
		}
	}
	return "", p.fail("unterminated string")
}

// pairedEscape reads a \uXXXX escape at the start of s, or returns -1.
func pairedEscape(s []byte) rune {
	if len(s) < 2 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	return hex4(s[2:])
}

// hex4 reads four hex digits, or returns -1.
func hex4(s []byte) rune {
	if len(s) < 4 {
		return -1
	}
	var r rune
	for _, c := range s[:4] {
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
