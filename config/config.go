// Package config loads Switchboard's configuration: built-in defaults, then an optional YAML
// file, then BOT_ environment variables, into one typed Config.
//
// The key names (the koanf tags below, e.g. "telegram.api_url") are the contract of DESIGN.md
// "Configuration keys": operators, docs and tests use them. Keys may be added; none is renamed
// without a migration note.
//
// Loading is strict: an unknown key, in the file or the environment, is an error that names it.
// Every secret (fields tagged secret:"…") can also be given as "<key>_file", a path whose trimmed
// contents are the value. Secrets never appear in an error message nor in Redacted.
package config

import (
	"time"
)

// Config is the whole configuration of one Switchboard process. Load fills it; Validate checks
// it; Redacted prints it. A zero Config is not useful: start from Default or Load.
type Config struct {
	Redis       Redis       `koanf:"redis"`
	LLM         LLM         `koanf:"llm"`
	Auth        Auth        `koanf:"auth"`
	Telegram    Telegram    `koanf:"telegram"`
	Slack       Slack       `koanf:"slack"`
	Discord     Discord     `koanf:"discord"`
	Access      Access      `koanf:"access"`
	Admins      Admins      `koanf:"admins"`
	HTTP        HTTP        `koanf:"http"`
	Runs        Runs        `koanf:"runs"`
	Attachments Attachments `koanf:"attachments"`
	Subagents   Subagents   `koanf:"subagents"`
	Tools       Tools       `koanf:"tools"`
	Log         Log         `koanf:"log"`

	// Profiles are the named agent profiles (profiles.<name>); Routes pick one by where a run
	// comes from, first match wins. Both are set in the YAML file; a run no route claims gets
	// the top-level settings, the "default" profile.
	Profiles map[string]Profile `koanf:"profiles"`
	Routes   []Route            `koanf:"routes"`
}

// Redis says where the shared store lives. An empty URL with mode single and no addrs means the
// embedded store (miniredis) inside this process.
type Redis struct {
	// URL is redis://…, rediss://… or unix://…; empty for the embedded store (single mode) or
	// when Addrs is used. A password inside it is masked by Redacted.
	URL string `koanf:"url" secret:"url"`
	// Mode is RedisSingle, RedisSentinel or RedisCluster.
	Mode string `koanf:"mode"`
	// Addrs are host:port pairs: the server (single, at most one), the sentinels, or the
	// cluster's seed nodes.
	Addrs []string `koanf:"addrs"`
	// Prefix starts every key Switchboard writes.
	Prefix string `koanf:"prefix"`
	// MasterName is the sentinel master's name; required in sentinel mode.
	MasterName string `koanf:"master_name"`
	// Password is sent by AUTH when it is not in URL.
	Password string `koanf:"password" secret:"true"`
	// ConnectTimeout is how long startup keeps trying to reach Redis (with backoff, one log
	// line per attempt) before it gives up; a Redis that starts a little after the bot is fine.
	ConnectTimeout time.Duration `koanf:"connect_timeout"`
}

// LLM configures the model provider.
type LLM struct {
	// Provider is ProviderOpenAI (any OpenAI-compatible server) or ProviderDemo (offline). When
	// no layer sets it, Load picks openai if an API key or a non-default base URL is configured,
	// and demo otherwise.
	Provider string `koanf:"provider"`
	// BaseURL is the OpenAI-compatible endpoint; DeepSeek's by default.
	BaseURL string `koanf:"base_url"`
	// APIKey is the bearer key. When unset and BaseURL is DeepSeek's, Load takes it from the
	// DEEPSEEK_API_KEY environment variable.
	APIKey string `koanf:"api_key" secret:"true"`
	// Model is the model name sent with every request.
	Model string `koanf:"model"`
	// Timeout bounds one model call, streaming included.
	Timeout time.Duration `koanf:"timeout"`
	// MaxRetries is how many times a call is retried on 429/5xx; 0 disables retries.
	MaxRetries int `koanf:"max_retries"`
	// SystemPrompt, when set, replaces the built-in system prompt of the lead agent.
	SystemPrompt string `koanf:"system_prompt"`
	// Vision says whether Model takes images (the default profile's; a profile may say
	// otherwise of its own model).
	Vision bool `koanf:"vision"`
	// Providers are named OpenAI-compatible endpoints besides the top-level one, which profiles
	// and transcription name; set in the YAML file. Load fills a provider's unset timeout and
	// max_retries from llm.timeout and llm.max_retries.
	Providers map[string]LLMProvider `koanf:"providers"`
	// Transcription turns voice notes into text.
	Transcription Transcription `koanf:"transcription"`
}

// Auth holds the keys that sign run envelopes.
type Auth struct {
	// SigningKeys are HMAC keys, newest first: the first signs, all verify (rotation). Empty
	// means a key is generated per process, which only suits the embedded store. From the
	// environment they are comma-separated; from a _file, one per line.
	SigningKeys []string `koanf:"signing_keys" secret:"true"`
}

// Telegram configures the Telegram adapter; it is enabled when Token is set.
type Telegram struct {
	Token string `koanf:"token" secret:"true"`
	// APIURL overrides https://api.telegram.org (local Bot API servers, tests).
	APIURL string `koanf:"api_url"`
	// Mode is TelegramPolling or TelegramWebhook.
	Mode string `koanf:"mode"`
	// WebhookURL is the public URL Telegram posts updates to; required in webhook mode.
	WebhookURL string `koanf:"webhook_url"`
	// WebhookSecret is Telegram's secret_token, checked on every webhook request; required in
	// webhook mode. Only A-Z, a-z, 0-9, _ and - are allowed, at most 256 characters.
	WebhookSecret string `koanf:"webhook_secret" secret:"true"`
	// Pacing keeps sends within Telegram's rate limits (per chat and global).
	Pacing bool `koanf:"pacing"`
	// Drafts streams answers in private chats as native drafts (sendMessageDraft, Bot API 9.3)
	// ending in one message; groups keep the placeholder and its edits.
	Drafts bool `koanf:"drafts"`
}

// Slack configures the Slack adapter; it is enabled when BotToken or ClientID is set.
type Slack struct {
	BotToken string `koanf:"bot_token" secret:"true"`
	// ClientID, ClientSecret and RedirectURL enable installs in many workspaces (OAuth v2):
	// each workspace's bot token is kept encrypted in Redis.
	ClientID     string `koanf:"client_id"`
	ClientSecret string `koanf:"client_secret" secret:"true"`
	RedirectURL  string `koanf:"redirect_url"`
	// InstallPath and OAuthPath are where the install link and the OAuth redirect are served on
	// http.addr.
	InstallPath string `koanf:"install_path"`
	OAuthPath   string `koanf:"oauth_path"`
	// AppToken (xapp-…) opens Socket Mode connections; required in socket mode.
	AppToken string `koanf:"app_token" secret:"true"`
	// SigningSecret verifies HTTP-mode requests; required in http mode.
	SigningSecret string `koanf:"signing_secret" secret:"true"`
	// APIURL overrides https://slack.com/api/ (tests).
	APIURL string `koanf:"api_url"`
	// Mode is SlackSocket or SlackHTTP.
	Mode string `koanf:"mode"`
	// Connections is the number of Socket Mode connections held (1–10; Slack spreads events
	// over them).
	Connections int `koanf:"connections"`
	// ThreadReplies is SlackRepliesAll (messages in threads the bot is part of need no mention)
	// or SlackRepliesMention.
	ThreadReplies string `koanf:"thread_replies"`
	// ReplyInThread answers a top-level channel mention in a thread rooted at it.
	ReplyInThread bool `koanf:"reply_in_thread"`
	// Command is the slash command the app's manifest declares; its first word is a bot command.
	Command string `koanf:"command"`
	// AssistantStatus shows "is thinking…" (assistant.threads.setStatus) while a run works.
	AssistantStatus bool `koanf:"assistant_status"`
	// Streaming streams answers in threads with Slack's native streaming (chat.startStream /
	// appendStream / stopStream), the run's subagents as tasks of a plan; off, answers are
	// posted and edited.
	Streaming bool `koanf:"streaming"`
	// ReadyWindow is how recently every Socket Mode connection must have read a frame (Slack
	// pings every few seconds) for /readyz to count Slack as ready.
	ReadyWindow time.Duration `koanf:"ready_window"`
	// Pacing spaces chat.postMessage per channel to Slack's pace (about one a second after a
	// short burst).
	Pacing bool `koanf:"pacing"`
	// SuggestedPrompts are offered when a user opens the app's agent chat (or an assistant
	// thread, for apps still on assistant_view).
	SuggestedPrompts []string `koanf:"suggested_prompts"`
	// AgentView says the app uses Slack's agent view (features.agent_view, what `bot
	// slack-manifest` prints): a top-level message in the agent chat is answered in a thread
	// rooted at it, titled from the message. False for apps still on assistant_view.
	AgentView bool `koanf:"agent_view"`
	// EventsPath, InteractionsPath and CommandsPath are where HTTP mode serves the Events API,
	// interactivity and the slash command on http.addr.
	EventsPath       string `koanf:"events_path"`
	InteractionsPath string `koanf:"interactions_path"`
	CommandsPath     string `koanf:"commands_path"`
}

// Discord configures the Discord adapter; it is enabled when Token is set.
type Discord struct {
	Token string `koanf:"token" secret:"true"`
	// APIURL overrides https://discord.com (scheme and host of REST and gateway discovery).
	APIURL        string `koanf:"api_url"`
	ApplicationID string `koanf:"application_id"`
	// PublicKey (hex Ed25519) verifies HTTP interactions; not a secret.
	PublicKey string `koanf:"public_key"`
	// ReplyInThread answers a mention in a channel in a new thread started from that message
	// (default true); false answers in the channel, as a reply.
	ReplyInThread bool `koanf:"reply_in_thread"`
	// ThreadReplies says which messages of a thread the bot answers in reach it:
	// DiscordThreadAll (default, no mention needed) or DiscordThreadMention.
	ThreadReplies string `koanf:"thread_replies"`
	// MessageContent asks for the privileged message content intent (default true). Without it
	// Discord blanks the text of guild messages that do not mention the bot: the bot reads
	// mentions and DMs only, and ThreadReplies must be DiscordThreadMention.
	MessageContent bool `koanf:"message_content"`
	// DevGuild registers the slash commands in this guild only (they appear at once), instead of
	// globally; for development.
	DevGuild string `koanf:"dev_guild"`
	// ShardID and ShardCount split the bot's guilds over processes, one shard each; ShardCount
	// 0 or 1 is unsharded. Discord closes with 4011 when a bot in many guilds does not shard.
	ShardID    int `koanf:"shard_id"`
	ShardCount int `koanf:"shard_count"`
	// AutoShard runs the shards Discord recommends (instead of ShardID and ShardCount), split
	// among the processes sharing the Redis, identifying them as fast as Discord allows.
	AutoShard bool `koanf:"auto_shard"`
	// AdminPermission, when set, also gives admin rights to a guild member who holds this
	// permission (a name DiscordPermission knows, e.g. "MANAGE_GUILD"), as Discord reports it
	// with a slash command or a click; "" gives them by admins.discord only.
	AdminPermission string `koanf:"admin_permission"`
	// Pacing keeps REST requests within Discord's global limit (50 a second per bot) before
	// Discord refuses any; false leaves only the reaction to 429s (a local fake, load tests).
	Pacing bool `koanf:"pacing"`
}

// discord.thread_replies values.
const (
	DiscordThreadAll     = "all"
	DiscordThreadMention = "mention"
)

// PlatformAccess says who may talk to the bot on one platform.
type PlatformAccess struct {
	// Policy is PolicyOpen (anyone) or PolicyAllowlist (only Allow). An allowlist with an empty
	// Allow admits nobody but the platform's admins.
	Policy string `koanf:"policy"`
	// Allow lists channel_user_ids admitted under PolicyAllowlist.
	Allow []string `koanf:"allow"`
	// DM says whether direct messages are answered at all.
	DM bool `koanf:"dm"`
}

// Access holds the access policy per platform (access.<platform>.*).
type Access struct {
	Telegram PlatformAccess `koanf:"telegram"`
	Slack    PlatformAccess `koanf:"slack"`
	Discord  PlatformAccess `koanf:"discord"`
	Console  PlatformAccess `koanf:"console"`
}

// Admins lists the channel_user_ids allowed to run admin commands, per platform.
type Admins struct {
	Telegram []string `koanf:"telegram"`
	Slack    []string `koanf:"slack"`
	Discord  []string `koanf:"discord"`
	Console  []string `koanf:"console"`
}

// HTTP configures the one listener for /healthz, /readyz, /metrics and platform webhooks.
type HTTP struct {
	// Addr is host:port as net.Listen takes it (":8080").
	Addr string `koanf:"addr"`
}

// Runs configures the run queue and its workers.
type Runs struct {
	// Workers is how many conversations this process works on at once. A worker is a goroutine
	// that mostly waits on the model (seconds per answer), so the default is a few hundred: four
	// slow chats must not hold up every other chat. runs.max_pending bounds the queue behind them.
	Workers int `koanf:"workers"`
	// Followup says what a message does to a conversation that already has a run in flight:
	// FollowupQueue (wait for it) or FollowupInterrupt (cancel it and start anew).
	Followup string `koanf:"followup"`
	// MaxAttempts is how many times a run is tried before it is dead-lettered.
	MaxAttempts int `koanf:"max_attempts"`
	// OutageRetryBase is the first wait before a run that failed on a model outage (5xx, 429,
	// a timeout, a refused connection, a stream cut) is tried again; later waits are 4×, 12×,
	// 24× it, then doubling.
	OutageRetryBase time.Duration `koanf:"outage_retry_base"`
	// Lease is how long a worker owns a run without renewing it: workers renew every third of
	// it, and a dead process's runs are taken over about one lease after its last renewal.
	Lease time.Duration `koanf:"lease"`
	// MaxPerConversation caps the runs queued behind one conversation.
	MaxPerConversation int `koanf:"max_per_conversation"`
	// MaxPending caps the runs pending in the whole queue.
	MaxPending int `koanf:"max_pending"`
	// HistoryTurns is how many past turns of a thread are sent to the model.
	HistoryTurns int `koanf:"history_turns"`
	// ClarificationTTL is how long a question the bot asked waits for its answer.
	ClarificationTTL time.Duration `koanf:"clarification_ttl"`
	// MaxMessageChars is the longest incoming message accepted, in characters.
	MaxMessageChars int `koanf:"max_message_chars"`
	// PlaceholderAfter is how long a run may take before a "working" placeholder is posted; a
	// run answered sooner shows one message. 0 posts the placeholder at once. (The typing
	// signal goes out at receipt either way.)
	PlaceholderAfter time.Duration `koanf:"placeholder_after"`
	// MaxAnswerMessages is how many chat messages an answer may take; past them the rest goes as
	// a file attachment (answer.md) where the platform can take one, as more messages elsewhere.
	MaxAnswerMessages int `koanf:"max_answer_messages"`
}

// Attachments bounds what is read of the files users send with a message (core/attach): their
// text, images for a model that sees, transcripts of voice notes.
type Attachments struct {
	// Download says whether files are downloaded and read; false names each file to the model
	// (its name and size) without downloading it.
	Download bool `koanf:"download"`
	// MaxBytes is the largest file downloaded, in bytes: a larger one is not read, and the user
	// is told. At most maxAttachmentBytes.
	MaxBytes int `koanf:"max_bytes"`
	// MaxTextChars is how many characters of one text file (or one transcript) the model reads;
	// the rest is cut, and the model is told so. At most maxAttachmentTextChars.
	MaxTextChars int `koanf:"max_text_chars"`
	// MaxFiles is how many files of one message are read; the rest are named only. At most
	// maxAttachmentFiles.
	MaxFiles int `koanf:"max_files"`
}

// Defaults of attachments.*. They are core/attach's DefaultMaxBytes, DefaultMaxTextChars and
// DefaultMaxFiles, written again here because config imports no core package; a test in
// cmd/bot (attachments_config_test.go) keeps the two equal.
const (
	DefaultAttachmentMaxBytes     = 20 << 20 // 20 MiB
	DefaultAttachmentMaxTextChars = 20_000
	DefaultAttachmentMaxFiles     = 10
)

// The largest values attachments.* accept: a file is held in memory whole while it is read, and
// a text file's characters go to the model in every later turn of the thread.
const (
	maxAttachmentBytes     = 100 << 20 // 100 MiB
	maxAttachmentTextChars = 1_000_000
	maxAttachmentFiles     = 100
)

// Subagents bounds the subagents a lead agent may start.
type Subagents struct {
	// MaxDepth is how deep subagents may nest; 0 disables subagents.
	MaxDepth int `koanf:"max_depth"`
	// MaxConcurrent caps the subagents running at once under one lead.
	MaxConcurrent int `koanf:"max_concurrent"`
	// StructuredNudgeRetries is how often a subagent is reminded to return its structured
	// result before the run gives up on it.
	StructuredNudgeRetries int `koanf:"structured_nudge_retries"`
}

// Log configures the process log.
type Log struct {
	// Level is debug, info, warn or error.
	Level string `koanf:"level"`
	// Format is LogText or LogJSON.
	Format string `koanf:"format"`
}

// Allowed values of the enumerated keys.
const (
	RedisSingle   = "single"
	RedisSentinel = "sentinel"
	RedisCluster  = "cluster"

	ProviderOpenAI = "openai"
	ProviderDemo   = "demo"

	TelegramPolling = "polling"
	TelegramWebhook = "webhook"

	SlackSocket = "socket"
	// slack.thread_replies
	SlackRepliesAll     = "all"
	SlackRepliesMention = "mention"
	SlackHTTP           = "http"

	PolicyOpen      = "open"
	PolicyAllowlist = "allowlist"

	FollowupQueue     = "queue"
	FollowupInterrupt = "interrupt"

	LogText = "text"
	LogJSON = "json"
)

// Default endpoints and model.
const (
	DefaultLLMBaseURL      = "https://api.deepseek.com"
	DefaultLLMModel        = "deepseek-chat"
	DefaultTelegramAPIURL  = "https://api.telegram.org"
	DefaultSlackAPIURL     = "https://slack.com/api/"
	DefaultDiscordAPIURL   = "https://discord.com"
	DefaultRedisPrefix     = "sb:"
	DefaultHTTPAddr        = ":8080"
	DefaultWorkers         = 256
	deepSeekAPIKeyVariable = "DEEPSEEK_API_KEY"
)

// Platform names, as used in access.<platform> and admins.<platform>.
const (
	PlatformTelegram = "telegram"
	PlatformSlack    = "slack"
	PlatformDiscord  = "discord"
	PlatformConsole  = "console"
)

// Platforms lists every platform name that access.<platform> and admins.<platform> accept.
func Platforms() []string {
	return []string{PlatformTelegram, PlatformSlack, PlatformDiscord, PlatformConsole}
}

// Default returns the built-in defaults: the configuration Load yields with no file and no
// environment, except that Load also resolves llm.provider and the DEEPSEEK_API_KEY fallback.
func Default() *Config {
	open := PlatformAccess{Policy: PolicyOpen, DM: true}
	return &Config{
		Redis: Redis{Mode: RedisSingle, Prefix: DefaultRedisPrefix, ConnectTimeout: 30 * time.Second},
		LLM: LLM{
			BaseURL:    DefaultLLMBaseURL,
			Model:      DefaultLLMModel,
			Timeout:    2 * time.Minute,
			MaxRetries: 3,
		},
		Telegram: Telegram{APIURL: DefaultTelegramAPIURL, Mode: TelegramPolling, Pacing: true, Drafts: true},
		Slack: Slack{APIURL: DefaultSlackAPIURL, Mode: SlackSocket, Connections: 1, ThreadReplies: SlackRepliesAll,
			ReplyInThread: true, Command: "/bot", AssistantStatus: true, Streaming: true, Pacing: true, ReadyWindow: 45 * time.Second, SuggestedPrompts: []string{"What can you do?"}, AgentView: true,
			EventsPath: "/slack/events", InteractionsPath: "/slack/interactions", CommandsPath: "/slack/commands",
			InstallPath: "/slack/install", OAuthPath: "/slack/oauth/callback"},
		Discord: Discord{APIURL: DefaultDiscordAPIURL, ReplyInThread: true, ThreadReplies: DiscordThreadAll, MessageContent: true, Pacing: true},
		Access:  Access{Telegram: open, Slack: open, Discord: open, Console: open},
		HTTP:    HTTP{Addr: DefaultHTTPAddr},
		Runs: Runs{
			Workers:            DefaultWorkers,
			Followup:           FollowupQueue,
			MaxAttempts:        5,
			OutageRetryBase:    5 * time.Second,
			Lease:              10 * time.Second,
			MaxPerConversation: 20,
			MaxPending:         10000,
			HistoryTurns:       50,
			ClarificationTTL:   time.Hour,
			MaxMessageChars:    8000,
			PlaceholderAfter:   time.Second,
			MaxAnswerMessages:  3,
		},
		Attachments: Attachments{Download: true, MaxBytes: DefaultAttachmentMaxBytes,
			MaxTextChars: DefaultAttachmentMaxTextChars, MaxFiles: DefaultAttachmentMaxFiles},
		Subagents: Subagents{MaxDepth: 2, MaxConcurrent: 4, StructuredNudgeRetries: 1},
		Tools: Tools{Subagents: []string{ToolsInherit}, ApprovalTTL: 10 * time.Minute, CallTimeout: time.Minute,
			ConnectTimeout: 20 * time.Second, MaxResultBytes: 16 << 10},
		Log: Log{Level: "info", Format: LogText},
	}
}

// Enabled lists, in the order of Platforms, the networked platforms whose credentials are
// configured: telegram (telegram.token), slack (slack.bot_token), discord (discord.token). The
// console needs no credentials and is not listed.
func (c *Config) Enabled() []string {
	var out []string
	if c.Telegram.Token != "" {
		out = append(out, PlatformTelegram)
	}
	if c.Slack.BotToken != "" || c.Slack.ClientID != "" {
		out = append(out, PlatformSlack)
	}
	if c.Discord.Token != "" {
		out = append(out, PlatformDiscord)
	}
	return out
}

// AccessFor returns access.<platform>; ok is false for a platform name not in Platforms.
func (c *Config) AccessFor(platform string) (a PlatformAccess, ok bool) {
	switch platform {
	case PlatformTelegram:
		return c.Access.Telegram, true
	case PlatformSlack:
		return c.Access.Slack, true
	case PlatformDiscord:
		return c.Access.Discord, true
	case PlatformConsole:
		return c.Access.Console, true
	}
	return PlatformAccess{}, false
}

// AdminsFor returns admins.<platform>; nil for an unknown platform or when none are listed.
func (c *Config) AdminsFor(platform string) []string {
	switch platform {
	case PlatformTelegram:
		return c.Admins.Telegram
	case PlatformSlack:
		return c.Admins.Slack
	case PlatformDiscord:
		return c.Admins.Discord
	case PlatformConsole:
		return c.Admins.Console
	}
	return nil
}
