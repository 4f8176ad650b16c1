package discordfake

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-bot/switchboard/internal/conformance"
)

// Call is one REST request the server received, in arrival order.
type Call struct {
	Method string
	// Route is the matched pattern without the method, e.g. "/api/v9/channels/{channel}/messages".
	Route  string
	Path   string
	Body   []byte
	Status int
	At     time.Time
}

// rest is what every REST request goes through before its route's handler: the conformance
// check, the bot token's check, the injected faults, the rate-limit headers, and the call log.
type rest struct {
	token  string
	conf   *conformance.Recorder
	faults *faults

	mu    sync.Mutex
	calls []Call
}

type handler func(w http.ResponseWriter, r *http.Request, body []byte) (status int, resp any)

// Calls returns the REST calls received so far.
func (rs *rest) Calls() []Call {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return append([]Call(nil), rs.calls...)
}

// Count is the number of calls of method on route (a pattern as in Call.Route) answered with a
// 2xx status.
func (rs *rest) Count(method, route string) int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	n := 0
	for _, c := range rs.calls {
		if c.Method == method && c.Route == route && c.Status < 300 {
			n++
		}
	}
	return n
}

// apiError is Discord's error body.
type apiError struct {
	Message string `json:"message"`
	Code    int    `json:"code"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	if status == http.StatusNoContent {
		w.WriteHeader(status)
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"message":"fake: marshal","code":0}`)
	}
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func writeError(w http.ResponseWriter, status, code int, msg string) {
	writeJSON(w, status, apiError{Message: msg, Code: code})
}

// errorResp makes a handler's error answer.
func errorResp(status, code int, msg string) (int, any) {
	return status, apiError{Message: msg, Code: code}
}

func (rs *rest) wrap(pattern string, h handler) http.HandlerFunc {
	method, route, _ := strings.Cut(pattern, " ")
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := readBody(r)
		if err != nil {
			writeError(w, http.StatusBadRequest, 0, "unreadable body")
			return
		}
		if len(body) < maxBody { // a body cut at the limit is refused as too large, not checked
			rs.conf.Check(method+" "+strings.TrimPrefix(route, "/api/v9"), r.Header.Get("Content-Type"), body)
		}
		status, resp := rs.serve(w, r, route, body, h)
		rs.mu.Lock()
		rs.calls = append(rs.calls, Call{Method: method, Route: route, Path: r.URL.Path, Body: body, Status: status, At: time.Now()})
		rs.mu.Unlock()
		if status == http.StatusNoContent {
			w.WriteHeader(status)
			return
		}
		writeJSON(w, status, resp)
	}
}

func (rs *rest) serve(w http.ResponseWriter, r *http.Request, route string, body []byte, h handler) (int, any) {
	// Interaction callbacks and webhook calls are authorized by their token, not the bot's.
	authByToken := strings.HasPrefix(route, "/api/v9/interactions/") || strings.HasPrefix(route, "/api/v9/webhooks/")
	if !authByToken && route != RouteGateway {
		if r.Header.Get("Authorization") != "Bot "+rs.token {
			return errorResp(http.StatusUnauthorized, 0, "401: Unauthorized")
		}
	}
	if f := rs.faults.take(r.Method, route, r.PathValue("channel")); f != nil {
		return f.answer(w)
	}
	w.Header().Set("X-RateLimit-Limit", "50")
	w.Header().Set("X-RateLimit-Remaining", "49")
	w.Header().Set("X-RateLimit-Reset-After", "1.000")
	w.Header().Set("X-RateLimit-Bucket", "fake-"+strings.ReplaceAll(route, "/", "-"))
	return h(w, r, body)
}

// readBody reads a request's body up to maxBody, into a buffer sized by its Content-Length when
// it states one: a message's files may be 10 MiB, and growing a buffer to that copies it anew at
// each doubling.
func readBody(r *http.Request) ([]byte, error) {
	var buf bytes.Buffer
	if n := r.ContentLength; n > 0 && n < maxBody {
		buf.Grow(int(n) + bytes.MinRead)
	}
	_, err := buf.ReadFrom(io.LimitReader(r.Body, maxBody))
	return buf.Bytes(), err
}
