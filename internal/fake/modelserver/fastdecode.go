package modelserver

import (
	"bytes"
	"strings"

	"github.com/switchboard-bot/switchboard/internal/jsonwire"
)

// The server decodes every request it is sent, and in the load benchmarks it is sent one per
// message: encoding/json, reading a body of a few KB twice (once to check it, once to fill the
// struct through reflection), was a fifth of the fakes' CPU, which share the machine with the
// bot they measure. decodeFast reads the common shape of a request in one pass and gives up —
// ok false, the caller then decodes with encoding/json — on anything it does not read exactly
// as encoding/json would: a key that differs from a field's name only in case, a key given
// twice, a null, content given as parts, a tool call in a message, a number that is not an int.
// FuzzDecodeFast checks that what it reads is what encoding/json reads.

// maxFastDepth bounds the nesting of values decodeFast skips or keeps raw (tool parameters,
// tool_choice, unknown keys), as encoding/json bounds a document's.
const maxFastDepth = 10000

// fastReader is decodeFast's cursor over the body; any read that fails leaves ok false.
type fastReader struct {
	b     []byte
	i     int
	ok    bool
	depth int // the objects and arrays the cursor is in
}

func (r *fastReader) ws() { r.i = jsonwire.SkipWhitespace(r.b, r.i) }

// byte reads c after optional whitespace.
func (r *fastReader) byte(c byte) bool {
	r.ws()
	if r.i < len(r.b) && r.b[r.i] == c {
		r.i++
		return true
	}
	return false
}

// peek returns the next byte after whitespace (0 at the end).
func (r *fastReader) peek() byte {
	r.ws()
	if r.i < len(r.b) {
		return r.b[r.i]
	}
	return 0
}

func (r *fastReader) str() string {
	r.ws()
	s, end, ok := jsonwire.Unquote(r.b, r.i)
	if !ok {
		r.ok = false
		return ""
	}
	r.i = end
	return s
}

func (r *fastReader) int() int {
	r.ws()
	v, end, ok := jsonwire.ReadInt(r.b, r.i)
	if !ok {
		r.ok = false
		return 0
	}
	r.i = end
	return v
}

func (r *fastReader) bool() bool {
	r.ws()
	switch {
	case bytes.HasPrefix(r.b[r.i:], []byte("true")):
		r.i += 4
		return true
	case bytes.HasPrefix(r.b[r.i:], []byte("false")):
		r.i += 5
		return false
	}
	r.ok = false
	return false
}

// raw returns a copy of the next value's bytes, as json.RawMessage keeps them.
func (r *fastReader) raw() []byte {
	r.ws()
	end, ok := jsonwire.SkipValue(r.b, r.i, maxFastDepth-r.depth)
	if !ok {
		r.ok = false
		return nil
	}
	v := append([]byte(nil), r.b[r.i:end]...)
	r.i = end
	return v
}

func (r *fastReader) skip() {
	r.ws()
	end, ok := jsonwire.SkipValue(r.b, r.i, maxFastDepth-r.depth)
	if !ok {
		r.ok = false
		return
	}
	r.i = end
}

// object reads an object, calling field for each key; field reads the value (or sets r.ok
// false). fields names the keys field knows: a key that matches one only when case is ignored
// gives up, as does a known key given twice, or a null.
func (r *fastReader) object(fields []string, field func(k int)) {
	if !r.byte('{') {
		r.ok = false
		return
	}
	r.depth++
	defer func() { r.depth-- }()
	var seen uint64
	if r.byte('}') {
		return
	}
	for r.ok {
		key := r.str()
		if !r.ok || !r.byte(':') {
			r.ok = false
			return
		}
		k := knownKey(fields, key)
		switch {
		case k == -2, k >= 0 && seen&(1<<k) != 0, k >= 0 && r.peek() == 'n':
			r.ok = false
			return
		case k >= 0:
			seen |= 1 << k
			field(k)
		default:
			r.skip()
		}
		if r.byte('}') {
			return
		}
		if !r.byte(',') {
			r.ok = false
		}
	}
}

// knownKey is key's index in fields, -1 for a key none of them is, -2 for one that equals a
// field only when case is ignored (encoding/json would take it; decodeFast does not).
func knownKey(fields []string, key string) int {
	for i, f := range fields {
		if key == f {
			return i
		}
	}
	for _, f := range fields {
		if strings.EqualFold(key, f) {
			return -2
		}
	}
	return -1
}

// array reads an array, calling elem before each element (which elem reads).
func (r *fastReader) array(elem func()) {
	if !r.byte('[') {
		r.ok = false
		return
	}
	r.depth++
	defer func() { r.depth-- }()
	if r.byte(']') {
		return
	}
	for r.ok {
		elem()
		if r.byte(']') {
			return
		}
		if !r.byte(',') {
			r.ok = false
		}
	}
}

var (
	requestFields  = []string{"model", "messages", "tools", "tool_choice", "stream", "stream_options", "max_tokens", "max_completion_tokens"}
	messageFields  = []string{"role", "content", "reasoning_content", "tool_calls", "tool_call_id", "name"}
	toolFields     = []string{"type", "function"}
	functionFields = []string{"name", "description", "parameters"}
	optionsFields  = []string{"include_usage"}
)

// decodeFast reads body as encoding/json would into a Request, when it can: ok false means it
// gave up and the body is to be decoded the slow way (which also reports what is wrong).
func decodeFast(body []byte) (req Request, ok bool) {
	r := &fastReader{b: body, ok: true}
	r.object(requestFields, func(k int) {
		switch k {
		case 0:
			req.Model = r.str()
		case 1:
			req.Messages = []Message{}
			r.array(func() { req.Messages = append(req.Messages, r.message()) })
		case 2:
			req.Tools = []Tool{}
			r.array(func() { req.Tools = append(req.Tools, r.tool()) })
		case 3:
			req.ToolChoice = r.raw()
		case 4:
			req.Stream = r.bool()
		case 5:
			req.StreamOptions = &StreamOptions{}
			r.object(optionsFields, func(int) { req.StreamOptions.IncludeUsage = r.bool() })
		case 6:
			req.MaxTokens = r.int()
		case 7:
			req.MaxCompletionTokens = r.int()
		}
	})
	r.ws()
	if !r.ok || r.i != len(body) {
		return Request{}, false
	}
	return req, true
}

// message reads one message whose content is a string; content given as parts, and tool
// calls, are left to encoding/json.
func (r *fastReader) message() (m Message) {
	r.object(messageFields, func(k int) {
		switch k {
		case 0:
			m.Role = r.str()
		case 1:
			if r.peek() != '"' {
				r.ok = false
				return
			}
			m.Content = r.str()
		case 2:
			m.ReasoningContent = r.str()
		case 3:
			r.ok = false
		case 4:
			m.ToolCallID = r.str()
		case 5:
			m.Name = r.str()
		}
	})
	return m
}

func (r *fastReader) tool() (t Tool) {
	r.object(toolFields, func(k int) {
		if k == 0 {
			t.Type = r.str()
			return
		}
		r.object(functionFields, func(k int) {
			switch k {
			case 0:
				t.Function.Name = r.str()
			case 1:
				t.Function.Description = r.str()
			case 2:
				t.Function.Parameters = r.raw()
			}
		})
	})
	return t
}
