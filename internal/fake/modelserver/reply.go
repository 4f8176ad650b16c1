package modelserver

import (
	"net/http"
	"strconv"
	"time"
)

// ToolCall is one tool call a scripted reply makes. An empty ID is filled with a unique
// "call_…" id.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// Usage is the token usage a reply reports.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Reply scripts one answer of the server. The zero Reply is an empty assistant message that
// finishes with "stop".
//
// A Reply with Status set is an HTTP error instead of an answer; Hang blocks before any byte
// is written. The stream faults (HangMidStream, DropMidStream) act after the role chunk and
// the first content chunk were sent.
type Reply struct {
	// Content is the assistant's text, streamed in pieces of ChunkSize bytes.
	Content string
	// Reasoning is DeepSeek's reasoning_content, streamed before Content.
	Reasoning string
	// ToolCalls are streamed after Content, each as a first chunk with id and name and then
	// its arguments in pieces of ChunkSize bytes, keyed by index like the real API.
	ToolCalls []ToolCall
	// Finish is the finish_reason; default "tool_calls" when ToolCalls is set, else "stop".
	Finish string
	// Usage is reported in the usage chunk (when the request asked for it) or the non-streamed
	// body; when nil, counts are derived from the words of the request and reply.
	Usage *Usage
	// ChunkSize is the piece size in bytes for content, reasoning and arguments (default 8;
	// pieces never split a UTF-8 sequence).
	ChunkSize int
	// ChunkDelay is waited between streamed chunks (default 0).
	ChunkDelay time.Duration
	// Latency is waited before answering, on top of the server's latency.
	Latency time.Duration
	// KeepAlives is how many SSE comment lines (": keep-alive") precede the first chunk, as
	// DeepSeek sends while a busy server has not started answering.
	KeepAlives int
	// Done, when set, is called once the server has written the whole answer (its last byte
	// flushed) or given up on it (an error status, a fault, the client gone): a load test's
	// measure of how long the model itself took, to tell it from the client's own latency.
	Done func()

	// Status, when not zero, answers with this HTTP status and an OpenAI-style error body.
	Status int
	// RetryAfter is sent as the Retry-After header of an error answer when not empty
	// (seconds, or an HTTP date).
	RetryAfter string
	// ErrorMessage is the error body's message; a default per status when empty. For 401
	// the default quotes the presented API key, as the real API does (unmasked here: the
	// worst case for a client that must keep keys out of its errors).
	ErrorMessage string

	// Hang blocks the request until the client goes away or the server closes.
	Hang bool
	// HangMidStream streams the first chunks of the answer, then blocks like Hang.
	HangMidStream bool
	// DropMidStream streams the first chunks of the answer, then cuts the connection.
	DropMidStream bool
}

// Text returns a reply that streams content and stops.
func Text(content string) Reply { return Reply{Content: content} }

// Calls returns a reply that calls the given tools.
func Calls(calls ...ToolCall) Reply { return Reply{ToolCalls: calls} }

// RateLimited returns a 429 reply with the given Retry-After header value ("" for none).
func RateLimited(retryAfter string) Reply {
	return Reply{Status: http.StatusTooManyRequests, RetryAfter: retryAfter}
}

// RateLimitedFor returns a 429 reply asking the client to wait d (rounded up to seconds).
func RateLimitedFor(d time.Duration) Reply {
	secs := int((d + time.Second - 1) / time.Second)
	return RateLimited(strconv.Itoa(secs))
}

// ServerError returns a 500 reply.
func ServerError() Reply { return Reply{Status: http.StatusInternalServerError} }

// Unauthorized returns a 401 reply whose message quotes the presented key.
func Unauthorized() Reply { return Reply{Status: http.StatusUnauthorized} }

// NotFound returns a 404 reply (unknown model).
func NotFound() Reply { return Reply{Status: http.StatusNotFound} }

// Hang returns a reply that blocks until the client goes away or the server closes.
func Hang() Reply { return Reply{Hang: true} }

// errorShape returns the type, code and default message of the error body for status.
func errorShape(status int, presentedKey string) (typ, code, msg string) {
	switch status {
	case http.StatusUnauthorized:
		return "invalid_request_error", "invalid_api_key",
			"Incorrect API key provided: " + presentedKey + ". You can find your API key at https://platform.openai.com/account/api-keys."
	case http.StatusForbidden:
		return "invalid_request_error", "forbidden", "You are not allowed to use this model."
	case http.StatusNotFound:
		return "invalid_request_error", "model_not_found", "The model does not exist or you do not have access to it."
	case http.StatusTooManyRequests:
		return "requests", "rate_limit_exceeded", "Rate limit reached. Please try again later."
	case http.StatusBadRequest:
		return "invalid_request_error", "invalid_request", "Invalid request."
	default:
		if status >= 500 {
			return "server_error", "server_error", "The server had an error while processing your request."
		}
		return "invalid_request_error", "error", http.StatusText(status)
	}
}
