package llm

import (
	"encoding/json"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"
)

// A model answer streams as one chunk per token or so, so decoding chunks is the per-call cost
// that grows with the answer. encoding/json spends most of it on reflection and on
// allocations for every nested object; decodeChunk reads the usual chunk directly and leaves
// anything unusual to encoding/json.

// wireChunk is the part of a streamed chat-completions chunk the provider reads. Decoding into
// it rather than go-openai's ChatCompletionStreamResponse skips the ids, model, fingerprint,
// log-probabilities and content-filter results every chunk repeats.
type wireChunk struct {
	Choices []wireChoice `json:"choices"`
	Usage   *Usage       `json:"usage"`
}

type wireChoice struct {
	Index        int                 `json:"index"`
	Delta        wireDelta           `json:"delta"`
	FinishReason openai.FinishReason `json:"finish_reason"`
}

type wireDelta struct {
	Content          string            `json:"content"`
	Refusal          string            `json:"refusal"`
	ReasoningContent string            `json:"reasoning_content"`
	ToolCalls        []openai.ToolCall `json:"tool_calls"`
}

// decodeChunk decodes one streamed chunk into c, exactly as json.Unmarshal into a zero
// wireChunk would (the same result, the same inputs refused). c's choices array is reused.
func decodeChunk(data []byte, c *wireChunk) error {
	d := chunkDecoder{data: data, spare: c.Choices[:0]}
	*c = wireChunk{}
	if d.chunk(c) && d.end() {
		return nil
	}
	*c = wireChunk{}
	return json.Unmarshal(data, c)
}

// chunkDecoder reads a chunk's JSON. Each method reports false where its input is malformed
// or where encoding/json would do something it does not copy: a duplicate or case-folded key,
// an escaped or non-ASCII key, a number that is not a plain integer, a wrong type, deep
// nesting. decodeChunk then asks encoding/json, whose answer (an error included) stands.
type chunkDecoder struct {
	data  []byte
	i     int
	spare []wireChoice // an earlier chunk's choices, to decode into
}

// maxSkipDepth bounds the nesting of unknown values chunkDecoder skips by recursion.
const maxSkipDepth = 64

func (d *chunkDecoder) chunk(c *wireChunk) bool {
	var seen uint
	return d.object(func(key []byte) bool {
		switch string(key) {
		case "choices":
			return first(&seen, 1) && d.choices(&c.Choices)
		case "usage":
			return first(&seen, 2) && d.usage(&c.Usage)
		}
		return d.unknown(key, "choices", "usage")
	})
}

func (d *chunkDecoder) choices(cs *[]wireChoice) bool {
	if d.null() {
		*cs = nil
		return true
	}
	*cs = d.spare
	if *cs == nil {
		*cs = []wireChoice{} // as encoding/json leaves an empty array
	}
	return d.array(func() bool {
		*cs = append(*cs, wireChoice{})
		ch := &(*cs)[len(*cs)-1]
		if d.null() {
			return true
		}
		var seen uint
		return d.object(func(key []byte) bool {
			switch string(key) {
			case "index":
				return first(&seen, 1) && d.integer(&ch.Index)
			case "delta":
				return first(&seen, 2) && d.delta(&ch.Delta)
			case "finish_reason":
				return first(&seen, 4) && d.str((*string)(&ch.FinishReason))
			}
			return d.unknown(key, "index", "delta", "finish_reason")
		})
	})
}

func (d *chunkDecoder) delta(dl *wireDelta) bool {
	if d.null() {
		return true
	}
	var seen uint
	return d.object(func(key []byte) bool {
		switch string(key) {
		case "content":
			return first(&seen, 1) && d.str(&dl.Content)
		case "refusal":
			return first(&seen, 2) && d.str(&dl.Refusal)
		case "reasoning_content":
			return first(&seen, 4) && d.str(&dl.ReasoningContent)
		case "tool_calls":
			return first(&seen, 8) && d.toolCalls(dl)
		}
		return d.unknown(key, "content", "refusal", "reasoning_content", "tool_calls")
	})
}

func (d *chunkDecoder) toolCalls(dl *wireDelta) bool {
	if d.null() {
		dl.ToolCalls = nil
		return true
	}
	if dl.ToolCalls == nil {
		dl.ToolCalls = []openai.ToolCall{} // as encoding/json leaves an empty array
	}
	return d.array(func() bool {
		dl.ToolCalls = append(dl.ToolCalls, openai.ToolCall{})
		tc := &dl.ToolCalls[len(dl.ToolCalls)-1]
		if d.null() {
			return true
		}
		var seen uint
		return d.object(func(key []byte) bool {
			switch string(key) {
			case "index":
				if !first(&seen, 1) {
					return false
				}
				if d.null() {
					tc.Index = nil
					return true
				}
				tc.Index = new(int)
				return d.integer(tc.Index)
			case "id":
				return first(&seen, 2) && d.str(&tc.ID)
			case "type":
				return first(&seen, 4) && d.str((*string)(&tc.Type))
			case "function":
				return first(&seen, 8) && d.function(tc)
			}
			return d.unknown(key, "index", "id", "type", "function")
		})
	})
}

func (d *chunkDecoder) function(tc *openai.ToolCall) bool {
	if d.null() {
		return true
	}
	var seen uint
	return d.object(func(key []byte) bool {
		switch string(key) {
		case "name":
			return first(&seen, 1) && d.str(&tc.Function.Name)
		case "arguments":
			return first(&seen, 2) && d.str(&tc.Function.Arguments)
		}
		return d.unknown(key, "name", "arguments")
	})
}

func (d *chunkDecoder) usage(u **Usage) bool {
	if d.null() {
		*u = nil
		return true
	}
	*u = &Usage{}
	v := *u
	var seen uint
	return d.object(func(key []byte) bool {
		switch string(key) {
		case "prompt_tokens":
			return first(&seen, 1) && d.integer(&v.PromptTokens)
		case "completion_tokens":
			return first(&seen, 2) && d.integer(&v.CompletionTokens)
		case "total_tokens":
			return first(&seen, 4) && d.integer(&v.TotalTokens)
		}
		return d.unknown(key, "prompt_tokens", "completion_tokens", "total_tokens")
	})
}

// first marks bit in seen and reports whether it was clear: a key seen twice is left to
// encoding/json, which merges repeated objects and arrays in ways not worth copying.
func first(seen *uint, bit uint) bool {
	if *seen&bit != 0 {
		return false
	}
	*seen |= bit
	return true
}

// unknown skips the value of a key that names no field. A key that matches one of names but
// for case is one encoding/json would decode into that field: left to it.
func (d *chunkDecoder) unknown(key []byte, names ...string) bool {
	for _, n := range names {
		if asciiEqualFold(key, n) {
			return false
		}
	}
	return d.skip(0)
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

func (d *chunkDecoder) ws() {
	for d.i < len(d.data) {
		switch d.data[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// consume skips white space and then c, reporting whether c was there.
func (d *chunkDecoder) consume(c byte) bool {
	d.ws()
	if d.i < len(d.data) && d.data[d.i] == c {
		d.i++
		return true
	}
	return false
}

// end reports whether only white space is left.
func (d *chunkDecoder) end() bool {
	d.ws()
	return d.i == len(d.data)
}

// literal consumes lit if the input continues with it.
func (d *chunkDecoder) literal(lit string) bool {
	d.ws()
	if len(d.data)-d.i >= len(lit) && string(d.data[d.i:d.i+len(lit)]) == lit {
		d.i += len(lit)
		return true
	}
	return false
}

func (d *chunkDecoder) null() bool { return d.literal("null") }

// object reads an object, calling field with each key when the input is at its value.
func (d *chunkDecoder) object(field func(key []byte) bool) bool {
	if !d.consume('{') {
		return false
	}
	if d.consume('}') {
		return true
	}
	for {
		key, ok := d.key()
		if !ok || !d.consume(':') || !field(key) {
			return false
		}
		if d.consume(',') {
			continue
		}
		return d.consume('}')
	}
}

// array reads an array, calling elem when the input is at each element.
func (d *chunkDecoder) array(elem func() bool) bool {
	if !d.consume('[') {
		return false
	}
	if d.consume(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if d.consume(',') {
			continue
		}
		return d.consume(']')
	}
}

// key reads an object key made of printable ASCII without escapes.
func (d *chunkDecoder) key() ([]byte, bool) {
	if !d.consume('"') {
		return nil, false
	}
	start := d.i
	for d.i < len(d.data) {
		c := d.data[d.i]
		if c == '"' {
			d.i++
			return d.data[start : d.i-1], true
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			return nil, false
		}
		d.i++
	}
	return nil, false
}

// str reads a string into s; null leaves s as it is.
func (d *chunkDecoder) str(s *string) bool {
	if d.null() {
		return true
	}
	if !d.consume('"') {
		return false
	}
	start := d.i
	for d.i < len(d.data) {
		c := d.data[d.i]
		switch {
		case c == '"':
			*s = string(d.data[start:d.i])
			d.i++
			return true
		case c == '\\' || c < 0x20:
			return d.strSlow(s, start)
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(d.data[d.i:])
			if r == utf8.RuneError && size == 1 {
				return d.strSlow(s, start)
			}
			d.i += size
			continue
		}
		d.i++
	}
	return false
}

// strSlow reads a string whose text starts at start and holds escapes or invalid UTF-8,
// unescaping as encoding/json does: an invalid surrogate or byte becomes U+FFFD.
func (d *chunkDecoder) strSlow(s *string, start int) bool {
	b := make([]byte, 0, len(d.data)-start)
	i := start
	for i < len(d.data) {
		c := d.data[i]
		switch {
		case c == '"':
			*s = string(b)
			d.i = i + 1
			return true
		case c == '\\':
			if i+1 >= len(d.data) {
				return false
			}
			e := d.data[i+1]
			switch e {
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
				r := getu4(d.data[i:])
				if r < 0 {
					return false
				}
				i += 6
				if utf16.IsSurrogate(r) {
					if dec := utf16.DecodeRune(r, getu4(d.data[i:])); dec != unicode.ReplacementChar {
						i += 6
						b = utf8.AppendRune(b, dec)
						continue
					}
					r = unicode.ReplacementChar
				}
				b = utf8.AppendRune(b, r)
				continue
			default:
				return false
			}
			i += 2
		case c < 0x20:
			return false
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			r, size := utf8.DecodeRune(d.data[i:])
			b = utf8.AppendRune(b, r) // an invalid byte decodes as U+FFFD
			i += size
		}
	}
	return false
}

// getu4 decodes the \uXXXX escape s starts with, or returns -1.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// integer reads an integer of at most 18 digits into n; null leaves n as it is. A fraction or
// exponent (which encoding/json refuses for an int) or a longer number is left to it.
func (d *chunkDecoder) integer(n *int) bool {
	if d.null() {
		return true
	}
	d.ws()
	i := d.i
	neg := i < len(d.data) && d.data[i] == '-'
	if neg {
		i++
	}
	start := i
	for i < len(d.data) && '0' <= d.data[i] && d.data[i] <= '9' {
		i++
	}
	digits := d.data[start:i]
	if len(digits) == 0 || len(digits) > 18 || (digits[0] == '0' && len(digits) > 1) {
		return false
	}
	if i < len(d.data) && (d.data[i] == '.' || d.data[i] == 'e' || d.data[i] == 'E') {
		return false
	}
	v := 0
	for _, c := range digits {
		v = v*10 + int(c-'0')
	}
	if neg {
		v = -v
	}
	*n = v
	d.i = i
	return true
}

// skip reads any one valid JSON value.
func (d *chunkDecoder) skip(depth int) bool {
	if depth > maxSkipDepth {
		return false
	}
	d.ws()
	if d.i >= len(d.data) {
		return false
	}
	switch c := d.data[d.i]; {
	case c == '"':
		return d.skipString()
	case c == '{':
		d.i++
		if d.consume('}') {
			return true
		}
		for {
			d.ws()
			if !d.skipString() || !d.consume(':') || !d.skip(depth+1) {
				return false
			}
			if d.consume(',') {
				continue
			}
			return d.consume('}')
		}
	case c == '[':
		d.i++
		if d.consume(']') {
			return true
		}
		for {
			if !d.skip(depth + 1) {
				return false
			}
			if d.consume(',') {
				continue
			}
			return d.consume(']')
		}
	case c == 't':
		return d.literal("true")
	case c == 'f':
		return d.literal("false")
	case c == 'n':
		return d.literal("null")
	case c == '-' || ('0' <= c && c <= '9'):
		return d.skipNumber()
	}
	return false
}

// skipString reads a string as JSON's grammar has it (any byte but a control byte, escapes
// well formed).
func (d *chunkDecoder) skipString() bool {
	if d.i >= len(d.data) || d.data[d.i] != '"' {
		return false
	}
	for i := d.i + 1; i < len(d.data); i++ {
		switch c := d.data[i]; {
		case c == '"':
			d.i = i + 1
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if i+1 >= len(d.data) {
				return false
			}
			switch d.data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if getu4(d.data[i:]) < 0 {
					return false
				}
				i += 5
			default:
				return false
			}
		}
	}
	return false
}

// skipNumber reads a number as JSON's grammar has it.
func (d *chunkDecoder) skipNumber() bool {
	i := d.i
	digits := func() int {
		s := i
		for i < len(d.data) && '0' <= d.data[i] && d.data[i] <= '9' {
			i++
		}
		return i - s
	}
	if i < len(d.data) && d.data[i] == '-' {
		i++
	}
	if i < len(d.data) && d.data[i] == '0' {
		i++
	} else if digits() == 0 {
		return false
	}
	if i < len(d.data) && d.data[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(d.data) && (d.data[i] == 'e' || d.data[i] == 'E') {
		i++
		if i < len(d.data) && (d.data[i] == '+' || d.data[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	d.i = i
	return true
}
