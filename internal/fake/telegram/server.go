// Package telegramfake is a local fake of the Telegram Bot API, for the tests and benchmarks of
// the Telegram adapter and of the end-to-end suite. It speaks the real wire protocol
// (POST /bot<token>/<method> with form or JSON parameters, {"ok":…,"result":…} answers,
// error_code/description/parameters.retry_after on errors) so the real client library can be
// driven against it: getMe, getUpdates long polling with offset confirmation (a getUpdates
// arriving while another is in flight ends the earlier one with 409 Conflict, as Telegram does
// when two processes poll one bot), sendMessage with Telegram's HTML checks and inline
// keyboards, sendMessageDraft (drafts streamed in private chats, drafts.go), sendDocument
// (multipart upload, caption), editMessageText, deleteMessage, sendChatAction,
// answerCallbackQuery, setMyCommands/getMyCommands and the webhook methods.
//
// Tests push updates (private, private-chat topic, group, forum topic, callback query), read what
// the bot posted per chat with edits and deletions applied and the drafts it streamed (and which
// one shows), count calls by method, make a method unknown as an older server would, and inject
// faults (429 storms with retry_after, 5xx) per method or per chat, and per file download
// (FailFile). It uses only the standard library and one mutex, and serves thousands of calls a
// second. Every request body is also run through internal/conformance (the Bot API's required
// parameters, types, lengths, enums, unknown parameters, keyboards); New fails the test on what
// it reports (Violations, AllowViolations).
package telegramfake

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/conformance"
)

// DefaultToken is the bot token a server started by Start or New accepts.
const DefaultToken = "123456:TEST-fake-token-do-not-log"

// Bot identity the fake reports from getMe.
const (
	BotID       int64 = 7000001
	BotUsername       = "switchboard_test_bot"
	BotName           = "Switchboard Test"
)

// MaxTextLen is the longest message text (visible characters, in UTF-16 code units) sendMessage
// and editMessageText accept.
const MaxTextLen = 4096

// Call is one request the server received, in arrival order.
type Call struct {
	Method string
	Params map[string]string
	// Status is the HTTP status answered (200, or the error code).
	Status int
	At     time.Time
}

// Server is a running fake Bot API. All methods are safe for concurrent use.
type Server struct {
	token string
	srv   *httptest.Server

	mu         sync.Mutex
	nextUpdate int64
	queue      []queued // unconfirmed updates, ascending ids
	wake       chan struct{}
	chats      map[int64]*chat
	calls      []Call
	counts     map[string]int
	faults     []*fault
	commands   json.RawMessage
	webhook    WebhookInfo
	callbacks  map[string]*callback
	delays     map[string]time.Duration
	record     bool
	closed     bool
	// poller is the getUpdates call in flight, which a second one terminates (409), as
	// Telegram does; conflicts counts those terminations.
	poller    *pollCall
	conflicts int
	// files are the files users sent (AddFile), by file id.
	files   map[string]*storedFile
	fileSeq int
	// unknown are the methods answered 404 as a server that predates them does (Unsupported).
	unknown map[string]bool

	// conf checks every request's conformance to the platform's published rules.
	conf *conformance.Recorder
}

type queued struct {
	id  int64
	raw json.RawMessage
}

// Start starts a server on a loopback port accepting DefaultToken. The caller must Close it.
func Start() *Server { return StartWithToken(DefaultToken) }

// StartWithToken starts a server accepting token. The caller must Close it.
func StartWithToken(token string) *Server {
	s := &Server{
		conf:       conformance.NewRecorder(conformance.Telegram, "telegramfake"),
		token:      token,
		nextUpdate: 100000,
		wake:       make(chan struct{}),
		chats:      map[int64]*chat{},
		counts:     map[string]int{},
		callbacks:  map[string]*callback{},
		delays:     map[string]time.Duration{},
		commands:   json.RawMessage("[]"),
		unknown:    map[string]bool{},
		record:     true,
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	return s
}

// New starts a server and closes it when tb's test ends; the test then fails if a request broke
// the Bot API's published rules (Violations, AllowViolations).
func New(tb testing.TB) *Server {
	tb.Helper()
	s := Start()
	s.conf.FailOnViolations(tb)
	tb.Cleanup(s.Close)
	return s
}

// URL is the API base URL (no trailing slash), what telegram.api_url should be set to.
func (s *Server) URL() string { return s.srv.URL }

// Token is the bot token the server accepts.
func (s *Server) Token() string { return s.token }

// Close wakes every waiting long poll and shuts the server down.
func (s *Server) Close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.wake)
	}
	s.mu.Unlock()
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// SetRecording turns the call log (Calls) on or off; counts are always kept. Load tests turn it
// off to keep memory flat.
func (s *Server) SetRecording(on bool) {
	s.mu.Lock()
	s.record = on
	s.mu.Unlock()
}

// Calls returns a copy of the call log.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// Count returns how many calls of method the server received, counted on arrival (calls in
// flight, refused and failed ones included).
func (s *Server) Count(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[method]
}

// apiError is an error answer.
type apiError struct {
	code       int
	desc       string
	retryAfter int
}

func badRequest(desc string) *apiError { return &apiError{code: 400, desc: "Bad Request: " + desc} }

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/file/bot") {
		s.serveFile(w, r)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot")
	token, method, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 {
		writeError(w, &apiError{code: 404, desc: "Not Found"})
		return
	}
	if token != s.token {
		writeError(w, &apiError{code: 401, desc: "Unauthorized"})
		return
	}
	s.mu.Lock()
	s.counts[method]++
	s.mu.Unlock()
	if !s.wait(r.Context(), method) {
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequest))
	if err != nil {
		writeError(w, badRequest("invalid request parameters"))
		return
	}
	s.conf.Check(method, r.Header.Get("Content-Type"), body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	params, err := readParams(r)
	if err != nil {
		writeError(w, badRequest("invalid request parameters"))
		return
	}
	if f := s.takeFault(method, params); f != nil {
		s.log(method, params, f.code)
		writeError(w, f)
		return
	}
	var result any
	var aerr *apiError
	switch method {
	case "getUpdates":
		result, aerr = s.getUpdates(r, params)
	case "sendDocument":
		s.mu.Lock()
		result, aerr = s.sendDocument(r, params)
		s.mu.Unlock()
	default:
		s.mu.Lock()
		gone := s.unknown[method]
		s.mu.Unlock()
		h, known := handlers[method]
		if !known || gone {
			aerr = &apiError{code: 404, desc: "Not Found: method not found"}
			break
		}
		s.mu.Lock()
		result, aerr = h(s, params)
		s.mu.Unlock()
	}
	status := 200
	if aerr != nil {
		status = aerr.code
	}
	s.log(method, params, status)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	writeResult(w, result)
}

// maxRequest bounds a request body (a document upload included).
const maxRequest = 64 << 20

var handlers map[string]func(*Server, map[string]string) (any, *apiError)

func init() {
	handlers = map[string]func(*Server, map[string]string) (any, *apiError){
		"getMe":               (*Server).getMe,
		"sendMessage":         (*Server).sendMessage,
		"sendMessageDraft":    (*Server).sendMessageDraft,
		"editMessageText":     (*Server).editMessageText,
		"deleteMessage":       (*Server).deleteMessage,
		"sendChatAction":      (*Server).sendChatAction,
		"answerCallbackQuery": (*Server).answerCallbackQuery,
		"setMyCommands":       (*Server).setMyCommands,
		"getMyCommands":       (*Server).getMyCommands,
		"setWebhook":          (*Server).setWebhook,
		"deleteWebhook":       (*Server).deleteWebhook,
		"getWebhookInfo":      (*Server).getWebhookInfo,
		"getFile":             (*Server).getFile,
	}
}

func (s *Server) log(method string, params map[string]string, status int) {
	s.mu.Lock()
	if s.record {
		s.calls = append(s.calls, Call{Method: method, Params: params, Status: status, At: time.Now()})
	}
	s.mu.Unlock()
}

// readParams reads the query string and a form, multipart or JSON body into one flat map; JSON
// values that are not strings keep their JSON text, as the Bot API accepts either.
func readParams(r *http.Request) (map[string]string, error) {
	out := map[string]string{}
	for k, v := range r.URL.Query() {
		out[k] = v[0]
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			return nil, err
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(body, &m); err != nil {
			return nil, err
		}
		for k, raw := range m {
			var str string
			if json.Unmarshal(raw, &str) == nil {
				out[k] = str
			} else {
				out[k] = string(raw)
			}
		}
	case "application/x-www-form-urlencoded", "multipart/form-data":
		if err := r.ParseMultipartForm(1 << 20); err != nil && err != http.ErrNotMultipart {
			return nil, err
		}
		for k, v := range r.PostForm {
			out[k] = v[0]
		}
	}
	return out, nil
}

type envelope struct {
	OK          bool            `json:"ok"`
	Result      any             `json:"result,omitempty"`
	ErrorCode   int             `json:"error_code,omitempty"`
	Description string          `json:"description,omitempty"`
	Parameters  *map[string]int `json:"parameters,omitempty"`
}

// verbatimArray is a result array whose elements are written byte for byte, valid JSON or not
// (encoding/json would refuse to write an invalid json.RawMessage).
type verbatimArray []json.RawMessage

func writeResult(w http.ResponseWriter, result any) {
	w.Header().Set("Content-Type", "application/json")
	if a, ok := result.(verbatimArray); ok {
		b := []byte(`{"ok":true,"result":[`)
		for i, raw := range a {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, raw...)
		}
		_, _ = w.Write(append(b, "]}\n"...))
		return
	}
	_ = json.NewEncoder(w).Encode(envelope{OK: true, Result: result})
}

func writeError(w http.ResponseWriter, e *apiError) {
	w.Header().Set("Content-Type", "application/json")
	env := envelope{ErrorCode: e.code, Description: e.desc}
	if e.retryAfter > 0 {
		p := map[string]int{"retry_after": e.retryAfter}
		env.Parameters = &p
	}
	w.WriteHeader(e.code)
	_ = json.NewEncoder(w).Encode(env)
}

func (s *Server) getMe(map[string]string) (any, *apiError) {
	return User{ID: BotID, IsBot: true, FirstName: BotName, Username: BotUsername}, nil
}
