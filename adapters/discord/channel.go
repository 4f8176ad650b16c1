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
// REST requests keep Discord's global limit (Config.GlobalRate); a 429 of a send, an edit, a
// delete or a file is returned as *channels.RateLimitError for delivery to wait out, and the
// calls nobody above retries wait theirs out a few times, up to Config.MaxRetryWait (see call).
// Files users attach are listed on their Inbound (name, type, size, CDN URL) and downloaded
// when asked (FetchFile, fetch.go) from Discord's CDN, which takes no token.
// The token never appears in logs or errors (kit.Redactor).
package discord

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/kit"
	"github.com/switchboard-bot/switchboard/render"
)

const platform = "discord"

// Channel is the Discord channel. Create it with New; all methods are safe for concurrent use.
//
// It is made of one component per concern, each in the file named after it, as the Telegram
// adapter is: the outbound sender (send.go, file.go), the typing signals (typing.go), the slash
// commands (commands.go), the interactions — answers, modals, slash command replies
// (interaction.go, reply.go) —, the file downloads (fetch.go), the HTTP interactions endpoint
// (webhook.go), the shards this process runs (shard.go, gateway.go) and the dispatcher their
// events go through (dispatch.go). The components that provide a capability are embedded; Channel itself
// starts, stops and reports readiness.
type Channel struct {
	*sender       // Send, Edit, Delete, Pages, SendFile, KeyWindow
	*typer        // Typing
	*commands     // RegisterCommands
	*interactions // RespondInteraction, OpenForm
	*fetcher      // FetchFile
	*webhook      // InteractionsHandler

	cfg        Config
	s          *discordgo.Session
	redact     *kit.Redactor
	rest       *rest          // REST calls: their errors, retries and rate limits
	life       *kit.Lifecycle // the start guard and Ready's phase
	workers    *kit.Workers   // the intake's context, from Start until StopIntake, and its goroutines
	dispatcher *dispatcher    // gateway events, decoded, ordered per channel and handed over
	shards     *shards        // the gateways of the shards this process holds
	bot        *botSelf       // who the bot is (READY, users/@me, a saved session)
	places     *places        // where the guild channels sit
	pace       *pacer         // identifies, per max_concurrency
	global     *pacer         // REST requests, this process's share of Config.GlobalRate; nil: no bound
	budget     identifyBudget
	// paceClock, when set (tests), is the identify pacer's clock; onIdentify, when set, is
	// called with the pacer's slot as each IDENTIFY is sent.
	paceClock  func(*pacer)
	onIdentify func(shard int, slot time.Time)
	// intakeBegun, when set (tests), is called between the intake's Begin and its shards' start.
	intakeBegun func()
	clock       *kit.Clock // the channel's time, shared by its components (Config.Now; tests replace it)
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
	_ channels.IntakeStopper        = (*Channel)(nil)
)

// New validates cfg and returns a Channel. It does no I/O: Start connects.
func New(cfg Config) (*Channel, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	redact := newRedactor(cfg.Token)
	cfg.Logger = redact.Logger(cfg.Logger)
	if cfg.RateLimits == nil {
		cfg.RateLimits = kit.NewRateLimitLog(platform, cfg.Logger, nil)
	}
	var global *pacer
	if cfg.GlobalRate > 0 {
		global = newPacer(cfg.GlobalRate, time.Second)
	}
	s, err := newSession(cfg, global)
	if err != nil {
		return nil, err
	}
	clk := kit.NewClock()
	if cfg.Now != nil {
		clk.Now = cfg.Now
	}
	_, sleep := clk.Funcs()
	c := &Channel{
		global: global,
		cfg:    cfg,
		s:      s,
		redact: redact,
		rest: &rest{timeout: cfg.CallTimeout, redact: redact, sleep: sleep, limits: &kit.RetryAfter{Log: cfg.RateLimits,
			MaxWait: cfg.MaxRetryWait, Attempts: 1 + maxRateLimitRetries, Logger: cfg.Logger, Sleep: sleep}},
		life:  kit.NewLifecycle(platform, ErrNotReady),
		bot:   &botSelf{appID: cfg.ApplicationID},
		clock: clk,
	}
	c.workers = kit.NewWorkers(c.life)
	c.places = &places{rest: c.rest, s: s}
	c.assemble()
	return c, nil
}

// newSession is the discordgo session REST calls go through: its requests sent to
// Config.APIURL (rewrite), within this process's share of the global rate, its own retries and
// logs off (call waits out rate limits, with the context; the adapter logs what matters).
func newSession(cfg Config, global *pacer) (*discordgo.Session, error) {
	base, _ := url.Parse(strings.TrimRight(cfg.APIURL, "/")) // checked by withDefaults
	s, err := discordgo.New("Bot " + cfg.Token)
	if err != nil {
		return nil, errors.New("discord: cannot make a session")
	}
	next := cfg.HTTPClient.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	client := *cfg.HTTPClient
	client.Transport = rewrite{base: base, next: next, global: global}
	s.Client = &client
	s.ShouldRetryOnRateLimit = false // waited out in call, with the context
	s.MaxRestRetries = 1
	s.LogLevel = -1 // discordgo's log lines go to the standard logger; ours say what matters
	s.StateEnabled = false
	s.State = nil
	return s, nil
}

// assemble makes the components, which share the session, the REST bridge, who the bot is and
// where the channels sit.
func (c *Channel) assemble() {
	cfg := c.cfg
	threads := newThreadMaker(c.rest, c.s, c.places, cfg.Logger)
	now, _ := c.clock.Funcs()
	signals := kit.NewTypingSignals(kit.TypingOptions{Lasts: typingLasts, Timeout: typingTimeout, After: cfg.TypingAfter, Logger: cfg.Logger,
		Now: now})
	c.sender = &sender{cfg: &c.cfg, rest: c.rest, s: c.s, threads: threads, signals: signals}
	c.sender.pages.Render = func(m channels.Message) ([]render.DiscordMessage, error) { return renderPieces(m, cfg.ActionKey) }
	replies := &commandReplies{cfg: &c.cfg, rest: c.rest, s: c.s, bot: c.bot, out: c.sender, clock: c.clock}
	c.sender.replies = replies
	c.typer = &typer{rest: c.rest, s: c.s, threads: threads, signals: signals}
	c.commands = &commands{cfg: &c.cfg, rest: c.rest, s: c.s, bot: c.bot, workers: c.workers, reg: &kit.LaterRetry{
		Failed: "discord: registering commands failed", Done: "discord: commands registered after retrying",
		GaveUp: "the slash commands stay as Discord has them until the next start",
		Min:    regRetryMin, Max: regRetryMax, Log: cfg.Logger, Attrs: []any{"guild", cfg.DevGuild},
	}}
	c.dispatcher = &dispatcher{cfg: &c.cfg, redact: c.redact, ch: c, bot: c.bot, places: c.places, threads: threads, workers: c.workers,
		lanes: kit.NewLanes(maxRunners, maxQueued), clock: c.clock}
	c.interactions = &interactions{cfg: &c.cfg, rest: c.rest, s: c.s, bot: c.bot, places: c.places, replies: replies,
		dispatcher: c.dispatcher, workers: c.workers, clock: c.clock}
	c.dispatcher.interactions = c.interactions
	c.fetcher = &fetcher{cfg: &c.cfg, redact: c.redact}
	c.webhook = &webhook{cfg: &c.cfg, life: c.life, workers: c.workers, dispatcher: c.dispatcher, interactions: c.interactions, clock: c.clock}
	c.shards = &shards{c: c}
}

// Name is "discord".
func (c *Channel) Name() string { return platform }

// BotID is the bot's user id as READY reported it; "" before Start.
func (c *Channel) BotID() string { return c.bot.userID() }

// Start asks for the gateway URL (GET /gateway/bot, which also checks the token), connects and
// identifies, and returns once READY arrived or the connection failed. Errors wrap
// channels.ErrUnauthorized when Discord refused the token (401, close 4004) and
// ErrIntentDisallowed when it refused the message content intent (close 4014). Receiving
// continues, reconnecting and resuming as needed, until StopIntake or Stop, or until ctx ends,
// which stops the intake as StopIntake does (without waiting): sending works until Stop. A
// Channel starts once.
func (c *Channel) Start(ctx context.Context, h channels.Handler) error {
	if h == nil {
		return errors.New("discord: start: nil handler")
	}
	if err := c.life.Begin(); err != nil {
		return err
	}
	plan, err := c.plan(ctx)
	if err == nil {
		err = c.connect(ctx, h, plan)
	}
	if err != nil {
		c.life.Stop()
		return err
	}
	c.life.Receiving()
	return nil
}

// plan asks Discord for the gateway URL and the shards (GET /gateway/bot) and plans the shards
// this process may run; with a Lease it also learns who the bot is.
func (c *Channel) plan(ctx context.Context) (shardPlan, error) {
	var gb *discordgo.GatewayBotResponse
	err := c.rest.callWaiting(ctx, "GET gateway/bot", func(opts ...discordgo.RequestOption) error {
		var err error
		gb, err = c.s.GatewayBot(opts...)
		return err
	})
	if err != nil {
		return shardPlan{}, fmt.Errorf("discord: gateway/bot: %w", err)
	}
	if gb.URL == "" {
		return shardPlan{}, errors.New("discord: gateway/bot gave no URL")
	}
	if lim := gb.SessionStartLimit; lim.Total > 0 {
		c.budget.set(lim.Remaining, time.Duration(lim.ResetAfter)*time.Millisecond, c.clock.Now)
	}
	p := shardPlan{url: gb.URL, ids: []int{c.cfg.ShardID}, count: c.cfg.ShardCount, perBucket: 1}
	if c.cfg.AutoShard {
		p.count = max(gb.Shards, 1)
		p.ids = p.ids[:0]
		for i := range p.count {
			p.ids = append(p.ids, i)
		}
		p.perBucket = max(gb.SessionStartLimit.MaxConcurrency, 1)
	} else if configured := max(p.count, 1); gb.Shards > configured {
		c.cfg.Logger.Warn("discord: Discord recommends more shards than configured", "recommended", gb.Shards, "configured", configured)
	}
	if c.cfg.Lease != nil {
		// A process may hold no shard at all and still deliver: learn who the bot is now
		// rather than from a READY that may never come to this process.
		if err := c.learnSelf(ctx); err != nil {
			return shardPlan{}, err
		}
	}
	return p, nil
}

// learnSelf asks who the bot is (GET users/@me), for a process that may hold no shard.
func (c *Channel) learnSelf(ctx context.Context) error {
	var u *discordgo.User
	err := c.rest.callWaiting(ctx, "GET users/@me", func(opts ...discordgo.RequestOption) error {
		var err error
		u, err = c.s.User("@me", opts...)
		return err
	})
	if err != nil {
		return fmt.Errorf("discord: users/@me: %w", err)
	}
	if u == nil || u.ID == "" {
		return errors.New("discord: users/@me gave no id")
	}
	c.bot.set(u.ID, "")
	return nil
}

// connect runs the plan's shards from now until the intake stops, and waits for the first
// connection of each shard taken in the first round: it fails when one never worked (a refused
// token or intent); later ones reconnect on their own.
func (c *Channel) connect(ctx context.Context, h channels.Handler, plan shardPlan) error {
	c.pace = newPacer(plan.perBucket, c.cfg.IdentifyInterval)
	if c.paceClock != nil {
		c.paceClock(c.pace)
	}
	c.shards.plan(len(plan.ids))
	c.dispatcher.Begin(h, struct{}{})
	// ctx bounds the intake: its end stops it as StopIntake does (the shards close, their
	// sessions saved and leases handed back), and sending goes on until Stop.
	life := c.workers.Begin(ctx)
	if c.intakeBegun != nil {
		c.intakeBegun()
	}

	firsts := make([]chan error, len(plan.ids))
	for i := range firsts {
		firsts[i] = make(chan error, 1)
	}
	round := make(chan []int, 1)
	if !c.workers.Go(func(life context.Context) {
		c.shards.run(life, plan, firsts, func(taken []int) { round <- taken })
	}) {
		// StopIntake (or Stop) ran since Begin: no shard starts, so no first round comes to
		// wait for. Start returns, the channel stopped (Ready says so), as Slack's does.
		c.cfg.Logger.Info("discord: the intake was stopped while starting; not connecting")
		return nil
	}
	taken, err := firstConnections(ctx, life, round, firsts)
	if err != nil {
		_ = c.workers.Stop(context.Background())
		return fmt.Errorf("discord: connect: %w", err)
	}
	if len(taken) == 0 {
		c.cfg.Logger.Info("discord: standing by: other processes hold every shard; delivering", "bot", c.BotID(), "shards", len(plan.ids))
	} else {
		c.cfg.Logger.Info("discord: receiving", "bot", c.BotID(), "shards", len(taken), "of", len(plan.ids))
	}
	return nil
}

// firstConnections waits for the first round of shards taken, then for the first connection of
// each; it returns the shards taken. A shard handed back to another process before it connected
// is no failure.
func firstConnections(ctx, life context.Context, round <-chan []int, firsts []chan error) ([]int, error) {
	var taken []int
	var err error
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
	return taken, err
}

// StopIntake stops taking events in while sends keep working: it closes the gateway
// connections, saving each shard's session and handing its lease back (another process takes
// the shards over at once), refuses HTTP interactions from then on (503), and waits (until ctx
// ends) for the handlers of the events already received to finish. Safe to call more than once.
func (c *Channel) StopIntake(ctx context.Context) error {
	if err := c.workers.Stop(ctx); err != nil {
		return fmt.Errorf("discord: stop: %w", err)
	}
	if !c.dispatcher.lanes.Wait(ctx) {
		return fmt.Errorf("discord: stop: messages still being handed over: %w", ctx.Err())
	}
	return nil
}

// Stop stops the intake as StopIntake does, and the typing signals still being sent. Safe to
// call more than once.
func (c *Channel) Stop(ctx context.Context) error {
	defer c.cfg.RateLimits.Flush(true)
	err := c.StopIntake(ctx)
	c.typer.signals.Close()
	return err
}

// ErrNotReady is wrapped by Ready's errors.
var ErrNotReady = errors.New("discord: not receiving")

// Ready reports nil while the gateway connection of every shard this process holds is up
// (identified or resumed) and alive: its last inbound frame (a dispatch or a heartbeat ack) is
// at most two heartbeat intervals and 10 s old. A process holding none is ready: it delivers.
func (c *Channel) Ready() error {
	if err := c.life.Err(); err != nil {
		return err
	}
	return c.shards.ready(c.clock.Now())
}
