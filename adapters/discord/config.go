package discord

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"
	"github.com/switchboard-bot/switchboard/channels/kit"
	"github.com/switchboard-bot/switchboard/render"
)

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
	// MaxRetryWait bounds the total time a call nobody above retries (start-up, registration,
	// interaction answers) waits on 429 retry_after before returning a
	// *channels.RateLimitError; default 30 s.
	MaxRetryWait time.Duration
	// CallTimeout bounds each REST attempt — from when it is sent to its answer read — and the
	// gateway handshake; default 30 s. A request's wait for its slot of the global limit
	// (GlobalRate) comes before and is not counted: the caller's context bounds it (a run's,
	// for its answers), so a burst beyond the limit waits its turn instead of timing out.
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
	// Now is the channel's clock (default time.Now): an interaction token's age is read on it,
	// and the gateways' silence Ready reports.
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

// withDefaults validates c and fills in the defaults Config documents.
func (c Config) withDefaults() (Config, error) {
	c.Token = strings.TrimPrefix(c.Token, "Bot ")
	if c.Token == "" {
		return c, errors.New("discord: token is required")
	}
	if strings.ContainsAny(c.Token, " \t\r\n/?#") {
		return c, errors.New("discord: token has characters a bot token never has")
	}
	if c.APIURL == "" {
		c.APIURL = DefaultAPIURL
	}
	if base, err := url.Parse(strings.TrimRight(c.APIURL, "/")); err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return c, fmt.Errorf("discord: api url %q is not an http(s) URL", c.APIURL)
	}
	switch c.ThreadReplies {
	case "":
		c.ThreadReplies = ThreadRepliesAll
	case ThreadRepliesAll, ThreadRepliesMention:
	default:
		return c, fmt.Errorf("discord: unknown thread_replies %q (want all or mention)", c.ThreadReplies)
	}
	if c.ShardCount > 1 && (c.ShardID < 0 || c.ShardID >= c.ShardCount) {
		return c, fmt.Errorf("discord: shard id %d is not in 0..%d", c.ShardID, c.ShardCount-1)
	}
	if c.AutoShard && (c.ShardID != 0 || c.ShardCount != 0) {
		return c, errors.New("discord: automatic sharding takes no shard id or count")
	}
	if c.IdentifyInterval <= 0 {
		c.IdentifyInterval = 5 * time.Second
	}
	if c.Intents == 0 {
		c.Intents = DefaultIntents
	}
	if c.HTTPClient == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 64, 64
		c.HTTPClient = &http.Client{Transport: tr}
	}
	if c.Dialer == nil {
		d := *websocket.DefaultDialer
		c.Dialer = &d
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.MaxRetryWait <= 0 {
		c.MaxRetryWait = 30 * time.Second
	}
	if c.CallTimeout <= 0 {
		c.CallTimeout = 30 * time.Second
	}
	if c.DeferAfter <= 0 || c.DeferAfter > 2500*time.Millisecond {
		c.DeferAfter = 2 * time.Second
	}
	if c.ReconnectMin <= 0 {
		c.ReconnectMin = time.Second
	}
	if c.InvalidSessionWait <= 0 {
		c.InvalidSessionWait = 2 * time.Second
	}
	if c.LeaseName == "" {
		c.LeaseName = platform
	}
	if c.LeaseOwner == "" {
		c.LeaseOwner = kit.NewOwner()
	}
	if c.SessionSaveEvery <= 0 {
		c.SessionSaveEvery = 3 * time.Second
	}
	if c.GlobalRate == 0 {
		c.GlobalRate = globalPerSecond
	}
	return c, nil
}
