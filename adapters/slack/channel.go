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
// adapter handles itself (assistant_thread_started, app_home_opened: the AI surfaces opened,
// surface.go) are deduplicated here on their event_id.
//
// Outbound: Block Kit from render with a text fallback, split to Slack's limits (3,000
// characters a section, 50 blocks a message, 40,000 characters of text) and never truncated;
// replies in the conversation's thread; link unfurls off; chat.update for edits; ephemeral
// answers to clicks and slash commands; modals with views.open; the assistant thread status
// while a run works; answers in threads streamed natively (chat.startStream / appendStream /
// stopStream, stream.go) with the run's subagents as a plan's tasks, refusals reported as
// channels.ErrStreamRefused so delivery falls back to post-and-edit; files (the rest of a long
// answer) through Slack's external upload, shared in the conversation's thread. A rate limit
// (HTTP 429 Retry-After, ratelimited) of a send, an edit or a stream is returned as
// *channels.RateLimitError for delivery to wait out; the calls nobody above retries wait theirs
// out, up to MaxRetryWait (see call).
//
// Conversation key: {slack, workspace (team, or enterprise/team on Enterprise Grid), channel,
// thread ts}; a top-level mention starts a thread rooted at it (ReplyInThread), a DM's top level
// is one conversation. Identity: channel_user_id is UserID (org:user).
//
// Files users share are listed on their Inbound (url_private_download) and downloaded when
// asked (FetchFile, fetch.go) with the bot token of the conversation's workspace.
//
// Tokens and the signing secret never appear in logs or errors.
package slack

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	slackgo "github.com/slack-go/slack"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/kit"
)

const platform = "slack"

// Channel is the Slack channel. Create it with New; all methods are safe for concurrent use.
//
// It is made of one component per concern, each in the file named after it, as the Telegram
// adapter is: the outbound sender (send.go, file.go), the native streams (stream.go), the
// thread status while a run works (typing.go, status.go), the answers to clicks and the modals
// (interaction.go), the file downloads (fetch.go), the workspaces' installs (install.go) and
// the OAuth install flow (oauth.go), the two intakes — the Socket Mode connections (socket.go,
// slots.go) and the HTTP handlers (http.go) — and the dispatcher both hand to (dispatch.go),
// with the AI surfaces it handles itself (surface.go). The components that provide a
// capability are embedded; Channel itself starts, stops and reports readiness.
type Channel struct {
	*sender       // Send, Edit, Delete, FindSent, Pages, SendFile
	*streamer     // CanStream, StartStream, AppendStream, StopStream
	*typer        // Typing
	*interactions // RespondInteraction, OpenForm
	*fetcher      // FetchFile
	*httpIntake   // EventsHandler, InteractionsHandler, CommandsHandler
	*oauth        // InstallHandler, OAuthHandler

	cfg        Config
	clock      *kit.Clock
	api        *slackgo.Client
	redact     *kit.Redactor
	web        *webAPI        // Web API calls: their errors, pacing and rate limits
	life       *kit.Lifecycle // the start guard and Ready's phase
	workers    *kit.Workers   // the intake's context, from Start until StopIntake, and its work
	installs   *installs      // the workspaces' clients and tokens
	dispatcher *dispatcher    // the Handler, who the bot is, and the hand-over of each delivery
	sockets    *sockets       // Socket Mode's connections
	surfaces   *surfaces      // the AI surfaces' prompts and titles
	status     *threadStatuses
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
	_ channels.IntakeStopper        = (*Channel)(nil)
)

// New validates cfg and returns a Channel. It does no I/O: Start calls auth.test.
func New(cfg Config) (*Channel, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	redact := kit.NewRedactor(cfg.BotToken, cfg.AppToken, cfg.SigningSecret, cfg.ClientSecret)
	cfg.Logger = redact.Logger(cfg.Logger)
	if cfg.RateLimits == nil {
		cfg.RateLimits = kit.NewRateLimitLog(platform, cfg.Logger, nil)
	}
	opts := []slackgo.Option{slackgo.OptionAPIURL(cfg.APIURL), slackgo.OptionHTTPClient(cfg.HTTPClient)}
	if cfg.AppToken != "" {
		opts = append(opts, slackgo.OptionAppLevelToken(cfg.AppToken))
	}
	c := &Channel{
		cfg:    cfg,
		clock:  kit.NewClock(),
		api:    slackgo.New(cfg.BotToken, opts...),
		redact: redact,
		life:   kit.NewLifecycle(platform, ErrNotReady),
	}
	c.workers = kit.NewWorkers(c.life)
	clk := c.clock
	now, sleep := clk.Funcs()
	c.web = &webAPI{cfg: &c.cfg, redact: redact, tiers: newTierLimiter(), sleep: sleep,
		now:    now,
		limits: &kit.RetryAfter{Log: cfg.RateLimits, MaxWait: cfg.MaxRetryWait, Logger: cfg.Logger, Sleep: sleep}}
	c.assemble()
	return c, nil
}

// assemble makes the components, which share the Web API bridge, the installs and the clock.
func (c *Channel) assemble() {
	cfg, clk, log := &c.cfg, c.clock, c.cfg.Logger
	c.installs = &installs{cfg: cfg, web: c.web, redact: c.redact, clock: clk, log: log,
		base: &teamClient{api: c.api, inst: Installation{BotToken: cfg.BotToken}}}
	c.status = &threadStatuses{cfg: cfg, web: c.web, installs: c.installs, clock: clk, log: log, after: cfg.StatusAfter}
	pace := newPacer(paceEvery, paceBurst)
	c.sender = &sender{cfg: cfg, web: c.web, installs: c.installs, clock: clk, pacer: pace, status: c.status}
	c.sender.pages.Render = func(m channels.Message) ([]piece, error) { return renderPieces(m, cfg.ActionKey) }
	c.streamer = &streamer{cfg: cfg, web: c.web, installs: c.installs, clock: clk, pacer: pace, status: c.status}
	c.typer = &typer{off: cfg.AssistantStatusOff, status: c.status}
	c.interactions = &interactions{cfg: cfg, web: c.web, installs: c.installs}
	c.fetcher = &fetcher{cfg: cfg, redact: c.redact, installs: c.installs}
	recent := &recentEvents{}
	c.surfaces = &surfaces{cfg: cfg, web: c.web, installs: c.installs, log: log, recent: recent, followups: kit.NewFollowups()}
	c.dispatcher = &dispatcher{cfg: cfg, redact: c.redact, log: log, clock: clk, ch: c, installs: c.installs, surfaces: c.surfaces,
		interactions: c.interactions, recent: recent, lanes: kit.NewLanes(maxHandovers, 0), // Slack redelivers what is not acked: no bound
		ackDeadline: interactionAckDeadline}
	c.sockets = &sockets{cfg: cfg, api: c.api, web: c.web, redact: c.redact, log: log, clock: clk, dispatcher: c.dispatcher,
		workers: c.workers, pingTimeout: pingTimeout}
	c.httpIntake = &httpIntake{cfg: cfg, log: log, life: c.life, workers: c.workers, dispatcher: c.dispatcher}
	c.oauth = &oauth{cfg: cfg, web: c.web, installs: c.installs, clock: clk, log: log}
}

// Name is "slack".
func (c *Channel) Name() string { return platform }

// BotUserID is the bot's user id as auth.test reported it; "" before Start.
func (c *Channel) BotUserID() string {
	_, me := c.dispatcher.State()
	return me.userID
}

// Start calls auth.test (a failure is a clear error: a refused token wraps
// channels.ErrUnauthorized; or Slack is unreachable) and, with an Installations store, deletes
// the uninstall's mark of the token's workspace (the token works, so the app is installed there
// again), then in socket mode opens the connections and returns once each has received its
// hello (or failed within CallTimeout); in HTTP mode the handlers accept deliveries from then
// on. Receiving continues until StopIntake or Stop, or until ctx ends, which in either mode stops
// the intake as StopIntake does (without waiting): no envelope is taken (HTTP deliveries get
// 503), the sockets close once the ones being handed over are acknowledged, and sending works
// until Stop. A Channel starts once.
func (c *Channel) Start(ctx context.Context, h channels.Handler) error {
	if h == nil {
		return errors.New("slack: start: nil handler")
	}
	if err := c.life.Begin(); err != nil {
		return err
	}
	at, err := c.authTest(ctx, h)
	if err == nil {
		// The intake's lifetime ends at StopIntake, or when ctx ends (kit.Workers.Begin).
		c.workers.Begin(ctx)
		if c.cfg.Mode == ModeSocket {
			err = c.sockets.start(ctx, at)
		}
	}
	if err != nil {
		stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = c.Stop(stopCtx)
		cancel()
		return err
	}
	c.life.Receiving()
	if c.cfg.Mode == ModeHTTP {
		c.cfg.Logger.Info("slack: receiving over HTTP", "team", at.TeamID, "bot_user", at.UserID)
	}
	return nil
}

// authTest learns who the bot is (auth.test, when there is a bot token) and takes h as the
// Handler.
func (c *Channel) authTest(ctx context.Context, h channels.Handler) (*slackgo.AuthTestResponse, error) {
	at := &slackgo.AuthTestResponse{TeamID: "(installed workspaces)"}
	if c.cfg.BotToken != "" {
		callCtx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout)
		var err error
		at, err = c.api.AuthTestContext(callCtx)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("slack: start: auth.test: %w", c.web.apiError("auth.test", err))
		}
	}
	me := self{userID: at.UserID, botID: at.BotID, threads: c.cfg.ThreadReplies, replyInThread: c.cfg.ReplyInThread,
		agentView: c.cfg.AgentView}
	if c.cfg.BotToken != "" {
		me.team, me.enterprise = at.TeamID, at.EnterpriseID
	}
	c.installs.setHome(me.team, me.enterprise)
	c.dispatcher.Begin(h, me)
	if c.cfg.BotToken != "" {
		// auth.test accepted the token: an uninstall's mark its workspace left is stale.
		callCtx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout)
		c.installs.clearUninstalled(callCtx)
		cancel()
	}
	return at, nil
}

// StopIntake stops taking events in, in order, while sends keep working: no new envelope is
// taken (HTTP deliveries get 503 so Slack retries them), the ones being handed over finish and
// are acknowledged, then the sockets close and their connection slots are handed back (until
// ctx ends; what is still running then is cancelled). Safe to call more than once.
func (c *Channel) StopIntake(ctx context.Context) error {
	c.workers.End()
	var err error
	if !c.dispatcher.lanes.Wait(ctx) {
		err = fmt.Errorf("slack: stop: envelopes still being handed over: %w", ctx.Err())
	}
	// Only now, the acks sent: the sockets outlive the intake's context for them.
	c.sockets.close()
	if werr := c.workers.Wait(ctx); werr != nil {
		err = errors.Join(err, fmt.Errorf("slack: stop: sockets still open or deliveries still being handed over: %w", werr))
	}
	return err
}

// Stop stops the intake as StopIntake does, then waits for the assistant threads' prompts and
// titles being set, and stops the thread statuses (until ctx ends; what is still running then
// is cancelled). Safe to call more than once.
func (c *Channel) Stop(ctx context.Context) error {
	defer c.cfg.RateLimits.Flush(true)
	c.status.stop()
	err := c.StopIntake(ctx)
	// The handlers are done: no follow-up comes after these.
	if ferr := c.surfaces.followups.Close(ctx); ferr != nil {
		err = errors.Join(err, fmt.Errorf("slack: stop: assistant thread prompts or titles cut short: %w", ferr))
	}
	if !waitGroup(ctx, &c.status.timers) {
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
	if err := c.life.Err(); err != nil {
		return err
	}
	if c.cfg.Mode == ModeHTTP {
		return nil
	}
	return c.sockets.ready()
}
