package modelserver

import (
	"encoding/json"
	"net/http"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/switchboard-bot/switchboard/internal/jsonwire"
)

// created is the fixed "created" timestamp of every answer, so answers are deterministic.
const created = 1700000000

type chunk struct {
	ID                string        `json:"id"`
	Object            string        `json:"object"`
	Created           int64         `json:"created"`
	Model             string        `json:"model"`
	SystemFingerprint string        `json:"system_fingerprint"`
	Choices           []chunkChoice `json:"choices"`
	Usage             *Usage        `json:"usage,omitempty"`
}

type chunkChoice struct {
	Index        int             `json:"index"`
	Delta        chunkDelta      `json:"delta"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
}

type chunkDelta struct {
	Role             string          `json:"role,omitempty"`
	Content          *string         `json:"content,omitempty"`
	ReasoningContent *string         `json:"reasoning_content,omitempty"`
	ToolCalls        []chunkToolCall `json:"tool_calls,omitempty"`
}

type chunkToolCall struct {
	Index    int           `json:"index"`
	ID       string        `json:"id,omitempty"`
	Type     string        `json:"type,omitempty"`
	Function chunkFunction `json:"function"`
}

type chunkFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

var jsonNull = json.RawMessage("null")

// sse writes one chunk at a time as a server-sent event and flushes it.
type sse struct {
	w     http.ResponseWriter
	flush func()
	buf   []byte
	base  chunk
	sent  int // chunks with content, reasoning or tool calls
}

func (e *sse) send(c chunk) {
	e.buf = append(e.buf[:0], "data: "...)
	e.buf = appendChunk(e.buf, &c)
	e.buf = append(e.buf, "\n\n"...)
	_, _ = e.w.Write(e.buf)
	e.flush()
}

// appendChunk appends c as json.Marshal encodes it (TestAppendChunkIsJSONMarshal), without
// reflection: the fake's own cost per chunk under load.
func appendChunk(b []byte, c *chunk) []byte {
	b = append(b, `{"id":`...)
	b = jsonwire.AppendQuote(b, c.ID)
	b = append(b, `,"object":`...)
	b = jsonwire.AppendQuote(b, c.Object)
	b = append(b, `,"created":`...)
	b = strconv.AppendInt(b, c.Created, 10)
	b = append(b, `,"model":`...)
	b = jsonwire.AppendQuote(b, c.Model)
	b = append(b, `,"system_fingerprint":`...)
	b = jsonwire.AppendQuote(b, c.SystemFingerprint)
	b = append(b, `,"choices":`...)
	if c.Choices == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range c.Choices {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendChoice(b, &c.Choices[i])
		}
		b = append(b, ']')
	}
	if c.Usage != nil {
		b = append(b, `,"usage":{"prompt_tokens":`...)
		b = strconv.AppendInt(b, int64(c.Usage.PromptTokens), 10)
		b = append(b, `,"completion_tokens":`...)
		b = strconv.AppendInt(b, int64(c.Usage.CompletionTokens), 10)
		b = append(b, `,"total_tokens":`...)
		b = strconv.AppendInt(b, int64(c.Usage.TotalTokens), 10)
		b = append(b, '}')
	}
	return append(b, '}')
}

func appendChoice(b []byte, ch *chunkChoice) []byte {
	b = append(b, `{"index":`...)
	b = strconv.AppendInt(b, int64(ch.Index), 10)
	b = append(b, `,"delta":{`...)
	d := &ch.Delta
	sep := false
	field := func(name string) {
		if sep {
			b = append(b, ',')
		}
		sep = true
		b = append(b, name...)
	}
	if d.Role != "" {
		field(`"role":`)
		b = jsonwire.AppendQuote(b, d.Role)
	}
	if d.Content != nil {
		field(`"content":`)
		b = jsonwire.AppendQuote(b, *d.Content)
	}
	if d.ReasoningContent != nil {
		field(`"reasoning_content":`)
		b = jsonwire.AppendQuote(b, *d.ReasoningContent)
	}
	if len(d.ToolCalls) > 0 {
		field(`"tool_calls":[`)
		for i, tc := range d.ToolCalls {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"index":`...)
			b = strconv.AppendInt(b, int64(tc.Index), 10)
			if tc.ID != "" {
				b = append(b, `,"id":`...)
				b = jsonwire.AppendQuote(b, tc.ID)
			}
			if tc.Type != "" {
				b = append(b, `,"type":`...)
				b = jsonwire.AppendQuote(b, tc.Type)
			}
			b = append(b, `,"function":{`...)
			if tc.Function.Name != "" {
				b = append(b, `"name":`...)
				b = jsonwire.AppendQuote(b, tc.Function.Name)
				b = append(b, ',')
			}
			b = append(b, `"arguments":`...)
			b = jsonwire.AppendQuote(b, tc.Function.Arguments)
			b = append(b, "}}"...)
		}
		b = append(b, ']')
	}
	b = append(b, `},"logprobs":`...)
	if ch.Logprobs == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, ch.Logprobs...)
	}
	b = append(b, `,"finish_reason":`...)
	if ch.FinishReason == nil {
		b = append(b, "null"...)
	} else {
		b = jsonwire.AppendQuote(b, *ch.FinishReason)
	}
	return append(b, '}')
}

func (e *sse) delta(d chunkDelta, finish *string) {
	c := e.base
	c.Choices = []chunkChoice{{Delta: d, Logprobs: jsonNull, FinishReason: finish}}
	e.send(c)
}

// stream answers req with reply as SSE, exactly as the real API frames it.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, req Request, reply Reply, id int64) {
	flusher, _ := w.(http.Flusher)
	e := &sse{w: w, flush: func() {
		if flusher != nil {
			flusher.Flush()
		}
	}}
	e.base = chunk{ID: "chatcmpl-fake-" + strconv.FormatInt(id, 10), Object: "chat.completion.chunk",
		Created: created, Model: req.Model, SystemFingerprint: "fp_fake"}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)

	for range reply.KeepAlives {
		_, _ = w.Write([]byte(": keep-alive\n\n"))
	}
	empty := ""
	e.delta(chunkDelta{Role: "assistant", Content: &empty}, nil)

	size := reply.ChunkSize
	if size <= 0 {
		size = 8
	}
	// pause runs between chunks; after the first piece of the answer it applies the stream
	// faults. It reports whether streaming goes on.
	pause := func() bool {
		e.sent++
		if e.sent == 1 && reply.HangMidStream {
			s.wait(r.Context(), -1)
			return false
		}
		if e.sent == 1 && reply.DropMidStream {
			panic(http.ErrAbortHandler) // net/http closes the connection without a clean end
		}
		return reply.ChunkDelay == 0 || s.wait(r.Context(), reply.ChunkDelay)
	}

	for _, piece := range split(reply.Reasoning, size) {
		p := piece
		e.delta(chunkDelta{ReasoningContent: &p}, nil)
		if !pause() {
			return
		}
	}
	for _, piece := range split(reply.Content, size) {
		p := piece
		e.delta(chunkDelta{Content: &p}, nil)
		if !pause() {
			return
		}
	}
	for i, tc := range reply.ToolCalls {
		callID := tc.ID
		if callID == "" {
			callID = "call_" + strconv.FormatInt(id, 10) + "_" + strconv.Itoa(i)
		}
		e.delta(chunkDelta{ToolCalls: []chunkToolCall{{Index: i, ID: callID, Type: "function",
			Function: chunkFunction{Name: tc.Name}}}}, nil)
		if !pause() {
			return
		}
		for _, piece := range split(tc.Arguments, size) {
			e.delta(chunkDelta{ToolCalls: []chunkToolCall{{Index: i, Function: chunkFunction{Arguments: piece}}}}, nil)
			if !pause() {
				return
			}
		}
	}
	finish := finishReason(reply)
	e.delta(chunkDelta{}, &finish)
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		u := usageFor(req, reply)
		c := e.base
		c.Choices = []chunkChoice{}
		c.Usage = &u
		e.send(c)
	}
	_, _ = w.Write([]byte("data: [DONE]\n\n"))
	e.flush()
}

type completion struct {
	ID                string             `json:"id"`
	Object            string             `json:"object"`
	Created           int64              `json:"created"`
	Model             string             `json:"model"`
	SystemFingerprint string             `json:"system_fingerprint"`
	Choices           []completionChoice `json:"choices"`
	Usage             Usage              `json:"usage"`
}

type completionChoice struct {
	Index        int               `json:"index"`
	Message      completionMessage `json:"message"`
	Logprobs     json.RawMessage   `json:"logprobs"`
	FinishReason string            `json:"finish_reason"`
}

type completionMessage struct {
	Role             string         `json:"role"`
	Content          *string        `json:"content"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	ToolCalls        []WireToolCall `json:"tool_calls,omitempty"`
}

// writeCompletion answers a non-streaming request with one JSON body.
func writeCompletion(w http.ResponseWriter, req Request, reply Reply, id int64) {
	msg := completionMessage{Role: "assistant", ReasoningContent: reply.Reasoning}
	if reply.Content != "" || len(reply.ToolCalls) == 0 {
		c := reply.Content
		msg.Content = &c
	}
	for i, tc := range reply.ToolCalls {
		callID := tc.ID
		if callID == "" {
			callID = "call_" + strconv.FormatInt(id, 10) + "_" + strconv.Itoa(i)
		}
		msg.ToolCalls = append(msg.ToolCalls, WireToolCall{ID: callID, Type: "function",
			Function: WireFunction{Name: tc.Name, Arguments: tc.Arguments}})
	}
	body, _ := json.Marshal(completion{
		ID: "chatcmpl-fake-" + strconv.FormatInt(id, 10), Object: "chat.completion", Created: created,
		Model: req.Model, SystemFingerprint: "fp_fake",
		Choices: []completionChoice{{Message: msg, Logprobs: jsonNull, FinishReason: finishReason(reply)}},
		Usage:   usageFor(req, reply),
	})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

func finishReason(reply Reply) string {
	switch {
	case reply.Finish != "":
		return reply.Finish
	case len(reply.ToolCalls) > 0:
		return "tool_calls"
	default:
		return "stop"
	}
}

// usageFor is the reply's usage, or one counted in words when the reply has none.
func usageFor(req Request, reply Reply) Usage {
	if reply.Usage != nil {
		return *reply.Usage
	}
	var u Usage
	for _, m := range req.Messages {
		u.PromptTokens += words(m.Content)
	}
	u.CompletionTokens = words(reply.Content) + words(reply.Reasoning)
	for _, tc := range reply.ToolCalls {
		u.CompletionTokens += 1 + len(tc.Arguments)/4
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}

// words is len(strings.Fields(s)), counted without building the slice.
func words(s string) int {
	n, in := 0, false
	for _, r := range s {
		if unicode.IsSpace(r) {
			in = false
		} else if !in {
			in = true
			n++
		}
	}
	return n
}

// split cuts s into pieces of about size bytes without splitting a UTF-8 sequence.
func split(s string, size int) []string {
	if s == "" {
		return nil
	}
	out := make([]string, 0, len(s)/size+1)
	for len(s) > size {
		cut := size
		for cut < len(s) && !utf8.RuneStart(s[cut]) {
			cut++
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}
