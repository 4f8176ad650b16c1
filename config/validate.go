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
	// Each section checks itself; the problems come out in this order.
	c.Redis.validate(v)
	c.LLM.validate(v)
	c.validateProfiles(v)
	c.Auth.validate(v, c.SharedStore())
	c.validateSecrets(v)
	c.Telegram.validate(v)
	c.Slack.validate(v)
	c.Discord.validate(v)
	// A Discord channel_user_id is the user's numeric id; a name never matches anyone.
	v.discordIDs("access.discord.allow", c.Access.Discord.Allow)
	v.discordIDs("admins.discord", c.Admins.Discord)
	c.Discord.validateAdminPermission(v)
	c.validateAccess(v)
	v.hostPort("http.addr", c.HTTP.Addr, true)
	c.Runs.validate(v)
	c.Attachments.validate(v)
	c.Subagents.validate(v)
	c.Tools.validate(v)
	c.Log.validate(v)
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

// validate checks redis.* for Validate.
func (r Redis) validate(v *validator) {
	v.oneOf("redis.mode", r.Mode, RedisSingle, RedisSentinel, RedisCluster)
	if r.URL != "" {
		// The URL may hold a password: never quote it.
		u, err := url.Parse(r.URL)
		switch {
		case err != nil:
			v.add("redis.url", "is not a valid URL")
		case u.Scheme != "redis" && u.Scheme != "rediss" && u.Scheme != "unix":
			v.add("redis.url", "scheme must be redis, rediss or unix")
		case u.Scheme != "unix" && u.Host == "":
			v.add("redis.url", "needs a host, like redis://host:6379/0")
		}
	}
	for i, a := range r.Addrs {
		v.hostPort(fmt.Sprintf("redis.addrs[%d]", i), a, false)
	}
	r.validateMode(v)
	v.positiveDuration("redis.connect_timeout", r.ConnectTimeout)
}

// validateMode checks that redis.addrs, redis.url and redis.master_name fit redis.mode.
func (r Redis) validateMode(v *validator) {
	switch r.Mode {
	case RedisSingle:
		if len(r.Addrs) > 1 {
			v.add("redis.addrs", "single mode takes at most one address")
		}
		if len(r.Addrs) > 0 && r.URL != "" {
			v.add("redis.addrs", "set redis.url or redis.addrs, not both")
		}
	case RedisSentinel:
		if len(r.Addrs) == 0 {
			v.add("redis.addrs", "sentinel mode needs the sentinels' addresses")
		}
		if r.MasterName == "" {
			v.add("redis.master_name", "required in sentinel mode")
		}
		if r.URL != "" {
			v.add("redis.url", "not used in sentinel mode; list the sentinels in redis.addrs")
		}
	case RedisCluster:
		if len(r.Addrs) == 0 && r.URL == "" {
			v.add("redis.addrs", "cluster mode needs seed addresses (or redis.url)")
		}
		if len(r.Addrs) > 0 && r.URL != "" {
			v.add("redis.addrs", "set redis.url or redis.addrs, not both")
		}
	}
}

// validate checks the top-level llm.* endpoint for Validate (validateProfiles checks
// llm.providers and llm.transcription).
func (l LLM) validate(v *validator) {
	if l.Provider != "" { // empty: Load picks one
		v.oneOf("llm.provider", l.Provider, ProviderOpenAI, ProviderDemo)
	}
	v.httpURL("llm.base_url", l.BaseURL)
	if l.Provider == ProviderOpenAI {
		if l.Model == "" {
			v.add("llm.model", "required when llm.provider is openai")
		}
		if l.APIKey == "" && isDeepSeek(l.BaseURL) {
			v.add("llm.api_key", "required for DeepSeek: set llm.api_key, BOT_LLM__API_KEY or DEEPSEEK_API_KEY")
		}
	}
	v.positiveDuration("llm.timeout", l.Timeout)
	v.atLeast("llm.max_retries", l.MaxRetries, 0)
}

// validate checks auth.* for Validate; shared says the Redis is shared (Config.SharedStore).
func (a Auth) validate(v *validator, shared bool) {
	if shared && len(a.SigningKeys) == 0 {
		v.add("auth.signing_keys", "required with a shared Redis (redis.url or redis.addrs): every process must sign "+
			"and verify the same runs; give each the same key of 32 random bytes or more, e.g. from `openssl rand -hex 32`")
	}
	for i, k := range a.SigningKeys {
		if len(k) < minSigningKeyLen {
			v.add(fmt.Sprintf("auth.signing_keys[%d]", i),
				fmt.Sprintf("must be at least %d bytes long", minSigningKeyLen))
		}
	}
}

// validateSecrets refuses a secret pasted with a space or a line break around it: the platform
// refuses it with an error that does not say why. (A _file secret is trimmed when it is read.)
func (c *Config) validateSecrets(v *validator) {
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
}

// validate checks telegram.* for Validate.
func (t Telegram) validate(v *validator) {
	if tok := strings.TrimSpace(t.Token); tok != "" && !validTelegramToken(tok) {
		v.add("telegram.token", "does not look like a bot token (digits, a colon, then letters, digits, _ and -): "+
			"copy it again from @BotFather")
	}
	v.httpURL("telegram.api_url", t.APIURL)
	v.oneOf("telegram.mode", t.Mode, TelegramPolling, TelegramWebhook)
	if t.Mode == TelegramWebhook {
		if t.WebhookURL == "" {
			v.add("telegram.webhook_url", "required in webhook mode")
		}
		if t.WebhookSecret == "" {
			v.add("telegram.webhook_secret", "required in webhook mode")
		}
	}
	if t.WebhookURL != "" {
		v.httpURL("telegram.webhook_url", t.WebhookURL)
		// Telegram's own servers post only to https on these ports; a local Bot API server
		// (telegram.api_url set) posts anywhere.
		if t.APIURL == DefaultTelegramAPIURL {
			if msg := telegramWebhookProblem(t.WebhookURL); msg != "" {
				v.add("telegram.webhook_url", msg)
			}
		}
	}
	if s := t.WebhookSecret; s != "" && !validTelegramSecret(s) {
		v.add("telegram.webhook_secret", "must be 1-256 characters of A-Z, a-z, 0-9, _ and -")
	}
}

// validate checks slack.* for Validate.
func (s Slack) validate(v *validator) {
	v.httpURL("slack.api_url", s.APIURL)
	v.oneOf("slack.mode", s.Mode, SlackSocket, SlackHTTP)
	s.validateCredentials(v)
	v.oneOf("slack.thread_replies", s.ThreadReplies, SlackRepliesAll, SlackRepliesMention)
	v.nonEmptyItems("slack.suggested_prompts", s.SuggestedPrompts)
	v.positiveDuration("slack.ready_window", s.ReadyWindow)
	if n := s.Connections; n < 1 || n > 10 {
		v.add("slack.connections", "must be 1-10 (Slack allows 10 Socket Mode connections per app)")
	}
	if cmd := s.Command; len(cmd) < 2 || cmd[0] != '/' || strings.ContainsAny(cmd, " \t\n") {
		v.add("slack.command", "must be a slash command like /bot")
	}
	s.validatePaths(v)
}

// validateCredentials checks that the tokens and secrets the mode needs come together: a bot
// token (or an OAuth client, for many workspaces) with the app token or the signing secret.
func (s Slack) validateCredentials(v *validator) {
	if s.BotToken != "" || s.ClientID != "" {
		if s.Mode == SlackSocket && s.AppToken == "" {
			v.add("slack.app_token", "required in socket mode when slack.bot_token or slack.client_id is set")
		}
		if s.Mode == SlackHTTP && s.SigningSecret == "" {
			v.add("slack.signing_secret", "required in http mode when slack.bot_token or slack.client_id is set")
		}
	} else if s.AppToken != "" || s.SigningSecret != "" {
		v.add("slack.bot_token", "required when slack.app_token or slack.signing_secret is set (or slack.client_id, to install in many workspaces)")
	}
	if s.ClientID != "" {
		if s.ClientSecret == "" {
			v.add("slack.client_secret", "required when slack.client_id is set")
		}
		if s.RedirectURL == "" {
			v.add("slack.redirect_url", "required when slack.client_id is set (the public URL of slack.oauth_path)")
		}
	} else if s.ClientSecret != "" {
		v.add("slack.client_id", "required when slack.client_secret is set")
	}
	if s.RedirectURL != "" {
		v.httpURL("slack.redirect_url", s.RedirectURL)
	}
}

// validatePaths checks that the HTTP mode's paths are paths, each a different one.
func (s Slack) validatePaths(v *validator) {
	paths := map[string]string{}
	for _, p := range [][2]string{{"slack.events_path", s.EventsPath}, {"slack.interactions_path", s.InteractionsPath},
		{"slack.commands_path", s.CommandsPath}, {"slack.install_path", s.InstallPath}, {"slack.oauth_path", s.OAuthPath}} {
		if !strings.HasPrefix(p[1], "/") {
			v.add(p[0], "must be a path starting with /")
		} else if other, dup := paths[p[1]]; dup {
			v.add(p[0], "must differ from "+other)
		}
		paths[p[1]] = p[0]
	}
}

// validate checks discord.* but discord.admin_permission for Validate.
func (d Discord) validate(v *validator) {
	v.httpURL("discord.api_url", d.APIURL)
	if pk := d.PublicKey; pk != "" {
		if b, err := hex.DecodeString(pk); err != nil || len(b) != 32 {
			v.add("discord.public_key", "must be 64 hex digits (an Ed25519 public key)")
		}
	}
	if id := d.ApplicationID; id != "" {
		if _, err := strconv.ParseUint(id, 10, 64); err != nil {
			v.add("discord.application_id", "must be a numeric snowflake id")
		}
	}
	v.oneOf("discord.thread_replies", d.ThreadReplies, DiscordThreadAll, DiscordThreadMention)
	if !d.MessageContent && d.ThreadReplies == DiscordThreadAll {
		v.add("discord.message_content", "false needs discord.thread_replies: mention — without the message content "+
			"intent, messages in a thread that do not mention the bot arrive empty")
	}
	if id := d.DevGuild; id != "" {
		if _, err := strconv.ParseUint(id, 10, 64); err != nil {
			v.add("discord.dev_guild", "must be a numeric guild id (right-click the server → Copy Server ID)")
		}
	}
	d.validateShards(v)
}

// validateShards checks discord.auto_shard, discord.shard_id and discord.shard_count together.
func (d Discord) validateShards(v *validator) {
	switch {
	case d.AutoShard && (d.ShardCount != 0 || d.ShardID != 0):
		v.add("discord.auto_shard", "takes no discord.shard_id or discord.shard_count: set one or the other")
	case d.ShardCount < 0:
		v.add("discord.shard_count", "must not be negative")
	case d.ShardCount <= 1 && d.ShardID != 0:
		v.add("discord.shard_id", "must be 0 without discord.shard_count above 1")
	case d.ShardCount > 1 && (d.ShardID < 0 || d.ShardID >= d.ShardCount):
		v.add("discord.shard_id", fmt.Sprintf("must be from 0 to %d (discord.shard_count - 1)", d.ShardCount-1))
	}
}

// validateAdminPermission checks discord.admin_permission for Validate.
func (d Discord) validateAdminPermission(v *validator) {
	if p := d.AdminPermission; p != "" {
		if _, ok := DiscordPermission(p); !ok {
			v.add("discord.admin_permission", fmt.Sprintf("must be one of %s (a Discord permission name), got %q",
				strings.Join(DiscordPermissionNames(), ", "), p))
		}
	}
}

// validateAccess checks access.* and admins.* for Validate (the Discord ids are checked with
// discord.*, before).
func (c *Config) validateAccess(v *validator) {
	for _, p := range Platforms() {
		a, _ := c.AccessFor(p)
		v.oneOf("access."+p+".policy", a.Policy, PolicyOpen, PolicyAllowlist)
		v.nonEmptyItems("access."+p+".allow", a.Allow)
		v.nonEmptyItems("admins."+p, c.AdminsFor(p))
	}
	// A Telegram channel_user_id is the user's numeric id; a @username never matches anyone.
	v.telegramIDs("access.telegram.allow", c.Access.Telegram.Allow)
	v.telegramIDs("admins.telegram", c.Admins.Telegram)
}

// validate checks runs.* for Validate.
func (r Runs) validate(v *validator) {
	v.atLeast("runs.workers", r.Workers, 1)
	v.oneOf("runs.followup", r.Followup, FollowupQueue, FollowupInterrupt)
	v.atLeast("runs.max_attempts", r.MaxAttempts, 1)
	v.positiveDuration("runs.outage_retry_base", r.OutageRetryBase)
	v.atLeast("runs.max_answer_messages", r.MaxAnswerMessages, 1)
	v.positiveDuration("runs.lease", r.Lease)
	v.atLeast("runs.max_per_conversation", r.MaxPerConversation, 1)
	v.atLeast("runs.max_pending", r.MaxPending, 1)
	v.atLeast("runs.history_turns", r.HistoryTurns, 1)
	v.positiveDuration("runs.clarification_ttl", r.ClarificationTTL)
	v.atLeast("runs.max_message_chars", r.MaxMessageChars, 1)
	if r.PlaceholderAfter < 0 {
		v.add("runs.placeholder_after", "must not be negative")
	}
}

// validate checks attachments.* for Validate.
func (a Attachments) validate(v *validator) {
	v.inRange("attachments.max_bytes", a.MaxBytes, 1, maxAttachmentBytes, " bytes (100 MiB)")
	v.inRange("attachments.max_text_chars", a.MaxTextChars, 1, maxAttachmentTextChars, " characters")
	v.inRange("attachments.max_files", a.MaxFiles, 1, maxAttachmentFiles, " files")
}

// validate checks subagents.* for Validate.
func (s Subagents) validate(v *validator) {
	v.atLeast("subagents.max_depth", s.MaxDepth, 0)
	v.atLeast("subagents.max_concurrent", s.MaxConcurrent, 1)
	v.atLeast("subagents.structured_nudge_retries", s.StructuredNudgeRetries, 0)
}

// validate checks log.* for Validate.
func (l Log) validate(v *validator) {
	v.oneOf("log.level", l.Level, "debug", "info", "warn", "error")
	v.oneOf("log.format", l.Format, LogText, LogJSON)
}

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
