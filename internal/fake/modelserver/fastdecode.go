package modelserver

import (
	"encoding/json"

	"github.com/switchboard-bot/switchboard/internal/jsonwire"
)

// The server decodes every request it is sent, and in the load benchmarks it is sent one per
// message: encoding/json, reading a body of a few KB twice (once to check it, once to fill the
// struct through reflection), was a fifth of the fakes' CPU, which share the machine with the
// bot they measure. decodeFast reads the common shape of a request in one pass and gives up —
// ok false, the caller then decodes with encoding/json — on anything it does not read exactly
// as encoding/json would: a key that differs from a field's name only in case, a key given
// twice, a null tool_choice or parameters, content given as parts, a tool call in a message, a
// number that is not an int. FuzzDecodeFast checks that what it reads is what encoding/json
// reads.

var (
	// tool_choice (bit 3) and a function's parameters (bit 2) are json.RawMessage.
	requestFields  = jsonwire.Keys{Names: []string{"model", "messages", "tools", "tool_choice", "stream", "stream_options", "max_tokens", "max_completion_tokens"}, Raw: 1 << 3}
	messageFields  = jsonwire.Keys{Names: []string{"role", "content", "reasoning_content", "tool_calls", "tool_call_id", "name"}}
	toolFields     = jsonwire.Keys{Names: []string{"type", "function"}}
	functionFields = jsonwire.Keys{Names: []string{"name", "description", "parameters"}, Raw: 1 << 2}
	optionsFields  = jsonwire.Keys{Names: []string{"include_usage"}}
)

// decodeFast reads body as encoding/json would into a Request, when it can: ok false means it
// gave up and the body is to be decoded the slow way (which also reports what is wrong).
func decodeFast(body []byte) (req Request, ok bool) {
	r := jsonwire.NewReader(body)
	r.Object(&requestFields, func(k int) {
		switch k {
		case 0:
			req.Model = r.Str()
		case 1:
			req.Messages = []Message{}
			r.Array(func() { req.Messages = append(req.Messages, message(r)) })
		case 2:
			req.Tools = []Tool{}
			r.Array(func() { req.Tools = append(req.Tools, tool(r)) })
		case 3:
			req.ToolChoice = append(json.RawMessage(nil), r.Raw()...)
		case 4:
			req.Stream = r.Bool()
		case 5:
			req.StreamOptions = &StreamOptions{}
			r.Object(&optionsFields, func(int) { req.StreamOptions.IncludeUsage = r.Bool() })
		case 6:
			req.MaxTokens = r.Int()
		case 7:
			req.MaxCompletionTokens = r.Int()
		}
	})
	if !r.End() {
		return Request{}, false
	}
	return req, true
}

// message reads one message whose content is a string; content given as parts, and tool
// calls, are left to encoding/json.
func message(r *jsonwire.Reader) (m Message) {
	r.Object(&messageFields, func(k int) {
		switch k {
		case 0:
			m.Role = r.Str()
		case 1:
			// A string; a null is taken as absent (""), as decodeSlow's contentText reads
			// it, and parts are left to encoding/json.
			if r.Peek() != '"' {
				r.Fail()
				return
			}
			m.Content = r.Str()
		case 2:
			m.ReasoningContent = r.Str()
		case 3:
			r.Fail()
		case 4:
			m.ToolCallID = r.Str()
		case 5:
			m.Name = r.Str()
		}
	})
	return m
}

func tool(r *jsonwire.Reader) (t Tool) {
	r.Object(&toolFields, func(k int) {
		if k == 0 {
			t.Type = r.Str()
			return
		}
		r.Object(&functionFields, func(k int) {
			switch k {
			case 0:
				t.Function.Name = r.Str()
			case 1:
				t.Function.Description = r.Str()
			case 2:
				t.Function.Parameters = append(json.RawMessage(nil), r.Raw()...)
			}
		})
	})
	return t
}
