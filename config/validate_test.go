package config_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/config"
)

func TestValidateAcceptsDefaults(t *testing.T) {
	if err := config.Default().Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v", err)
	}
}

// TestValidateRejectsBadValues: each change to a valid configuration is reported at its key.
func TestValidateRejectsBadValues(t *testing.T) {
	tests := []struct {
		name   string
		change func(c *config.Config)
		want   []string // keys with a problem
	}{
		{"bad redis mode", func(c *config.Config) { c.Redis.Mode = "ring" }, []string{"redis.mode"}},
		{"redis url scheme", func(c *config.Config) { c.Redis.URL = "http://h:1" }, []string{"redis.url"}},
		{"redis url without host", func(c *config.Config) { c.Redis.URL = "redis://" }, []string{"redis.url"}},
		{"redis url does not parse", func(c *config.Config) { c.Redis.URL = "redis://h:port x" }, []string{"redis.url"}},
		{"single mode, two addrs", func(c *config.Config) { c.Redis.Addrs = []string{"a:1", "b:2"} }, []string{"redis.addrs"}},
		{"single mode, url and addr", func(c *config.Config) {
			c.Redis.URL, c.Redis.Addrs = "redis://h:1", []string{"a:1"}
		}, []string{"redis.addrs"}},
		{"bad addr", func(c *config.Config) { c.Redis.Addrs = []string{"nohost"} }, []string{"redis.addrs[0]"}},
		{"sentinel needs addrs and master", func(c *config.Config) { c.Redis.Mode = "sentinel" },
			[]string{"redis.addrs", "redis.master_name"}},
		{"sentinel takes no url", func(c *config.Config) {
			c.Redis.Mode, c.Redis.Addrs, c.Redis.MasterName, c.Redis.URL = "sentinel", []string{"s:26379"}, "m", "redis://h:1"
		}, []string{"redis.url"}},
		{"cluster needs seeds", func(c *config.Config) { c.Redis.Mode = "cluster" }, []string{"redis.addrs"}},
		{"bad provider", func(c *config.Config) { c.LLM.Provider = "anthropic" }, []string{"llm.provider"}},
		{"openai needs a model", func(c *config.Config) {
			c.LLM.Provider, c.LLM.APIKey, c.LLM.Model = "openai", "k", ""
		}, []string{"llm.model"}},
		{"deepseek needs a key", func(c *config.Config) { c.LLM.Provider = "openai" }, []string{"llm.api_key"}},
		{"base url not a URL", func(c *config.Config) { c.LLM.BaseURL = "api.deepseek.com" }, []string{"llm.base_url"}},
		{"zero timeout", func(c *config.Config) { c.LLM.Timeout = 0 }, []string{"llm.timeout"}},
		{"negative retries", func(c *config.Config) { c.LLM.MaxRetries = -1 }, []string{"llm.max_retries"}},
		{"short signing key", func(c *config.Config) {
			c.Auth.SigningKeys = []string{"long-enough-signing-key", "short"}
		}, []string{"auth.signing_keys[1]"}},
		{"bad telegram mode", func(c *config.Config) { c.Telegram.Mode = "push" }, []string{"telegram.mode"}},
		{"webhook needs url and secret", func(c *config.Config) { c.Telegram.Mode = "webhook" },
			[]string{"telegram.webhook_url", "telegram.webhook_secret"}},
		{"webhook secret charset", func(c *config.Config) {
			c.Telegram.Mode, c.Telegram.WebhookURL, c.Telegram.WebhookSecret = "webhook", "https://x/tg", "no spaces!"
		}, []string{"telegram.webhook_secret"}},
		{"telegram api url", func(c *config.Config) { c.Telegram.APIURL = "" }, []string{"telegram.api_url"}},
		{"bad slack mode", func(c *config.Config) { c.Slack.Mode = "rtm" }, []string{"slack.mode"}},
		{"socket mode needs app token", func(c *config.Config) { c.Slack.BotToken = "xoxb" }, []string{"slack.app_token"}},
		{"http mode needs signing secret", func(c *config.Config) { c.Slack.BotToken, c.Slack.Mode = "xoxb", "http" },
			[]string{"slack.signing_secret"}},
		{"app token without bot token", func(c *config.Config) { c.Slack.AppToken = "xapp" }, []string{"slack.bot_token"}},
		{"slack client id without secret and redirect", func(c *config.Config) { c.Slack.ClientID, c.Slack.AppToken = "1.2", "xapp" },
			[]string{"slack.client_secret", "slack.redirect_url"}},
		{"slack client secret without id", func(c *config.Config) { c.Slack.ClientSecret = "s" }, []string{"slack.client_id"}},
		{"slack client id in socket mode needs the app token", func(c *config.Config) {
			c.Slack.ClientID, c.Slack.ClientSecret, c.Slack.RedirectURL = "1.2", "s", "https://x.example/cb"
		}, []string{"slack.app_token"}},
		{"slack redirect url not a url", func(c *config.Config) {
			c.Slack.ClientID, c.Slack.ClientSecret, c.Slack.RedirectURL, c.Slack.AppToken = "1.2", "s", "nope", "xapp"
		}, []string{"slack.redirect_url"}},
		{"slack oauth path clashes", func(c *config.Config) { c.Slack.OAuthPath = c.Slack.InstallPath }, []string{"slack.oauth_path"}},
		{"bad slack thread replies", func(c *config.Config) { c.Slack.ThreadReplies = "some" }, []string{"slack.thread_replies"}},
		{"too many slack connections", func(c *config.Config) { c.Slack.Connections = 11 }, []string{"slack.connections"}},
		{"no slack connections", func(c *config.Config) { c.Slack.Connections = 0 }, []string{"slack.connections"}},
		{"slack command without slash", func(c *config.Config) { c.Slack.Command = "bot" }, []string{"slack.command"}},
		{"slack command with space", func(c *config.Config) { c.Slack.Command = "/my bot" }, []string{"slack.command"}},
		{"slack paths clash", func(c *config.Config) { c.Slack.CommandsPath = c.Slack.EventsPath }, []string{"slack.commands_path"}},
		{"slack path not a path", func(c *config.Config) { c.Slack.EventsPath = "events" }, []string{"slack.events_path"}},
		{"slack http mode without listener", func(c *config.Config) {
			c.Slack.BotToken, c.Slack.SigningSecret, c.Slack.Mode, c.HTTP.Addr = "xoxb", "s", "http", ""
		}, []string{"http.addr"}},
		{"discord public key", func(c *config.Config) { c.Discord.PublicKey = "abc" }, []string{"discord.public_key"}},
		{"discord application id", func(c *config.Config) { c.Discord.ApplicationID = "app" }, []string{"discord.application_id"}},
		{"discord api url", func(c *config.Config) { c.Discord.APIURL = "ftp://discord.com" }, []string{"discord.api_url"}},
		{"discord thread replies", func(c *config.Config) { c.Discord.ThreadReplies = "some" }, []string{"discord.thread_replies"}},
		{"discord without message content reading every thread message", func(c *config.Config) { c.Discord.MessageContent = false }, []string{"discord.message_content"}},
		{"discord dev guild", func(c *config.Config) { c.Discord.DevGuild = "my server" }, []string{"discord.dev_guild"}},
		{"discord shard id out of range", func(c *config.Config) { c.Discord.ShardID, c.Discord.ShardCount = 2, 2 }, []string{"discord.shard_id"}},
		{"discord shard id without a count", func(c *config.Config) { c.Discord.ShardID = 1 }, []string{"discord.shard_id"}},
		{"discord negative shard count", func(c *config.Config) { c.Discord.ShardCount = -1 }, []string{"discord.shard_count"}},
		{"discord auto shard with a count", func(c *config.Config) { c.Discord.AutoShard, c.Discord.ShardCount = true, 2 }, []string{"discord.auto_shard"}},
		{"discord allow by name", func(c *config.Config) { c.Access.Discord.Allow = []string{"123", "alice"} }, []string{"access.discord.allow[1]"}},
		{"discord admin by name", func(c *config.Config) { c.Admins.Discord = []string{"@bob"} }, []string{"admins.discord[0]"}},
		{"discord admin permission unknown", func(c *config.Config) { c.Discord.AdminPermission = "SEND_MESSAGES" }, []string{"discord.admin_permission"}},
		{"bad policy", func(c *config.Config) { c.Access.Discord.Policy = "closed" }, []string{"access.discord.policy"}},
		{"empty allow entry", func(c *config.Config) { c.Access.Slack.Allow = []string{"U1", " "} }, []string{"access.slack.allow[1]"}},
		{"empty admin entry", func(c *config.Config) { c.Admins.Console = []string{""} }, []string{"admins.console[0]"}},
		{"http addr", func(c *config.Config) { c.HTTP.Addr = "8080" }, []string{"http.addr"}},
		{"http port", func(c *config.Config) { c.HTTP.Addr = ":http" }, []string{"http.addr"}},
		{"zero workers", func(c *config.Config) { c.Runs.Workers = 0 }, []string{"runs.workers"}},
		{"bad followup", func(c *config.Config) { c.Runs.Followup = "drop" }, []string{"runs.followup"}},
		{"negative numbers", func(c *config.Config) {
			c.Runs.MaxAttempts, c.Runs.MaxPerConversation, c.Runs.MaxPending = -1, -1, -1
			c.Runs.HistoryTurns, c.Runs.MaxMessageChars = -1, -1
			c.Subagents.MaxDepth, c.Subagents.MaxConcurrent, c.Subagents.StructuredNudgeRetries = -1, -1, -1
		}, []string{"runs.max_attempts", "runs.max_per_conversation", "runs.max_pending", "runs.history_turns",
			"runs.max_message_chars", "subagents.max_depth", "subagents.max_concurrent",
			"subagents.structured_nudge_retries"}},
		{"negative durations", func(c *config.Config) {
			c.Runs.Lease, c.Runs.ClarificationTTL = -time.Second, 0
		}, []string{"runs.lease", "runs.clarification_ttl"}},
		{"bad log level and format", func(c *config.Config) { c.Log.Level, c.Log.Format = "trace", "xml" },
			[]string{"log.level", "log.format"}},
		{"shared redis without signing keys", func(c *config.Config) {
			c.Redis.URL, c.Auth.SigningKeys = "redis://h:6379/0", nil
		}, []string{"auth.signing_keys"}},
		{"shared redis by addrs without signing keys", func(c *config.Config) {
			c.Redis.Mode, c.Redis.Addrs, c.Auth.SigningKeys = "cluster", []string{"a:1"}, nil
		}, []string{"auth.signing_keys"}},
		{"no connect timeout", func(c *config.Config) { c.Redis.ConnectTimeout = 0 }, []string{"redis.connect_timeout"}},
		{"telegram token with spaces around it", func(c *config.Config) { c.Telegram.Token = " 123456:ABC-def_ghi\n" },
			[]string{"telegram.token"}},
		{"telegram token of the wrong shape", func(c *config.Config) { c.Telegram.Token = "ABC-def_ghi" }, []string{"telegram.token"}},
		{"telegram token with a bad character", func(c *config.Config) { c.Telegram.Token = "123:abc/def" }, []string{"telegram.token"}},
		{"slack token with a line break", func(c *config.Config) {
			c.Slack.BotToken, c.Slack.AppToken = "xoxb-1\n", "xapp-1"
		}, []string{"slack.bot_token"}},
		{"api key with a space", func(c *config.Config) { c.LLM.APIKey = "sk-1 " }, []string{"llm.api_key"}},
		{"webhook over http", func(c *config.Config) {
			c.Telegram.Mode, c.Telegram.WebhookURL, c.Telegram.WebhookSecret = "webhook", "http://bot.example/tg", "s"
		}, []string{"telegram.webhook_url"}},
		{"webhook on a port Telegram does not post to", func(c *config.Config) {
			c.Telegram.Mode, c.Telegram.WebhookURL, c.Telegram.WebhookSecret = "webhook", "https://bot.example:9999/tg", "s"
		}, []string{"telegram.webhook_url"}},
		{"telegram allow by username", func(c *config.Config) {
			c.Access.Telegram.Policy, c.Access.Telegram.Allow = "allowlist", []string{"123", "@alice"}
		}, []string{"access.telegram.allow[1]"}},
		{"telegram admin by username", func(c *config.Config) { c.Admins.Telegram = []string{"bob"} }, []string{"admins.telegram[0]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := config.Default()
			c.Auth.SigningKeys = []string{"a-signing-key-long-enough"}
			tt.change(c)
			err := c.Validate()
			var ve *config.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Validate() = %v, want a *ValidationError", err)
			}
			var got []string
			for _, p := range ve.Problems {
				got = append(got, p.Key)
				if p.Message == "" {
					t.Errorf("problem at %s has no message", p.Key)
				}
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("problems at %q, want %q\n%v", got, tt.want, err)
			}
		})
	}
}

// TestValidateAcceptsWhatTelegramAccepts: the webhook ports Telegram posts to, any URL with a
// local Bot API server, numeric ids (groups' are negative).
func TestValidateAcceptsWhatTelegramAccepts(t *testing.T) {
	for _, change := range []func(c *config.Config){
		func(c *config.Config) { c.Telegram.WebhookURL = "https://bot.example/tg" },
		func(c *config.Config) { c.Telegram.WebhookURL = "https://bot.example:8443/tg" },
		func(c *config.Config) { c.Telegram.WebhookURL = "https://bot.example:88/tg" },
		func(c *config.Config) {
			c.Telegram.APIURL, c.Telegram.WebhookURL = "http://127.0.0.1:8081", "http://127.0.0.1:9999/tg"
		},
		func(c *config.Config) {
			c.Telegram.WebhookURL = "https://bot.example/tg"
			c.Admins.Telegram, c.Access.Telegram.Allow = []string{"42"}, []string{"-1001234", "7"}
		},
	} {
		c := config.Default()
		c.Telegram.Token, c.Telegram.Mode, c.Telegram.WebhookSecret = "123456:ABC-def_ghi", "webhook", "s3cret"
		change(c)
		if err := c.Validate(); err != nil {
			t.Errorf("Validate() = %v", err)
		}
	}
}

// TestValidateRunNeedsAPlatform: `bot run` (and so check-config) refuses a configuration with
// nothing to serve, which `bot chat` accepts.
func TestValidateRunNeedsAPlatform(t *testing.T) {
	c := config.Default()
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate() = %v", err)
	}
	var ve *config.ValidationError
	if err := c.ValidateRun(); !errors.As(err, &ve) || !ve.Has("telegram.token") || len(ve.Problems) != 1 {
		t.Fatalf("ValidateRun() = %v, want one problem at telegram.token", err)
	}
	if !strings.Contains(ve.Error(), "bot chat") || !strings.Contains(ve.Error(), "discord.token") {
		t.Errorf("the problem does not say what to do: %v", ve)
	}
	d := config.Default()
	d.Discord.Token = "MTIz.discord-token"
	if err := d.ValidateRun(); err != nil {
		t.Errorf("ValidateRun() with only a Discord token = %v", err)
	}
	c.Telegram.Token = "123456:ABC-def_ghi"
	if err := c.ValidateRun(); err != nil {
		t.Errorf("ValidateRun() with a token = %v", err)
	}
	c.Redis.URL = "redis://127.0.0.1:6379/0"
	if err := c.ValidateRun(); !errors.As(err, &ve) || !ve.Has("auth.signing_keys") {
		t.Errorf("ValidateRun() = %v, want the Validate problem at auth.signing_keys", err)
	}
}

func TestValidateAllowsEmptyAllowlist(t *testing.T) {
	c := config.Default()
	c.Access.Telegram.Policy = config.PolicyAllowlist
	if err := c.Validate(); err != nil {
		t.Errorf("allowlist with no entries must be allowed (admins only): %v", err)
	}
}

func TestValidateReportsEveryProblemWithItsKey(t *testing.T) {
	c := config.Default()
	c.Runs.Workers = 0
	c.Telegram.Mode = "push"
	c.Log.Format = "xml"
	err := c.Validate()
	var ve *config.ValidationError
	if !errors.As(err, &ve) || len(ve.Problems) != 3 {
		t.Fatalf("Validate() = %v, want 3 problems", err)
	}
	msg := err.Error()
	for _, want := range []string{
		"runs.workers: must be at least 1, got 0",
		`telegram.mode: must be one of polling, webhook, got "push"`,
		`log.format: must be one of text, json, got "xml"`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error\n%s\ndoes not contain %q", msg, want)
		}
	}
}

func TestValidateAfterLoadFindsBadEnums(t *testing.T) {
	cfg := mustLoad(t, "", []string{"BOT_RUNS__FOLLOWUP=drop", "BOT_RUNS__WORKERS=-2"})
	var ve *config.ValidationError
	if err := cfg.Validate(); !errors.As(err, &ve) || !ve.Has("runs.followup") || !ve.Has("runs.workers") {
		t.Errorf("Validate() = %v, want problems at runs.followup and runs.workers", err)
	}
}

// TestDefaultWorkersSizedForModelLatency: a worker is a goroutine that waits seconds on the model,
// so by default a process works on a few hundred conversations at once — a handful of slow
// chats cannot hold up the rest — and never on more than the queue admits.
func TestDefaultWorkersSizedForModelLatency(t *testing.T) {
	d := config.Default()
	if d.Runs.Workers < 100 || d.Runs.Workers > 1000 {
		t.Errorf("runs.workers defaults to %d, want a few hundred", d.Runs.Workers)
	}
	if d.Runs.Workers > d.Runs.MaxPending {
		t.Errorf("runs.workers %d exceeds runs.max_pending %d", d.Runs.Workers, d.Runs.MaxPending)
	}
}

// TestDiscordAdminPermissionNames: discord.admin_permission takes a staff permission by name,
// in any case; an unknown one is refused with every valid name listed.
func TestDiscordAdminPermissionNames(t *testing.T) {
	for _, name := range []string{"", "MANAGE_GUILD", "administrator", " Manage_Channels "} {
		c := config.Default()
		c.Discord.AdminPermission = name
		if err := c.Validate(); err != nil {
			t.Errorf("%q refused: %v", name, err)
		}
	}
	if bit, ok := config.DiscordPermission("MANAGE_GUILD"); !ok || bit != 1<<5 {
		t.Errorf("MANAGE_GUILD = %d, %v", bit, ok)
	}
	c := config.Default()
	c.Discord.AdminPermission = "MANAGE_SERVER"
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "discord.admin_permission") ||
		!strings.Contains(err.Error(), "ADMINISTRATOR, BAN_MEMBERS") || !strings.Contains(err.Error(), `"MANAGE_SERVER"`) {
		t.Errorf("err = %v", err)
	}
}
