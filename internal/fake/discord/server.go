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
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

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

// Server is a running fake. All methods are safe for concurrent use.
//
// Its methods come from the components it is made of, one per API area, each in the file named
// after it: rest (the call log), faults, discovery (gateway discovery, the bot's identity),
// channels, threads, messages, interactions, webhooks (interaction follow-ups), commands, cdn
// (the files users attach) and gatewayControl (what tests set, read and do to the gateway).
type Server struct {
	srv *httptest.Server
	gw  *gateway
	// conf checks every request's conformance to the platform's published rules.
	conf *conformance.Recorder

	*rest
	*faults
	*discovery
	*channels
	*threads
	*messages
	*interactions
	*webhooks
	*commands
	*cdn
	*gatewayControl
}

// Start starts a server accepting DefaultToken. The caller must Close it.
func Start() *Server { return StartWithToken(DefaultToken) }

// StartWithToken starts a server accepting token.
func StartWithToken(token string) *Server {
	s := &Server{conf: conformance.NewRecorder(conformance.Discord, "discordfake")}
	s.wire(token)
	mux := http.NewServeMux()
	s.routes(mux)
	s.srv = httptest.NewServer(mux)
	return s
}

// wire makes the components and connects each to those it works with.
func (s *Server) wire(token string) {
	st := &store{nextID: 1200000000000000000}
	s.faults = &faults{}
	s.rest = &rest{token: token, conf: s.conf, faults: s.faults}
	s.gw = newGateway(token, s.wsURL)
	s.discovery = &discovery{wsURL: s.wsURL}
	s.channels = newChannels(st, s.gw)
	s.gw.chans = s.channels
	s.messages = newMessages(st, s.channels, s.gw)
	s.threads = &threads{st: st, chans: s.channels, msgs: s.messages, gw: s.gw}
	s.interactions = newInteractions(st, s.channels, s.messages, s.gw)
	s.webhooks = &webhooks{st: st, ixs: s.interactions}
	s.commands = newCommands(st)
	s.cdn = &cdn{st: st, url: s.URL}
	s.gatewayControl = &gatewayControl{g: s.gw}
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
func (s *Server) Token() string { return s.rest.token }

// Close drops every gateway connection and shuts the server down.
func (s *Server) Close() {
	s.gw.closeAll()
	s.srv.CloseClientConnections()
	s.srv.Close()
}

func (s *Server) wsURL(path string) string {
	return "ws" + strings.TrimPrefix(s.srv.URL, "http") + path
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

// routes maps every route to the component that answers it.
func (s *Server) routes(mux *http.ServeMux) {
	handlers := map[string]handler{
		"GET " + RouteGateway:        s.discovery.getGateway,
		"GET " + RouteGatewayBot:     s.discovery.getGatewayBot,
		"GET " + RouteMe:             s.discovery.getMe,
		"POST " + RouteUserChannels:  s.channels.postUserChannel,
		"GET " + RouteApplication:    s.discovery.getApplication,
		"GET " + RouteChannel:        s.channels.getChannel,
		"POST " + RouteMessages:      s.messages.postMessage,
		"PATCH " + RouteMessage:      s.messages.patchMessage,
		"DELETE " + RouteMessage:     s.messages.deleteMessage,
		"POST " + RouteThreadFromMsg: s.threads.postThread,
		"POST " + RouteTyping:        s.channels.postTyping,
		"POST " + RouteCallback:      s.interactions.postCallback,
		"POST " + RouteFollowup:      s.webhooks.postFollowup,
		"PATCH " + RouteFollowupMsg:  s.webhooks.patchFollowup,
		"DELETE " + RouteFollowupMsg: s.webhooks.deleteFollowup,
		"GET " + RouteCommands:       s.commands.getCommands,
		"PUT " + RouteCommands:       s.commands.putCommands,
		"GET " + RouteGuildCommands:  s.commands.getCommands,
		"PUT " + RouteGuildCommands:  s.commands.putCommands,
	}
	for pattern, h := range handlers {
		mux.HandleFunc(pattern, s.rest.wrap(pattern, h))
	}
	mux.HandleFunc("GET "+routeGatewaySocket, s.gw.serve)
	mux.HandleFunc("GET "+routeResumeSocket, s.gw.serve)
	mux.HandleFunc("GET "+cdnPath, s.cdn.serveAttachment)
	mux.HandleFunc("GET "+mediaPath, s.cdn.serveAttachment)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, 0, "404: Not Found")
	})
}
