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
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

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

// Server is a running fake Bot API. All methods are safe for concurrent use.
//
// Its methods come from the components it is made of, one per area of the Bot API, each in the
// file named after it: callLog (calls), faults, messages, callbacks, commands, webhook, updates,
// drafts and files.
type Server struct {
	token string
	srv   *httptest.Server
	// mu is the one lock of the fake, which every component shares: it guards all their state,
	// so that a call that reads one and writes another (a draft replaced by a message, a
	// callback query on a message) sees them consistent.
	mu  sync.Mutex
	api *api
	// conf checks every request's conformance to the platform's published rules.
	conf *conformance.Recorder

	*callLog
	*faults
	*messages
	*callbacks
	*commands
	*webhook
	*updates
	*drafts
	*files
}

// Start starts a server on a loopback port accepting DefaultToken. The caller must Close it.
func Start() *Server { return StartWithToken(DefaultToken) }

// StartWithToken starts a server accepting token. The caller must Close it.
func StartWithToken(token string) *Server {
	s := &Server{token: token, conf: conformance.NewRecorder(conformance.Telegram, "telegramfake")}
	s.wire()
	s.srv = httptest.NewServer(http.HandlerFunc(s.api.serve))
	return s
}

// wire makes the components and connects each to those it works with.
func (s *Server) wire() {
	mu := &s.mu
	s.callLog = newCallLog(mu)
	s.faults = newFaults(mu)
	s.messages = &messages{mu: mu, chats: map[int64]*chat{}}
	s.callbacks = &callbacks{mu: mu, byID: map[string]*callback{}}
	s.commands = &commands{mu: mu, raw: json.RawMessage("[]")}
	s.updates = newUpdates(mu, s.messages, s.callbacks)
	s.webhook = &webhook{mu: mu, updates: s.updates}
	s.updates.webhook = s.webhook
	s.drafts = &drafts{mu: mu, msgs: s.messages}
	s.files = &files{mu: mu, token: s.token, log: s.callLog}
	s.api = &api{mu: mu, token: s.token, log: s.callLog, faults: s.faults, conf: s.conf, files: s.files,
		updates: s.updates, documents: &documents{msgs: s.messages}}
	s.api.methods = s.botAPI()
}

// botAPI maps each Bot API method the fake implements (but getUpdates and sendDocument, which
// api.call serves itself) to the component that answers it.
func (s *Server) botAPI() map[string]method {
	return map[string]method{
		"getMe":               getMe,
		"sendMessage":         s.messages.sendMessage,
		"sendMessageDraft":    s.drafts.sendMessageDraft,
		"editMessageText":     s.messages.editMessageText,
		"deleteMessage":       s.messages.deleteMessage,
		"sendChatAction":      s.messages.sendChatAction,
		"answerCallbackQuery": s.callbacks.answerCallbackQuery,
		"setMyCommands":       s.commands.setMyCommands,
		"getMyCommands":       s.commands.getMyCommands,
		"setWebhook":          s.webhook.setWebhook,
		"deleteWebhook":       s.webhook.deleteWebhook,
		"getWebhookInfo":      s.webhook.getWebhookInfo,
		"getFile":             s.files.getFile,
	}
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
	s.updates.close()
	s.srv.CloseClientConnections()
	s.srv.Close()
}
