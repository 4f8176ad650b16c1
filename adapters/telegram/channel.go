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
// type, typing, inline keyboards, callback answers, command menu, 429 handling and pacing (per
// chat and overall).
package telegram

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/kit"
	"github.com/switchboard-bot/switchboard/render"
)

const platform = "telegram"

// DefaultAPIURL is the Bot API base URL used when Config.APIURL is empty.
const DefaultAPIURL = "https://api.telegram.org"

// Mode is how updates arrive.
type Mode string

// The inbound modes.
const (
	ModePolling Mode = "polling"
	ModeWebhook Mode = "webhook"
)

// Config configures a Channel. Token is required; everything else has a default.
type Config struct {
	// Token is the bot token from BotFather. It never appears in logs or errors.
	Token string
	// APIURL is the Bot API base URL without a trailing slash (a local Bot API server, a fake
	// in tests); default DefaultAPIURL.
	APIURL string
	// Mode is ModePolling (default) or ModeWebhook.
	Mode Mode
	// WebhookURL is the public HTTPS URL Telegram posts updates to (webhook mode); the caller
	// mounts WebhookHandler at its path.
	WebhookURL string
	// WebhookSecret is sent to Telegram as secret_token and must come back in the
	// X-Telegram-Bot-Api-Secret-Token header of every delivery; required in webhook mode
	// (1–256 characters of A-Z a-z 0-9 _ -).
	WebhookSecret string
	// Pacing spaces messages per chat (about one a second, 20 a minute in groups) without holding
	// up other chats, and over all chats (at most 30 in any second, Telegram's limit for a bot).
	// Configuration turns it on by default (telegram.pacing); false turns both off for local Bot
	// API servers and load tests.
	Pacing bool
	// BotUsername is the bot's @username without '@'. Start learns it from getMe; a value set
	// here is replaced by what getMe says.
	BotUsername string
	// HTTPClient makes the requests; default a client with no overall timeout (each call carries
	// its own context deadline) keeping 256 idle connections.
	HTTPClient *http.Client
	// Offsets keeps the polling offset across restarts; default an in-memory store.
	Offsets OffsetStore
	// Inbox, when set, keeps each fetched batch of updates durable in one write before it is
	// confirmed (the next getUpdates), so that taking updates in never waits on their hand-over;
	// the batches are handed over from memory in order, and what a stopped or dead poller left
	// in it is handed over by the next one first. Shared like Offsets under a Lease.
	Inbox Inbox
	// Lease, when set, makes polling exclusive among the processes sharing it (Telegram serves
	// one getUpdates per bot at a time): the process holding the lease "telegram:<bot id>"
	// polls, from the offset in Offsets; the others stand by — they still send — and one takes
	// over within about LeaseTTL when the poller dies, at once when it stops. Offsets must then be
	// shared too. Unused in webhook mode. Nil: this process polls unconditionally.
	Lease kit.Lease
	// LeaseOwner names this process in the lease; default a random id.
	LeaseOwner string
	// LeaseTTL is the lease's lifetime without renewal; default kit.DefaultLeaseTTL (10 s).
	LeaseTTL time.Duration
	// OnLease, when set, is called with true when this process starts polling under the lease
	// and with false when it stops (lost, released); it must return quickly.
	OnLease func(polling bool)
	// OnTakeover, when set, is called when this process takes the polling lease after another
	// process held it (it died, or handed it over); it must return quickly.
	OnTakeover func()
	// RateLimits counts the rate limits the adapter meets and logs them at most once a minute
	// (kit.RateLimitLog); default one of the adapter's own, on Logger. Per-429 lines are
	// Debug only.
	RateLimits *kit.RateLimitLog
	// TypingAfter is how long a typing signal waits before it is sent, dropped if a message is
	// posted meanwhile (kit.TypingOptions.After); zero sends it at once. cmd/bot passes
	// kit.DefaultTypingAfter.
	TypingAfter time.Duration
	// Logger receives operator logs; default slog.Default().
	Logger *slog.Logger
	// ActionKey signs the callback data of inline keyboards rendered from cards.
	ActionKey render.Key
	// PollTimeout is the long-poll timeout sent to getUpdates; default 25 s.
	PollTimeout time.Duration
	// MaxRetryWait bounds the total time one call waits on 429 retry_after before returning a
	// *channels.RateLimitError; default 30 s.
	MaxRetryWait time.Duration
	// CallTimeout bounds each call other than getUpdates; default 30 s.
	CallTimeout time.Duration
	// OnMalformedUpdate, when set, is called once for each update skipped as malformed (an
	// element of a getUpdates answer or a webhook body that is not a readable update), for a
	// metric; it must return quickly. An update whose id can be read is counted once; one
	// whose id cannot may be counted again if it is fetched again.
	OnMalformedUpdate func()
}

// String is redacted: it never shows the token or the webhook secret.
func (c Config) String() string {
	return fmt.Sprintf("telegram.Config{APIURL:%q Mode:%q Token:%s}", c.APIURL, c.Mode, redacted)
}

// GoString is redacted like String.
func (c Config) GoString() string { return c.String() }

// LogValue is redacted like String.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }

// Channel is the Telegram channel. Create it with New; all methods are safe for concurrent use.
type Channel struct {
	cfg    Config
	http   *http.Client
	redact redactor

	// bot is set by Start (getMe) and read-only afterwards.
	bot  *tgbotapi.BotAPI
	self botIdentity

	mu      sync.Mutex
	handler channels.Handler
	cancel  context.CancelFunc
	life    context.Context // from Start until Stop
	started bool
	stopped bool
	wg      sync.WaitGroup
	// reg retries a command registration refused at start (tests set its Wait to record the
	// waits instead of sleeping them).
	reg *kit.LaterRetry

	lastPoll   atomic.Int64 // unix nanos of the last successful getUpdates
	leading    atomic.Bool  // this process holds the polling lease (Config.Lease set)
	leadSince  atomic.Int64 // unix nanos of when it took the lease
	webhookOK  atomic.Bool
	refused    atomic.Bool // the last answer to a call was 401: the token was revoked or replaced
	seen       *recentIDs
	gate       *convGate
	answered   sync.Map // callback query id → struct{}, while its update is being handled
	pacer      *pacer
	edits      *editThrottle
	rendered   render.Kept[[]piece] // cards Pages rendered, for their Send or Edit
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
)

// New validates cfg and returns a Channel. It does no I/O: Start calls getMe.
func New(cfg Config) (*Channel, error) {
	if cfg.Token == "" {
		return nil, errors.New("telegram: token is required")
	}
	if strings.ContainsAny(cfg.Token, "/?#% ") {
		return nil, errors.New("telegram: token has characters a bot token never has")
	}
	if cfg.APIURL == "" {
		cfg.APIURL = DefaultAPIURL
	}
	cfg.APIURL = strings.TrimRight(cfg.APIURL, "/")
	switch cfg.Mode {
	case "":
		cfg.Mode = ModePolling
	case ModePolling:
	case ModeWebhook:
		if cfg.WebhookURL == "" {
			return nil, errors.New("telegram: webhook mode needs a webhook URL")
		}
		if !validSecret(cfg.WebhookSecret) {
			return nil, errors.New("telegram: webhook mode needs a webhook secret of 1–256 characters A-Z a-z 0-9 _ -")
		}
	default:
		return nil, fmt.Errorf("telegram: unknown mode %q (want polling or webhook)", cfg.Mode)
	}
	if cfg.HTTPClient == nil {
		// One host takes every call: keep enough idle connections for concurrent sends (the
		// default transport keeps two).
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 256, 256
		cfg.HTTPClient = &http.Client{Transport: tr}
	}
	if cfg.Offsets == nil {
		cfg.Offsets = &MemoryOffsets{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.RateLimits == nil {
		cfg.RateLimits = kit.NewRateLimitLog(platform, cfg.Logger, nil)
	}
	if cfg.LeaseOwner == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		cfg.LeaseOwner = hex.EncodeToString(b[:])
	}
	if cfg.PollTimeout <= 0 {
		cfg.PollTimeout = 25 * time.Second
	}
	if cfg.MaxRetryWait <= 0 {
		cfg.MaxRetryWait = 30 * time.Second
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = 30 * time.Second
	}
	c := &Channel{
		cfg:        cfg,
		http:       cfg.HTTPClient,
		redact:     redactor{token: cfg.Token},
		seen:       newRecentIDs(4096),
		gate:       newConvGate(),
		pacer:      newPacer(),
		edits:      newEditThrottle(time.Second, 3*time.Second),
		sleep:      kit.Sleep,
		now:        time.Now,
		pollTimout: cfg.PollTimeout,
		reg: &kit.LaterRetry{
			Failed: "telegram: registering commands failed", Done: "telegram: commands registered after retrying",
			GaveUp: "the command menu stays as Telegram has it until the next start",
			Min:    regRetryMin, Max: regRetryMax, Log: cfg.Logger,
		},
	}
	c.typing = kit.NewTypingSignals(kit.TypingOptions{Lasts: typingLasts, Timeout: typingTimeout, After: cfg.TypingAfter, Logger: cfg.Logger,
		Now: func() time.Time { return c.now() }})
	return c, nil
}

func validSecret(s string) bool {
	if len(s) == 0 || len(s) > 256 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
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
	c.mu.Lock()
	if c.started {
		c.mu.Unlock()
		return errors.New("telegram: start: already started")
	}
	c.started = true
	c.mu.Unlock()

	endpoint := c.cfg.APIURL + "/bot%s/%s"
	callCtx, cancelCall := context.WithTimeout(ctx, c.cfg.CallTimeout)
	bot, err := tgbotapi.NewBotAPIWithClient(c.cfg.Token, endpoint, ctxClient{ctx: callCtx, c: c.http})
	cancelCall()
	if err != nil {
		var te *tgbotapi.Error
		// Telegram answers 401 for a wrong or revoked token and 404 for one of the wrong shape.
		if errors.As(err, &te) && (te.Code == http.StatusUnauthorized || te.Code == http.StatusNotFound) {
			return fmt.Errorf("telegram: getMe: %w (%d %s)", channels.ErrUnauthorized, te.Code, c.redact.string(te.Message))
		}
		return fmt.Errorf("telegram: getMe: %w", c.redact.error(err))
	}
	life, cancel := context.WithCancel(ctx)
	c.mu.Lock()
	c.bot = bot
	c.self = botIdentity{id: bot.Self.ID, username: bot.Self.UserName}
	c.handler = h
	c.cancel = cancel
	c.life = life
	c.mu.Unlock()

	if c.cfg.Mode == ModeWebhook {
		if err := c.setWebhook(ctx); err != nil {
			cancel()
			return err
		}
		c.webhookOK.Store(true)
		c.cfg.Logger.Info("telegram: webhook registered", "bot", c.self.username)
		return nil
	}
	if _, err := c.call(ctx, "deleteWebhook", nil, true); err != nil {
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
		c.leadSince.Store(c.now().UnixNano())
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
	c.stopped = true
	cancel := c.cancel
	c.mu.Unlock()
	c.webhookOK.Store(false)
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

// tokenRefused records a 401 answer to method: the token was revoked or replaced while the bot
// ran (a wrong one is refused at Start). The first of a spell is logged, saying what to do;
// Ready reports it until a call succeeds again.
func (c *Channel) tokenRefused(method string) {
	if c.refused.Swap(true) {
		return
	}
	c.cfg.Logger.Error("telegram: Telegram refused the bot token (401 Unauthorized): it was revoked or replaced in @BotFather; "+
		"set telegram.token (BOT_TELEGRAM__TOKEN) to the bot's current token and restart — until then no message is received or answered",
		"method", method)
}

// tokenAccepted ends a spell of refusals: a call succeeded.
func (c *Channel) tokenAccepted() {
	if c.refused.Load() && c.refused.Swap(false) {
		c.cfg.Logger.Info("telegram: Telegram accepts the bot token again")
	}
}

// ErrNotReady is wrapped by Ready's errors.
var ErrNotReady = errors.New("telegram: not receiving")

// Ready reports nil while the inbound loop is receiving: in polling mode a getUpdates succeeded
// within the last two poll timeouts (plus 10 s) — with a Lease, counted from when this process
// took it, and a process standing by (another one polls) is ready: it sends and works the
// queue; in webhook mode the webhook is registered and the channel not stopped.
func (c *Channel) Ready() error {
	c.mu.Lock()
	stopped, started := c.stopped, c.started
	c.mu.Unlock()
	switch {
	case stopped:
		return fmt.Errorf("%w: stopped", ErrNotReady)
	case !started:
		return fmt.Errorf("%w: not started", ErrNotReady)
	case c.cfg.Mode == ModeWebhook:
		if !c.webhookOK.Load() {
			return fmt.Errorf("%w: webhook not registered", ErrNotReady)
		}
		return nil
	}
	if c.refused.Load() {
		return fmt.Errorf("%w: Telegram refuses the bot token (401 Unauthorized); set telegram.token to the bot's current token", ErrNotReady)
	}
	last := c.lastPoll.Load()
	if c.cfg.Lease != nil {
		if !c.leading.Load() {
			return nil
		}
		last = max(last, c.leadSince.Load())
	}
	if last == 0 {
		return fmt.Errorf("%w: no successful getUpdates yet", ErrNotReady)
	}
	if age := c.now().Sub(time.Unix(0, last)); age > 2*c.pollTimout+10*time.Second {
		return fmt.Errorf("%w: last successful getUpdates %s ago", ErrNotReady, age.Round(time.Second))
	}
	return nil
}
