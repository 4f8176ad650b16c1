package config

import (
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Problem is one thing wrong with the configuration.
type Problem struct {
	// Key is the key path, like "runs.workers" or "auth.signing_keys[1]".
	Key string
	// Message says what is wrong, for an operator; it never contains a secret's value.
	Message string
	// Source, when known, says where the value came from: the config file's path or
	// "environment variable BOT_…". Validate leaves it empty: by then the layers are merged.
	Source string
}

func (p Problem) String() string {
	s := p.Message
	if p.Key != "" {
		s = p.Key + ": " + s
	}
	if p.Source != "" {
		s += " (" + p.Source + ")"
	}
	return s
}

// ValidationError lists every problem Load or Validate found. Use errors.As to get at it.
type ValidationError struct {
	Problems []Problem
}

func (e *ValidationError) Error() string {
	switch len(e.Problems) {
	case 0:
		return "config: invalid"
	case 1:
		return "config: " + e.Problems[0].String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "config: %d problems:", len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}

// Has reports whether some problem concerns key (or an item of it, like key[2]).
func (e *ValidationError) Has(key string) bool {
	for _, p := range e.Problems {
		if p.Key == key || strings.HasPrefix(p.Key, key+"[") {
			return true
		}
	}
	return false
}

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

	// auth
	for i, k := range c.Auth.SigningKeys {
		if len(k) < minSigningKeyLen {
			v.add(fmt.Sprintf("auth.signing_keys[%d]", i),
				fmt.Sprintf("must be at least %d bytes long", minSigningKeyLen))
		}
	}

	// telegram
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
	}
	if s := c.Telegram.WebhookSecret; s != "" && !validTelegramSecret(s) {
		v.add("telegram.webhook_secret", "must be 1-256 characters of A-Z, a-z, 0-9, _ and -")
	}

	// slack
	v.httpURL("slack.api_url", c.Slack.APIURL)
	v.oneOf("slack.mode", c.Slack.Mode, SlackSocket, SlackHTTP)
	if c.Slack.BotToken != "" {
		if c.Slack.Mode == SlackSocket && c.Slack.AppToken == "" {
			v.add("slack.app_token", "required in socket mode when slack.bot_token is set")
		}
		if c.Slack.Mode == SlackHTTP && c.Slack.SigningSecret == "" {
			v.add("slack.signing_secret", "required in http mode when slack.bot_token is set")
		}
	} else if c.Slack.AppToken != "" || c.Slack.SigningSecret != "" {
		v.add("slack.bot_token", "required when slack.app_token or slack.signing_secret is set")
	}
	v.oneOf("slack.thread_replies", c.Slack.ThreadReplies, SlackRepliesAll, SlackRepliesMention)
	if n := c.Slack.Connections; n < 1 || n > 10 {
		v.add("slack.connections", "must be 1-10 (Slack allows 10 Socket Mode connections per app)")
	}
	if cmd := c.Slack.Command; len(cmd) < 2 || cmd[0] != '/' || strings.ContainsAny(cmd, " \t\n") {
		v.add("slack.command", "must be a slash command like /bot")
	}
	paths := map[string]string{}
	for _, p := range [][2]string{{"slack.events_path", c.Slack.EventsPath}, {"slack.interactions_path", c.Slack.InteractionsPath}, {"slack.commands_path", c.Slack.CommandsPath}} {
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

	// access, admins
	for _, p := range Platforms() {
		a, _ := c.AccessFor(p)
		v.oneOf("access."+p+".policy", a.Policy, PolicyOpen, PolicyAllowlist)
		v.nonEmptyItems("access."+p+".allow", a.Allow)
		v.nonEmptyItems("admins."+p, c.AdminsFor(p))
	}

	// http
	v.hostPort("http.addr", c.HTTP.Addr, true)

	// runs
	v.atLeast("runs.workers", c.Runs.Workers, 1)
	v.oneOf("runs.followup", c.Runs.Followup, FollowupQueue, FollowupInterrupt)
	v.atLeast("runs.max_attempts", c.Runs.MaxAttempts, 1)
	v.positiveDuration("runs.lease", c.Runs.Lease)
	v.atLeast("runs.max_per_conversation", c.Runs.MaxPerConversation, 1)
	v.atLeast("runs.max_pending", c.Runs.MaxPending, 1)
	v.atLeast("runs.history_turns", c.Runs.HistoryTurns, 1)
	v.positiveDuration("runs.clarification_ttl", c.Runs.ClarificationTTL)
	v.atLeast("runs.max_message_chars", c.Runs.MaxMessageChars, 1)
	if c.Runs.PlaceholderAfter < 0 {
		v.add("runs.placeholder_after", "must not be negative")
	}

	// subagents
	v.atLeast("subagents.max_depth", c.Subagents.MaxDepth, 0)
	v.atLeast("subagents.max_concurrent", c.Subagents.MaxConcurrent, 1)
	v.atLeast("subagents.structured_nudge_retries", c.Subagents.StructuredNudgeRetries, 0)

	// log
	v.oneOf("log.level", c.Log.Level, "debug", "info", "warn", "error")
	v.oneOf("log.format", c.Log.Format, LogText, LogJSON)

	if len(v.problems) == 0 {
		return nil
	}
	return &ValidationError{Problems: v.problems}
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

// validator collects problems. Its checks are only ever given non-secret values to quote.
type validator struct {
	problems []Problem
}

func (v *validator) add(key, msg string) {
	v.problems = append(v.problems, Problem{Key: key, Message: msg})
}

func (v *validator) oneOf(key, val string, allowed ...string) {
	for _, a := range allowed {
		if val == a {
			return
		}
	}
	v.add(key, fmt.Sprintf("must be one of %s, got %q", strings.Join(allowed, ", "), val))
}

func (v *validator) atLeast(key string, n, lowest int) {
	if n < lowest {
		v.add(key, fmt.Sprintf("must be at least %d, got %d", lowest, n))
	}
}

func (v *validator) positiveDuration(key string, d time.Duration) {
	if d <= 0 {
		v.add(key, fmt.Sprintf("must be a positive duration, got %s", d))
	}
}

// httpURL requires an absolute http(s) URL. The value is not quoted: it may carry user
// information.
func (v *validator) httpURL(key, raw string) {
	if raw == "" {
		v.add(key, "required")
		return
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		v.add(key, "must be an absolute http or https URL")
	}
}

func (v *validator) hostPort(key, addr string, emptyHostOK bool) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		v.add(key, fmt.Sprintf("must be host:port, got %q", addr))
		return
	}
	if host == "" && !emptyHostOK {
		v.add(key, fmt.Sprintf("needs a host, got %q", addr))
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || (n == 0 && !emptyHostOK) {
		v.add(key, fmt.Sprintf("needs a port number, got %q", addr))
	}
}

func (v *validator) nonEmptyItems(key string, items []string) {
	for i, s := range items {
		if strings.TrimSpace(s) == "" {
			v.add(fmt.Sprintf("%s[%d]", key, i), "must not be empty")
		}
	}
}
