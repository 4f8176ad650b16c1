package slack

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/channels/kit"
	"github.com/switchboard-bot/switchboard/render"
)

// DefaultAPIURL is the Web API base URL used when Config.APIURL is empty.
const DefaultAPIURL = "https://slack.com/api/"

// Mode is how events arrive.
type Mode string

// The inbound modes.
const (
	ModeSocket Mode = "socket"
	ModeHTTP   Mode = "http"
)

// MaxConnections is Slack's limit of Socket Mode connections per app.
const MaxConnections = 10

// MaxLoadingMessages is how many loading messages assistant.threads.setStatus takes.
const MaxLoadingMessages = 10

// DefaultLoadingMessages rotate in a thread's status while a run works, unless
// Config.LoadingMessages says otherwise.
var DefaultLoadingMessages = []string{"Thinking…", "Working on it…", "Putting the answer together…"}

// Config configures a Channel. BotToken is required unless Installations holds the workspaces'
// tokens, AppToken in socket mode, SigningSecret in HTTP mode; everything else has a default.
type Config struct {
	// BotToken (xoxb-…) makes every Web API call of a single-workspace app, and of workspaces
	// Installations has no token for.
	BotToken string
	// Installations, when set, holds a bot token per workspace that installed the app through
	// OAuth v2 (InstallHandler, OAuthHandler): each call uses its conversation's workspace's.
	Installations Installations
	// ClientID and ClientSecret are the app's OAuth credentials; RedirectURL the public URL of
	// OAuthHandler; Scopes the bot scopes asked (default DefaultScopes); StateKey signs the OAuth
	// state (at least 32 bytes). All are needed for InstallHandler and OAuthHandler, and to
	// refresh rotating tokens.
	ClientID, ClientSecret, RedirectURL string
	Scopes                              []string
	StateKey                            []byte
	// AuthorizeURL is Slack's authorize page; default DefaultAuthorizeURL.
	AuthorizeURL string
	// AppToken (xapp-…) opens Socket Mode connections.
	AppToken string
	// SigningSecret verifies HTTP-mode requests.
	SigningSecret string
	// APIURL is the Web API base URL with its trailing slash (a fake in tests); default
	// DefaultAPIURL.
	APIURL string
	// Mode is ModeSocket (default) or ModeHTTP.
	Mode Mode
	// Connections is the number of Socket Mode connections to hold (1–10, default 1). Slack
	// spreads events over them; the router's dedupe covers an event delivered on two. With a
	// Lease, it is the budget of the whole deployment: connection slots 0..Connections-1.
	Connections int
	// Lease, when set, holds each Socket Mode connection slot through a lease shared by every
	// process of the app (named LeaseName + ":slot<i>"): a process opens a socket only for the
	// slots it holds, so the processes together never open more than Connections; they split
	// the slots evenly (kit.RunLeasedSet), a dead process's slots are taken over once their
	// leases expire (LeaseTTL), and Stop hands them back at once. A process holding no slot
	// still delivers. Nil: this process opens every slot.
	Lease kit.Lease
	// LeaseName names the app in the leases, e.g. "slack:<app id>"; default "slack".
	LeaseName string
	// LeaseOwner names this process in the leases; default a random id.
	LeaseOwner string
	// LeaseTTL is a slot lease's lifetime without renewal; default kit.DefaultLeaseTTL.
	LeaseTTL time.Duration
	// OnLease, when set, is called with true when this process starts holding slot i and with
	// false when it gives it up; OnTakeover when it takes a slot another process held. Both
	// must return quickly.
	OnLease    func(slot int, held bool)
	OnTakeover func(slot int)
	// RateLimits counts the rate limits the adapter meets and logs them at most once a minute
	// (kit.RateLimitLog); default one of the adapter's own, on Logger. Per-429 lines are
	// Debug only.
	RateLimits *kit.RateLimitLog
	// ThreadReplies is RepliesAll (default) or RepliesMention.
	ThreadReplies ThreadReplies
	// ReplyInThread answers a top-level channel mention in a thread rooted at it. New sets it
	// from ReplyInThreadSet: false only when ReplyInThreadSet is true and this false.
	ReplyInThread    bool
	ReplyInThreadSet bool
	// Command is the slash command the app registers ("/bot" by default); its first word is the
	// router command.
	Command string
	// AssistantStatus shows the "is thinking…" status (assistant.threads.setStatus) while a run
	// works, in threads where Slack allows it; default on (set AssistantStatusOff to turn off).
	AssistantStatusOff bool
	// LoadingMessages rotate in the thread's status while a run works (setStatus's
	// loading_messages): nil is DefaultLoadingMessages, an empty slice none; at most
	// MaxLoadingMessages are sent.
	LoadingMessages []string
	// StatusAfter is how long a run works before its status is set: one answered sooner sets
	// none and so costs no status calls (the set and the clear). Zero sets it at once. cmd/bot
	// passes kit.DefaultTypingAfter.
	StatusAfter time.Duration
	// StreamingOff turns native streaming off (slack.streaming: false): answers are posted and
	// edited as on every platform. By default an answer in a thread streams
	// (chat.startStream / appendStream / stopStream) with the run's subagents as a plan's tasks.
	StreamingOff bool
	// SuggestedPrompts are offered when a user opens the app's AI surface: an assistant thread
	// (assistant_thread_started, apps on features.assistant_view) or the agent's conversation
	// (app_home_opened on the Messages tab, apps on features.agent_view); none when empty. Slack
	// shows the first MaxSuggestedPrompts.
	SuggestedPrompts []string
	// AgentView says the app uses Slack's agent messaging experience (features.agent_view, what
	// `bot slack-manifest` prints): its conversations are the DM of its Messages tab, each
	// top-level message a thread the agent answers in. A top-level DM message is then answered
	// in a thread rooted at it — its own conversation, titled after the message, where the
	// answer can stream and the status show —, as a channel mention is. Off (apps still on
	// assistant_view), a DM's top level is one conversation answered at the top level. The
	// events of both surfaces are handled either way.
	AgentView bool
	// Pacing spaces chat.postMessage per channel to Slack's pace (about one a second after a
	// short burst), and every other Web API call to its workspace's budget of the method's tier
	// (Tier 2: 20 a minute, Tier 3: 50, Tier 4: 100, after a burst of a fifth of that), instead
	// of meeting Slack's 429s. Configuration turns it on (slack.pacing); load tests turn it off.
	Pacing bool
	// ActionKey signs the interactive ids of rendered cards.
	ActionKey render.Key
	// HTTPClient makes the Web API calls; default a client keeping 256 idle connections.
	HTTPClient *http.Client
	// Logger receives operator logs; default slog.Default().
	Logger *slog.Logger
	// MaxRetryWait bounds the total time a call nobody above retries (an answer to a click, a
	// modal, an assistant thread's prompts and title) waits on rate limits before returning a
	// *channels.RateLimitError; default 30 s.
	MaxRetryWait time.Duration
	// CallTimeout bounds each Web API call; default 15 s.
	CallTimeout time.Duration
	// ReadyWindow is how recent the last frame of every socket must be for Ready (Slack pings
	// every few seconds); default 45 s.
	ReadyWindow time.Duration
	// OnMalformed, when set, is called once for each payload skipped as malformed, for a metric.
	OnMalformed func()
	// OnUninstall, when set, is called when Slack reports app_uninstalled or tokens_revoked,
	// after the install was deleted (or its deletion failed): with the team id for a workspace, with the enterprise id
	// for an Enterprise Grid org-wide install. The wiring drops that workspace's pending work
	// there: the conversations whose key's workspace is the id, or "<id>/<team>" or
	// "<enterprise>/<id>". It runs on the receiving goroutine once per event (a redelivery with
	// the same event_id is not handled again, unless the install store could not be changed the
	// first time), in the one process that got the event; other processes learn of the
	// uninstall from the Installations store — of the configured bot token's own workspace too,
	// from the mark it leaves there (see Installations).
	OnUninstall func(id string)
	// Metrics receives the adapter's own counts; default none.
	Metrics Metrics
}

// Metrics receives what only the adapter sees, for Prometheus; every method must return quickly.
type Metrics interface {
	// Connection reports Socket Mode connection id going up (its hello arrived) or down (it is
	// reconnecting, or the channel stopped).
	Connection(id int, up bool)
	// Reconnect counts a Socket Mode reconnection: a hello after the connection's first.
	Reconnect()
	// Ack counts an envelope's (or HTTP delivery's) outcome: "acked"; "refused" (the Handler
	// failed, so it is not acknowledged and Slack redelivers); "failed" (the ack could not be
	// queued on the socket).
	Ack(result string)
	// RateLimited counts a Web API answer that asked to slow down, by method.
	RateLimited(method string)
}

type nopMetrics struct{}

func (nopMetrics) Connection(int, bool) {}
func (nopMetrics) Reconnect()           {}
func (nopMetrics) Ack(string)           {}
func (nopMetrics) RateLimited(string)   {}

const redacted = "[redacted]"

// String is redacted: it never shows a token or the signing secret.
func (c Config) String() string {
	return fmt.Sprintf("slack.Config{APIURL:%q Mode:%q BotToken:%s AppToken:%s SigningSecret:%s}", c.APIURL, c.Mode, redacted, redacted, redacted)
}

// GoString is redacted like String.
func (c Config) GoString() string { return c.String() }

// LogValue is redacted like String.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }

// withDefaults validates c and fills in the defaults, in the order New documents: the
// credentials, the mode and what it needs, the connections and the thread replies, then the
// defaults of everything else.
func (c Config) withDefaults() (Config, error) {
	if err := c.checkCredentials(); err != nil {
		return c, err
	}
	if c.AuthorizeURL == "" {
		c.AuthorizeURL = DefaultAuthorizeURL
	}
	if len(c.Scopes) == 0 {
		c.Scopes = DefaultScopes
	}
	c, err := c.withMode()
	if err != nil {
		return c, err
	}
	if c.APIURL == "" {
		c.APIURL = DefaultAPIURL
	}
	if !strings.HasSuffix(c.APIURL, "/") {
		c.APIURL += "/"
	}
	if c, err = c.withIntake(); err != nil {
		return c, err
	}
	return c.withAnswers().withPlumbing(), nil
}

// checkCredentials checks the bot token (or the install store that replaces it) and the OAuth
// install's settings.
func (c Config) checkCredentials() error {
	switch {
	case c.BotToken == "" && c.Installations == nil:
		return errors.New("slack: a bot token (xoxb-…) or an installation store is required")
	case c.BotToken != "" && !strings.HasPrefix(c.BotToken, "xoxb-"):
		return errors.New("slack: the bot token must be a bot token (xoxb-…)")
	}
	if c.ClientID == "" {
		return nil
	}
	switch {
	case c.Installations == nil:
		return errNoInstallations
	case c.ClientSecret == "" || c.RedirectURL == "":
		return errors.New("slack: OAuth install needs the client secret and the redirect URL")
	case len(c.StateKey) < 32:
		return errors.New("slack: OAuth install needs a state key of at least 32 bytes")
	}
	return nil
}

// withMode checks the mode (socket by default) and the credential it needs: the app-level
// token in socket mode, the signing secret in HTTP mode.
func (c Config) withMode() (Config, error) {
	switch c.Mode {
	case "":
		c.Mode = ModeSocket
	case ModeSocket, ModeHTTP:
	default:
		return c, fmt.Errorf("slack: unknown mode %q (want socket or http)", c.Mode)
	}
	if c.Mode == ModeSocket && !strings.HasPrefix(c.AppToken, "xapp-") {
		return c, errors.New("slack: socket mode needs an app-level token (xapp-…) with connections:write")
	}
	if c.Mode == ModeHTTP && c.SigningSecret == "" {
		return c, errors.New("slack: http mode needs the signing secret")
	}
	return c, nil
}

// withIntake checks and fills in what events are read with: the connections (1 by default)
// and which thread replies are read (all by default).
func (c Config) withIntake() (Config, error) {
	switch {
	case c.Connections == 0:
		c.Connections = 1
	case c.Connections < 0 || c.Connections > MaxConnections:
		return c, fmt.Errorf("slack: connections must be 1–%d, not %d", MaxConnections, c.Connections)
	}
	switch c.ThreadReplies {
	case "":
		c.ThreadReplies = RepliesAll
	case RepliesAll, RepliesMention:
	default:
		return c, fmt.Errorf("slack: unknown thread_replies %q (want all or mention)", c.ThreadReplies)
	}
	return c, nil
}

// withAnswers fills in how answers show: in a thread unless told otherwise, the loading
// messages (at most MaxLoadingMessages) and the slash command.
func (c Config) withAnswers() Config {
	if !c.ReplyInThreadSet {
		c.ReplyInThread = true
	}
	if c.LoadingMessages == nil {
		c.LoadingMessages = DefaultLoadingMessages
	}
	c.LoadingMessages = slices.Clone(c.LoadingMessages[:min(len(c.LoadingMessages), MaxLoadingMessages)])
	if c.Command == "" {
		c.Command = "/bot"
	}
	if !strings.HasPrefix(c.Command, "/") {
		c.Command = "/" + c.Command
	}
	return c
}

// withPlumbing fills in the HTTP client, the logger, the timeouts, the metrics and the
// leases' names.
func (c Config) withPlumbing() Config {
	if c.HTTPClient == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 256, 256
		c.HTTPClient = &http.Client{Transport: tr}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.MaxRetryWait <= 0 {
		c.MaxRetryWait = 30 * time.Second
	}
	if c.CallTimeout <= 0 {
		c.CallTimeout = 15 * time.Second
	}
	if c.ReadyWindow <= 0 {
		c.ReadyWindow = 45 * time.Second
	}
	if c.Metrics == nil {
		c.Metrics = nopMetrics{}
	}
	if c.LeaseName == "" {
		c.LeaseName = platform
	}
	if c.LeaseOwner == "" {
		c.LeaseOwner = kit.NewOwner()
	}
	return c
}
