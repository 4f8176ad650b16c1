package config_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/v2"

	"github.com/switchboard-bot/switchboard/config"
)

// writeFile writes content to dir/name and returns the path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func mustLoad(t *testing.T, path string, environ []string) *config.Config {
	t.Helper()
	cfg, err := config.Load(path, environ)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return cfg
}

// loadProblems loads a configuration that must fail with a *ValidationError.
func loadProblems(t *testing.T, path string, environ []string) *config.ValidationError {
	t.Helper()
	cfg, err := config.Load(path, environ)
	if err == nil {
		t.Fatalf("Load succeeded, want an error; got:\n%s", cfg.Redacted())
	}
	var ve *config.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("Load error %T %q is not a *ValidationError", err, err)
	}
	t.Log(ve)
	return ve
}

// fullConfig is what testdata/full.yaml holds.
func fullConfig() *config.Config {
	return &config.Config{
		Redis: config.Redis{
			Mode: "sentinel", Addrs: []string{"10.0.0.1:26379", "10.0.0.2:26379"}, Prefix: "test:",
			MasterName: "mymaster", Password: "redis-password-from-file", ConnectTimeout: 5 * time.Second,
		},
		LLM: config.LLM{
			Provider: "openai", BaseURL: "http://127.0.0.1:11434/v1", APIKey: "sk-from-file",
			Model: "local-model", Timeout: 45 * time.Second, MaxRetries: 5,
			SystemPrompt: "You are a test bot.\n", Vision: true,
			Providers: map[string]config.LLMProvider{
				// Unset timeout and max_retries are llm.timeout's and llm.max_retries'.
				"local":  {BaseURL: "http://127.0.0.1:11434/v1", Model: "llama3.1", Timeout: 45 * time.Second, MaxRetries: 5},
				"hosted": {BaseURL: "https://llm.example.com/v1", APIKey: "sk-hosted-from-file", Model: "big-model", Timeout: time.Minute, MaxRetries: 0},
			},
			Transcription: config.Transcription{Provider: "hosted", Model: "whisper-1"},
		},
		Auth: config.Auth{SigningKeys: []string{"newest-signing-key-0123456789", "older-signing-key-0123456789"}},
		Telegram: config.Telegram{
			Token: "123456:telegram-token", APIURL: "http://127.0.0.1:8081", Mode: "webhook",
			WebhookURL: "https://bot.example.com/telegram", WebhookSecret: "webhook_Secret-1", Pacing: false,
		},
		Slack: config.Slack{
			BotToken: "xoxb-slack", AppToken: "xapp-slack", SigningSecret: "slack-signing",
			ClientID: "1111.2222", ClientSecret: "slack-client-secret", RedirectURL: "https://bot.example.com/slack/oauth/callback",
			InstallPath: "/hooks/slack/install", OAuthPath: "/hooks/slack/oauth",
			APIURL: "http://127.0.0.1:8082/api/", Mode: "http", Connections: 2, ThreadReplies: "mention",
			ReplyInThread: false, Command: "/sb", AssistantStatus: false, Streaming: false, SuggestedPrompts: []string{"Plan my week"},
			ReadyWindow:      time.Minute,
			EventsPath:       "/hooks/slack/events",
			InteractionsPath: "/hooks/slack/interactions", CommandsPath: "/hooks/slack/commands",
		},
		Discord: config.Discord{
			Token: "discord-token", APIURL: "http://127.0.0.1:8083", ApplicationID: "123456789012345678",
			PublicKey:     "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			ReplyInThread: false, ThreadReplies: "mention", MessageContent: false, DevGuild: "223456789012345678", ShardID: 1, ShardCount: 2, AdminPermission: "MANAGE_GUILD", Pacing: false,
		},
		Access: config.Access{
			Telegram: config.PlatformAccess{Policy: "allowlist", Allow: []string{"111", "222"}},
			Slack:    config.PlatformAccess{Policy: "allowlist", Allow: []string{"U1"}},
			Discord:  config.PlatformAccess{Policy: "allowlist", Allow: []string{"333"}},
			Console:  config.PlatformAccess{Policy: "allowlist", Allow: []string{"local"}},
		},
		Admins: config.Admins{
			Telegram: []string{"111"}, Slack: []string{"U1"}, Discord: []string{"333"}, Console: []string{"local"},
		},
		HTTP: config.HTTP{Addr: "127.0.0.1:9090"},
		Runs: config.Runs{
			Workers: 8, Followup: "interrupt", MaxAttempts: 5, Lease: time.Minute, MaxPerConversation: 7,
			MaxPending: 500, HistoryTurns: 10, ClarificationTTL: 2 * time.Hour, MaxMessageChars: 4000, PlaceholderAfter: 2 * time.Second,
			OutageRetryBase: 3 * time.Second, MaxAnswerMessages: 4,
		},
		Attachments: config.Attachments{Download: false, MaxBytes: 5 << 20, MaxTextChars: 4000, MaxFiles: 3},
		Subagents:   config.Subagents{MaxDepth: 3, MaxConcurrent: 2, StructuredNudgeRetries: 2},
		Tools: config.Tools{
			Servers: map[string]config.ToolServer{
				"everything": {Command: []string{"npx", "-y", "@modelcontextprotocol/server-everything"},
					Env: map[string]string{"LOG_LEVEL": "warn"}, Dir: "/srv/mcp", Exclude: []string{"get-env"}, CallTimeout: 30 * time.Second},
				"tickets": {URL: "https://mcp.example.com/mcp", Headers: map[string]string{"X-Team": "support"},
					HeadersFile: map[string]string{"Authorization": "/run/secrets/tickets_auth"}, Include: []string{"create_*", "get_*"}},
			},
			Policy: []config.ToolRule{
				{Tools: []string{"tickets__create_*"}, Allow: []string{"everyone"}, Approval: "always"},
				{Tools: []string{"everything__*"}, Allow: []string{"admins", "slack:U1"}},
			},
			Subagents:   []string{"everything__echo", "tickets__get_*"},
			ApprovalTTL: 5 * time.Minute, CallTimeout: 45 * time.Second, ConnectTimeout: 10 * time.Second,
			MaxResultBytes: 8192, IdentityKey: "tools-identity-key-0123456789",
		},
		Log: config.Log{Level: "debug", Format: "json"},
		Profiles: map[string]config.Profile{
			"support": {SystemPrompt: "You answer questions about our product.", Model: "big-model", Provider: "hosted",
				Models: []string{"big-model", "big-model-reasoner"}, Tools: []string{"tickets__*"}, Vision: ptr(false),
				HistoryTurns: 20, Subagents: &config.ProfileSubagents{MaxDepth: ptr(1), MaxConcurrent: ptr(2)}},
			"community": {Provider: "local", Tools: []string{}},
		},
		Routes: []config.Route{
			{Match: config.RouteMatch{Platform: "slack", Team: "T0123", Channel: "C0456"}, Profile: "support"},
			{Match: config.RouteMatch{Platform: "discord", Guild: "112233445566778899", DM: ptr(false)}, Profile: "community"},
			{Match: config.RouteMatch{Enterprise: "E1", User: "E1:U1", DM: ptr(true)}, Profile: "default"},
			{Match: config.RouteMatch{Platform: "console"}, Profile: "support"},
		},
	}
}

func ptr[T any](v T) *T { return &v }

// TestKeysAreTheDesignContract pins the key names of DESIGN.md "Configuration keys" and the
// set of secrets: renaming one of them must fail here.
func TestKeysAreTheDesignContract(t *testing.T) {
	contract := []string{
		"redis.url", "redis.mode", "redis.addrs", "redis.prefix", "redis.master_name", "redis.password",
		"llm.provider", "llm.base_url", "llm.api_key", "llm.model", "llm.timeout", "llm.max_retries",
		"llm.system_prompt",
		"auth.signing_keys",
		"telegram.token", "telegram.api_url", "telegram.mode", "telegram.webhook_url",
		"telegram.webhook_secret", "telegram.pacing",
		"slack.bot_token", "slack.app_token", "slack.signing_secret", "slack.api_url", "slack.mode",
		"discord.token", "discord.api_url", "discord.application_id", "discord.public_key",
		"http.addr",
		"runs.workers", "runs.followup", "runs.max_attempts", "runs.lease", "runs.max_per_conversation",
		"runs.max_pending", "runs.history_turns", "runs.clarification_ttl", "runs.max_message_chars", "runs.placeholder_after",
		"runs.outage_retry_base", "runs.max_answer_messages",
		"subagents.max_depth", "subagents.max_concurrent", "subagents.structured_nudge_retries",
		"log.level", "log.format",
	}
	for _, p := range []string{"telegram", "slack", "discord", "console"} {
		contract = append(contract, "access."+p+".policy", "access."+p+".allow", "access."+p+".dm", "admins."+p)
	}
	keys := config.Keys()
	for _, k := range contract {
		if !slices.Contains(keys, k) {
			t.Errorf("contract key %s is missing", k)
		}
	}

	wantSecrets := []string{
		"auth.signing_keys", "discord.token", "llm.api_key", "redis.password", "redis.url",
		"slack.app_token", "slack.bot_token", "slack.client_secret", "slack.signing_secret", "telegram.token",
		"telegram.webhook_secret", "tools.identity_key",
	}
	if got := config.SecretKeys(); !slices.Equal(got, wantSecrets) {
		t.Errorf("SecretKeys() = %v, want %v", got, wantSecrets)
	}
}

func TestLoadWithNothingGivesValidDefaults(t *testing.T) {
	cfg := mustLoad(t, "", nil)
	want := config.Default()
	want.LLM.Provider = config.ProviderDemo
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("Load(\"\", nil) =\n%s\nwant\n%s", cfg.Redacted(), want.Redacted())
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("defaults do not validate: %v", err)
	}
	if got := cfg.Enabled(); len(got) != 0 {
		t.Errorf("Enabled() = %v with no credentials", got)
	}
	// The documented defaults, spelled out.
	checks := map[string][2]any{
		"redis.prefix":               {cfg.Redis.Prefix, "sb:"},
		"llm.base_url":               {cfg.LLM.BaseURL, "https://api.deepseek.com"},
		"llm.model":                  {cfg.LLM.Model, "deepseek-chat"},
		"telegram.api_url":           {cfg.Telegram.APIURL, "https://api.telegram.org"},
		"telegram.pacing":            {cfg.Telegram.Pacing, true},
		"access.slack.policy":        {cfg.Access.Slack.Policy, "open"},
		"access.console.dm":          {cfg.Access.Console.DM, true},
		"http.addr":                  {cfg.HTTP.Addr, ":8080"},
		"runs.workers":               {cfg.Runs.Workers, config.DefaultWorkers},
		"runs.followup":              {cfg.Runs.Followup, "queue"},
		"runs.max_attempts":          {cfg.Runs.MaxAttempts, 5},
		"runs.outage_retry_base":     {cfg.Runs.OutageRetryBase, 5 * time.Second},
		"runs.max_answer_messages":   {cfg.Runs.MaxAnswerMessages, 3},
		"runs.lease":                 {cfg.Runs.Lease, 10 * time.Second},
		"runs.max_per_conversation":  {cfg.Runs.MaxPerConversation, 20},
		"runs.max_pending":           {cfg.Runs.MaxPending, 10000},
		"runs.history_turns":         {cfg.Runs.HistoryTurns, 50},
		"runs.clarification_ttl":     {cfg.Runs.ClarificationTTL, time.Hour},
		"runs.max_message_chars":     {cfg.Runs.MaxMessageChars, 8000},
		"runs.placeholder_after":     {cfg.Runs.PlaceholderAfter, time.Second},
		"subagents.max_depth":        {cfg.Subagents.MaxDepth, 2},
		"subagents.max_concurrent":   {cfg.Subagents.MaxConcurrent, 4},
		"subagents.structured_nudge": {cfg.Subagents.StructuredNudgeRetries, 1},
		"attachments.download":       {cfg.Attachments.Download, true},
		"attachments.max_bytes":      {cfg.Attachments.MaxBytes, 20 << 20},
		"attachments.max_text_chars": {cfg.Attachments.MaxTextChars, 20_000},
		"attachments.max_files":      {cfg.Attachments.MaxFiles, 10},
	}
	for k, c := range checks {
		if c[0] != c[1] {
			t.Errorf("default %s = %v, want %v", k, c[0], c[1])
		}
	}
}

func TestLoadFullFileSetsEveryKey(t *testing.T) {
	const path = "testdata/full.yaml"
	// Every key must appear in the file, so the file documents them all.
	raw := koanf.New(".")
	if err := raw.Load(file.Provider(path), yaml.Parser()); err != nil {
		t.Fatal(err)
	}
	for _, k := range config.Keys() {
		if !raw.Exists(k) {
			t.Errorf("%s does not set %s", path, k)
		}
	}

	cfg := mustLoad(t, path, nil)
	if want := fullConfig(); !reflect.DeepEqual(cfg, want) {
		t.Errorf("Load(%s) =\n%#v\nwant\n%#v", path, cfg, want)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("full config does not validate: %v", err)
	}
	if got, want := cfg.Enabled(), []string{"telegram", "slack", "discord"}; !slices.Equal(got, want) {
		t.Errorf("Enabled() = %v, want %v", got, want)
	}
}

func TestLoadPrecedenceDefaultsThenFileThenEnv(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "c.yaml", `
runs:
  workers: 7        # file beats default
  max_attempts: 9   # env beats file
telegram:
  api_url: http://file.example
`)
	cfg := mustLoad(t, path, []string{
		"BOT_RUNS__MAX_ATTEMPTS=11",
		"BOT_TELEGRAM__API_URL=http://env.example",
		"BOT_RUNS__LEASE=90s",
	})
	if cfg.Runs.Workers != 7 {
		t.Errorf("runs.workers = %d, want 7 from the file", cfg.Runs.Workers)
	}
	if cfg.Runs.MaxAttempts != 11 {
		t.Errorf("runs.max_attempts = %d, want 11 from env", cfg.Runs.MaxAttempts)
	}
	if cfg.Telegram.APIURL != "http://env.example" {
		t.Errorf("telegram.api_url = %q, want env's", cfg.Telegram.APIURL)
	}
	if cfg.Runs.Lease != 90*time.Second {
		t.Errorf("runs.lease = %v, want 90s from env", cfg.Runs.Lease)
	}
	if cfg.Runs.MaxPending != 10000 {
		t.Errorf("runs.max_pending = %d, want the default 10000", cfg.Runs.MaxPending)
	}
}

func TestLoadEnvNestsListsAndTypes(t *testing.T) {
	cfg := mustLoad(t, "", []string{
		"BOT_TELEGRAM__API_URL=http://127.0.0.1:1",
		"BOT_AUTH__SIGNING_KEYS= key-one-0123456789abc , key-two-0123456789abc,,",
		"BOT_ACCESS__TELEGRAM__POLICY=allowlist",
		"BOT_ACCESS__TELEGRAM__ALLOW=111,222",
		"BOT_ACCESS__TELEGRAM__DM=false",
		"BOT_ADMINS__SLACK=U1",
		"BOT_REDIS__ADDRS=a:1,b:2,c:3",
		"BOT_REDIS__MODE=cluster",
		"BOT_TELEGRAM__PACING=false",
		"BOT_RUNS__CLARIFICATION_TTL=15m",
		"bot_runs__workers=3", // not BOT_: ignored
		"BOT_runs__workers=2", // lowercased
		"OTHER=1",
	})
	if cfg.Telegram.APIURL != "http://127.0.0.1:1" {
		t.Errorf("telegram.api_url = %q", cfg.Telegram.APIURL)
	}
	if want := []string{"key-one-0123456789abc", "key-two-0123456789abc"}; !slices.Equal(cfg.Auth.SigningKeys, want) {
		t.Errorf("auth.signing_keys = %q, want %q", cfg.Auth.SigningKeys, want)
	}
	if a := cfg.Access.Telegram; a.Policy != "allowlist" || !slices.Equal(a.Allow, []string{"111", "222"}) || a.DM {
		t.Errorf("access.telegram = %+v", a)
	}
	if a, _ := cfg.AccessFor("telegram"); a.Policy != "allowlist" {
		t.Errorf("AccessFor(telegram) = %+v", a)
	}
	if !slices.Equal(cfg.AdminsFor("slack"), []string{"U1"}) {
		t.Errorf("admins.slack = %q", cfg.Admins.Slack)
	}
	if !slices.Equal(cfg.Redis.Addrs, []string{"a:1", "b:2", "c:3"}) {
		t.Errorf("redis.addrs = %q", cfg.Redis.Addrs)
	}
	if cfg.Telegram.Pacing {
		t.Error("telegram.pacing = true, want false")
	}
	if cfg.Runs.ClarificationTTL != 15*time.Minute {
		t.Errorf("runs.clarification_ttl = %v", cfg.Runs.ClarificationTTL)
	}
	if cfg.Runs.Workers != 2 {
		t.Errorf("runs.workers = %d, want 2", cfg.Runs.Workers)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func TestLoadEmptyEnvValueKeepsLowerLayer(t *testing.T) {
	path := writeFile(t, t.TempDir(), "c.yaml", "telegram: {token: from-file}\n")
	cfg := mustLoad(t, path, []string{"BOT_TELEGRAM__TOKEN=", "BOT_RUNS__WORKERS="})
	if cfg.Telegram.Token != "from-file" || cfg.Runs.Workers != config.DefaultWorkers {
		t.Errorf("token %q workers %d: empty env values must be ignored", cfg.Telegram.Token, cfg.Runs.Workers)
	}
}

func TestLoadConfigPathFromBOTConfig(t *testing.T) {
	dir := t.TempDir()
	a := writeFile(t, dir, "a.yaml", "runs: {workers: 5}\n")
	b := writeFile(t, dir, "b.yaml", "runs: {workers: 6}\n")
	if cfg := mustLoad(t, "", []string{"BOT_CONFIG=" + a}); cfg.Runs.Workers != 5 {
		t.Errorf("BOT_CONFIG file not read: workers = %d", cfg.Runs.Workers)
	}
	if cfg := mustLoad(t, b, []string{"BOT_CONFIG=" + a}); cfg.Runs.Workers != 6 {
		t.Errorf("explicit path must beat BOT_CONFIG: workers = %d", cfg.Runs.Workers)
	}
}

func TestLoadNullKeepsDefault(t *testing.T) {
	path := writeFile(t, t.TempDir(), "c.yaml", "telegram: ~\nruns:\n  workers: ~\n")
	cfg := mustLoad(t, path, nil)
	if cfg.Telegram.APIURL != config.DefaultTelegramAPIURL || !cfg.Telegram.Pacing || cfg.Runs.Workers != config.DefaultWorkers {
		t.Errorf("null values must keep defaults, got:\n%s", cfg.Redacted())
	}
}

func TestLoadSecretFileIndirection(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "tg-token", "  file-telegram-token\n\n")
	writeFile(t, dir, "keys", "\nnewest-key-0123456789abc\n  older-key-0123456789abc  \n")
	abs := writeFile(t, dir, "slack-bot", "xoxb-from-env-file\n")
	redisURL := writeFile(t, dir, "redis-url", "redis://:pw@127.0.0.1:6379/2\n")

	// Relative _file paths in the file are relative to the file's folder.
	path := writeFile(t, dir, "c.yaml", `
telegram:
  token_file: tg-token
auth:
  signing_keys_file: keys
slack:
  bot_token: from-yaml
  app_token: xapp-1
`)
	cfg := mustLoad(t, path, []string{
		"BOT_SLACK__BOT_TOKEN_FILE=" + abs, // env _file overrides the file's plain value
		"BOT_REDIS__URL_FILE=" + redisURL,
	})
	if cfg.Telegram.Token != "file-telegram-token" {
		t.Errorf("telegram.token = %q", cfg.Telegram.Token)
	}
	if want := []string{"newest-key-0123456789abc", "older-key-0123456789abc"}; !slices.Equal(cfg.Auth.SigningKeys, want) {
		t.Errorf("auth.signing_keys = %q, want %q", cfg.Auth.SigningKeys, want)
	}
	if cfg.Slack.BotToken != "xoxb-from-env-file" {
		t.Errorf("slack.bot_token = %q, want the env _file's", cfg.Slack.BotToken)
	}
	if cfg.Redis.URL != "redis://:pw@127.0.0.1:6379/2" {
		t.Errorf("redis.url = %q", cfg.Redis.URL)
	}

	// And the other way round: a plain env value beats a _file in the config file.
	cfg = mustLoad(t, path, []string{"BOT_TELEGRAM__TOKEN=from-env"})
	if cfg.Telegram.Token != "from-env" {
		t.Errorf("telegram.token = %q, want env's plain value over the file's _file", cfg.Telegram.Token)
	}
}

func TestLoadDeepSeekKeyFallback(t *testing.T) {
	dir := t.TempDir()
	other := writeFile(t, dir, "other.yaml", "llm: {base_url: 'http://127.0.0.1:9/v1'}\n")
	explicit := writeFile(t, dir, "explicit.yaml", "llm: {api_key: from-file}\n")
	demo := writeFile(t, dir, "demo.yaml", "llm: {provider: demo}\n")

	tests := []struct {
		name         string
		path         string
		env          []string
		wantKey      string
		wantProvider string
	}{
		{"no key: demo", "", nil, "", "demo"},
		{"DEEPSEEK_API_KEY fills an unset key", "", []string{"DEEPSEEK_API_KEY= sk-env \n"}, "sk-env", "openai"},
		{"explicit key wins", explicit, []string{"DEEPSEEK_API_KEY=sk-env"}, "from-file", "openai"},
		{"env key wins", "", []string{"DEEPSEEK_API_KEY=sk-env", "BOT_LLM__API_KEY=sk-bot"}, "sk-bot", "openai"},
		{"never sent to another server", other, []string{"DEEPSEEK_API_KEY=sk-env"}, "", "openai"},
		{"explicit provider kept", demo, []string{"DEEPSEEK_API_KEY=sk-env"}, "sk-env", "demo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := mustLoad(t, tt.path, tt.env)
			if cfg.LLM.APIKey != tt.wantKey || cfg.LLM.Provider != tt.wantProvider {
				t.Errorf("api_key %q provider %q, want %q %q", cfg.LLM.APIKey, cfg.LLM.Provider, tt.wantKey, tt.wantProvider)
			}
		})
	}
}

// TestLoadRejectsBadConfigs: each bad configuration fails, naming the key (or the file).
func TestLoadRejectsBadConfigs(t *testing.T) {
	dir := t.TempDir()
	emptySecret := writeFile(t, dir, "empty", " \n")
	big := writeFile(t, dir, "big", strings.Repeat("x", 70<<10))

	tests := []struct {
		name     string
		yaml     string // written to a file when non-empty
		env      []string
		wantKeys []string // problems expected, by key
		wantMsg  string   // a substring of some problem's message
	}{
		{name: "unknown YAML key", yaml: "telegram:\n  tokn: x\n", wantKeys: []string{"telegram.tokn"}, wantMsg: "did you mean telegram.token?"},
		{name: "unknown section", yaml: "whatsapp: {token: x}\n", wantKeys: []string{"whatsapp"}},
		{name: "unknown platform under access", yaml: "access: {irc: {policy: open}}\n", wantKeys: []string{"access.irc"}},
		{name: "keys are case-sensitive", yaml: "telegram: {API_URL: http://x}\n", wantKeys: []string{"telegram.API_URL"}},
		{name: "unknown env key", env: []string{"BOT_TELEGRAM__BOGUS=1"}, wantKeys: []string{"telegram.bogus"}, wantMsg: "unknown key"},
		{name: "env with a single underscore", env: []string{"BOT_TELEGRAM_TOKEN=x"}, wantKeys: []string{"telegram_token"}, wantMsg: "BOT_TELEGRAM__TOKEN"},
		{name: "env naming a section", env: []string{"BOT_RUNS=1"}, wantKeys: []string{"runs"}},
		{name: "empty key names are shown quoted", yaml: "'': 1\ntelegram: {'': 2}\n", env: []string{"BOT_=1"},
			wantKeys: []string{`""`, `"telegram."`, `""`}},
		{name: "bad duration in YAML", yaml: "runs: {lease: 30x}\n", wantKeys: []string{"runs.lease"}, wantMsg: "duration"},
		{name: "duration without a unit", yaml: "runs: {lease: 30}\n", wantKeys: []string{"runs.lease"}, wantMsg: "unit"},
		{name: "bad duration in env", env: []string{"BOT_LLM__TIMEOUT=soon"}, wantKeys: []string{"llm.timeout"}},
		{name: "not a number", env: []string{"BOT_RUNS__WORKERS=many"}, wantKeys: []string{"runs.workers"}, wantMsg: `got "many"`},
		{name: "not a bool", yaml: "telegram: {pacing: maybe}\n", wantKeys: []string{"telegram.pacing"}},
		{name: "list given a mapping", yaml: "redis: {addrs: {a: b}}\n", wantKeys: []string{"redis.addrs"}},
		{name: "section given a scalar", yaml: "runs: 5\n", wantKeys: []string{"runs"}},
		{name: "several at once", yaml: "runs: {workers: x, lease: y}\nbogus: 1\n", env: []string{"BOT_NOPE=1"},
			wantKeys: []string{"runs.workers", "runs.lease", "bogus", "nope"}},
		{name: "missing _file", yaml: "telegram: {token_file: /nonexistent/token}\n", wantKeys: []string{"telegram.token_file"}, wantMsg: "no such file"},
		{name: "_file is a directory", env: []string{"BOT_DISCORD__TOKEN_FILE=" + dir}, wantKeys: []string{"discord.token_file"}, wantMsg: "directory"},
		{name: "empty _file", env: []string{"BOT_SLACK__APP_TOKEN_FILE=" + emptySecret}, wantKeys: []string{"slack.app_token_file"}, wantMsg: "empty"},
		{name: "huge _file", env: []string{"BOT_LLM__API_KEY_FILE=" + big}, wantKeys: []string{"llm.api_key_file"}, wantMsg: "larger"},
		{name: "_file not a path", yaml: "redis: {password_file: [a]}\n", wantKeys: []string{"redis.password_file"}},
		{name: "value and _file in one layer", yaml: "telegram: {token: a, token_file: " + emptySecret + "}\n",
			wantKeys: []string{"telegram.token_file"}, wantMsg: "not both"},
		{name: "_file for a non-secret", yaml: "telegram: {api_url_file: /x}\n", wantKeys: []string{"telegram.api_url_file"}},
		{name: "same key twice in env", env: []string{"BOT_RUNS__WORKERS=1", "BOT_runs__workers=2"}, wantKeys: []string{"runs.workers"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := ""
			if tt.yaml != "" {
				path = writeFile(t, t.TempDir(), "c.yaml", tt.yaml)
			}
			ve := loadProblems(t, path, tt.env)
			var got []string
			for _, p := range ve.Problems {
				got = append(got, p.Key)
				if p.Source == "" {
					t.Errorf("problem %q has no source", p)
				}
			}
			for _, k := range tt.wantKeys {
				if !ve.Has(k) {
					t.Errorf("no problem for %s; got %q", k, got)
				}
			}
			if len(got) != len(tt.wantKeys) {
				t.Errorf("problems for %q, want exactly %q\n%v", got, tt.wantKeys, ve)
			}
			if tt.wantMsg != "" && !strings.Contains(ve.Error(), tt.wantMsg) {
				t.Errorf("error %q does not mention %q", ve, tt.wantMsg)
			}
		})
	}
}

func TestLoadFileErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.yaml")
	_, err := config.Load(missing, nil)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing file: err = %v, want fs.ErrNotExist naming %s", err, missing)
	}
	_, err = config.Load("", []string{"BOT_CONFIG=" + missing})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing BOT_CONFIG file: err = %v", err)
	}

	for name, doc := range map[string]string{
		"malformed":        "telegram:\n  token: [unclosed\n",
		"tab indentation":  "runs:\n\tworkers: 1\n",
		"top-level list":   "- a\n- b\n",
		"top-level scalar": "just text\n",
		"duplicate key":    "runs: {workers: 1}\nruns: {workers: 2}\n",
	} {
		t.Run(name, func(t *testing.T) {
			path := writeFile(t, t.TempDir(), "c.yaml", doc)
			cfg, err := config.Load(path, nil)
			if err == nil {
				t.Fatalf("Load succeeded:\n%s", cfg.Redacted())
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "invalid YAML") {
				t.Errorf("err = %v, want it to name %s as invalid YAML", err, path)
			}
		})
	}
}

func TestLoadEmptyFileGivesDefaults(t *testing.T) {
	for name, doc := range map[string]string{"empty": "", "comment only": "# nothing\n", "null": "~\n"} {
		t.Run(name, func(t *testing.T) {
			cfg := mustLoad(t, writeFile(t, t.TempDir(), "c.yaml", doc), nil)
			if err := cfg.Validate(); err != nil {
				t.Error(err)
			}
		})
	}
}
