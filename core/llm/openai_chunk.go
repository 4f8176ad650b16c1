package llm

import (
	"encoding/json"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"

	"github.com/switchboard-bot/switchboard/internal/jsonwire"
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

// maxSkipDepth bounds the nesting of the unknown values chunkDecoder skips (jsonwire.SkipValue
// recurses once a level); anything deeper is left to encoding/json.
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
	d.ws()
	end, ok := jsonwire.SkipValue(d.data, d.i, maxSkipDepth)
	d.i = end
	return ok
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

func (d *chunkDecoder) ws() { d.i = jsonwire.SkipWhitespace(d.data, d.i) }

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
	if d.null() { // which has skipped the whitespace before the value
		return true
	}
	v, end, ok := jsonwire.Unquote(d.data, d.i)
	*s, d.i = v, end // on failure, decodeChunk starts over with encoding/json
	return ok
}

// integer reads an integer that fits an int into n; null leaves n as it is. A fraction or
// exponent (which encoding/json refuses for an int) or a number too large is left to it.
func (d *chunkDecoder) integer(n *int) bool {
	if d.null() { // which has skipped the whitespace before the value
		return true
	}
	v, end, ok := jsonwire.ReadInt(d.data, d.i)
	*n, d.i = v, end // on failure, decodeChunk starts over with encoding/json
	return ok
}
