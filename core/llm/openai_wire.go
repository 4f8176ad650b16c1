package llm

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	openai "github.com/sashabaranov/go-openai"

	"github.com/switchboard-bot/switchboard/internal/jsonwire"
)

// The request body is encoded here rather than by go-openai: its encoding runs every message
// and tool through its own MarshalJSON and then re-compacts the result, which made the
// encoding the largest per-call cost of a model call. The bytes are exactly those go-openai
// would send for the same openai.ChatCompletionRequest (openai_wire_test.go checks it
// against go-openai's own encoding); capturingDoer puts them on the HTTP request in place of
// go-openai's encoding of a stub request that carries only what go-openai itself reads.

// wireBody is the JSON body of one chat-completions call: req with model filled in, streamed,
// with usage asked for. System sections are joined by a blank line into one system message
// ahead of the history; an empty tool result is sent as "(no output)" because servers refuse
// a tool message without content.
func (p *OpenAI) wireBody(req Request, model string) ([]byte, error) {
	var small [16][]byte // an agent's tools, usually without a heap allocation
	tools := small[:0]
	size := 128 + len(model)
	for _, t := range req.Tools {
		w, err := p.tools.encoded(t)
		if err != nil {
			return nil, fmt.Errorf("tool %q: %w", t.Name, err)
		}
		tools = append(tools, w)
		size += len(w) + 1
	}
	for _, s := range req.System {
		size += len(s) + 4
	}
	for _, m := range req.Messages {
		size += 48 + len(m.Content) + len(m.ToolCallID)
		for _, img := range m.Images {
			size += 64 + len(img.MIME) + base64.StdEncoding.EncodedLen(len(img.Data))
		}
		for _, tc := range m.ToolCalls {
			size += 64 + len(tc.ID) + len(tc.Name) + len(tc.Arguments)*11/10
		}
	}

	b := make([]byte, 0, size)
	b = append(b, `{"model":`...)
	b = jsonwire.AppendQuote(b, model)
	b = append(b, `,"messages":[`...)
	first := true
	for _, s := range req.System {
		if strings.TrimSpace(s) == "" {
			continue
		}
		if first {
			b = append(b, `{"role":"system","content":"`...)
			first = false
		} else {
			b = append(b, `\n\n`...)
		}
		b = jsonwire.AppendEscaped(b, s)
	}
	if !first {
		b = append(b, `"}`...)
	}
	for _, m := range req.Messages {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendMessage(b, m)
	}
	b = append(b, ']')
	if req.MaxTokens != 0 {
		b = append(b, `,"max_tokens":`...)
		b = strconv.AppendInt(b, int64(req.MaxTokens), 10)
	}
	b = append(b, `,"stream":true`...)
	if len(tools) > 0 {
		b = append(b, `,"tools":[`...)
		for i, w := range tools {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, w...)
		}
		b = append(b, ']')
	}
	b = append(b, `,"stream_options":{"include_usage":true}}`...)
	return b, nil
}

// appendMessage appends m as go-openai encodes an openai.ChatCompletionMessage: a user message
// with images as one whose MultiContent holds a text part (none when the content is empty) and
// then an image_url part per image, each a data: URL; any other message with its content as a
// string. Images on a message of another role are not sent: the API takes them from users only.
func appendMessage(b []byte, m Message) []byte {
	b = append(b, `{"role":`...)
	b = jsonwire.AppendQuote(b, string(m.Role))
	content := m.Content
	if m.Role == RoleTool && content == "" {
		content = "(no output)"
	}
	if m.Role == RoleUser && len(m.Images) > 0 {
		b = appendParts(b, content, m.Images)
	} else if content != "" {
		b = append(b, `,"content":`...)
		b = jsonwire.AppendQuote(b, content)
	}
	if len(m.ToolCalls) > 0 {
		b = append(b, `,"tool_calls":[`...)
		for i, tc := range m.ToolCalls {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '{')
			if tc.ID != "" {
				b = append(b, `"id":`...)
				b = jsonwire.AppendQuote(b, tc.ID)
				b = append(b, ',')
			}
			b = append(b, `"type":"function","function":{`...)
			if tc.Name != "" {
				b = append(b, `"name":`...)
				b = jsonwire.AppendQuote(b, tc.Name)
			}
			if tc.Arguments != "" {
				if tc.Name != "" {
					b = append(b, ',')
				}
				b = append(b, `"arguments":`...)
				b = jsonwire.AppendQuote(b, tc.Arguments)
			}
			b = append(b, `}}`...)
		}
		b = append(b, ']')
	}
	if m.ToolCallID != "" {
		b = append(b, `,"tool_call_id":`...)
		b = jsonwire.AppendQuote(b, m.ToolCallID)
	}
	return append(b, '}')
}

// appendParts appends the content of a user message with images as go-openai encodes a
// MultiContent: `,"content":[{"type":"text","text":…},{"type":"image_url","image_url":{"url":…}}]`.
func appendParts(b []byte, text string, images []Image) []byte {
	b = append(b, `,"content":[`...)
	if text != "" {
		b = append(b, `{"type":"text","text":`...)
		b = jsonwire.AppendQuote(b, text)
		b = append(b, '}')
	}
	for i, img := range images {
		if i > 0 || text != "" {
			b = append(b, ',')
		}
		b = append(b, `{"type":"image_url","image_url":{"url":"data:`...)
		b = jsonwire.AppendEscaped(b, img.MIME)
		b = append(b, `;base64,`...)
		// Base64's alphabet is all bytes JSON writes as they are, so the encoding goes straight
		// into the body, without a string of it first.
		b = base64.StdEncoding.AppendEncode(b, img.Data)
		b = append(b, `"}}`...)
	}
	return append(b, ']')
}

// toolCache bounds: specs of one name beyond maxToolVariants (a tool whose schema changes per
// call), or any spec once maxCachedTools are kept, are encoded on every call instead.
const (
	maxToolVariants = 8
	maxCachedTools  = 1024
)

// toolCache holds the wire encoding of each tool spec seen. An agent offers the same tools on
// every call, so each is encoded once. Safe for concurrent use.
type toolCache struct {
	mu     sync.RWMutex
	byName map[string][]*wireTool
	n      int
}

type wireTool struct {
	description string
	parameters  []byte
	wire        []byte // go-openai's encoding of the tool; never modified
}

// encoded returns t as go-openai encodes it in a request's "tools". A tool without parameters
// is offered as taking an empty object. It fails when t.Parameters is not valid JSON.
func (c *toolCache) encoded(t ToolSpec) ([]byte, error) {
	c.mu.RLock()
	w := c.find(t)
	c.mu.RUnlock()
	if w != nil {
		return w, nil
	}

	var params any = t.Parameters
	if len(t.Parameters) == 0 {
		params = map[string]any{"type": "object", "properties": map[string]any{}}
	}
	wire, err := json.Marshal(openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
		Name: t.Name, Description: t.Description, Parameters: params}})
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if w := c.find(t); w != nil {
		return w, nil // another call cached it meanwhile
	}
	if len(c.byName[t.Name]) < maxToolVariants && c.n < maxCachedTools {
		if c.byName == nil {
			c.byName = map[string][]*wireTool{}
		}
		v := &wireTool{description: t.Description, parameters: bytes.Clone(t.Parameters), wire: wire}
		c.byName[t.Name] = append(c.byName[t.Name], v)
		c.n++
	}
	return wire, nil
}

// find returns the cached encoding of t, nil if there is none. The caller holds c.mu.
func (c *toolCache) find(t ToolSpec) []byte {
	for _, v := range c.byName[t.Name] {
		if v.description == t.Description && bytes.Equal(v.parameters, t.Parameters) {
			return v.wire
		}
	}
	return nil
}
