package config

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// minSigningKeyLen is the shortest run-envelope signing key accepted, in bytes.
const minSigningKeyLen = 16

// Validate checks values and their combinations and returns every problem at once as a
// *ValidationError, or nil. It does not look at the environment or the file system.
func (c *Config) Validate() error {
	v := &validator{}

	// redis
	v.oneOf("redis.mode", c.Redis.Mode, RedisSingle, RedisSentinel, RedisCluster)
	if c.Redis.URL != "" {
		// The URL may hold a password: never quote it.
		u, err := url.Parse(c.Redis.URL)
		switch {
		case err != nil:
			v.add("redis.url", "is not a valid URL")
		case u.Scheme != "redis" && u.Scheme != "rediss" && u.Scheme != "unix":
			v.add("redis.url", "scheme must be redis, rediss or unix")
		case u.Scheme != "unix" && u.Host == "":
			v.add("redis.url", "needs a host, like redis://host:6379/0")
		}
	}
	for i, a := range c.Redis.Addrs {
		v.hostPort(fmt.Sprintf("redis.addrs[%d]", i), a, false)
	}
	switch c.Redis.Mode {
	case RedisSingle:
		if len(c.Redis.Addrs) > 1 {
			v.add("redis.addrs", "single mode takes at most one address")
		}
		if len(c.Redis.Addrs) > 0 && c.Redis.URL != "" {
			v.add("redis.addrs", "set redis.url or redis.addrs, not both")
		}
	case RedisSentinel:
		if len(c.Redis.Addrs) == 0 {
			v.add("redis.addrs", "sentinel mode needs the sentinels' addresses")
		}
		if c.Redis.MasterName == "" {
			v.add("redis.master_name", "required in sentinel mode")
		}
		if c.Redis.URL != "" {
			v.add("redis.url", "not used in sentinel mode; list the sentinels in redis.addrs")
		}
	case RedisCluster:
		if len(c.Redis.Addrs) == 0 && c.Redis.URL == "" {
			v.add("redis.addrs", "cluster mode needs seed addresses (or redis.url)")
		}
		if len(c.Redis.Addrs) > 0 && c.Redis.URL != "" {
			v.add("redis.addrs", "set redis.url or redis.addrs, not both")
		}
	}

	v.positiveDuration("redis.connect_timeout", c.Redis.ConnectTimeout)

	// llm
	if c.LLM.Provider != "" { // empty: Load picks one
		v.oneOf("llm.provider", c.LLM.Provider, ProviderOpenAI, ProviderDemo)
	}
	v.httpURL("llm.base_url", c.LLM.BaseURL)
	if c.LLM.Provider == ProviderOpenAI {
		if c.LLM.Model == "" {
			v.add("llm.model", "required when llm.provider is openai")
		}
		if c.LLM.APIKey == "" && isDeepSeek(c.LLM.BaseURL) {
			v.add("llm.api_key", "required for DeepSeek: set llm.api_key, BOT_LLM__API_KEY or DEEPSEEK_API_KEY")
		}
	}
	v.positiveDuration("llm.timeout", c.LLM.Timeout)
	v.atLeast("llm.max_retries", c.LLM.MaxRetries, 0)
	v.validateProfiles(c)

	// auth
	if c.SharedStore() && len(c.Auth.SigningKeys) == 0 {
		v.add("auth.signing_keys", "required with a shared Redis (redis.url or redis.addrs): every process must sign "+
			"and verify the same runs; give each the same key of 32 random bytes or more, e.g. from `openssl rand -hex 32`")
	}
	for i, k := range c.Auth.SigningKeys {
		if len(k) < minSigningKeyLen {
			v.add(fmt.Sprintf("auth.signing_keys[%d]", i),
				fmt.Sprintf("must be at least %d bytes long", minSigningKeyLen))
		}
	}

	// secrets: a value pasted with a space or a line break around it is refused by the platform
	// with an error that does not say why. (A _file secret is trimmed when it is read.)
	for _, s := range []struct{ key, val string }{
		{"telegram.token", c.Telegram.Token}, {"telegram.webhook_secret", c.Telegram.WebhookSecret},
		{"slack.bot_token", c.Slack.BotToken}, {"slack.app_token", c.Slack.AppToken},
		{"slack.signing_secret", c.Slack.SigningSecret}, {"discord.token", c.Discord.Token},
		{"llm.api_key", c.LLM.APIKey}, {"redis.password", c.Redis.Password},
	} {
		if s.val != strings.TrimSpace(s.val) {
			v.add(s.key, "has spaces or line breaks around it: remove them")
		}
	}

	// telegram
	if t := strings.TrimSpace(c.Telegram.Token); t != "" && !validTelegramToken(t) {
		v.add("telegram.token", "does not look like a bot token (digits, a colon, then letters, digits, _ and -): "+
			"copy it again from @BotFather")
	}
	v.httpURL("telegram.api_url", c.Telegram.APIURL)
	v.oneOf("telegram.mode", c.Telegram.Mode, TelegramPolling, TelegramWebhook)
	if c.Telegram.Mode == TelegramWebhook {
		if c.Telegram.WebhookURL == "" {
			v.add("telegram.webhook_url", "required in webhook mode")
		}
		if c.Telegram.WebhookSecret == "" {
			v.add("telegram.webhook_secret", "required in webhook mode")
		}
	}
	if c.Telegram.WebhookURL != "" {
		v.httpURL("telegram.webhook_url", c.Telegram.WebhookURL)
		// Telegram's own servers post only to https on these ports; a local Bot API server
		// (telegram.api_url set) posts anywhere.
		if c.Telegram.APIURL == DefaultTelegramAPIURL {
			if msg := telegramWebhookProblem(c.Telegram.WebhookURL); msg != "" {
				v.add("telegram.webhook_url", msg)
			}
		}
	}
	if s := c.Telegram.WebhookSecret; s != "" && !validTelegramSecret(s) {
		v.add("telegram.webhook_secret", "must be 1-256 characters of A-Z, a-z, 0-9, _ and -")
	}

	// slack
	v.httpURL("slack.api_url", c.Slack.APIURL)
	v.oneOf("slack.mode", c.Slack.Mode, SlackSocket, SlackHTTP)
	if c.Slack.BotToken != "" || c.Slack.ClientID != "" {
		if c.Slack.Mode == SlackSocket && c.Slack.AppToken == "" {
			v.add("slack.app_token", "required in socket mode when slack.bot_token or slack.client_id is set")
		}
		if c.Slack.Mode == SlackHTTP && c.Slack.SigningSecret == "" {
			v.add("slack.signing_secret", "required in http mode when slack.bot_token or slack.client_id is set")
		}
	} else if c.Slack.AppToken != "" || c.Slack.SigningSecret != "" {
		v.add("slack.bot_token", "required when slack.app_token or slack.signing_secret is set (or slack.client_id, to install in many workspaces)")
	}
	if c.Slack.ClientID != "" {
		if c.Slack.ClientSecret == "" {
			v.add("slack.client_secret", "required when slack.client_id is set")
		}
		if c.Slack.RedirectURL == "" {
			v.add("slack.redirect_url", "required when slack.client_id is set (the public URL of slack.oauth_path)")
		}
	} else if c.Slack.ClientSecret != "" {
		v.add("slack.client_id", "required when slack.client_secret is set")
	}
	if c.Slack.RedirectURL != "" {
		v.httpURL("slack.redirect_url", c.Slack.RedirectURL)
	}
	v.oneOf("slack.thread_replies", c.Slack.ThreadReplies, SlackRepliesAll, SlackRepliesMention)
	v.nonEmptyItems("slack.suggested_prompts", c.Slack.SuggestedPrompts)
	v.positiveDuration("slack.ready_window", c.Slack.ReadyWindow)
	if n := c.Slack.Connections; n < 1 || n > 10 {
		v.add("slack.connections", "must be 1-10 (Slack allows 10 Socket Mode connections per app)")
	}
	if cmd := c.Slack.Command; len(cmd) < 2 || cmd[0] != '/' || strings.ContainsAny(cmd, " \t\n") {
		v.add("slack.command", "must be a slash command like /bot")
	}
	paths := map[string]string{}
	for _, p := range [][2]string{{"slack.events_path", c.Slack.EventsPath}, {"slack.interactions_path", c.Slack.InteractionsPath},
		{"slack.commands_path", c.Slack.CommandsPath}, {"slack.install_path", c.Slack.InstallPath}, {"slack.oauth_path", c.Slack.OAuthPath}} {
		if !strings.HasPrefix(p[1], "/") {
			v.add(p[0], "must be a path starting with /")
		} else if other, dup := paths[p[1]]; dup {
			v.add(p[0], "must differ from "+other)
		}
		paths[p[1]] = p[0]
	}

	// discord
	v.httpURL("discord.api_url", c.Discord.APIURL)
	if pk := c.Discord.PublicKey; pk != "" {
		if b, err := hex.DecodeString(pk); err != nil || len(b) != 32 {
			v.add("discord.public_key", "must be 64 hex digits (an Ed25519 public key)")
		}
	}
	if id := c.Discord.ApplicationID; id != "" {
		if _, err := strconv.ParseUint(id, 10, 64); err != nil {
			v.add("discord.application_id", "must be a numeric snowflake id")
		}
	}
	v.oneOf("discord.thread_replies", c.Discord.ThreadReplies, DiscordThreadAll, DiscordThreadMention)
	if !c.Discord.MessageContent && c.Discord.ThreadReplies == DiscordThreadAll {
		v.add("discord.message_content", "false needs discord.thread_replies: mention — without the message content "+
			"intent, messages in a thread that do not mention the bot arrive empty")
	}
	if id := c.Discord.DevGuild; id != "" {
		if _, err := strconv.ParseUint(id, 10, 64); err != nil {
			v.add("discord.dev_guild", "must be a numeric guild id (right-click the server → Copy Server ID)")
		}
	}
	switch d := c.Discord; {
	case d.AutoShard && (d.ShardCount != 0 || d.ShardID != 0):
		v.add("discord.auto_shard", "takes no discord.shard_id or discord.shard_count: set one or the other")
	case d.ShardCount < 0:
		v.add("discord.shard_count", "must not be negative")
	case d.ShardCount <= 1 && d.ShardID != 0:
		v.add("discord.shard_id", "must be 0 without discord.shard_count above 1")
	case d.ShardCount > 1 && (d.ShardID < 0 || d.ShardID >= d.ShardCount):
		v.add("discord.shard_id", fmt.Sprintf("must be from 0 to %d (discord.shard_count - 1)", d.ShardCount-1))
	}
	// A Discord channel_user_id is the user's numeric id; a name never matches anyone.
	v.discordIDs("access.discord.allow", c.Access.Discord.Allow)
	v.discordIDs("admins.discord", c.Admins.Discord)
	if p := c.Discord.AdminPermission; p != "" {
		if _, ok := DiscordPermission(p); !ok {
			v.add("discord.admin_permission", fmt.Sprintf("must be one of %s (a Discord permission name), got %q",
				strings.Join(DiscordPermissionNames(), ", "), p))
		}
	}

	// access, admins
	for _, p := range Platforms() {
		a, _ := c.AccessFor(p)
		v.oneOf("access."+p+".policy", a.Policy, PolicyOpen, PolicyAllowlist)
		v.nonEmptyItems("access."+p+".allow", a.Allow)
		v.nonEmptyItems("admins."+p, c.AdminsFor(p))
	}
	// A Telegram channel_user_id is the user's numeric id; a @username never matches anyone.
	v.telegramIDs("access.telegram.allow", c.Access.Telegram.Allow)
	v.telegramIDs("admins.telegram", c.Admins.Telegram)

	// http
	v.hostPort("http.addr", c.HTTP.Addr, true)

	// runs
	v.atLeast("runs.workers", c.Runs.Workers, 1)
	v.oneOf("runs.followup", c.Runs.Followup, FollowupQueue, FollowupInterrupt)
	v.atLeast("runs.max_attempts", c.Runs.MaxAttempts, 1)
	v.positiveDuration("runs.outage_retry_base", c.Runs.OutageRetryBase)
	v.atLeast("runs.max_answer_messages", c.Runs.MaxAnswerMessages, 1)
	v.positiveDuration("runs.lease", c.Runs.Lease)
	v.atLeast("runs.max_per_conversation", c.Runs.MaxPerConversation, 1)
	v.atLeast("runs.max_pending", c.Runs.MaxPending, 1)
	v.atLeast("runs.history_turns", c.Runs.HistoryTurns, 1)
	v.positiveDuration("runs.clarification_ttl", c.Runs.ClarificationTTL)
	v.atLeast("runs.max_message_chars", c.Runs.MaxMessageChars, 1)
	if c.Runs.PlaceholderAfter < 0 {
		v.add("runs.placeholder_after", "must not be negative")
	}

	// attachments
	v.inRange("attachments.max_bytes", c.Attachments.MaxBytes, 1, maxAttachmentBytes, " bytes (100 MiB)")
	v.inRange("attachments.max_text_chars", c.Attachments.MaxTextChars, 1, maxAttachmentTextChars, " characters")
	v.inRange("attachments.max_files", c.Attachments.MaxFiles, 1, maxAttachmentFiles, " files")

	// subagents
	v.atLeast("subagents.max_depth", c.Subagents.MaxDepth, 0)
	v.atLeast("subagents.max_concurrent", c.Subagents.MaxConcurrent, 1)
	v.atLeast("subagents.structured_nudge_retries", c.Subagents.StructuredNudgeRetries, 0)
	v.validateTools(c.Tools)

	// log
	v.oneOf("log.level", c.Log.Level, "debug", "info", "warn", "error")
	v.oneOf("log.format", c.Log.Format, LogText, LogJSON)

	return v.err()
}

// ValidateRun is Validate plus what `bot run` needs beyond it: at least one platform to serve.
// `bot check-config` reports these problems too, so that it passes exactly what `bot run`
// accepts.
func (c *Config) ValidateRun() error {
	v := &validator{}
	var ve *ValidationError
	if err := c.Validate(); errors.As(err, &ve) {
		v.problems = append(v.problems, ve.Problems...)
	}
	if len(c.Enabled()) == 0 {
		v.add("telegram.token", "no platform is configured: set telegram.token (docs/telegram.md), "+
			"slack.bot_token (docs/slack.md) or discord.token (docs/discord.md), "+
			"or try the bot in this terminal with `bot chat`")
	}
	return v.err()
}

// SharedStore reports whether state lives in a Redis shared with other processes (redis.url or
// redis.addrs), rather than in the store embedded in this process.
func (c *Config) SharedStore() bool { return c.Redis.URL != "" || len(c.Redis.Addrs) > 0 }

// validTelegramToken reports whether t has a bot token's shape: the bot's id, a colon, the secret.
func validTelegramToken(t string) bool {
	id, secret, ok := strings.Cut(t, ":")
	if !ok || id == "" || secret == "" {
		return false
	}
	for _, r := range id {
		if r < '0' || r > '9' {
			return false
		}
	}
	return validTelegramSecret(secret)
}

// telegramWebhookProblem says why Telegram's servers would refuse to post to raw, or "".
func telegramWebhookProblem(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "" // httpURL reports it
	}
	if u.Scheme != "https" {
		return "Telegram posts only to https:// URLs"
	}
	switch u.Port() {
	case "", "443", "80", "88", "8443":
		return ""
	}
	return fmt.Sprintf("Telegram posts only to ports 443, 80, 88 and 8443, not %s", u.Port())
}

func validTelegramSecret(s string) bool {
	if len(s) > 256 {
		return false
	}
	for _, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-'
		if !ok {
			return false
		}
	}
	return true
}
