// Package slackfake is a local fake of Slack, for the tests and benchmarks of the Slack adapter
// and of the end-to-end suite. It speaks the public wire protocols so the real slack-go client
// can be driven against it:
//
//   - the Web API (POST /api/<method> with form or JSON bodies, the token in the form or in an
//     Authorization: Bearer header, {"ok":…} answers, HTTP 429 with Retry-After): auth.test,
//     apps.connections.open, chat.postMessage, chat.update, chat.delete, chat.postEphemeral,
//     views.open (trigger ids expire after 3 s), conversations.replies, conversations.history
//     (with message metadata),
//     assistant.threads.setStatus / setSuggestedPrompts / setTitle and chat.startStream /
//     appendStream / stopStream, with Slack's limits checked (50 blocks, 3,000 characters of
//     section text, 40,000 of message text); file uploads as Slack's external flow does them
//     (files.getUploadURLExternal, the bytes POSTed to the upload_url it returns, then
//     files.completeUploadExternal sharing the file in a channel or thread), the files kept;
//     the files users share (AddFile) at their url_private and url_private_download, served to
//     a bot token of their workspace and answered with Slack's login page otherwise;
//   - Socket Mode (GET /socket, a websocket): hello, envelopes (events_api, interactive,
//     slash_commands) with envelope ids and retry_attempt/retry_reason, the client's acks,
//     disconnect (refresh_requested, link_disabled, …), dropped sockets, server pings, and
//     redelivery of envelopes not acked in time;
//   - signed HTTP deliveries (Events API, interactivity, slash commands) to a URL, with a correct
//     or deliberately bad or stale v0 signature.
//
// Every Web API call, ack and delivery is recorded for assertions, and failures can be injected
// per method (429 with Retry-After, ok:false errors such as ratelimited or invalid_auth, 5xx).
// A parameter a method's reference does not list is recorded with its call (Call.Undocumented,
// DocumentedArgs): Slack ignores such a parameter silently, and so does the fake. Every Web API
// body is also run through internal/conformance (Block Kit structure, lengths, types, enums,
// unknown fields); New fails the test on what it reports (Violations, AllowViolations).
package slackfake

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/conformance"
)

// Identities and secrets the fake uses unless told otherwise.
const (
	DefaultBotToken      = "xoxb-1111-2222-fakeBOTtokenDoNotLog"
	DefaultAppToken      = "xapp-1-A0FAKE-3333-fakeAPPtokenDoNotLog"
	DefaultSigningSecret = "fake-signing-secret-do-not-log-0123"
	TeamID               = "T0FAKETEAM"
	TeamName             = "Fake Team"
	AppID                = "A0FAKEAPP"
	BotUserID            = "U0FAKEBOT"
	BotID                = "B0FAKEBOT"
)

// Limits the fake enforces, as Slack documents them.
const (
	MaxBlocks      = 50
	MaxSectionText = 3000
	MaxText        = 40000
	// TriggerTTL is how long a trigger id can open a modal.
	TriggerTTL = 3 * time.Second
)

// Call is one Web API request the server received, in arrival order.
type Call struct {
	Method string
	// Params are the request's parameters (form values, or the JSON body's top-level members:
	// strings as they are, anything else as its JSON text). The token is never recorded.
	Params map[string]string
	// Auth says how the token came: "bearer", "form" or "" (none).
	Auth string
	// Team is the workspace whose bot token made the call ("" for app-token and OAuth calls).
	Team string
	// Status is the HTTP status answered; Error the ok:false error, if any.
	Status int
	Error  string
	// Undocumented are the parameters the method's reference does not list (DocumentedArgs),
	// sorted: Slack ignores them without a word, so the fake answers as if they were not
	// there, and tests assert there are none.
	Undocumented []string
	At           time.Time
}

// Server is a running fake Slack. All methods are safe for concurrent use.
type Server struct {
	srv *httptest.Server

	botToken, appToken, secret string

	mu        sync.Mutex
	calls     []Call
	counts    map[string]int
	record    bool
	faults    []*fault
	holds     []*hold
	done      chan struct{}         // closed by Close: held calls go on
	messages  map[string][]*Message // channel → messages in post order
	byTS      map[string]*Message   // channel+"/"+ts → message
	ephem     []Ephemeral
	views     []View
	triggers  map[string]time.Time // trigger id → issued at
	statuses  []Status
	uploads   map[string]*Upload // file id → upload, from files.getUploadURLExternal on
	completed []string           // file ids in the order files.completeUploadExternal finished them
	// expireAfter > 0 ends a stream once it took that many appends (ExpireStreamsAfter).
	expireAfter int
	tsClock     int64
	seq         int64
	closed      bool

	sock socketState

	// teams maps each valid bot token to its workspace; codes are OAuth codes not yet
	// exchanged (code → team); refresh maps refresh tokens to their workspace.
	teams     map[string]string
	codes     map[string]string
	refresh   map[string]string
	rotateIn  int // > 0: tokens issued by OAuth expire after this many seconds
	tokenSeq  int
	lastToken map[string]string // team → its latest bot token

	files map[string]*sharedFile // file id → a file users shared (AddFile)

	// conf checks every request's conformance to the platform's published rules.
	conf *conformance.Recorder
}

// Option adjusts a server before it starts.
type Option func(*Server)

// WithTokens makes the server accept these tokens instead of the defaults.
func WithTokens(bot, app string) Option {
	return func(s *Server) { s.botToken, s.appToken = bot, app }
}

// Start starts a server on a loopback port. The caller must Close it.
func Start(opts ...Option) *Server {
	s := &Server{
		conf:     conformance.NewRecorder(conformance.Slack, "slackfake"),
		botToken: DefaultBotToken, appToken: DefaultAppToken, secret: DefaultSigningSecret,
		counts:   map[string]int{},
		done:     make(chan struct{}),
		record:   true,
		messages: map[string][]*Message{},
		byTS:     map[string]*Message{},
		triggers: map[string]time.Time{},
		uploads:  map[string]*Upload{},
		tsClock:  time.Now().Unix(),
		codes:    map[string]string{},
		refresh:  map[string]string{},
	}
	s.sock.init()
	for _, o := range opts {
		o(s)
	}
	s.teams = map[string]string{s.botToken: TeamID}
	s.lastToken = map[string]string{TeamID: s.botToken}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/", s.serveAPI)
	mux.HandleFunc("/socket", s.serveSocket)
	mux.HandleFunc(uploadPath, s.serveUpload)
	mux.HandleFunc(filesPath, s.serveFile)
	s.srv = httptest.NewServer(mux)
	return s
}

// New starts a server and closes it when tb's test ends; the test then fails if a Web API
// request broke Slack's published rules (Violations, AllowViolations).
func New(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	s := Start(opts...)
	s.conf.FailOnViolations(tb)
	tb.Cleanup(s.Close)
	return s
}

// URL is the server's base URL (no trailing slash).
func (s *Server) URL() string { return s.srv.URL }

// APIURL is the Web API base URL with its trailing slash, what slack.OptionAPIURL and
// slack.api_url take.
func (s *Server) APIURL() string { return s.srv.URL + "/api/" }

// BotToken, AppToken and SigningSecret are the secrets the server accepts and signs with.
func (s *Server) BotToken() string      { return s.botToken }
func (s *Server) AppToken() string      { return s.appToken }
func (s *Server) SigningSecret() string { return s.secret }

// Close closes every socket and shuts the server down.
func (s *Server) Close() {
	s.mu.Lock()
	if !s.closed {
		close(s.done)
	}
	s.closed = true
	s.mu.Unlock()
	s.sock.closeAll()
	s.srv.CloseClientConnections()
	s.srv.Close()
	s.sock.wait()
}

// SetRecording turns the call log (Calls) on or off; counts are always kept.
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

// CallsOf returns the logged calls of method.
func (s *Server) CallsOf(method string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// Undocumented returns the logged calls that carried a parameter their method's reference
// does not list (Call.Undocumented), in arrival order.
func (s *Server) Undocumented() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if len(c.Undocumented) > 0 {
			out = append(out, c)
		}
	}
	return out
}

// Count returns how many calls of method arrived (refused and failed ones included).
func (s *Server) Count(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[method]
}

// apiErr is an ok:false answer (status 200) or an HTTP error (status ≠ 200).
type apiErr struct {
	status     int
	err        string
	retryAfter int
}

func slackErr(e string) *apiErr { return &apiErr{status: 200, err: e} }

// tokenKind says which token a method needs.
func tokenKind(method string) string {
	if method == "apps.connections.open" {
		return "app"
	}
	return "bot"
}

func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	s.mu.Lock()
	s.counts[method]++
	s.mu.Unlock()
	if gate := s.takeHold(method); gate != nil {
		select {
		case <-gate:
		case <-s.done:
		}
	}
	if r.Method != http.MethodPost && r.Method != http.MethodGet {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		s.answer(w, method, nil, "", nil, slackErr("invalid_form_data"))
		return
	}
	s.conf.Check(method, r.Header.Get("Content-Type"), body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	params, token, auth, err := readParams(r)
	if err != nil {
		s.answer(w, method, params, auth, nil, slackErr("invalid_form_data"))
		return
	}
	if method == "oauth.v2.access" {
		if f := s.takeFault(method, params); f != nil {
			s.answer(w, method, redactOAuth(params), auth, nil, f)
			return
		}
		s.mu.Lock()
		res, aerr := s.oauthAccess(params)
		s.mu.Unlock()
		s.answer(w, method, redactOAuth(params), auth, res, aerr)
		return
	}
	var team string
	s.mu.Lock()
	if tokenKind(method) == "app" {
		if token != "" && token != s.appToken {
			token = "refused"
		}
	} else if t, ok := s.teams[token]; ok {
		team = t
	} else if token != "" {
		token = "refused"
	}
	s.mu.Unlock()
	switch token {
	case "":
		s.answer(w, method, params, auth, nil, slackErr("not_authed"))
		return
	case "refused":
		s.answer(w, method, params, auth, nil, slackErr("invalid_auth"))
		return
	}
	if f := s.takeFault(method, params); f != nil {
		s.answerTeam(w, method, params, auth, team, nil, f)
		return
	}
	h, ok := handlers[method]
	if th, byTeam := teamHandlers[method]; byTeam {
		h, ok = func(s *Server, p map[string]string) (map[string]any, *apiErr) { return th(s, p, team) }, true
	}
	if !ok {
		s.answerTeam(w, method, params, auth, team, nil, slackErr("unknown_method"))
		return
	}
	s.mu.Lock()
	res, aerr := h(s, params)
	if method == "auth.test" && aerr == nil {
		res["team_id"] = team
	}
	s.mu.Unlock()
	s.answerTeam(w, method, params, auth, team, res, aerr)
}

func (s *Server) answer(w http.ResponseWriter, method string, params map[string]string, auth string, res map[string]any, e *apiErr) {
	s.answerTeam(w, method, params, auth, "", res, e)
}

func (s *Server) answerTeam(w http.ResponseWriter, method string, params map[string]string, auth, team string, res map[string]any, e *apiErr) {
	status, errText := http.StatusOK, ""
	if e != nil {
		status, errText = e.status, e.err
	}
	s.mu.Lock()
	if s.record {
		s.calls = append(s.calls, Call{Method: method, Params: params, Auth: auth, Team: team, Status: status, Error: errText,
			Undocumented: undocumented(method, params), At: time.Now()})
	}
	s.mu.Unlock()
	if e != nil && e.status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", strconv.Itoa(e.retryAfter))
		w.WriteHeader(e.status)
		return
	}
	if e != nil && e.status != http.StatusOK {
		w.WriteHeader(e.status)
		_, _ = io.WriteString(w, "<html>error</html>")
		return
	}
	if res == nil {
		res = map[string]any{}
	}
	if e != nil {
		res = map[string]any{"ok": false, "error": e.err}
	} else {
		res["ok"] = true
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(res)
}

// maxBody bounds a request body.
const maxBody = 4 << 20

// readParams reads a form or JSON body (and the query string) into strings, and the token from
// the Authorization header or the form; the token is removed from the parameters.
func readParams(r *http.Request) (params map[string]string, token, auth string, err error) {
	params = map[string]string{}
	for k, v := range r.URL.Query() {
		params[k] = v[0]
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		return params, "", "", err
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch {
	case ct == "application/json":
		var m map[string]json.RawMessage
		if len(body) > 0 {
			if err := json.Unmarshal(body, &m); err != nil {
				return params, "", "", err
			}
		}
		for k, v := range m {
			var str string
			if json.Unmarshal(v, &str) == nil {
				params[k] = str
			} else {
				params[k] = string(v)
			}
		}
	case len(body) > 0:
		vals, err := url.ParseQuery(string(body))
		if err != nil {
			return params, "", "", err
		}
		for k, v := range vals {
			params[k] = v[0]
		}
	}
	if h, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && h != "" {
		token, auth = h, "bearer"
	}
	if t := params["token"]; t != "" {
		if token == "" {
			token, auth = t, "form"
		}
		delete(params, "token")
	}
	return params, token, auth, nil
}
