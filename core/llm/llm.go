// Package llm holds the model providers the agent runtime talks to: an OpenAI-compatible client
// (DeepSeek by default, any base URL), a scripted provider for tests, and an offline demo.
//
// Every provider speaks one small vocabulary: a Request of messages and tool specs goes in, a
// stream of Deltas comes out while the model writes, and one assembled Response closes the call.
package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Role is who wrote a message in the conversation sent to the model.
type Role string

// The roles of the chat-completions wire format.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// ToolCall is one function call the model asked for. Arguments is the raw JSON text the model
// wrote; it may be invalid, and the runtime — not the provider — decides what that means.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Message is one entry of the history sent to the model.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content,omitempty"`
	// ToolCalls is set on assistant messages that called tools.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID is set on tool messages: the call this message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Images go with a user message as image parts of its content, for models that take
	// images. They are never stored: a thread's history keeps text only.
	Images []Image `json:"-"`
}

// Image is one picture sent to the model with a user message: its bytes and their type
// (image/png, image/jpeg, image/gif or image/webp), sniffed from the bytes.
type Image struct {
	MIME string
	Data []byte
}

// ToolSpec describes one tool offered to the model. Parameters is a JSON Schema object.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// Request is one model call. System sections are sent, in order, as one system message ahead of
// Messages.
type Request struct {
	// Provider names the endpoint that answers the call, one of those a Providers knows ("":
	// its default). A single provider ignores it.
	Provider  string
	Model     string
	System    []string
	Messages  []Message
	Tools     []ToolSpec
	MaxTokens int
}

// Clone returns a deep copy, so a hook may change the copy without touching the original.
func (r Request) Clone() Request {
	c := r
	c.System = append([]string(nil), r.System...)
	if r.Messages != nil {
		c.Messages = make([]Message, len(r.Messages))
		for i, m := range r.Messages {
			m.ToolCalls = append([]ToolCall(nil), m.ToolCalls...)
			m.Images = append([]Image(nil), m.Images...) // the bytes are shared: nobody writes them
			c.Messages[i] = m
		}
	}
	if r.Tools != nil {
		c.Tools = make([]ToolSpec, len(r.Tools))
		for i, t := range r.Tools {
			t.Parameters = append(json.RawMessage(nil), t.Parameters...)
			c.Tools[i] = t
		}
	}
	return c
}

// FinishReason says why the model stopped writing.
type FinishReason string

// Finish reasons, normalized across providers.
const (
	FinishStop      FinishReason = "stop"
	FinishToolCalls FinishReason = "tool_calls"
	FinishLength    FinishReason = "length"
	FinishRefusal   FinishReason = "content_filter"
)

// Usage counts tokens of one call.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{u.PromptTokens + o.PromptTokens, u.CompletionTokens + o.CompletionTokens, u.TotalTokens + o.TotalTokens}
}

// Delta is one streamed piece of the model's answer. Reasoning (DeepSeek's reasoning_content) is
// kept apart from Content and is never shown to users by default.
type Delta struct {
	Content   string
	Reasoning string
}

// Response is the assembled result of one call.
type Response struct {
	Content   string
	Reasoning string
	ToolCalls []ToolCall
	Finish    FinishReason
	Usage     Usage
}

// Provider is a model behind one call. Stream calls onDelta (which may be nil) for each streamed
// piece, in order, from the calling goroutine, and returns the assembled response. It returns
// promptly with ctx.Err() (possibly wrapped) once ctx is done.
type Provider interface {
	Name() string
	Stream(ctx context.Context, req Request, onDelta func(Delta)) (Response, error)
}

// ErrAuth means the provider refused the credentials (HTTP 401 or 403); retrying will not help.
var ErrAuth = errors.New("llm: the model provider refused the API key")

// ErrNotFound means the provider does not know the model or endpoint (HTTP 404).
var ErrNotFound = errors.New("llm: the model or endpoint was not found")

// ErrTimeout means the call outlasted its time budget (OpenAIOptions.Timeout, llm.timeout): the
// model hung or was too slow. It may pass; see Temporary.
var ErrTimeout = errors.New("llm: the model did not answer in time")

// ErrUnavailable means the model server could not be reached or dropped the connection before
// answering (refused, reset, DNS), or reported an error inside its stream. It may pass.
var ErrUnavailable = errors.New("llm: the model server is unavailable")

// ErrStreamCut means the answer's stream broke off after part of it had arrived: the partial
// answer must not be used. It may pass.
var ErrStreamCut = errors.New("llm: the answer's stream was cut before it was finished")

// Temporary reports whether err is a model failure that may pass by itself, so the work is worth
// trying again later: ErrTimeout, ErrUnavailable, ErrStreamCut, or a *StatusError of HTTP 408,
// 429 or 5xx. ErrAuth, ErrNotFound, other statuses (400 bad request, …) and anything else are
// not: retrying the same request would fail the same way.
func Temporary(err error) bool {
	switch {
	case err == nil, errors.Is(err, ErrAuth), errors.Is(err, ErrNotFound):
		return false
	case errors.Is(err, ErrTimeout), errors.Is(err, ErrUnavailable), errors.Is(err, ErrStreamCut):
		return true
	}
	var se *StatusError
	if errors.As(err, &se) {
		return se.StatusCode == 408 || se.StatusCode == 429 || se.StatusCode >= 500
	}
	return false
}

// StatusError is an HTTP failure from a provider, after any retries.
type StatusError struct {
	Provider   string
	StatusCode int
	RetryAfter time.Duration
	Message    string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("llm: %s answered HTTP %d: %s", e.Provider, e.StatusCode, e.Message)
}
