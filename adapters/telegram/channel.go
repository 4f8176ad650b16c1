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
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/kit"
)

const platform = "telegram"

// Channel is the Telegram channel. Create it with New; all methods are safe for concurrent use.
type Channel struct {
	cfg   Config
	api   *botAPI          // the Bot API: calls, their errors, retries and rate limits
	life  *kit.Lifecycle   // the start guard and Ready's phase
	pages kit.Pages[piece] // what Pages rendered, for the Send or Edit that follows

	// self is set by Start (getMe) and read-only afterwards.
	self botIdentity

	mu      sync.Mutex
	handler channels.Handler
	cancel  context.CancelFunc
	ctx     context.Context // from Start until Stop
	wg      sync.WaitGroup
	// reg retries a command registration refused at start (tests set its Wait to record the
	// waits instead of sleeping them).
	reg *kit.LaterRetry

	polled     kit.Liveness // the last successful getUpdates, or when this process took the lease
	leading    atomic.Bool  // this process holds the polling lease (Config.Lease set)
	seen       *recentIDs
	gate       *convGate
	answered   sync.Map // callback query id → struct{}, while its update is being handled
	pacer      *pacer
	edits      *editThrottle
	drafts     *draftBook
	typing     *kit.TypingSignals
	sleep      func(ctx context.Context, d time.Duration) error
	now        func() time.Time
	pollTimout time.Duration
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
	c := &Channel{
		cfg:        cfg,
		life:       kit.NewLifecycle(platform, ErrNotReady),
		seen:       newRecentIDs(4096),
		gate:       newConvGate(),
		pacer:      newPacer(),
		edits:      newEditThrottle(time.Second, 3*time.Second),
		drafts:     newDraftBook(),
		sleep:      kit.Sleep,
		now:        time.Now,
		pollTimout: cfg.PollTimeout,
		reg: &kit.LaterRetry{
			Failed: "telegram: registering commands failed", Done: "telegram: commands registered after retrying",
			GaveUp: "the command menu stays as Telegram has it until the next start",
			Min:    regRetryMin, Max: regRetryMax, Log: cfg.Logger,
		},
	}
	sleep := func(ctx context.Context, d time.Duration) error { return c.sleep(ctx, d) }
	c.api = &botAPI{cfg: &c.cfg, http: cfg.HTTPClient, redact: redact, sleep: sleep,
		limits: &kit.RetryAfter{Log: cfg.RateLimits, MaxWait: cfg.MaxRetryWait, Attempts: maxAttempts, Logger: cfg.Logger, Sleep: sleep}}
	c.pages.Render = func(m channels.Message) ([]piece, error) { return renderPieces(m, cfg.ActionKey) }
	c.typing = kit.NewTypingSignals(kit.TypingOptions{Lasts: typingLasts, Timeout: typingTimeout, After: cfg.TypingAfter, Logger: cfg.Logger,
		Now: func() time.Time { return c.now() }})
	return c, nil
}

// Name is "telegram".
func (c *Channel) Name() string { return platform }

// BotUsername is the bot's @username (without '@') as getMe reported it; "" before Start.
func (c *Channel) BotUsername() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.self.username
}

// Start calls getMe, then in polling mode deletes any webhook and starts the poll loop (with a
// Lease: the loop that polls while this process holds it, see Config.Lease); in webhook mode it
// registers the webhook (with the secret) and serves deliveries through WebhookHandler. It
// returns once receiving has begun or failed; receiving continues until Stop or until ctx ends.
// A Channel starts once.
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
	endpoint := c.cfg.APIURL + "/bot%s/%s"
	callCtx, cancelCall := context.WithTimeout(ctx, c.cfg.CallTimeout)
	bot, err := tgbotapi.NewBotAPIWithClient(c.cfg.Token, endpoint, ctxClient{ctx: callCtx, c: c.api.http})
	cancelCall()
	if err != nil {
		var te *tgbotapi.Error
		// Telegram answers 401 for a wrong or revoked token and 404 for one of the wrong shape.
		if errors.As(err, &te) && (te.Code == http.StatusUnauthorized || te.Code == http.StatusNotFound) {
			return fmt.Errorf("telegram: getMe: %w (%d %s)", channels.ErrUnauthorized, te.Code, c.api.redact.String(te.Message))
		}
		return fmt.Errorf("telegram: getMe: %w", c.api.redact.Error(err))
	}
	life, cancel := context.WithCancel(ctx)
	c.mu.Lock()
	c.api.bot = bot
	c.self = botIdentity{id: bot.Self.ID, username: bot.Self.UserName}
	c.handler = h
	c.cancel = cancel
	c.ctx = life
	c.mu.Unlock()

	if c.cfg.Mode == ModeWebhook {
		if err := c.setWebhook(ctx); err != nil {
			cancel()
			return err
		}
		c.cfg.Logger.Info("telegram: webhook registered", "bot", c.self.username)
		return nil
	}
	if _, err := c.api.callWaiting(ctx, "deleteWebhook", nil, true); err != nil {
		cancel()
		return fmt.Errorf("telegram: deleteWebhook: %w", err)
	}
	if c.cfg.Lease != nil {
		c.wg.Add(1)
		go c.pollLeased(life)
		return nil
	}
	offset, err := c.cfg.Offsets.LoadOffset(ctx)
	if err != nil {
		cancel()
		return fmt.Errorf("telegram: load offset: %w", err)
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.poll(life, offset)
	}()
	c.cfg.Logger.Info("telegram: polling", "bot", c.self.username, "offset", offset)
	return nil
}

// pollLeased polls while this process holds the lease, each time from the offset saved in
// Offsets: another process may have moved it on since.
func (c *Channel) pollLeased(ctx context.Context) {
	defer c.wg.Done()
	kit.RunLeased(ctx, kit.LeaseOptions{
		Lease:      c.cfg.Lease,
		Name:       platform + ":" + strconv.FormatInt(c.self.id, 10),
		Owner:      c.cfg.LeaseOwner,
		TTL:        c.cfg.LeaseTTL,
		Logger:     c.cfg.Logger,
		OnChange:   c.onLease,
		OnTakeover: c.cfg.OnTakeover,
	}, func(ctx context.Context) {
		offset, ok := c.loadOffset(ctx)
		if !ok {
			return
		}
		c.cfg.Logger.Info("telegram: polling", "bot", c.self.username, "offset", offset)
		c.poll(ctx, offset)
	})
}

func (c *Channel) onLease(held bool) {
	if held {
		c.polled.Beat(c.now()) // Ready counts from when this process took the lease
	}
	c.leading.Store(held)
	if c.cfg.OnLease != nil {
		c.cfg.OnLease(held)
	}
}

// loadOffset reads the saved offset, retrying with backoff until ctx ends (ok false then).
func (c *Channel) loadOffset(ctx context.Context) (offset int64, ok bool) {
	for n := 1; ; n++ {
		offset, err := c.cfg.Offsets.LoadOffset(ctx)
		if err == nil {
			return offset, true
		}
		if ctx.Err() != nil {
			return 0, false
		}
		if n == 1 {
			c.cfg.Logger.Warn("telegram: loading the update offset failed; retrying before polling", "err", err)
		}
		if c.sleep(ctx, backoff(n)) != nil {
			return 0, false
		}
	}
}

// StopIntake stops taking updates in: it aborts the long poll in flight and waits (until ctx
// ends) for the poll loop to finish handing over its batch and saving the offset, then releases
// the polling lease, so a standby process takes polling over at its next try. The webhook stays
// registered (other processes behind the same URL may still serve it); deliveries after it get
// 503 so Telegram retries them. Sending keeps working. Safe to call more than once.
func (c *Channel) StopIntake(ctx context.Context) error {
	c.mu.Lock()
	c.life.Stop() // under c.mu: RegisterCommands adds to c.wg only before it
	cancel := c.cancel
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("telegram: stop: %w", ctx.Err())
	}
}

// Stop stops intake as StopIntake does and the typing signals still being sent; the channel
// holds no other connection. Safe to call more than once.
func (c *Channel) Stop(ctx context.Context) error {
	defer c.cfg.RateLimits.Flush(true)
	err := c.StopIntake(ctx)
	c.typing.Close()
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
	if c.cfg.Lease != nil && !c.leading.Load() {
		return nil
	}
	quiet, ok := c.polled.Quiet(c.now())
	if !ok {
		return fmt.Errorf("%w: no successful getUpdates yet", ErrNotReady)
	}
	if quiet > 2*c.pollTimout+10*time.Second {
		return fmt.Errorf("%w: last successful getUpdates %s ago", ErrNotReady, quiet.Round(time.Second))
	}
	return nil
}
