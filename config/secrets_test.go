package config_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/config"
)

// marker is in every secret these tests feed; no output may contain it.
const marker = "S3CRET"

// secretYAML sets every secret key to a distinct value that contains marker.
func secretYAML() string {
	return `
redis:
  url: redis://:S3CRET-redis-url-pw@127.0.0.1:6379/0
  password: S3CRET-redis-password
llm:
  api_key: S3CRET-llm-api-key
  providers:
    hosted:
      base_url: https://user:S3CRET-provider-url-pw@llm.example.com/v1?key=S3CRET-provider-query
      api_key: S3CRET-provider-api-key
auth:
  signing_keys: [S3CRET-signing-key-newest, S3CRET-signing-key-older]
telegram:
  token: S3CRET-telegram-token
  mode: webhook
  webhook_url: https://bot.example.com/tg
  webhook_secret: S3CRET-webhook-secret
slack:
  bot_token: S3CRET-slack-bot-token
  app_token: S3CRET-slack-app-token
  signing_secret: S3CRET-slack-signing-secret
  client_id: "1111.2222"
  client_secret: S3CRET-slack-client-secret
  redirect_url: https://bot.example.com/slack/oauth/callback
discord:
  token: S3CRET-discord-token
tools:
  identity_key: S3CRET-tools-identity-key
  servers:
    local:
      command: [mcp-local]
      env: {API_TOKEN: S3CRET-tools-env-value}
    remote:
      url: https://user:S3CRET-url-password@mcp.example.com/mcp?key=S3CRET-url-query
      headers: {Authorization: Bearer S3CRET-tools-header}
`
}

func assertNoSecret(t *testing.T, what, text string) {
	t.Helper()
	if strings.Contains(text, marker) {
		t.Errorf("%s shows a secret:\n%s", what, text)
	}
}

func TestRedactedHidesEverySecret(t *testing.T) {
	path := writeFile(t, t.TempDir(), "c.yaml", secretYAML())
	cfg := mustLoad(t, path, nil)

	// Every secret field really holds a secret, so the test covers them all.
	v := reflect.ValueOf(cfg).Elem()
	for _, k := range config.SecretKeys() {
		if !strings.Contains(fmt.Sprint(fieldByKey(t, v, k).Interface()), marker) {
			t.Fatalf("test setup: %s holds no secret", k)
		}
	}

	out := cfg.Redacted()
	assertNoSecret(t, "Redacted()", out)
	assertNoSecret(t, "fmt %v", fmt.Sprintf("%v", cfg))
	assertNoSecret(t, "fmt %#v", fmt.Sprintf("%#v", cfg))
	assertNoSecret(t, "fmt %+v", fmt.Sprintf("%+v", cfg))
	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("loaded", "config", cfg)
	assertNoSecret(t, "slog", logged.String())

	for _, want := range []string{
		"token: '[redacted]'", "api_key: '[redacted]'", "password: '[redacted]'",
		"url: redis://:xxxxx@127.0.0.1:6379/0", "webhook_secret: '[redacted]'",
		"signing_keys:\n    - '[redacted]'\n    - '[redacted]'\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("Redacted() lacks %q:\n%s", want, out)
		}
	}
}

func TestRedactedShowsUnsetSecretsEmpty(t *testing.T) {
	out := config.Default().Redacted()
	for _, want := range []string{`  token: ""`, `  api_key: ""`, "  signing_keys: []"} {
		if !strings.Contains(out, want) {
			t.Errorf("Redacted() lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, config.RedactedValue) {
		t.Errorf("Redacted() of defaults redacts something:\n%s", out)
	}
}

func TestRedactedMasksPasswordsInAnyURL(t *testing.T) {
	c := config.Default()
	c.LLM.BaseURL = "https://user:S3CRET-pw@llm.example.com/v1"
	c.Redis.URL = "redis://S3CRET-lone-user@h:1"
	c.Telegram.APIURL = "http://user:S3CRET pw@host:bad" // does not parse
	out := c.Redacted()
	assertNoSecret(t, "Redacted()", out)
	assertNoSecret(t, "Validate()", fmt.Sprint(c.Validate()))
}

// TestRedactedLoadsBack: the printed configuration is itself a valid config file.
func TestRedactedLoadsBack(t *testing.T) {
	cfg := mustLoad(t, "testdata/full.yaml", nil)
	// Blank the secrets, which print redacted, so the round trip can be compared.
	v := reflect.ValueOf(cfg).Elem()
	for _, k := range config.SecretKeys() {
		f := fieldByKey(t, v, k)
		f.Set(reflect.Zero(f.Type()))
	}
	path := writeFile(t, t.TempDir(), "printed.yaml", cfg.Redacted())
	again := mustLoad(t, path, nil)
	// Compared as printed: a nil list and an empty one print alike and mean the same.
	if got, want := again.Redacted(), cfg.Redacted(); got != want {
		t.Errorf("round trip changed the config:\n%s\nvs\n%s", got, want)
	}
	if !reflect.DeepEqual(again.Runs, cfg.Runs) || !reflect.DeepEqual(again.Access, cfg.Access) {
		t.Errorf("round trip changed runs or access: %+v %+v", again.Runs, again.Access)
	}
}

// TestSecretsNeverInErrors feeds secrets through every path that can fail and checks that no
// error message quotes one.
func TestSecretsNeverInErrors(t *testing.T) {
	dir := t.TempDir()
	bigSecret := writeFile(t, dir, "big", strings.Repeat("S3CRET-", 20000))
	plain := writeFile(t, dir, "plain", "S3CRET-from-file-0123456789")

	loadCases := []struct {
		name string
		yaml string
		env  []string
	}{
		{"secrets beside an unknown key", secretYAML() + "bogus: 1\nruns: {workers: x}\n", nil},
		{"secrets of the wrong type", `
telegram: {token: [S3CRET-in-a-list]}
slack: {bot_token: {k: S3CRET-in-a-map}}
auth: {signing_keys: {a: S3CRET-key}}
redis: {url: [S3CRET-url], password: {p: S3CRET-pw}}
llm: {api_key: [[S3CRET-nested]]}
`, nil},
		{"a secret as the whole document", "S3CRET-top-level-scalar\n", nil},
		{"a secret as a list document", "- S3CRET-item\n", nil},
		{"unterminated quote after a secret", "telegram:\n  token: \"S3CRET-unterminated\n", nil},
		{"a secret with a bad tag", "telegram:\n  token: !!int S3CRET-tagged\n", nil},
		{"a secret with a binary tag", "telegram:\n  token: !!binary S3CRET-binary\n", nil},
		{"a secret in a map key", "? {a: S3CRET-key}\n: 1\n", nil},
		{"a secret in a duplicate key", "telegram: {token: S3CRET-a, token: S3CRET-b}\n", nil},
		{"a secret beside a tab", "telegram:\n  token: S3CRET-tab\n\tbad: 1\n", nil},
		{"a secret used as a section", "telegram: S3CRET-as-section\n", nil},
		{"secrets in env beside unknown keys", "", []string{
			"BOT_TELEGRAM__TOKEN=S3CRET-env-token", "BOT_SLACK__BOT_TOKEN=S3CRET-env-slack",
			"BOT_TELEGRAM_TOKEN=S3CRET-misspelt", "BOT_AUTH=S3CRET-section", "BOT_RUNS__WORKERS=many",
		}},
		{"a huge secret file", "", []string{"BOT_DISCORD__TOKEN_FILE=" + bigSecret}},
		{"a secret file and its value in one layer", "telegram: {token: S3CRET-inline, token_file: " + plain + "}\n", nil},
		{"a secret as a _file path", "", []string{"BOT_LLM__API_KEY_FILE=/nonexistent/S3CRET-path-is-not-secret"}},
		{"provider secrets of the wrong type", `
llm:
  providers:
    a: {base_url: http://h, api_key: [S3CRET-in-a-list]}
    b: {base_url: http://h, api_key: {k: S3CRET-in-a-map}}
    c: S3CRET-as-a-provider
    d: {base_url: http://h, api_kee: S3CRET-misspelt, api_key_file: [S3CRET-file]}
`, nil},
		{"a provider secret and its file in one layer", "llm:\n  providers:\n    a: {base_url: http://h, api_key: S3CRET-inline, api_key_file: " + plain + "}\n", nil},
		{"a provider secret in the environment", "", []string{"BOT_LLM__PROVIDERS__A__API_KEY=S3CRET-env-provider"}},
	}
	for _, tt := range loadCases {
		t.Run(tt.name, func(t *testing.T) {
			path := ""
			if tt.yaml != "" {
				path = writeFile(t, t.TempDir(), "c.yaml", tt.yaml)
			}
			cfg, err := config.Load(path, tt.env)
			if err == nil {
				t.Fatalf("Load succeeded, want an error:\n%s", cfg.Redacted())
			}
			if tt.name == "a secret as a _file path" {
				// A path is not a secret and is shown; only contents are hidden.
				return
			}
			assertNoSecret(t, "Load error", err.Error())
		})
	}

	validateCases := []struct {
		name   string
		change func(c *config.Config)
	}{
		{"short signing key", func(c *config.Config) { c.Auth.SigningKeys = []string{"S3CRET-short"} }},
		{"bad webhook secret", func(c *config.Config) {
			c.Telegram.Mode, c.Telegram.WebhookURL, c.Telegram.WebhookSecret = "webhook", "https://x", "S3CRET bad!"
		}},
		{"redis url without host", func(c *config.Config) { c.Redis.URL = "redis://:S3CRET-pw@/0" }},
		{"redis url that does not parse", func(c *config.Config) { c.Redis.URL = "redis://:S3CRET pw@h:x%zz" }},
		{"redis url with a bad scheme", func(c *config.Config) { c.Redis.URL = "http://:S3CRET@h:1" }},
		{"credentials in a bad base url", func(c *config.Config) { c.LLM.BaseURL = "ftp://u:S3CRET@h" }},
		{"lone slack app token", func(c *config.Config) { c.Slack.AppToken = "S3CRET-app" }},
		{"socket mode without app token", func(c *config.Config) { c.Slack.BotToken = "S3CRET-bot" }},
		{"provider key with a space", func(c *config.Config) {
			c.LLM.Providers = map[string]config.LLMProvider{"p": {BaseURL: "http://h", APIKey: " S3CRET-provider", Timeout: time.Second}}
		}},
		{"credentials in a bad provider url", func(c *config.Config) {
			c.LLM.Providers = map[string]config.LLMProvider{"p": {BaseURL: "ftp://u:S3CRET@h", APIKey: "S3CRET-provider", Timeout: time.Second}}
		}},
		{"provider url that does not parse", func(c *config.Config) {
			c.LLM.Providers = map[string]config.LLMProvider{"p": {BaseURL: "http://u:S3CRET pw@h:x%zz", APIKey: "S3CRET-provider"}}
		}},
	}
	for _, tt := range validateCases {
		t.Run(tt.name, func(t *testing.T) {
			c := config.Default()
			tt.change(c)
			err := c.Validate()
			if err == nil {
				t.Fatal("Validate succeeded, want an error")
			}
			assertNoSecret(t, "Validate error", err.Error())
			assertNoSecret(t, "Redacted()", c.Redacted())
		})
	}

	// A secret that loads fine but fails validation, end to end from env and _file.
	cfg := mustLoad(t, "", []string{"BOT_AUTH__SIGNING_KEYS_FILE=" + writeFile(t, dir, "keys", "S3CRET-a\nS3CRET-b\n")})
	var ve *config.ValidationError
	if err := cfg.Validate(); !errors.As(err, &ve) || !ve.Has("auth.signing_keys") {
		t.Fatalf("Validate() = %v, want short signing keys reported", err)
	} else {
		assertNoSecret(t, "Validate error", err.Error())
	}
}

// fieldByKey finds the struct field for a key path by its koanf tags.
func fieldByKey(t *testing.T, v reflect.Value, key string) reflect.Value {
	t.Helper()
outer:
	for _, part := range strings.Split(key, ".") {
		for i := range v.NumField() {
			if v.Type().Field(i).Tag.Get("koanf") == part {
				v = v.Field(i)
				continue outer
			}
		}
		t.Fatalf("no field for %s", key)
	}
	return v
}

// TestProviderAPIKeyIsNeverShown: a provider's api_key, from the file or its api_key_file, is
// hidden by Redacted and every way of printing a *Config, and quoted by no error of Load,
// Validate or a round trip through the printed configuration.
func TestProviderAPIKeyIsNeverShown(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "key", "S3CRET-provider-key-from-a-file\n")
	path := writeFile(t, dir, "c.yaml", `
llm:
  providers:
    inline: {base_url: "http://localhost:11434/v1", api_key: S3CRET-provider-inline, model: m, max_retries: -1}
    filed: {base_url: "https://llm.example.com/v1", api_key_file: key, timeout: 0s}
profiles:
  p: {provider: filed}
`)
	cfg := mustLoad(t, path, nil)
	if cfg.LLM.Providers["filed"].APIKey != "S3CRET-provider-key-from-a-file" || cfg.LLM.Providers["inline"].APIKey != "S3CRET-provider-inline" {
		t.Fatalf("test setup: providers %+v", cfg.LLM.Providers)
	}
	out := cfg.Redacted()
	assertNoSecret(t, "Redacted()", out)
	assertNoSecret(t, "fmt %v", fmt.Sprintf("%v", cfg))
	assertNoSecret(t, "fmt %+v", fmt.Sprintf("%+v", cfg))
	if strings.Count(out, "api_key: '[redacted]'") != 2 {
		t.Errorf("Redacted() does not show both provider keys as set:\n%s", out)
	}
	err := cfg.Validate()
	if err == nil {
		t.Fatal("Validate() accepted negative retries, a zero timeout and a provider without a model")
	}
	assertNoSecret(t, "Validate error", err.Error())
	again := mustLoad(t, writeFile(t, dir, "printed.yaml", out), nil)
	assertNoSecret(t, "Redacted() of the printed configuration", again.Redacted())
}
