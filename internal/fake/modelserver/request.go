package modelserver

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Request is one chat-completions request as the server decoded it, with what the server saw
// around it. It is a copy: changing it does not change what the server recorded.
type Request struct {
	// Path is the URL path the request was sent to (/v1/chat/completions or /chat/completions).
	Path string `json:"-"`
	// Authorization is the Authorization header as sent (e.g. "Bearer sk-…").
	Authorization string `json:"-"`
	// Received is when the server read the request, from the server's clock (with a monotonic
	// reading, so gaps between requests are measured correctly).
	Received time.Time `json:"-"`

	Model               string          `json:"model"`
	Messages            []Message       `json:"messages"`
	Tools               []Tool          `json:"tools,omitempty"`
	ToolChoice          json.RawMessage `json:"tool_choice,omitempty"`
	Stream              bool            `json:"stream"`
	StreamOptions       *StreamOptions  `json:"stream_options,omitempty"`
	MaxTokens           int             `json:"max_tokens,omitempty"`
	MaxCompletionTokens int             `json:"max_completion_tokens,omitempty"`
}

// StreamOptions is the request's stream_options object.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// Message is one entry of the request's messages. Content given as an array of parts is
// flattened: the text of its "text" parts, concatenated, and its "image_url" parts in Images.
type Message struct {
	Role             string         `json:"role"`
	Content          string         `json:"content"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	ToolCalls        []WireToolCall `json:"tool_calls,omitempty"`
	ToolCallID       string         `json:"tool_call_id,omitempty"`
	Name             string         `json:"name,omitempty"`
	// Images are the message's image_url parts, in order (user messages only, as the real API
	// takes them).
	Images []Image `json:"-"`
}

// Image is one image_url part of a message as the server read it. The bytes of a data: URL
// are decoded to check them and counted, not kept.
type Image struct {
	// MIME is the media type a data: URL names (e.g. "image/png"); empty for a remote URL.
	MIME string
	// Size is the decoded length of a data: URL's bytes; 0 for a remote URL.
	Size int
	// URL is a remote image's URL as sent; empty for a data: URL.
	URL string
}

// WireToolCall is a tool call as it appears in an assistant message of a request.
type WireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function WireFunction `json:"function"`
}

// WireFunction is the function part of a tool call.
type WireFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Tool is one tool offered in a request.
type Tool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	} `json:"function"`
}

// UnmarshalJSON accepts content as a string, null, or an array of content parts.
func (m *Message) UnmarshalJSON(b []byte) error {
	var w wireMessage
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	msg, err := w.message()
	if err != nil {
		return err
	}
	*m = msg
	return nil
}

// wireMessage is a message as it arrives, its content kept raw (a string, null or parts);
// plainMessage is Message without its UnmarshalJSON, so that embedding it does not promote it.
type wireMessage struct {
	plainMessage
	Content json.RawMessage `json:"content"`
}

type plainMessage Message

// message is w with its content read as text and images (see content).
func (w *wireMessage) message() (Message, error) {
	text, images, err := content(w.Content)
	m := Message(w.plainMessage)
	m.Content, m.Images = text, images
	if err == nil && len(images) > 0 && m.Role != "user" {
		err = fmt.Errorf("image_url parts are only allowed in messages with role 'user', not %q", m.Role)
	}
	return m, err
}

// contentPart is one element of a content array.
type contentPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL *struct {
		URL    string `json:"url"`
		Detail string `json:"detail"`
	} `json:"image_url"`
}

// content reads a message's content: a string, null, or an array of parts whose text parts
// are concatenated and whose image_url parts are read as images. Parts of other types are
// skipped.
func content(raw json.RawMessage) (string, []Image, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", nil, nil
	}
	switch raw[0] {
	case '"':
		var s string
		err := json.Unmarshal(raw, &s)
		return s, nil, err
	case '[':
		var parts []contentPart
		if err := json.Unmarshal(raw, &parts); err != nil {
			return "", nil, err
		}
		var sb strings.Builder
		var images []Image
		for i, p := range parts {
			switch p.Type {
			case "text":
				sb.WriteString(p.Text)
			case "image_url":
				img, err := readImage(p)
				if err != nil {
					return "", nil, fmt.Errorf("content[%d]: %v", i, err)
				}
				images = append(images, img)
			}
		}
		return sb.String(), images, nil
	default:
		return "", nil, fmt.Errorf("content must be a string, null or an array of parts")
	}
}

// readImage reads an image_url part as the real API checks it: a url that is http(s) or a
// base64 data: URL of an image type whose bytes decode.
func readImage(p contentPart) (Image, error) {
	if p.ImageURL == nil || p.ImageURL.URL == "" {
		return Image{}, errors.New("missing required parameter image_url.url")
	}
	u := p.ImageURL.URL
	if strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://") {
		return Image{URL: u}, nil
	}
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return Image{}, errors.New("image_url.url must be an http(s) URL or a data: URL")
	}
	mime, data, ok := strings.Cut(rest, ";base64,")
	if !ok || !strings.HasPrefix(mime, "image/") {
		return Image{}, errors.New("invalid image data URL: want data:image/<type>;base64,<data>")
	}
	buf := make([]byte, base64.StdEncoding.DecodedLen(len(data)))
	n, err := base64.StdEncoding.Decode(buf, []byte(data))
	if err != nil {
		return Image{}, fmt.Errorf("invalid base64 image data: %v", err)
	}
	return Image{MIME: mime, Size: n}, nil
}

// errBadRequest is a request the real API would refuse with 400.
var errBadRequest = errors.New("invalid request")

// decodeRequest parses a chat-completions body the way the real API validates it: a JSON
// object with a model and at least one message, each with a known role.
func decodeRequest(body []byte) (Request, error) {
	// The messages are read as wireMessage, shadowing Request's, so the body is decoded in one
	// pass instead of once more per message by Message.UnmarshalJSON.
	var w struct {
		Request
		Messages []wireMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return Request{}, fmt.Errorf("%w: body is not a JSON request: %v", errBadRequest, err)
	}
	if err := checkHead(w.Model, len(w.Messages)); err != nil {
		return Request{}, err
	}
	req := w.Request
	req.Messages = make([]Message, len(w.Messages))
	for i := range w.Messages {
		m := &w.Messages[i]
		if err := checkRole(i, m.Role); err != nil {
			return Request{}, err
		}
		msg, err := m.message()
		if err != nil {
			return Request{}, fmt.Errorf("%w: messages[%d]: %v", errBadRequest, i, err)
		}
		req.Messages[i] = msg
	}
	return req, nil
}

// checkHead refuses a request without a model or without messages, as the real API does.
func checkHead(model string, messages int) error {
	if model == "" {
		return fmt.Errorf("%w: you must provide a model parameter", errBadRequest)
	}
	if messages == 0 {
		return fmt.Errorf("%w: messages must not be empty", errBadRequest)
	}
	return nil
}

// checkRole refuses message i when its role is not one the real API knows.
func checkRole(i int, role string) error {
	switch role {
	case "system", "user", "assistant", "tool", "developer":
		return nil
	}
	return fmt.Errorf("%w: messages[%d]: unknown role %q", errBadRequest, i, role)
}

// clone returns a deep copy.
func (r Request) clone() Request {
	c := r
	c.ToolChoice = append(json.RawMessage(nil), r.ToolChoice...)
	if r.StreamOptions != nil {
		so := *r.StreamOptions
		c.StreamOptions = &so
	}
	if r.Messages != nil {
		c.Messages = make([]Message, len(r.Messages))
		for i, m := range r.Messages {
			m.ToolCalls = append([]WireToolCall(nil), m.ToolCalls...)
			m.Images = append([]Image(nil), m.Images...)
			c.Messages[i] = m
		}
	}
	if r.Tools != nil {
		c.Tools = make([]Tool, len(r.Tools))
		for i, t := range r.Tools {
			t.Function.Parameters = append(json.RawMessage(nil), t.Function.Parameters...)
			c.Tools[i] = t
		}
	}
	return c
}

// LastUserText returns the content of the last user message, or "" if there is none.
func (r Request) LastUserText() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Content
		}
	}
	return ""
}

// isChatPath reports whether path is one the server answers chat completions on.
func isChatPath(path string) bool {
	return path == "/v1/chat/completions" || path == "/chat/completions"
}

// apiError is the error body of the real API.
type apiError struct {
	Error apiErrorBody `json:"error"`
}

type apiErrorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code"`
}

func writeAPIError(w http.ResponseWriter, status int, typ, code, msg string) {
	b, _ := json.Marshal(apiError{Error: apiErrorBody{Message: msg, Type: typ, Code: code}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
