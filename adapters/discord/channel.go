// Package discord is the Discord adapter: a channels.Channel on Discord's gateway and REST API.
// REST goes through github.com/bwmarrin/discordgo (its bucket rate limiter included), with
// requests sent to Config.APIURL by rewriting their host; the gateway connection is the
// adapter's own (gateway.go) because discordgo v0.29.0 resumes on the wrong URL and never gives
// up on fatal closes.
//
// Inbound: guild messages that mention the bot (its user or its managed role), any DM, and
// messages in a thread the bot answers in (the router knows those threads); component clicks,
// selects, modal submits and the /bot slash command. A mention in a channel is answered in a
// new thread started from that message (Config.ReplyInThread). The conversation key is
// {discord, guild, channel, thread}; a DM's is {discord, "", dm channel, ""}. The identity's
// channel_user_id is the Discord user id (a snowflake, e.g. "80351110224678912"): that is what
// access.discord.allow and admins.discord list. A message's event id is its message id, so a
// resumed gateway's replays are dropped by the router's dedupe.
//
// Outbound: render's embeds and components (text fallback), split at 2,000 characters of
// content and 6,000 of embeds with code blocks kept whole, allowed_mentions parsing nothing,
// typing, edits, deletes, files attached to a message (the rest of a long answer), interaction
// answers (ephemeral notices, modals, deferred slash command answers) and the command menu.
// REST requests keep Discord's global limit (Config.GlobalRate); 429s are waited out a few times,
// up to Config.MaxRetryWait, then *channels.RateLimitError. The token never appears in logs or
// errors.
package discord

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/kit"
	"github.com/switchboard-bot/switchboard/render"
)

const platform = "discord"

// DefaultAPIURL is the base URL of REST and gateway discovery when Config.APIURL is empty.
const DefaultAPIURL = "https://discord.com"

// DefaultIntents are what the adapter needs: guilds (threads, the bot's role), guild messages,
// DMs and the privileged message content intent.
const DefaultIntents = int(discordgo.IntentsGuilds | discordgo.IntentsGuildMessages | discordgo.IntentsDirectMessages |
	discordgo.IntentMessageContent)

// MentionOnlyIntents are DefaultIntents without the privileged message content intent, for a bot
// whose switch is off in the Developer Portal: Discord still sends the text of DMs and of
// messages that mention the bot, and blanks the rest, so only those reach the router (use
// ThreadRepliesMention: follow-ups in a thread without a mention arrive empty).
const MentionOnlyIntents = DefaultIntents &^ int(discordgo.IntentMessageContent)

// ThreadReplies says which messages in a thread the bot answers in reach the router.
type ThreadReplies string

// The thread_replies choices.
const (
	// ThreadRepliesAll passes every message of a thread the bot is in (the router knows them).
	ThreadRepliesAll ThreadReplies = "all"
	// ThreadRepliesMention passes only messages that mention the bot.
	ThreadRepliesMention ThreadReplies = "mention"
)

// Config configures a Channel. Token is required; everything else has a default.
type Config struct {
	// Token is the bot token from the Developer Portal (without "Bot "). It never appears in
	// logs or errors.
	Token string
	// APIURL is the scheme and host of REST and gateway discovery; default DefaultAPIURL.
	APIURL string
	// ApplicationID registers commands; default the id READY reports.
	ApplicationID string
	// ReplyInThread answers a mention in a channel in a new thread started from the message
	// (configuration's default is true); false answers in the channel as a reply.
	ReplyInThread bool
	// ThreadReplies is ThreadRepliesAll (default) or ThreadRepliesMention.
	ThreadReplies ThreadReplies
	// DevGuild, when set, registers the commands in that guild only (instant, for development)
	// instead of globally.
	DevGuild string
	// Intents are sent in IDENTIFY; default DefaultIntents.
	Intents int
	// ShardID and ShardCount split the bot's guilds over several processes (Discord sends a
	// guild's events to shard (guild_id >> 22) % ShardCount, DMs to shard 0). ShardCount 0 or
	// 1 is one unsharded connection. The process plans that one shard (with a Lease, a second
	// process on the same shard stands by).
	ShardID, ShardCount int
	// AutoShard plans every shard Discord recommends (GET /gateway/bot), identifying
	// max_concurrency of them per IdentifyInterval; with a Lease the processes split them.
	// ShardID and ShardCount must be zero.
	AutoShard bool
	// IdentifyInterval spaces the first identifies of auto shards in one rate-limit bucket;
	// default 5 s, Discord's.
	IdentifyInterval time.Duration
	// HTTPClient makes REST requests (its transport is wrapped to reach APIURL); default a
	// client keeping 64 idle connections.
	HTTPClient *http.Client
	// Dialer dials the gateway; default websocket.DefaultDialer's settings.
	Dialer *websocket.Dialer
	// TypingAfter is how long a typing signal waits before it is sent, dropped if a message is
	// posted meanwhile (kit.TypingOptions.After); zero sends it at once. cmd/bot passes
	// kit.DefaultTypingAfter.
	TypingAfter time.Duration
	// Logger receives operator logs; default slog.Default().
	Logger *slog.Logger
	// ActionKey signs the custom_ids of components rendered from cards.
	ActionKey render.Key
	// MaxRetryWait bounds the total time one call waits on 429 retry_after before returning a
	// *channels.RateLimitError; default 30 s.
	MaxRetryWait time.Duration
	// CallTimeout bounds each REST call and the gateway handshake; default 30 s.
	CallTimeout time.Duration
	// DeferAfter is how long a click may go unanswered before the adapter acknowledges it
	// (deferred), within Discord's 3 s; default 2 s.
	DeferAfter time.Duration
	// ReconnectMin is the first wait before reconnecting the gateway (doubling to a minute
	// while connections fail); default 1 s.
	ReconnectMin time.Duration
	// InvalidSessionWait is the pause before identifying again after op 9; default 2 s
	// (Discord asks for 1–5 s).
	InvalidSessionWait time.Duration
	// OnMalformedEvent, when set, is called once for each gateway event skipped as malformed.
	OnMalformedEvent func()
	// AdminPermission, when not zero, is a permission bit (Discord's numbering, e.g. 1<<5
	// MANAGE_GUILD) that makes a guild member an admin: an interaction (slash command, click,
	// modal submit) from a member whose permissions, as Discord sent them with it, hold the bit
	// (or ADMINISTRATOR) reaches the router with Inbound.PlatformAdmin. Messages carry no
	// member permissions, so text commands rely on the router's admin list alone.
	AdminPermission uint64
	// PublicKey is the application's Ed25519 public key; InteractionsHandler verifies requests
	// with it.
	PublicKey []byte
	// Sessions, when set, keeps each shard's gateway session across restarts: Stop leaves the
	// session resumable and saves it, Start resumes it, and Discord replays what was sent in
	// between (each message once: the router dedupes by message id). Nil: every start
	// identifies afresh, and events sent while no process is connected are lost.
	Sessions SessionStore
	// OnConnect, when set, is called each time a shard's gateway connection is up: resumed true
	// after a RESUMED (missed events replayed), false after a READY (a new session). It must
	// return quickly.
	OnConnect func(shard int, resumed bool)
	// Lease, when set, holds each shard through a lease shared by every process of the
	// deployment, named LeaseName + ":<shard>/<count>": a process runs only the shards it holds
	// and the processes split them evenly (kit.RunLeasedSet); a dead process's shards are
	// taken over once their leases expire (LeaseTTL), resuming the session it saved (Sessions,
	// saved every SessionSaveEvery while a shard runs), so Discord replays what it missed.
	// Stop hands the leases back at once. Nil: this process runs every shard of its plan.
	Lease kit.Lease
	// LeaseName names the bot in the leases, e.g. "discord:<bot id>"; default "discord".
	LeaseName string
	// LeaseOwner names this process in the leases; default a random id.
	LeaseOwner string
	// LeaseTTL is a shard lease's lifetime without renewal; default kit.DefaultLeaseTTL.
	LeaseTTL time.Duration
	// OnLease, when set, is called with true when this process starts running a shard under
	// its lease and with false when it stops; OnTakeover when it takes a shard another process
	// held (dead, or handing it over). Both must return quickly.
	OnLease    func(shard int, held bool)
	OnTakeover func(shard int)
	// SessionSaveEvery is how often a running shard saves its session to Sessions, so that a
	// process that dies leaves one to resume; default 3 s.
	SessionSaveEvery time.Duration
	// Now is the clock (default time.Now); an interaction token's age is read on it.
	Now func() time.Time
	// GlobalRate bounds the REST requests of the bot in any one second, interaction callbacks
	// and follow-ups excepted, as Discord does; default 50, Discord's global limit; negative: no
	// bound (only 429s slow the bot down). The processes sharing the bot's shards through Lease
	// split it: each allows ⌊GlobalRate / live processes⌋ a second (at least 1), as counted by
	// the Lease's census (kit.Census) each time the shards are shared out, keeping its last
	// share while the census fails. Without a Lease, or one without a census, this Channel
	// allows the whole rate.
	GlobalRate int
	// RateLimits counts the rate limits the adapter meets and logs them at most once a minute
	// (kit.RateLimitLog); default one of the adapter's own, on Logger. Per-429 lines are
	// Debug only.
	RateLimits *kit.RateLimitLog
}

// String is redacted: it never shows the token.
func (c Config) String() string {
	return fmt.Sprintf("discord.Config{APIURL:%q Token:[redacted]}", c.APIURL)
}

// GoString is redacted like String.
func (c Config) GoString() string { return c.String() }

// LogValue is redacted like String.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }

// Channel is the Discord channel. Create it with New; all methods are safe for concurrent use.
type Channel struct {
	typing *kit.TypingSignals // typing signals, sent off the caller's path
	cfg    Config
	s      *discordgo.Session
	redact redactor
	gws    []*gateway // per shard of the plan, the gateway while this process holds it
	pace   *pacer     // identifies, per max_concurrency
	global *pacer     // REST requests, this process's share of Config.GlobalRate; nil: no bound
	// paceClock, when set (tests), is the identify pacer's clock; onIdentify, when set, is
	// called with the pacer's slot as each IDENTIFY is sent.
	paceClock  func(*pacer)
	onIdentify func(shard int, slot time.Time)
	// liveNow is the clock of the gateways' last inbound frames, which Ready reads.
	liveNow func() time.Time
	// reg retries a command registration refused at start (tests set its Wait to record the
	// waits instead of sleeping them).
	reg *kit.LaterRetry

	mu      sync.Mutex
	handler channels.Handler
	cancel  context.CancelFunc
	started bool
	stopped bool
	self    botIdentity
	appID   string
	wg      sync.WaitGroup
	life    context.Context

	where    sync.Map // channel id → where
	threads  *threadMaker
	budget   identifyBudget
	order    *orderer
	ixs      sync.Map                             // interaction id → *ixState
	rendered render.Kept[[]render.DiscordMessage] // cards Pages rendered, for their Send or Edit
	cmds     sync.Map                             // interaction id → *commandReply
	now      func() time.Time
	ready    atomic.Bool
}

var (
	_ channels.Channel              = (*Channel)(nil)
	_ channels.Editor               = (*Channel)(nil)
	_ channels.Deleter              = (*Channel)(nil)
	_ channels.Typer                = (*Channel)(nil)
	_ channels.KeyedSender          = (*Channel)(nil)
	_ channels.CommandRegistrar     = (*Channel)(nil)
	_ channels.InteractionResponder = (*Channel)(nil)
	_ channels.FormOpener           = (*Channel)(nil)
	_ channels.Readiness            = (*Channel)(nil)
)

// New validates cfg and returns a Channel. It does no I/O: Start connects.
func New(cfg Config) (*Channel, error) {
	cfg.Token = strings.TrimPrefix(cfg.Token, "Bot ")
	if cfg.Token == "" {
		return nil, errors.New("discord: token is required")
	}
	if strings.ContainsAny(cfg.Token, " \t\r\n/?#") {
		return nil, errors.New("discord: token has characters a bot token never has")
	}
	if cfg.APIURL == "" {
		cfg.APIURL = DefaultAPIURL
	}
	base, err := url.Parse(strings.TrimRight(cfg.APIURL, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("discord: api url %q is not an http(s) URL", cfg.APIURL)
	}
	switch cfg.ThreadReplies {
	case "":
		cfg.ThreadReplies = ThreadRepliesAll
	case ThreadRepliesAll, ThreadRepliesMention:
	default:
		return nil, fmt.Errorf("discord: unknown thread_replies %q (want all or mention)", cfg.ThreadReplies)
	}
	if cfg.ShardCount > 1 && (cfg.ShardID < 0 || cfg.ShardID >= cfg.ShardCount) {
		return nil, fmt.Errorf("discord: shard id %d is not in 0..%d", cfg.ShardID, cfg.ShardCount-1)
	}
	if cfg.AutoShard && (cfg.ShardID != 0 || cfg.ShardCount != 0) {
		return nil, errors.New("discord: automatic sharding takes no shard id or count")
	}
	if cfg.IdentifyInterval <= 0 {
		cfg.IdentifyInterval = 5 * time.Second
	}
	if cfg.Intents == 0 {
		cfg.Intents = DefaultIntents
	}
	if cfg.HTTPClient == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 64, 64
		cfg.HTTPClient = &http.Client{Transport: tr}
	}
	if cfg.Dialer == nil {
		d := *websocket.DefaultDialer
		cfg.Dialer = &d
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
		cfg.CallTimeout = 30 * time.Second
	}
	if cfg.DeferAfter <= 0 || cfg.DeferAfter > 2500*time.Millisecond {
		cfg.DeferAfter = 2 * time.Second
	}
	if cfg.ReconnectMin <= 0 {
		cfg.ReconnectMin = time.Second
	}
	if cfg.InvalidSessionWait <= 0 {
		cfg.InvalidSessionWait = 2 * time.Second
	}
	if cfg.LeaseName == "" {
		cfg.LeaseName = platform
	}
	if cfg.LeaseOwner == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		cfg.LeaseOwner = hex.EncodeToString(b[:])
	}
	if cfg.SessionSaveEvery <= 0 {
		cfg.SessionSaveEvery = 3 * time.Second
	}
	s, err := discordgo.New("Bot " + cfg.Token)
	if err != nil {
		return nil, errors.New("discord: cannot make a session")
	}
	next := cfg.HTTPClient.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	if cfg.GlobalRate == 0 {
		cfg.GlobalRate = globalPerSecond
	}
	var global *pacer
	if cfg.GlobalRate > 0 {
		global = newPacer(cfg.GlobalRate, time.Second)
	}
	client := *cfg.HTTPClient
	client.Transport = rewrite{base: base, next: next, global: global}
	s.Client = &client
	s.ShouldRetryOnRateLimit = false // waited out in call, with the context
	s.MaxRestRetries = 1
	s.LogLevel = -1 // discordgo's log lines go to the standard logger; ours say what matters
	s.StateEnabled = false
	s.State = nil
	c := &Channel{
		global:  global,
		cfg:     cfg,
		s:       s,
		redact:  redactor{token: cfg.Token},
		appID:   cfg.ApplicationID,
		now:     cfg.Now,
		liveNow: time.Now,
		reg: &kit.LaterRetry{
			Failed: "discord: registering commands failed", Done: "discord: commands registered after retrying",
			GaveUp: "the slash commands stay as Discord has them until the next start",
			Min:    regRetryMin, Max: regRetryMax, Log: cfg.Logger, Attrs: []any{"guild", cfg.DevGuild},
		},
	}
	if c.now == nil {
		c.now = time.Now
	}
	c.threads = newThreadMaker(c)
	c.order = newOrderer()
	c.typing = kit.NewTypingSignals(kit.TypingOptions{Lasts: typingLasts, Timeout: typingTimeout, After: cfg.TypingAfter, Logger: cfg.Logger,
		Now: func() time.Time { return c.now() }})
	return c, nil
}

// Name is "discord".
func (c *Channel) Name() string { return platform }

// BotID is the bot's user id as READY reported it; "" before Start.
func (c *Channel) BotID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.self.id
}

func (c *Channel) setSelf(id, appID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.self.id = id
	if c.self.roles == nil {
		c.self.roles = map[string]bool{}
	}
	if c.appID == "" {
		c.appID = appID
	}
	if c.appID == "" {
		c.appID = id
	}
}

func (c *Channel) identity() botIdentity {
	c.mu.Lock()
	defer c.mu.Unlock()
	roles := make(map[string]bool, len(c.self.roles))
	for r := range c.self.roles {
		roles[r] = true
	}
	return botIdentity{id: c.self.id, roles: roles}
}

func (c *Channel) applicationID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.appID
}

// Start asks for the gateway URL (GET /gateway/bot, which also checks the token), connects and
// identifies, and returns once READY arrived or the connection failed. Errors wrap
// channels.ErrUnauthorized when Discord refused the token (401, close 4004) and
// ErrIntentDisallowed when it refused the message content intent (close 4014). Receiving
// continues, reconnecting and resuming as needed, until Stop or until ctx ends. A Channel
// starts once.
func (c *Channel) Start(ctx context.Context, h channels.Handler) error {
	if h == nil {
		return errors.New("discord: start: nil handler")
	}
	c.mu.Lock()
	if c.started {
		c.mu.Unlock()
		return errors.New("discord: start: already started")
	}
	c.started = true
	c.mu.Unlock()

	var gb *discordgo.GatewayBotResponse
	err := c.call(ctx, "GET gateway/bot", func(opts ...discordgo.RequestOption) error {
		var err error
		gb, err = c.s.GatewayBot(opts...)
		return err
	})
	if err != nil {
		return fmt.Errorf("discord: gateway/bot: %w", err)
	}
	if gb.URL == "" {
		return errors.New("discord: gateway/bot gave no URL")
	}
	if lim := gb.SessionStartLimit; lim.Total > 0 {
		c.budget.set(lim.Remaining, time.Duration(lim.ResetAfter)*time.Millisecond, c.now)
	}
	ids, count := []int{c.cfg.ShardID}, c.cfg.ShardCount
	perBucket := 1
	if c.cfg.AutoShard {
		count = max(gb.Shards, 1)
		ids = ids[:0]
		for i := range count {
			ids = append(ids, i)
		}
		perBucket = max(gb.SessionStartLimit.MaxConcurrency, 1)
	} else if configured := max(count, 1); gb.Shards > configured {
		c.cfg.Logger.Warn("discord: Discord recommends more shards than configured", "recommended", gb.Shards, "configured", configured)
	}
	if c.cfg.Lease != nil {
		// A process may hold no shard at all and still deliver: learn who the bot is now
		// rather than from a READY that may never come to this process.
		if err := c.learnSelf(ctx); err != nil {
			return err
		}
	}
	plan := shardPlan{url: gb.URL, ids: ids, count: count}
	c.pace = newPacer(perBucket, c.cfg.IdentifyInterval)
	if c.paceClock != nil {
		c.paceClock(c.pace)
	}
	c.mu.Lock()
	c.gws = make([]*gateway, len(ids))
	c.mu.Unlock()

	life, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.mu.Lock()
	c.handler = h
	c.cancel = cancel
	c.life = life
	c.mu.Unlock()
	stopOnCtx := context.AfterFunc(ctx, cancel)

	// The first connection of each shard taken in the first round reports to Start, which fails
	// when one never worked (a refused token or intent); later ones reconnect on their own.
	firsts := make([]chan error, len(ids))
	for i := range firsts {
		firsts[i] = make(chan error, 1)
	}
	round := make(chan []int, 1)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer stopOnCtx()
		c.runShards(life, plan, firsts, func(taken []int) { round <- taken })
	}()
	var taken []int
	select {
	case taken = <-round:
	case <-ctx.Done():
		err = ctx.Err()
	}
	for _, i := range taken {
		if err != nil {
			break
		}
		select {
		case err = <-firsts[i]:
			if errors.Is(err, context.Canceled) && ctx.Err() == nil && life.Err() == nil {
				err = nil // handed back to another process before it connected
			}
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	if err != nil {
		cancel()
		c.wg.Wait()
		return fmt.Errorf("discord: connect: %w", err)
	}
	c.ready.Store(true)
	if len(taken) == 0 {
		c.cfg.Logger.Info("discord: standing by: other processes hold every shard; delivering", "bot", c.BotID(), "shards", len(ids))
	} else {
		c.cfg.Logger.Info("discord: receiving", "bot", c.BotID(), "shards", len(taken), "of", len(ids))
	}
	return nil
}

// Stop closes the gateway connections, saving each shard's session and handing its lease back,
// and waits (until ctx ends) for the handlers of events already received to finish. Safe to
// call more than once.
func (c *Channel) Stop(ctx context.Context) error {
	defer c.cfg.RateLimits.Flush(true)
	c.mu.Lock()
	c.stopped = true
	cancel := c.cancel
	c.mu.Unlock()
	c.ready.Store(false)
	if cancel != nil {
		cancel()
	}
	c.typing.Close()
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("discord: stop: %w", ctx.Err())
	}
	return nil
}

// ErrNotReady is wrapped by Ready's errors.
var ErrNotReady = errors.New("discord: not receiving")

// Ready reports nil while the gateway connection of every shard this process holds is up
// (identified or resumed) and alive: its last inbound frame (a dispatch or a heartbeat ack) is
// at most two heartbeat intervals and 10 s old. A process holding none is ready: it delivers.
func (c *Channel) Ready() error {
	c.mu.Lock()
	stopped, started := c.stopped, c.started
	c.mu.Unlock()
	switch {
	case stopped:
		return fmt.Errorf("%w: stopped", ErrNotReady)
	case !started || !c.ready.Load():
		return fmt.Errorf("%w: not started", ErrNotReady)
	}
	c.mu.Lock()
	gws := c.gws
	c.mu.Unlock()
	for _, g := range gws {
		if g == nil {
			continue // held by another process
		}
		if err := g.fatalErr(); err != nil {
			return fmt.Errorf("%w: shard %d: %w", ErrNotReady, g.shardID, err)
		}
		if !g.connected.Load() {
			return fmt.Errorf("%w: shard %d reconnecting", ErrNotReady, g.shardID)
		}
		if quiet, interval, dead := g.silence(c.liveNow()); dead {
			return fmt.Errorf("%w: shard %d: nothing received from the gateway for %s (heartbeat interval %s)",
				ErrNotReady, g.shardID, quiet.Round(time.Second), interval)
		}
	}
	return nil
}
