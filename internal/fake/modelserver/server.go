// Package modelserver is a local fake of an OpenAI-compatible chat-completions server, for the
// tests and benchmarks of every layer that talks to a model. It speaks the real wire protocol
// (SSE chunks ending in "data: [DONE]", tool calls split across chunks by index, DeepSeek's
// reasoning_content, a usage chunk, OpenAI-style error bodies, content parts with images), is
// scripted by the test with a queue of replies and/or a function, injects faults (429 with
// Retry-After, 5xx, 401, 404, hangs, cut streams), checks an API key when given one, and
// records what it received. It also answers /audio/transcriptions (transcription.go).
//
// It uses only the standard library and does no per-request waiting unless asked, so it serves
// thousands of requests a second for load tests.
package modelserver

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// FallbackReply is what the server answers when its queue is empty and no function is set.
var FallbackReply = Reply{Content: "ok"}

// Server is a running fake model server. All methods are safe for concurrent use.
type Server struct {
	srv    *httptest.Server
	closed chan struct{}
	once   sync.Once

	count atomic.Int64
	seq   atomic.Int64

	mu             sync.Mutex
	queue          []Reply
	fn             func(Request) Reply
	latency        time.Duration
	record         bool
	requests       []Request
	apiKey         string
	transcribe     func(Transcription) Reply
	transcriptions []Transcription
}

// Start starts a server on a loopback port. The caller must Close it.
func Start() *Server {
	s := &Server{closed: make(chan struct{}), record: true}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	return s
}

// New starts a server and closes it when tb's test ends.
func New(tb testing.TB) *Server {
	tb.Helper()
	s := Start()
	tb.Cleanup(s.Close)
	return s
}

// BaseURL is the OpenAI-style base URL, ending in /v1 (no trailing slash).
func (s *Server) BaseURL() string { return s.srv.URL + "/v1" }

// RootURL is the DeepSeek-style base URL, without /v1: chat completions are at
// RootURL()+"/chat/completions".
func (s *Server) RootURL() string { return s.srv.URL }

// Client returns an HTTP client for the server (the httptest one, whose idle connections
// are closed with the server).
func (s *Server) Client() *http.Client { return s.srv.Client() }

// Close ends every request still hanging, then shuts the server down and waits for its
// handlers. It may be called more than once.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.closed)
		s.srv.Close()
	})
}

// Enqueue appends replies to the queue; each request takes the first queued reply.
func (s *Server) Enqueue(replies ...Reply) {
	s.mu.Lock()
	s.queue = append(s.queue, replies...)
	s.mu.Unlock()
}

// SetFunc sets the function that answers requests once the queue is empty (nil removes it).
// It runs on the request's goroutine, concurrently for concurrent requests.
func (s *Server) SetFunc(fn func(Request) Reply) {
	s.mu.Lock()
	s.fn = fn
	s.mu.Unlock()
}

// SetLatency sets a wait before every answer (default 0). A request whose client goes away
// during the wait is dropped.
func (s *Server) SetLatency(d time.Duration) {
	s.mu.Lock()
	s.latency = d
	s.mu.Unlock()
}

// SetRecording turns recording of decoded requests (chat and transcription) on (the default)
// or off; load tests turn it off to keep memory flat. Count is kept either way.
func (s *Server) SetRecording(on bool) {
	s.mu.Lock()
	s.record = on
	s.mu.Unlock()
}

// SetAPIKey makes the server require "Authorization: Bearer <key>" on every endpoint and answer
// any other with 401 and an error body quoting the presented key, as the real API does. An
// empty key (the default) accepts any request.
func (s *Server) SetAPIKey(key string) {
	s.mu.Lock()
	s.apiKey = key
	s.mu.Unlock()
}

// authorized reports whether r presents the configured key, answering 401 when it does not.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	s.mu.Lock()
	key := s.apiKey
	s.mu.Unlock()
	auth := r.Header.Get("Authorization")
	if key == "" || auth == "Bearer "+key {
		return true
	}
	typ, code, msg := errorShape(http.StatusUnauthorized, strings.TrimPrefix(auth, "Bearer "))
	writeAPIError(w, http.StatusUnauthorized, typ, code, msg)
	return false
}

// Pending reports how many queued replies are left.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// Count reports how many requests reached a chat-completions path, valid or not.
func (s *Server) Count() int { return int(s.count.Load()) }

// Requests returns copies of the valid requests recorded so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	for i, r := range s.requests {
		out[i] = r.clone()
	}
	return out
}

// Gaps returns the time between consecutive recorded requests, measured by the server:
// Gaps()[i] is Requests()[i+1].Received minus Requests()[i].Received.
func (s *Server) Gaps() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []time.Duration
	for i := 1; i < len(s.requests); i++ {
		out = append(out, s.requests[i].Received.Sub(s.requests[i-1].Received))
	}
	return out
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if isTranscriptionPath(r.URL.Path) {
		s.serveTranscription(w, r)
		return
	}
	if !isChatPath(r.URL.Path) {
		writeAPIError(w, http.StatusNotFound, "invalid_request_error", "unknown_url", "Unknown request URL: "+r.Method+" "+r.URL.Path)
		return
	}
	s.count.Add(1)
	if r.Method != http.MethodPost {
		writeAPIError(w, http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", "Use POST.")
		return
	}
	if !s.authorized(w, r) {
		return
	}
	received := time.Now()
	body, err := readBody(r, 32<<20)
	if err != nil {
		return // the client went away
	}
	req, err := decodeRequest(body)
	if err != nil {
		writeAPIError(w, http.StatusBadRequest, "invalid_request_error", "invalid_request", err.Error())
		return
	}
	req.Path = r.URL.Path
	req.Authorization = r.Header.Get("Authorization")
	req.Received = received

	s.mu.Lock()
	if s.record {
		s.requests = append(s.requests, req.clone())
	}
	latency := s.latency
	fn := s.fn
	var reply Reply
	switch {
	case len(s.queue) > 0:
		reply = s.queue[0]
		s.queue = s.queue[1:]
		fn = nil
	case fn == nil:
		reply = FallbackReply
	}
	s.mu.Unlock()
	if fn != nil {
		reply = fn(req.clone())
	}
	if reply.Done != nil {
		defer reply.Done()
	}
	if s.fault(w, r, reply, latency) {
		return
	}
	id := s.seq.Add(1)
	if req.Stream {
		s.stream(w, r, req, reply, id)
		return
	}
	writeCompletion(w, req, reply, id)
}

// fault waits out latency and the reply's own, then acts out the reply's Hang or Status. It
// reports whether it answered (or the client went away), so that no answer is to be written.
func (s *Server) fault(w http.ResponseWriter, r *http.Request, reply Reply, latency time.Duration) bool {
	if !s.wait(r.Context(), latency+reply.Latency) {
		return true
	}
	if reply.Hang {
		s.wait(r.Context(), -1)
		return true
	}
	if reply.Status == 0 {
		return false
	}
	if reply.RetryAfter != "" {
		w.Header().Set("Retry-After", reply.RetryAfter)
	}
	typ, code, msg := errorShape(reply.Status, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	if reply.ErrorMessage != "" {
		msg = reply.ErrorMessage
	}
	writeAPIError(w, reply.Status, typ, code, msg)
	return true
}

// wait blocks for d (forever when d < 0), the request's end or the server's close, whichever
// comes first; it reports whether d elapsed.
func (s *Server) wait(ctx context.Context, d time.Duration) bool {
	if d == 0 {
		return true
	}
	var timeout <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-timeout:
		return true
	case <-ctx.Done():
	case <-s.closed:
	}
	return false
}

// readBody reads a request's body, at most limit bytes: into one buffer of its declared length
// when it has one (a model request is several KB, and io.ReadAll's doubling from 512 bytes was
// a tenth of the fake's CPU under load), else as io.ReadAll does.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	if n := r.ContentLength; n > 0 && n <= limit {
		body := make([]byte, n)
		if _, err := io.ReadFull(r.Body, body); err != nil {
			return nil, err
		}
		return body, nil
	}
	return io.ReadAll(io.LimitReader(r.Body, limit))
}
