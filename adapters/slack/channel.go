// Package slack is the Slack adapter: a channels.Channel on github.com/slack-go/slack.
//
// Inbound: Socket Mode (default; one or more connections, each opened with slack-go's
// apps.connections.open and read here, reopened with capped backoff) or the HTTP Events API
// (handlers to mount on the shared listener: events, interactivity and slash commands, each
// request's v0 signature checked). Events, interactions and slash commands are decoded here —
// not with slackevents.ParseEvent, which drops a whole event over one unreadable block — into
// channels.Inbound, handed to the Handler one at a time per conversation (at most maxHandovers
// conversations at once), and acknowledged (Socket Mode ack, HTTP 200) only once the Handler
// returned: an error leaves the envelope unacknowledged so Slack redelivers it, and the
// router's dedupe (Inbound.EventID is the message's channel and ts, shared by Slack's
// app_mention + message pair and by every retry) makes the redelivery harmless. The events the
// adapter handles itself (assistant_thread_started) are deduplicated here on their event_id.
//
// Outbound: Block Kit from render with a text fallback, split to Slack's limits (3,000
// characters a section, 50 blocks a message, 40,000 characters of text) and never truncated;
// replies in the conversation's thread; link unfurls off; chat.update for edits; ephemeral
// answers to clicks and slash commands; modals with views.open; the assistant thread status
// while a run works; answers in threads streamed natively (chat.startStream / appendStream /
// stopStream, stream.go) with the run's subagents as a plan's tasks, refusals reported as
// channels.ErrStreamRefused so delivery falls back to post-and-edit; files (the rest of a long
// answer) through Slack's external upload, shared in the conversation's thread. Rate limits
// (HTTP 429 Retry-After, ratelimited) are waited out up to
// MaxRetryWait, then returned as *channels.RateLimitError.
//
// Conversation key: {slack, workspace (team, or enterprise/team on Enterprise Grid), channel,
// thread ts}; a top-level mention starts a thread rooted at it (ReplyInThread), a DM's top level
// is one conversation. Identity: channel_user_id is UserID (org:user).
//
// Tokens and the signing secret never appear in logs or errors.
package slack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	slackgo "github.com/slack-go/slack"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/kit"
	"github.com/switchboard-bot/switchboard/render"
)

const platform = "slack"

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
	// StatusAfter is how long a run works before its status is set: one answered sooner sets
	// none and so costs no status calls (the set and the clear). Zero sets it at once. cmd/bot
	// passes kit.DefaultTypingAfter.
	StatusAfter time.Duration
	// StreamingOff turns native streaming off (slack.streaming: false): answers are posted and
	// edited as on every platform. By default an answer in a thread streams
	// (chat.startStream / appendStream / stopStream) with the run's subagents as a plan's tasks.
	StreamingOff bool
	// SuggestedPrompts are offered when a user opens an assistant thread with the app
	// (assistant_thread_started); none when empty.
	SuggestedPrompts []string
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
	// MaxRetryWait bounds the total time one call waits on rate limits before returning a
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

// Channel is the Slack channel. Create it with New; all methods are safe for concurrent use.
type Channel struct {
	cfg    Config
	api    *slackgo.Client
	base   *teamClient // api and the configured bot token
	redact *redactor
	me     self
	log    *slog.Logger

	mu      sync.Mutex
	handler channels.Handler
	started bool
	stopped bool
	// readCancel stops taking envelopes; connCancel closes the sockets (after the acks).
	readCancel, connCancel context.CancelFunc
	stopOnDone             func() bool
	loops                  sync.WaitGroup // socket loops
	work                   sync.WaitGroup // envelopes being handed over

	conns         []*connState // the sockets of the slots this process holds
	socketOK      atomic.Bool  // socket mode: Start has returned
	httpOK        atomic.Bool
	lanes         *lanes
	pacer         *pacer
	tiers         *tierLimiter
	pending       sync.Map // trigger id → responder, while its interaction is handled
	noStatus      sync.Map // channel id → struct{}: setStatus refused there
	noStream      sync.Map // channel id → struct{}: chat.startStream unknown there
	statuses      sync.Map // channel/thread → *threadState
	statusLookups atomic.Int64
	statusTimers  sync.WaitGroup       // status sets scheduled (StatusAfter) and not yet done or stopped
	statusStopped atomic.Bool          // Stop came: no status is scheduled or set any more
	revoked       sync.Map             // team id → struct{}
	rendered      render.Kept[[]piece] // cards Pages rendered, for their Send or Edit
	untitled      recentEvents         // channel/thread of the assistant threads awaiting their first message (the last 4,096)
	recent        recentEvents         // ids of the events handled here rather than by the router (dedupe)
	followups     *kit.Followups       // assistant threads' prompts and titles, sent off the ack's path
	edits         sync.Map             // channel/ts → *atomic.Int64: the generation of the message's latest edit

	teamClients sync.Map   // team → *teamClient (installed workspaces)
	installMu   sync.Mutex // one install lookup or token refresh at a time
	now         func() time.Time
	sleep       func(ctx context.Context, d time.Duration) error
	// ackDeadline is when an interaction or a command is acknowledged whatever its handling.
	ackDeadline time.Duration
	// pingTimeout is how long a socket may read nothing before it is replaced.
	pingTimeout time.Duration
}

var (
	_ channels.Channel              = (*Channel)(nil)
	_ channels.Editor               = (*Channel)(nil)
	_ channels.Deleter              = (*Channel)(nil)
	_ channels.Typer                = (*Channel)(nil)
	_ channels.SentFinder           = (*Channel)(nil)
	_ channels.FormOpener           = (*Channel)(nil)
	_ channels.InteractionResponder = (*Channel)(nil)
	_ channels.Readiness            = (*Channel)(nil)
)

// New validates cfg and returns a Channel. It does no I/O: Start calls auth.test.
func New(cfg Config) (*Channel, error) {
	switch {
	case cfg.BotToken == "" && cfg.Installations == nil:
		return nil, errors.New("slack: a bot token (xoxb-…) or an installation store is required")
	case cfg.BotToken != "" && !strings.HasPrefix(cfg.BotToken, "xoxb-"):
		return nil, errors.New("slack: the bot token must be a bot token (xoxb-…)")
	}
	if cfg.ClientID != "" {
		switch {
		case cfg.Installations == nil:
			return nil, errNoInstallations
		case cfg.ClientSecret == "" || cfg.RedirectURL == "":
			return nil, errors.New("slack: OAuth install needs the client secret and the redirect URL")
		case len(cfg.StateKey) < 32:
			return nil, errors.New("slack: OAuth install needs a state key of at least 32 bytes")
		}
	}
	if cfg.AuthorizeURL == "" {
		cfg.AuthorizeURL = DefaultAuthorizeURL
	}
	if len(cfg.Scopes) == 0 {
		cfg.Scopes = DefaultScopes
	}
	switch cfg.Mode {
	case "":
		cfg.Mode = ModeSocket
	case ModeSocket, ModeHTTP:
	default:
		return nil, fmt.Errorf("slack: unknown mode %q (want socket or http)", cfg.Mode)
	}
	if cfg.Mode == ModeSocket && !strings.HasPrefix(cfg.AppToken, "xapp-") {
		return nil, errors.New("slack: socket mode needs an app-level token (xapp-…) with connections:write")
	}
	if cfg.Mode == ModeHTTP && cfg.SigningSecret == "" {
		return nil, errors.New("slack: http mode needs the signing secret")
	}
	if cfg.APIURL == "" {
		cfg.APIURL = DefaultAPIURL
	}
	if !strings.HasSuffix(cfg.APIURL, "/") {
		cfg.APIURL += "/"
	}
	switch {
	case cfg.Connections == 0:
		cfg.Connections = 1
	case cfg.Connections < 0 || cfg.Connections > MaxConnections:
		return nil, fmt.Errorf("slack: connections must be 1–%d, not %d", MaxConnections, cfg.Connections)
	}
	switch cfg.ThreadReplies {
	case "":
		cfg.ThreadReplies = RepliesAll
	case RepliesAll, RepliesMention:
	default:
		return nil, fmt.Errorf("slack: unknown thread_replies %q (want all or mention)", cfg.ThreadReplies)
	}
	if !cfg.ReplyInThreadSet {
		cfg.ReplyInThread = true
	}
	if cfg.Command == "" {
		cfg.Command = "/bot"
	}
	if !strings.HasPrefix(cfg.Command, "/") {
		cfg.Command = "/" + cfg.Command
	}
	if cfg.HTTPClient == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 256, 256
		cfg.HTTPClient = &http.Client{Transport: tr}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.RateLimits == nil {
		cfg.RateLimits = kit.NewRateLimitLog(platform, cfg.Logger, nil)
	}
	if cfg.MaxRetryWait <= 0 {
		cfg.MaxRetryWait = 30 * time.Second
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = 15 * time.Second
	}
	if cfg.ReadyWindow <= 0 {
		cfg.ReadyWindow = 45 * time.Second
	}
	if cfg.Metrics == nil {
		cfg.Metrics = nopMetrics{}
	}
	if cfg.LeaseName == "" {
		cfg.LeaseName = platform
	}
	if cfg.LeaseOwner == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		cfg.LeaseOwner = hex.EncodeToString(b[:])
	}
	opts := []slackgo.Option{slackgo.OptionAPIURL(cfg.APIURL), slackgo.OptionHTTPClient(cfg.HTTPClient)}
	if cfg.AppToken != "" {
		opts = append(opts, slackgo.OptionAppLevelToken(cfg.AppToken))
	}
	c := &Channel{
		cfg:    cfg,
		api:    slackgo.New(cfg.BotToken, opts...),
		redact: newRedactor(cfg.BotToken, cfg.AppToken, cfg.SigningSecret, cfg.ClientSecret),
		log:    cfg.Logger,
		now:    time.Now,
		sleep:  kit.Sleep,
		pacer:  newPacer(paceEvery, paceBurst),
		tiers:  newTierLimiter(),

		ackDeadline: interactionAckDeadline,
		pingTimeout: pingTimeout,
	}
	c.base = &teamClient{api: c.api, inst: Installation{BotToken: cfg.BotToken}}
	c.lanes = newLanes(maxHandovers)
	c.followups = kit.NewFollowups()
	return c, nil
}

// Name is "slack".
func (c *Channel) Name() string { return platform }

// BotUserID is the bot's user id as auth.test reported it; "" before Start.
func (c *Channel) BotUserID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.me.userID
}

// Start calls auth.test (a failure is a clear error: wrong token, revoked, unreachable) and,
// with an Installations store, deletes the uninstall's mark of the token's workspace (the token
// works, so the app is installed there again), then in
// socket mode opens the connections and returns once each has received its hello (or failed
// within CallTimeout); in HTTP mode the handlers accept deliveries from then on. Receiving
// continues until Stop or until ctx ends. A Channel starts once.
func (c *Channel) Start(ctx context.Context, h channels.Handler) error {
	if h == nil {
		return errors.New("slack: start: nil handler")
	}
	c.mu.Lock()
	if c.started {
		c.mu.Unlock()
		return errors.New("slack: start: already started")
	}
	c.started = true
	c.mu.Unlock()

	at := &slackgo.AuthTestResponse{TeamID: "(installed workspaces)"}
	if c.cfg.BotToken != "" {
		callCtx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout)
		var err error
		at, err = c.api.AuthTestContext(callCtx)
		cancel()
		if err != nil {
			return fmt.Errorf("slack: start: auth.test: %w", c.apiError("auth.test", err))
		}
	}
	c.mu.Lock()
	c.me = self{userID: at.UserID, botID: at.BotID, threads: c.cfg.ThreadReplies, replyInThread: c.cfg.ReplyInThread}
	if c.cfg.BotToken != "" {
		c.me.team, c.me.enterprise = at.TeamID, at.EnterpriseID
	}
	c.handler = h
	me := c.me
	c.mu.Unlock()
	if c.cfg.BotToken != "" {
		// auth.test accepted the token: an uninstall's mark its workspace left is stale.
		callCtx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout)
		c.clearUninstalled(callCtx, me)
		cancel()
	}

	if c.cfg.Mode == ModeHTTP {
		c.httpOK.Store(true)
		c.log.Info("slack: receiving over HTTP", "team", at.TeamID, "bot_user", at.UserID)
		return nil
	}
	readCtx, readCancel := context.WithCancel(context.WithoutCancel(ctx))
	connCtx, connCancel := context.WithCancel(context.WithoutCancel(ctx))
	c.mu.Lock()
	c.readCancel, c.connCancel = readCancel, connCancel
	c.mu.Unlock()
	// ctx ending stops the channel like Stop.
	stopOnDone := context.AfterFunc(ctx, func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.Stop(stopCtx)
	})
	c.mu.Lock()
	c.stopOnDone = stopOnDone
	c.mu.Unlock()
	// The first connection of each slot taken in the first round reports to Start, which fails
	// when one never got its hello (a refused app token, an unreachable Slack).
	firsts := make([]*connState, c.cfg.Connections)
	for i := range firsts {
		firsts[i] = newConnState(i)
	}
	round := make(chan []int, 1)
	c.loops.Add(1)
	go func() {
		defer c.loops.Done()
		c.runSlots(readCtx, connCtx, firsts, func(taken []int) { round <- taken })
	}()
	var taken []int
	select {
	case taken = <-round:
	case <-ctx.Done():
	}
	wait, cancelWait := context.WithTimeout(ctx, c.cfg.CallTimeout)
	defer cancelWait()
	for _, i := range taken {
		cs := firsts[i]
		select {
		case <-cs.hello:
		case <-cs.refused:
		case <-cs.ended:
		case <-wait.Done():
		}
		select {
		case <-cs.hello:
		case <-cs.ended:
			// Handed back to another process before it connected (or Start's ctx ended,
			// which the next check reports).
		default:
			err := cs.lastError()
			if err == nil {
				err = wait.Err()
			}
			c.log.Error("slack: socket mode did not connect in time", "connection", cs.id, "err", err)
			stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = c.Stop(stopCtx)
			cancel()
			return fmt.Errorf("slack: start: socket mode connection %d: %w", cs.id, err)
		}
	}
	if ctx.Err() != nil && taken == nil {
		stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = c.Stop(stopCtx)
		cancel()
		return fmt.Errorf("slack: start: %w", ctx.Err())
	}
	c.socketOK.Store(true)
	if len(taken) == 0 {
		c.log.Info("slack: standing by: other processes hold every Socket Mode connection slot; delivering",
			"team", at.TeamID, "bot_user", at.UserID, "slots", c.cfg.Connections)
	} else {
		c.log.Info("slack: receiving over Socket Mode", "team", at.TeamID, "bot_user", at.UserID, "connections", len(taken), "slots", c.cfg.Connections)
	}
	return nil
}

// Stop stops intake in order: no new envelope is taken, the ones being handed over finish and
// are acknowledged, the assistant threads' prompts and titles being set finish, then the
// sockets close (until ctx ends; what is still running then is cancelled). HTTP deliveries
// after Stop get 503 so Slack retries them. Safe to call more than once.
func (c *Channel) Stop(ctx context.Context) error {
	defer c.cfg.RateLimits.Flush(true)
	c.stopStatuses()
	c.mu.Lock()
	c.stopped = true
	readCancel, connCancel, stopOnDone := c.readCancel, c.connCancel, c.stopOnDone
	c.mu.Unlock()
	if stopOnDone != nil {
		stopOnDone()
	}
	c.httpOK.Store(false)
	if readCancel != nil {
		readCancel()
	}
	var err error
	if !waitGroup(ctx, &c.work) || !c.lanes.wait(ctx) {
		err = fmt.Errorf("slack: stop: envelopes still being handed over: %w", ctx.Err())
	}
	// The handlers are done: no follow-up comes after these.
	if ferr := c.followups.Close(ctx); ferr != nil {
		err = errors.Join(err, fmt.Errorf("slack: stop: assistant thread prompts or titles cut short: %w", ferr))
	}
	if connCancel != nil {
		connCancel()
	}
	if !waitGroup(ctx, &c.loops) {
		err = errors.Join(err, fmt.Errorf("slack: stop: sockets still open: %w", ctx.Err()))
	}
	if !waitGroup(ctx, &c.statusTimers) {
		err = errors.Join(err, fmt.Errorf("slack: stop: thread statuses still being set: %w", ctx.Err()))
	}
	return err
}

func waitGroup(ctx context.Context, wg *sync.WaitGroup) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// ErrNotReady is wrapped by Ready's errors.
var ErrNotReady = errors.New("slack: not receiving")

// Ready reports nil while intake lives: in socket mode every connection received a frame (an
// envelope, a hello or one of Slack's pings) within ReadyWindow — a socket that looks open but
// carries nothing is not ready; in HTTP mode the channel is started and not stopped.
func (c *Channel) Ready() error {
	c.mu.Lock()
	stopped, started, conns := c.stopped, c.started, c.conns
	c.mu.Unlock()
	switch {
	case stopped:
		return fmt.Errorf("%w: stopped", ErrNotReady)
	case !started:
		return fmt.Errorf("%w: not started", ErrNotReady)
	case c.cfg.Mode == ModeHTTP:
		if !c.httpOK.Load() {
			return fmt.Errorf("%w: not started", ErrNotReady)
		}
		return nil
	}
	if !c.socketOK.Load() {
		return fmt.Errorf("%w: starting", ErrNotReady)
	}
	// A process holding no connection slot (other processes hold them all) is ready: it
	// delivers.
	now := c.now()
	for _, cs := range conns {
		last := cs.lastFrame.Load()
		if last == 0 {
			return fmt.Errorf("%w: connection %d has not connected", ErrNotReady, cs.id)
		}
		if age := now.Sub(time.Unix(0, last)); age > c.cfg.ReadyWindow {
			return fmt.Errorf("%w: connection %d received nothing for %s", ErrNotReady, cs.id, age.Round(time.Second))
		}
	}
	return nil
}

// state returns the Handler and the bot identity, once started.
func (c *Channel) state() (channels.Handler, self) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.handler, c.me
}
