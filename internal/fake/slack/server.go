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
	"net/http"
	"net/http/httptest"
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

// Server is a running fake Slack. All methods are safe for concurrent use.
//
// Its methods come from the components it is made of, one per area of Slack's APIs, each in the
// file named after it: callLog (calls), faults, chat, streams (stream.go), views, assistant,
// uploads, files, oauth, events, interactivity (interactive.go), deliveries (signed HTTP
// requests) and socketControl (what tests set, read and do to Socket Mode).
type Server struct {
	srv *httptest.Server

	botToken, appToken, secret string

	api  *api
	sock *socketMode
	// conf checks every request's conformance to the platform's published rules.
	conf *conformance.Recorder

	*callLog
	*faults
	*chat
	*streams
	*views
	*assistant
	*uploads
	*files
	*oauth
	*events
	*interactivity
	*deliveries
	*socketControl
}

// Option adjusts a server before it starts.
type Option func(*Server)

// WithTokens makes the server accept these tokens instead of the defaults.
func WithTokens(bot, app string) Option {
	return func(s *Server) { s.botToken, s.appToken = bot, app }
}

// Start starts a server on a loopback port. The caller must Close it.
func Start(opts ...Option) *Server {
	s := &Server{botToken: DefaultBotToken, appToken: DefaultAppToken, secret: DefaultSigningSecret}
	for _, o := range opts {
		o(s)
	}
	s.wire()
	mux := http.NewServeMux()
	mux.HandleFunc("/api/", s.api.serve)
	mux.HandleFunc("/socket", s.sock.serve)
	mux.HandleFunc(uploadPath, s.uploads.serveUpload)
	mux.HandleFunc(filesPath, s.files.serveFile)
	s.srv = httptest.NewServer(mux)
	return s
}

// wire makes the components, with the tokens the options chose, and connects each to those it
// works with.
func (s *Server) wire() {
	st := &store{tsClock: time.Now().Unix()}
	s.conf = conformance.NewRecorder(conformance.Slack, "slackfake")
	s.callLog = newCallLog()
	s.faults = newFaults()
	s.sock = newSocketMode()
	s.socketControl = &socketControl{m: s.sock}
	s.chat = newChat(st)
	s.streams = &streams{st: st, chat: s.chat}
	s.views = newViews(st)
	s.assistant = &assistant{st: st}
	s.uploads = &uploads{st: st, url: s.URL, log: s.callLog, faults: s.faults, chat: s.chat, byID: map[string]*Upload{}}
	s.oauth = newOAuth(st, s.botToken)
	s.files = &files{st: st, url: s.URL, log: s.callLog, oauth: s.oauth}
	s.events = &events{st: st, chat: s.chat, sock: s.socketControl}
	s.interactivity = &interactivity{st: st, url: s.URL, views: s.views, sock: s.socketControl}
	s.deliveries = &deliveries{secret: s.secret, ix: s.interactivity}
	s.api = &api{st: st, log: s.callLog, faults: s.faults, oauth: s.oauth, conf: s.conf, appToken: s.appToken, url: s.URL}
	s.api.methods = s.webAPI()
}

// webAPI maps each Web API method the fake implements to the component that answers it.
func (s *Server) webAPI() map[string]method {
	methods := map[string]method{
		"auth.test":                    s.api.authTest,
		"apps.connections.open":        s.api.connectionsOpen,
		"files.getUploadURLExternal":   s.uploads.getUploadURL,
		"files.completeUploadExternal": s.uploads.completeUpload,
	}
	// The methods that do not need the workspace.
	for name, h := range map[string]func(p map[string]string) (map[string]any, *apiErr){
		"chat.postMessage":                      s.chat.postMessage,
		"chat.update":                           s.chat.updateMessage,
		"chat.delete":                           s.chat.deleteMessage,
		"chat.postEphemeral":                    s.chat.postEphemeral,
		"views.open":                            s.views.openView,
		"conversations.replies":                 (&conversations{chat: s.chat}).replies,
		"conversations.history":                 (&conversations{chat: s.chat}).history,
		"assistant.threads.setStatus":           s.assistant.setStatus,
		"assistant.threads.setTitle":            s.assistant.setTitle,
		"assistant.threads.setSuggestedPrompts": s.assistant.setSuggestedPrompts,
		"chat.startStream":                      s.streams.startStream,
		"chat.appendStream":                     s.streams.appendStream,
		"chat.stopStream":                       s.streams.stopStream,
	} {
		methods[name] = func(p map[string]string, _ string) (map[string]any, *apiErr) { return h(p) }
	}
	return methods
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
	s.faults.close()
	s.sock.closeAll()
	s.srv.CloseClientConnections()
	s.srv.Close()
	s.sock.wait()
}
