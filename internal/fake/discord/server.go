// Package discordfake is a local fake of the Discord API (REST v9 and the gateway websocket), for
// the tests of the Discord adapter and of the end-to-end suite. It speaks the public wire protocol
// so the real discordgo client can be driven against it:
//
//   - REST under /api/v9: gateway discovery (/gateway, /gateway/bot), users/@me, channels,
//     channel messages (POST, PATCH, DELETE) with Discord's size checks and nonce+enforce_nonce
//     idempotency, Components V2 messages (the IS_COMPONENTS_V2 flag, no content or embeds
//     beside it, 40 components and 4,000 characters of text displays, the flag kept through
//     edits: components.go), messages with files (multipart/form-data: payload_json and
//     files[n], the files kept, 10 at most and 10 MiB in all), threads from a message (the
//     route's documented params only), typing, interaction callbacks (modals of labels checked
//     and submitted as Discord shapes them), webhook follow-ups and @original edits, and
//     application commands (GET, bulk-overwrite PUT of the documented fields only; global and
//     per guild). A body the documentation does not have is refused with Discord's 400 Invalid
//     Form Body (50035) naming the field.
//   - The CDN: the files users attach (AddFile) at their signed url and proxy_url, served
//     without a token while the signature is intact.
//     Every call is recorded; 429s (per route or global, with retry_after and X-RateLimit headers)
//     and other errors can be injected.
//   - The gateway: op 10 HELLO, op 2 IDENTIFY (token and intents checked; 4004 and 4014 closes),
//     op 0 READY with session_id and resume_gateway_url, GUILD_CREATE, dispatches with sequence
//     numbers, op 1/11 heartbeats, op 6 RESUME replaying what the session missed, op 9
//     INVALID_SESSION, op 7 RECONNECT, closes with chosen codes and dropped connections.
//
// Tests push user messages and interactions, read what the bot posted per channel with edits and
// deletions applied, and inspect interaction responses. The zero configuration needs nothing
// but New(tb). Every REST body is also run through internal/conformance (message, embed,
// component, modal, thread and command rules); New fails the test on what it reports
// (Violations, AllowViolations).
package discordfake

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/switchboard-bot/switchboard/internal/conformance"
)

// DefaultToken is the bot token the server accepts (without the "Bot " prefix).
const DefaultToken = "OTAwMDAwMDAwMDAwMDAwMDAx.fake.discord-token-do-not-log"

// The bot the fake serves.
const (
	BotID         = "900000000000000001"
	ApplicationID = BotID
	BotUsername   = "switchboard-test"
	// BotRoleID is the bot's managed role in every guild (a role mention of it addresses the bot).
	BotRoleID = "900000000000000777"
)

// Privileged intents (the gateway refuses them with close 4014 unless allowed).
const (
	IntentGuildMembers   = 1 << 1
	IntentGuildPresences = 1 << 8
	IntentMessageContent = 1 << 15
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

// Server is a running fake. All methods are safe for concurrent use.
type Server struct {
	token string
	srv   *httptest.Server

	mu         sync.Mutex
	nextID     uint64
	calls      []Call
	faults     []*fault
	channels   map[string]*Channel
	guilds     []string
	messages   map[string][]*Message // channel id → messages in order of creation
	byID       map[string]*Message
	nonces     map[string]*Message // channel id + nonce → message
	ixs        map[string]*Interaction
	ixByToken  map[string]*Interaction
	perms      map[string]string          // user id → member.permissions sent with guild interactions
	commands   map[string]json.RawMessage // "" (global) or guild id → JSON array
	cmdSent    map[string]json.RawMessage // "" or guild id → the last accepted bulk overwrite as sent
	commandPUT int
	recShards  int
	maxConc    int
	startsLeft *int
	files      map[string]*userFile // attachment id → a file users attached (AddFile)
	downloads  []Download
	// threadFieldsIgnored are the fields Start Thread from Message ignores (IgnoreThreadFields).
	threadFieldsIgnored map[string]bool

	gw gateway

	// conf checks every request's conformance to the platform's published rules.
	conf *conformance.Recorder
}

// Start starts a server accepting DefaultToken. The caller must Close it.
func Start() *Server { return StartWithToken(DefaultToken) }

// StartWithToken starts a server accepting token.
func StartWithToken(token string) *Server {
	s := &Server{
		conf:      conformance.NewRecorder(conformance.Discord, "discordfake"),
		token:     token,
		nextID:    1200000000000000000,
		channels:  map[string]*Channel{},
		messages:  map[string][]*Message{},
		byID:      map[string]*Message{},
		nonces:    map[string]*Message{},
		ixs:       map[string]*Interaction{},
		ixByToken: map[string]*Interaction{},
		perms:     map[string]string{},
		commands:  map[string]json.RawMessage{},
		cmdSent:   map[string]json.RawMessage{},
	}
	s.gw.init()
	mux := http.NewServeMux()
	s.routes(mux)
	s.srv = httptest.NewServer(mux)
	return s
}

// New starts a server and closes it when tb's test ends; the test then fails if a REST request
// broke Discord's published rules (Violations, AllowViolations).
func New(tb testing.TB) *Server {
	tb.Helper()
	s := Start()
	s.conf.FailOnViolations(tb)
	tb.Cleanup(s.Close)
	return s
}

// URL is the base URL (scheme and host), what discord.api_url should be set to.
func (s *Server) URL() string { return s.srv.URL }

// Token is the bot token the server accepts.
func (s *Server) Token() string { return s.token }

// Close drops every gateway connection and shuts the server down.
func (s *Server) Close() {
	s.gw.closeAll()
	s.srv.CloseClientConnections()
	s.srv.Close()
}

func (s *Server) wsURL(path string) string {
	return "ws" + strings.TrimPrefix(s.srv.URL, "http") + path
}

// newID returns a fresh snowflake.
func (s *Server) newID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.newIDLocked()
}

func (s *Server) newIDLocked() string {
	s.nextID++
	return strconv.FormatUint(s.nextID, 10)
}

// Calls returns the REST calls received so far.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// Count is the number of calls of method on route (a pattern as in Call.Route) answered with a
// 2xx status.
func (s *Server) Count(method, route string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.calls {
		if c.Method == method && c.Route == route && c.Status < 300 {
			n++
		}
	}
	return n
}

// Routes of the REST API, as recorded in Call.Route.
const (
	RouteGateway        = "/api/v9/gateway"
	RouteGatewayBot     = "/api/v9/gateway/bot"
	RouteMe             = "/api/v9/users/@me"
	RouteUserChannels   = "/api/v9/users/@me/channels"
	RouteApplication    = "/api/v9/oauth2/applications/@me"
	RouteChannel        = "/api/v9/channels/{channel}"
	RouteMessages       = "/api/v9/channels/{channel}/messages"
	RouteMessage        = "/api/v9/channels/{channel}/messages/{message}"
	RouteThreadFromMsg  = "/api/v9/channels/{channel}/messages/{message}/threads"
	RouteTyping         = "/api/v9/channels/{channel}/typing"
	RouteCallback       = "/api/v9/interactions/{id}/{token}/callback"
	RouteFollowup       = "/api/v9/webhooks/{app}/{token}"
	RouteFollowupMsg    = "/api/v9/webhooks/{app}/{token}/messages/{message}"
	RouteCommands       = "/api/v9/applications/{app}/commands"
	RouteGuildCommands  = "/api/v9/applications/{app}/guilds/{guild}/commands"
	routeGatewaySocket  = "/gw/"
	routeResumeSocket   = "/resume/"
	maxBody             = 12 << 20 // a message's files take up to 10 MiB
	defaultRetryAfter   = 0.05
	defaultHeartbeatMS  = 45000
	defaultReadyTimeout = 10 * time.Second
)

type handler func(w http.ResponseWriter, r *http.Request, body []byte) (status int, resp any)

func (s *Server) routes(mux *http.ServeMux) {
	rest := map[string]handler{
		"GET " + RouteGateway:        s.getGateway,
		"GET " + RouteGatewayBot:     s.getGatewayBot,
		"GET " + RouteMe:             s.getMe,
		"POST " + RouteUserChannels:  s.postUserChannel,
		"GET " + RouteApplication:    s.getApplication,
		"GET " + RouteChannel:        s.getChannel,
		"POST " + RouteMessages:      s.postMessage,
		"PATCH " + RouteMessage:      s.patchMessage,
		"DELETE " + RouteMessage:     s.deleteMessage,
		"POST " + RouteThreadFromMsg: s.postThread,
		"POST " + RouteTyping:        s.postTyping,
		"POST " + RouteCallback:      s.postCallback,
		"POST " + RouteFollowup:      s.postFollowup,
		"PATCH " + RouteFollowupMsg:  s.patchFollowup,
		"DELETE " + RouteFollowupMsg: s.deleteFollowup,
		"GET " + RouteCommands:       s.getCommands,
		"PUT " + RouteCommands:       s.putCommands,
		"GET " + RouteGuildCommands:  s.getCommands,
		"PUT " + RouteGuildCommands:  s.putCommands,
	}
	for pattern, h := range rest {
		mux.HandleFunc(pattern, s.wrap(pattern, h))
	}
	mux.HandleFunc("GET "+routeGatewaySocket, s.serveGateway)
	mux.HandleFunc("GET "+routeResumeSocket, s.serveGateway)
	mux.HandleFunc("GET "+cdnPath, s.serveAttachment)
	mux.HandleFunc("GET "+mediaPath, s.serveAttachment)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, 0, "404: Not Found")
	})
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

func (s *Server) wrap(pattern string, h handler) http.HandlerFunc {
	method, route, _ := strings.Cut(pattern, " ")
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
		if err != nil {
			writeError(w, http.StatusBadRequest, 0, "unreadable body")
			return
		}
		if len(body) < maxBody { // a body cut at the limit is refused as too large, not checked
			s.conf.Check(method+" "+strings.TrimPrefix(route, "/api/v9"), r.Header.Get("Content-Type"), body)
		}
		status, resp := s.serve(w, r, route, body, h)
		s.mu.Lock()
		s.calls = append(s.calls, Call{Method: method, Route: route, Path: r.URL.Path, Body: body, Status: status, At: time.Now()})
		s.mu.Unlock()
		if status == http.StatusNoContent {
			w.WriteHeader(status)
			return
		}
		writeJSON(w, status, resp)
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, route string, body []byte, h handler) (int, any) {
	// Interaction callbacks and webhook calls are authorized by their token, not the bot's.
	authByToken := strings.HasPrefix(route, "/api/v9/interactions/") || strings.HasPrefix(route, "/api/v9/webhooks/")
	if !authByToken && route != RouteGateway {
		if r.Header.Get("Authorization") != "Bot "+s.token {
			return errorResp(http.StatusUnauthorized, 0, "401: Unauthorized")
		}
	}
	if f := s.takeFault(r.Method, route, r.PathValue("channel")); f != nil {
		return f.answer(w)
	}
	w.Header().Set("X-RateLimit-Limit", "50")
	w.Header().Set("X-RateLimit-Remaining", "49")
	w.Header().Set("X-RateLimit-Reset-After", "1.000")
	w.Header().Set("X-RateLimit-Bucket", "fake-"+strings.ReplaceAll(route, "/", "-"))
	return h(w, r, body)
}

func (s *Server) getGateway(_ http.ResponseWriter, _ *http.Request, _ []byte) (int, any) {
	return http.StatusOK, map[string]any{"url": s.wsURL(strings.TrimSuffix(routeGatewaySocket, "/"))}
}

func (s *Server) getGatewayBot(_ http.ResponseWriter, _ *http.Request, _ []byte) (int, any) {
	s.mu.Lock()
	shards, conc := max(s.recShards, 1), max(s.maxConc, 1)
	remaining := 999
	if s.startsLeft != nil {
		remaining = *s.startsLeft
	}
	s.mu.Unlock()
	return http.StatusOK, map[string]any{
		"url":    s.wsURL(strings.TrimSuffix(routeGatewaySocket, "/")),
		"shards": shards,
		"session_start_limit": map[string]any{
			"total": 1000, "remaining": remaining, "reset_after": 86400000, "max_concurrency": conc,
		},
	}
}

// SetSessionStartsLeft sets session_start_limit.remaining in GET /gateway/bot (default 999).
func (s *Server) SetSessionStartsLeft(n int) {
	s.mu.Lock()
	s.startsLeft = &n
	s.mu.Unlock()
}

// RecommendShards sets what GET /gateway/bot recommends: the number of shards and how many may
// identify at once (max_concurrency). Default 1 and 1.
func (s *Server) RecommendShards(shards, maxConcurrency int) {
	s.mu.Lock()
	s.recShards, s.maxConc = shards, maxConcurrency
	s.mu.Unlock()
}

func botUser() map[string]any {
	return map[string]any{"id": BotID, "username": BotUsername, "discriminator": "0", "global_name": nil, "bot": true}
}

func (s *Server) getMe(_ http.ResponseWriter, _ *http.Request, _ []byte) (int, any) {
	return http.StatusOK, botUser()
}

func (s *Server) getApplication(_ http.ResponseWriter, _ *http.Request, _ []byte) (int, any) {
	return http.StatusOK, map[string]any{"id": ApplicationID, "name": "Switchboard Test", "bot_public": true, "bot": botUser()}
}

func (s *Server) getChannel(_ http.ResponseWriter, r *http.Request, _ []byte) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, ok := s.channels[r.PathValue("channel")]
	if !ok {
		return errorResp(http.StatusNotFound, 10003, "Unknown Channel")
	}
	return http.StatusOK, ch.wire()
}

func (s *Server) postTyping(_ http.ResponseWriter, r *http.Request, _ []byte) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.channels[r.PathValue("channel")]; !ok {
		return errorResp(http.StatusNotFound, 10003, "Unknown Channel")
	}
	return http.StatusNoContent, nil
}

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
