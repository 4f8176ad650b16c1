// Package telegram is the Telegram adapter: a channels.Channel on the Bot API through
// github.com/go-telegram-bot-api/telegram-bot-api/v5. It bridges what that 2021 library lacks
// inside the adapter: a context-bound HTTP client so Stop aborts the long poll in flight, its own
// poll loop (offset kept in an OffsetStore, backoff on errors), typed decoding of newer fields
// (forum topics' message_thread_id, reply parameters, webhook secret_token), and token
// redaction in every error and log line.
//
// Inbound: long polling (default) or a webhook handler to mount on the shared HTTP listener.
// Telegram serves one poller per bot: with a kit.Lease shared by several processes, only
// the one holding it polls and another takes over when it stops or dies (Config.Lease); a 409
// Conflict from a poller outside the lease is logged once and backed off.
// Outbound: HTML messages from render, chunked to 4,096 characters, edits throttled per chat
// type, answers streamed by drafts in private chats (stream.go, Config.Drafts), typing, inline
// keyboards, callback answers, command menu, pacing (per chat and overall);
// a 429 of a send, an edit or a file goes back to delivery as *channels.RateLimitError (see
// call). Files users send (documents, photos, voice notes, audio, videos, video notes; not
// stickers) are listed on their Inbound by file id and downloaded when asked (FetchFile,
// fetch.go: getFile, then the file URL, which holds the token).
package telegram

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/kit"
)

const platform = "telegram"

// Channel is the Telegram channel. Create it with New; all methods are safe for concurrent use.
//
// It is made of one component per concern, each in the file named after it: the outbound
// sender (send.go, file.go), the draft streams (stream.go), the typing signals (typing.go), the
// command menu (commands.go), the answers to clicks (interaction.go), the file downloads
// (fetch.go), the two intakes — the poller (poll.go) and the webhook (webhook.go) — and the
// dispatcher both hand updates to (dispatch.go). The components that provide a capability are
// embedded; Channel itself starts, stops and reports readiness.
type Channel struct {
	*sender       // Send, Edit, EditFinal, Delete, Pages, SendFile
	*streamer     // CanStream, StartStream, AppendStream, StopStream, DropStream
	*typer        // Typing
	*commands     // RegisterCommands
	*interactions // RespondInteraction
	*fetcher      // FetchFile
	*webhook      // WebhookHandler

	cfg        Config
	clock      *kit.Clock
	api        *botAPI        // the Bot API: calls, their errors, retries and rate limits
	life       *kit.Lifecycle // the start guard and Ready's phase
	workers    *kit.Workers   // the intake's context, from Start until StopIntake, and its goroutines
	dispatcher *dispatcher    // the Handler, who the bot is, and the hand-over of each update
	poller     *poller
}

var (
	_ channels.Channel              = (*Channel)(nil)
	_ channels.Editor               = (*Channel)(nil)
	_ channels.Deleter              = (*Channel)(nil)
	_ channels.Typer                = (*Channel)(nil)
	_ channels.CommandRegistrar     = (*Channel)(nil)
	_ channels.InteractionResponder = (*Channel)(nil)
	_ channels.Readiness            = (*Channel)(nil)
	_ channels.IntakeStopper        = (*Channel)(nil)
	_ channels.FinalEditor          = (*Channel)(nil)
)

// New validates cfg and returns a Channel. It does no I/O: Start calls getMe.
func New(cfg Config) (*Channel, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	redact := kit.NewRedactor(cfg.Token, cfg.WebhookSecret)
	cfg.Logger = redact.Logger(cfg.Logger)
	if cfg.RateLimits == nil {
		cfg.RateLimits = kit.NewRateLimitLog(platform, cfg.Logger, nil)
	}
	c := &Channel{cfg: cfg, clock: kit.NewClock(), life: kit.NewLifecycle(platform, ErrNotReady)}
	c.workers = kit.NewWorkers(c.life)
	clk := c.clock
	now, sleep := clk.Funcs()
	c.api = &botAPI{cfg: &c.cfg, http: cfg.HTTPClient, redact: redact, sleep: sleep, bot: uploader(cfg),
		limits: &kit.RetryAfter{Log: cfg.RateLimits, MaxWait: cfg.MaxRetryWait, Attempts: maxAttempts, Logger: cfg.Logger, Sleep: sleep}}
	signals := kit.NewTypingSignals(kit.TypingOptions{Lasts: typingLasts, Timeout: typingTimeout, After: cfg.TypingAfter, Logger: cfg.Logger,
		Now: now})
	pace := newPacer()
	c.sender = &sender{cfg: &c.cfg, api: c.api, clock: clk, pacer: pace, signals: signals,
		edits: newEditThrottle(time.Second, 3*time.Second)}
	c.sender.pages.Render = func(m channels.Message) ([]piece, error) { return renderPieces(m, cfg.ActionKey) }
	c.streamer = &streamer{cfg: &c.cfg, api: c.api, clock: clk, pacer: pace, book: newDraftBook(), out: c.sender}
	c.sender.streams = c.streamer
	c.typer = &typer{api: c.api, signals: signals, streams: c.streamer}
	c.commands = &commands{api: c.api, workers: c.workers, reg: &kit.LaterRetry{
		Failed: "telegram: registering commands failed", Done: "telegram: commands registered after retrying",
		GaveUp: "the command menu stays as Telegram has it until the next start",
		Min:    regRetryMin, Max: regRetryMax, Log: cfg.Logger,
	}}
	c.interactions = &interactions{api: c.api, log: cfg.Logger}
	c.fetcher = &fetcher{cfg: &c.cfg, api: c.api}
	c.dispatcher = &dispatcher{cfg: &c.cfg, redact: redact, clock: clk, ch: c, answers: c.interactions, seen: newRecentIDs(4096)}
	c.webhook = &webhook{cfg: &c.cfg, api: c.api, clock: clk, life: c.life, workers: c.workers, dispatcher: c.dispatcher, gate: newConvGate()}
	c.poller = &poller{cfg: &c.cfg, api: c.api, clock: clk, dispatcher: c.dispatcher, timeout: cfg.PollTimeout}
	return c, nil
}

// Name is "telegram".
func (c *Channel) Name() string { return platform }

// BotUsername is the bot's @username (without '@') as getMe reported it; "" before Start.
func (c *Channel) BotUsername() string {
	_, self := c.dispatcher.State()
	return self.username
}

// Start calls getMe, then in polling mode deletes any webhook and starts the poll loop (with a
// Lease: the loop that polls while this process holds it, see Config.Lease); in webhook mode it
// registers the webhook (with the secret) and serves deliveries through WebhookHandler. It
// returns once receiving has begun or failed; receiving continues until StopIntake or Stop, or
// until ctx ends, which stops the intake as StopIntake does (without waiting): the poll loop
// ends and webhook deliveries get 503, while sending works until Stop. A Channel starts once.
func (c *Channel) Start(ctx context.Context, h channels.Handler) error {
	if h == nil {
		return errors.New("telegram: start: nil handler")
	}
	if err := c.life.Begin(); err != nil {
		return err
	}
	if err := c.start(ctx, h); err != nil {
		c.life.Stop()
		return err
	}
	c.life.Receiving()
	return nil
}

// start is Start after its guard: getMe, then the webhook or the poll loop.
func (c *Channel) start(ctx context.Context, h channels.Handler) error {
	bot, err := c.getMe(ctx)
	if err != nil {
		return err
	}
	self := botIdentity{id: bot.Self.ID, username: bot.Self.UserName}
	c.dispatcher.Begin(h, self)
	life := c.workers.Begin(ctx) // ctx bounds the intake: its end stops it (kit.Workers.Begin)
	if err := c.startIntake(ctx, life, self); err != nil {
		c.workers.Cancel()
		return err
	}
	return nil
}

// getMe learns who the bot is, through the library (whose constructor calls getMe).
func (c *Channel) getMe(ctx context.Context) (*tgbotapi.BotAPI, error) {
	callCtx, cancelCall := context.WithTimeout(ctx, c.cfg.CallTimeout)
	bot, err := tgbotapi.NewBotAPIWithClient(c.cfg.Token, endpoint(c.cfg), ctxClient{ctx: callCtx, c: c.api.http})
	cancelCall()
	if err != nil {
		var te *tgbotapi.Error
		// Telegram answers 401 for a wrong or revoked token and 404 for one of the wrong shape.
		if errors.As(err, &te) && (te.Code == http.StatusUnauthorized || te.Code == http.StatusNotFound) {
			return nil, fmt.Errorf("telegram: getMe: %w (%d %s)", channels.ErrUnauthorized, te.Code, c.api.redact.String(te.Message))
		}
		return nil, fmt.Errorf("telegram: getMe: %w", c.api.redact.Error(err))
	}
	return bot, nil
}

// endpoint is the library's format of a Bot API method's URL (token, method).
func endpoint(cfg Config) string { return cfg.APIURL + "/bot%s/%s" }

// uploader is the library's client for uploads, made without a call: its constructors call
// getMe, which New does not make. Each upload copies it and sets the copy's HTTP client.
func uploader(cfg Config) *tgbotapi.BotAPI {
	bot := &tgbotapi.BotAPI{Token: cfg.Token}
	bot.SetAPIEndpoint(endpoint(cfg))
	return bot
}

// startIntake registers the webhook, or deletes any webhook and starts the poll loop under life
// (with a Lease, the loop that polls while this process holds it).
func (c *Channel) startIntake(ctx, life context.Context, self botIdentity) error {
	if c.cfg.Mode == ModeWebhook {
		if err := c.webhook.register(ctx); err != nil {
			return err
		}
		c.cfg.Logger.Info("telegram: webhook registered", "bot", self.username)
		return nil
	}
	if _, err := c.api.callWaiting(ctx, "deleteWebhook", nil, true); err != nil {
		return fmt.Errorf("telegram: deleteWebhook: %w", err)
	}
	if c.cfg.Lease != nil {
		c.workers.Go(func(ctx context.Context) { c.poller.leased(ctx, self) })
		return nil
	}
	offset, err := c.cfg.Offsets.LoadOffset(ctx)
	if err != nil {
		return fmt.Errorf("telegram: load offset: %w", err)
	}
	c.workers.Go(func(ctx context.Context) { c.poller.run(ctx, offset) })
	c.cfg.Logger.Info("telegram: polling", "bot", self.username, "offset", offset)
	return nil
}

// StopIntake stops taking updates in: it aborts the long poll in flight and waits (until ctx
// ends) for the poll loop to finish handing over its batch and saving the offset, then releases
// the polling lease, so a standby process takes polling over at its next try. The webhook stays
// registered (other processes behind the same URL may still serve it); the deliveries being
// handed over are waited for (until ctx ends), and those after it get 503 so Telegram retries
// them. Sending keeps working. Safe to call more than once.
func (c *Channel) StopIntake(ctx context.Context) error {
	if err := c.workers.Stop(ctx); err != nil {
		return fmt.Errorf("telegram: stop: %w", err)
	}
	return nil
}

// Stop stops intake as StopIntake does and the typing signals still being sent; the channel
// holds no other connection. Safe to call more than once.
func (c *Channel) Stop(ctx context.Context) error {
	defer c.cfg.RateLimits.Flush(true)
	err := c.StopIntake(ctx)
	c.typer.signals.Close()
	return err
}

// ErrNotReady is wrapped by Ready's errors.
var ErrNotReady = errors.New("telegram: not receiving")

// Ready reports nil while the inbound loop is receiving: in polling mode a getUpdates succeeded
// within the last two poll timeouts (plus 10 s) — with a Lease, counted from when this process
// took it, and a process standing by (another one polls) is ready: it sends and works the
// queue; in webhook mode the webhook is registered and the channel not stopped.
func (c *Channel) Ready() error {
	// A refused token is said first, even while Start has not returned: the poll loop may meet
	// the refusal before it does.
	if c.cfg.Mode != ModeWebhook && c.api.refused.Load() && !c.life.Stopped() {
		return fmt.Errorf("%w: Telegram refuses the bot token (401 Unauthorized); set telegram.token to the bot's current token", ErrNotReady)
	}
	if err := c.life.Err(); err != nil {
		return err
	}
	if c.cfg.Mode == ModeWebhook {
		return nil
	}
	return c.poller.ready()
}
