package schema

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/switchboard-bot/switchboard/internal/jsonwire"
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

func (p *parser) space() { p.i = jsonwire.SkipWhitespace(p.in, p.i) }

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

// number reads a number at p.i and keeps its text.
func (p *parser) number() (any, error) {
	start := p.i
	end, ok := jsonwire.SkipNumber(p.in, p.i)
	p.i = end
	if !ok {
		return nil, p.fail("invalid number")
	}
	return json.Number(p.in[start:end]), nil
}

// string reads a quoted string at p.i, decoded as encoding/json decodes it.
func (p *parser) string() (string, error) {
	s, end, ok := jsonwire.Unquote(p.in, p.i)
	p.i = end
	if ok {
		return s, nil
	}
	// end is where the string goes wrong.
	switch in := p.in; {
	case end >= len(in) || in[end] == '\\' && end+1 >= len(in):
		return "", p.fail("unterminated string")
	case in[end] < ' ':
		return "", p.fail("control character in a string")
	case in[end+1] == 'u':
		return "", p.fail("invalid \\u escape")
	}
	return "", p.fail("invalid escape")
}
