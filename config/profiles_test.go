package config_test

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/config"
)

// validProfilesYAML is a configuration using every new key, valid as it is.
const validProfilesYAML = `
llm:
  vision: true
  providers:
    local:
      base_url: http://localhost:11434/v1
      model: llama3.1
  transcription: {provider: local, model: whisper-1}
profiles:
  support:
    system_prompt: You answer questions about our product.
    model: deepseek-chat
    models: [deepseek-chat, deepseek-reasoner]
    tools: ["tickets__*"]
    vision: false
    history_turns: 20
    subagents: {max_depth: 1, max_concurrent: 2}
  community:
    provider: local
    tools: []
routes:
  - match: {platform: slack, team: T0123, channel: C0456}
    profile: support
  - match: {platform: discord, guild: "112233445566778899"}
    profile: community
  - match: {platform: console}
    profile: support
  - match: {}
    profile: default
`

// TestProfilesConfigLoadsAndValidates: the example loads into the typed fields, keeps an
// empty tool list apart from an unset one, and validates.
func TestProfilesConfigLoadsAndValidates(t *testing.T) {
	cfg := mustLoad(t, writeFile(t, t.TempDir(), "c.yaml", validProfilesYAML), nil)
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if !cfg.LLM.Vision || cfg.LLM.Transcription != (config.Transcription{Provider: "local", Model: "whisper-1"}) {
		t.Errorf("llm.vision %v, llm.transcription %+v", cfg.LLM.Vision, cfg.LLM.Transcription)
	}
	if p := cfg.Profiles["community"]; p.Tools == nil || len(p.Tools) != 0 {
		t.Errorf("community tools = %#v, want an empty list (no tools)", p.Tools)
	}
	if p := cfg.Profiles["support"]; p.Tools == nil || p.Vision == nil || *p.Vision || p.Subagents == nil ||
		*p.Subagents.MaxDepth != 1 || *p.Subagents.MaxConcurrent != 2 || p.HistoryTurns != 20 {
		t.Errorf("support = %+v", p)
	}
	if got := cfg.Routes[1].Match; got.Guild != "112233445566778899" || got.Platform != "discord" || got.DM != nil {
		t.Errorf("routes[1].match = %+v", got)
	}
	if len(cfg.Routes) != 4 || cfg.Routes[3].Match != (config.RouteMatch{}) {
		t.Errorf("routes = %+v", cfg.Routes)
	}
}

// TestConfigWithoutProfilesIsUnchanged: a configuration that predates profiles loads exactly as
// before: no providers, profiles nor routes, vision off, transcription off.
func TestConfigWithoutProfilesIsUnchanged(t *testing.T) {
	cfg := mustLoad(t, writeFile(t, t.TempDir(), "c.yaml", "llm: {model: deepseek-chat}\nruns: {workers: 3}\n"), nil)
	if cfg.LLM.Providers != nil || cfg.Profiles != nil || cfg.Routes != nil || cfg.LLM.Vision ||
		cfg.LLM.Transcription != (config.Transcription{}) {
		t.Errorf("new keys are set: %+v %+v %+v", cfg.LLM, cfg.Profiles, cfg.Routes)
	}
	// Empty structures are the same as none.
	cfg = mustLoad(t, writeFile(t, t.TempDir(), "c.yaml", "llm: {providers: {}}\nprofiles: {}\nroutes: []\n"), nil)
	if cfg.LLM.Providers != nil || cfg.Profiles != nil || cfg.Routes != nil {
		t.Errorf("empty structures load as %+v %+v %+v", cfg.LLM.Providers, cfg.Profiles, cfg.Routes)
	}
	cfg = mustLoad(t, writeFile(t, t.TempDir(), "c.yaml", "llm: {providers: ~}\nprofiles: ~\nroutes: ~\n"), nil)
	if cfg.LLM.Providers != nil || cfg.Profiles != nil || cfg.Routes != nil {
		t.Errorf("null structures load as %+v %+v %+v", cfg.LLM.Providers, cfg.Profiles, cfg.Routes)
	}
}

// TestProfilesConfigMalformed: every malformed tree is refused by Load with the key at fault,
// and no message quotes a provider's api_key.
func TestProfilesConfigMalformed(t *testing.T) {
	cases := []struct {
		name, yaml, key, msg string
	}{
		{"providers not a mapping", "llm:\n  providers: [a]\n", "llm.providers", "mapping"},
		{"provider not a mapping", "llm:\n  providers:\n    local: S3CRET-scalar\n", "llm.providers.local", "mapping"},
		{"provider null", "llm:\n  providers:\n    local: ~\n", "llm.providers.local", "null"},
		{"unknown provider key", "llm:\n  providers:\n    local: {base_url: 'http://h', apikey: S3CRET-typo}\n", "llm.providers.local.apikey", "unknown key"},
		{"provider api_key a list", "llm:\n  providers:\n    local: {base_url: 'http://h', api_key: [S3CRET-list]}\n", "llm.providers.local.api_key", "a string"},
		{"provider timeout without unit", "llm:\n  providers:\n    local: {base_url: 'http://h', timeout: 30}\n", "llm.providers.local.timeout", "duration"},
		{"provider retries not a number", "llm:\n  providers:\n    local: {base_url: 'http://h', max_retries: many}\n", "llm.providers.local.max_retries", "whole number"},
		{"transcription not a mapping", "llm:\n  transcription: whisper-1\n", "llm.transcription", "section"},
		{"unknown transcription key", "llm:\n  transcription: {modle: whisper-1}\n", "llm.transcription.modle", "unknown key"},
		{"profiles not a mapping", "profiles: [support]\n", "profiles", "mapping"},
		{"profile not a mapping", "profiles:\n  support: text\n", "profiles.support", "mapping"},
		{"unknown profile key", "profiles:\n  support: {system: x}\n", "profiles.support.system", "unknown key"},
		{"profile vision not a bool", "profiles:\n  support: {vision: sometimes}\n", "profiles.support.vision", "true or false"},
		{"profile history not a number", "profiles:\n  support: {history_turns: lots}\n", "profiles.support.history_turns", "whole number"},
		{"profile tools a mapping", "profiles:\n  support: {tools: {a: b}}\n", "profiles.support.tools", "list"},
		{"profile subagents not a mapping", "profiles:\n  support: {subagents: 2}\n", "profiles.support.subagents", "mapping"},
		{"unknown subagents key", "profiles:\n  support: {subagents: {depth: 1}}\n", "profiles.support.subagents.depth", "unknown key"},
		{"routes not a list", "routes: {match: {}}\n", "routes", "list"},
		{"route not a mapping", "routes: [support]\n", "routes[0]", "mapping"},
		{"unknown route key", "routes:\n  - {match: {}, profile: a, priority: 1}\n", "routes[0].priority", "unknown key"},
		{"unknown selector", "routes:\n  - {match: {}, profile: a}\n  - {match: {teams: [T1]}, profile: a}\n", "routes[1].match.teams", "unknown key"},
		{"selectors not a mapping", "routes:\n  - {match: slack, profile: a}\n", "routes[0].match", "mapping"},
		{"dm not a bool", "routes:\n  - {match: {dm: sometimes}, profile: a}\n", "routes[0].match.dm", "true or false"},
		{"guild as a float", "routes:\n  - {match: {guild: 1.1223344556677889e+17}, profile: a}\n", "routes[0].match.guild", "quotes"},
		{"guild past uint64", "routes:\n  - {match: {guild: 99999999999999999999}, profile: a}\n", "routes[0].match.guild", "quotes"},
		{"channel a boolean", "routes:\n  - {match: {channel: yes, user: true}, profile: a}\n", "routes[0].match.user", "quotes"},
		{"selector a list", "routes:\n  - {match: {channel: [C1, C2]}, profile: a}\n", "routes[0].match.channel", "a string"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ve := loadProblems(t, writeFile(t, t.TempDir(), "c.yaml", tc.yaml), nil)
			if !ve.Has(tc.key) {
				t.Errorf("no problem at %s: %v", tc.key, ve)
			}
			if !strings.Contains(ve.Error(), tc.msg) {
				t.Errorf("error does not say %q: %v", tc.msg, ve)
			}
			if strings.Contains(ve.Error(), marker) {
				t.Errorf("error quotes a secret: %v", ve)
			}
		})
	}
}

// TestProfilesValidation: each rule of profiles, routes and providers is reported at the key of
// the profile, route or provider at fault.
func TestProfilesValidation(t *testing.T) {
	valid := func() *config.Config {
		c := mustLoad(t, writeFile(t, t.TempDir(), "c.yaml", validProfilesYAML), nil)
		if err := c.Validate(); err != nil {
			t.Fatalf("the base configuration does not validate: %v", err)
		}
		return c
	}
	setProfile := func(c *config.Config, name string, change func(p *config.Profile)) {
		p := c.Profiles[name]
		change(&p)
		c.Profiles[name] = p
	}
	setProvider := func(c *config.Config, change func(p *config.LLMProvider)) {
		p := c.LLM.Providers["local"]
		change(&p)
		c.LLM.Providers["local"] = p
	}
	n := func(i int) *int { return &i }
	tests := []struct {
		name   string
		change func(c *config.Config)
		want   []string
	}{
		{"route naming an unknown profile", func(c *config.Config) { c.Routes[2].Profile = "suport" }, []string{"routes[2].profile"}},
		{"route naming no profile", func(c *config.Config) { c.Routes[0].Profile = "" }, []string{"routes[0].profile"}},
		{"unknown platform", func(c *config.Config) { c.Routes[2].Match.Platform = "irc" }, []string{"routes[2].match.platform"}},
		{"team on discord", func(c *config.Config) { c.Routes[1].Match.Team = "T1" },
			[]string{"routes[1].match.team", "routes[1].match.guild"}},
		{"enterprise on telegram", func(c *config.Config) {
			c.Routes[2].Match = config.RouteMatch{Platform: "telegram", Enterprise: "E1"}
		}, []string{"routes[2].match.enterprise"}},
		{"guild on slack", func(c *config.Config) { c.Routes[0].Match.Guild = "1" }, []string{"routes[0].match.guild"}},
		{"guild with a team and no platform", func(c *config.Config) {
			c.Routes[3].Match = config.RouteMatch{Team: "T1", Guild: "1"}
		}, []string{"routes[3].match.guild"}},
		{"guild not numeric", func(c *config.Config) { c.Routes[1].Match.Guild = "my server" }, []string{"routes[1].match.guild"}},
		{"profile named default", func(c *config.Config) { c.Profiles["default"] = config.Profile{} }, []string{"profiles.default"}},
		{"profile named Default", func(c *config.Config) { c.Profiles["Default"] = config.Profile{} }, []string{"profiles.Default"}},
		{"bad profile name", func(c *config.Config) { c.Profiles["-x"] = config.Profile{} }, []string{"profiles.-x"}},
		{"profile name too long", func(c *config.Config) { c.Profiles[strings.Repeat("p", 65)] = config.Profile{} },
			[]string{"profiles." + strings.Repeat("p", 65)}},
		{"unknown provider", func(c *config.Config) { setProfile(c, "support", func(p *config.Profile) { p.Provider = "remote" }) },
			[]string{"profiles.support.provider"}},
		{"bad tools glob", func(c *config.Config) {
			setProfile(c, "support", func(p *config.Profile) { p.Tools = []string{"tickets__*", "[", " "} })
		}, []string{"profiles.support.tools", "profiles.support.tools"}},
		{"empty model in models", func(c *config.Config) {
			setProfile(c, "support", func(p *config.Profile) { p.Models = append(p.Models, "") })
		}, []string{"profiles.support.models[2]"}},
		{"model not among models", func(c *config.Config) {
			setProfile(c, "support", func(p *config.Profile) { p.Model = "gpt-4o" })
		}, []string{"profiles.support.models"}},
		{"default model not among models", func(c *config.Config) {
			setProfile(c, "support", func(p *config.Profile) { p.Model, p.Models = "", []string{"deepseek-reasoner"} })
		}, []string{"profiles.support.models"}},
		{"provider without a model", func(c *config.Config) { setProvider(c, func(p *config.LLMProvider) { p.Model = "" }) },
			[]string{"profiles.community.model"}},
		{"negative history", func(c *config.Config) {
			setProfile(c, "support", func(p *config.Profile) { p.HistoryTurns = -1 })
		}, []string{"profiles.support.history_turns"}},
		{"negative subagent limits", func(c *config.Config) {
			setProfile(c, "support", func(p *config.Profile) {
				p.Subagents = &config.ProfileSubagents{MaxDepth: n(-1), MaxConcurrent: n(-2)}
			})
		}, []string{"profiles.support.subagents.max_depth", "profiles.support.subagents.max_concurrent"}},
		{"no concurrency with subagents on", func(c *config.Config) {
			setProfile(c, "support", func(p *config.Profile) { p.Subagents = &config.ProfileSubagents{MaxConcurrent: n(0)} })
		}, []string{"profiles.support.subagents.max_concurrent"}},
		{"provider name", func(c *config.Config) {
			c.LLM.Providers["a__b"] = config.LLMProvider{BaseURL: "http://h", Timeout: time.Second}
		}, []string{"llm.providers.a__b"}},
		{"provider without base_url", func(c *config.Config) { setProvider(c, func(p *config.LLMProvider) { p.BaseURL = "" }) },
			[]string{"llm.providers.local.base_url"}},
		{"provider with a non-http url", func(c *config.Config) {
			setProvider(c, func(p *config.LLMProvider) { p.BaseURL = "unix:///run/llm.sock" })
		}, []string{"llm.providers.local.base_url"}},
		{"provider limits", func(c *config.Config) {
			setProvider(c, func(p *config.LLMProvider) { p.Timeout, p.MaxRetries = 0, -1 })
		}, []string{"llm.providers.local.timeout", "llm.providers.local.max_retries"}},
		{"provider key with a line break", func(c *config.Config) {
			setProvider(c, func(p *config.LLMProvider) { p.APIKey = "sk-1\n" })
		}, []string{"llm.providers.local.api_key"}},
		{"unknown transcription provider", func(c *config.Config) { c.LLM.Transcription.Provider = "openai" },
			[]string{"llm.transcription.provider"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid()
			tt.change(c)
			var ve *config.ValidationError
			if err := c.Validate(); !errors.As(err, &ve) {
				t.Fatalf("Validate() = %v, want a *ValidationError", err)
			}
			var got []string
			for _, p := range ve.Problems {
				got = append(got, p.Key)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("problems at %q, want %q\n%v", got, tt.want, ve)
			}
		})
	}
}

// TestProfilesValidationAccepts: what the rules allow: a route to default, subagents off with no
// concurrency, a provider without a key, a transcription on the top-level endpoint.
func TestProfilesValidationAccepts(t *testing.T) {
	zero := 0
	c := mustLoad(t, writeFile(t, t.TempDir(), "c.yaml", validProfilesYAML), nil)
	c.Profiles["quiet"] = config.Profile{Subagents: &config.ProfileSubagents{MaxDepth: &zero, MaxConcurrent: &zero}, Models: []string{"deepseek-chat"}}
	c.Routes = append(c.Routes, config.Route{Match: config.RouteMatch{Enterprise: "E1", Team: "T1", DM: new(bool)}, Profile: "quiet"})
	c.LLM.Transcription.Provider = ""
	if err := c.Validate(); err != nil {
		t.Errorf("Validate() = %v", err)
	}
}

// TestRouteSelectorsTakeUnquotedIDs: a Discord guild id written as a YAML number is taken as its
// exact decimal digits, past 2^53 included.
func TestRouteSelectorsTakeUnquotedIDs(t *testing.T) {
	cfg := mustLoad(t, writeFile(t, t.TempDir(), "c.yaml", `
routes:
  - match: {platform: discord, guild: 112233445566778899, channel: 998877665544332211}
    profile: default
  - match: {guild: 18446744073709551615, user: 42}
    profile: default
`), nil)
	if m := cfg.Routes[0].Match; m.Guild != "112233445566778899" || m.Channel != "998877665544332211" {
		t.Errorf("routes[0].match = %+v", m)
	}
	if m := cfg.Routes[1].Match; m.Guild != "18446744073709551615" || m.User != "42" {
		t.Errorf("routes[1].match = %+v", m)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate() = %v", err)
	}
}

// TestProviderDefaultsFromTheTopLevel: a provider's unset timeout and max_retries are the final
// llm.timeout and llm.max_retries (the environment's included); set ones, 0 retries included,
// stay.
func TestProviderDefaultsFromTheTopLevel(t *testing.T) {
	path := writeFile(t, t.TempDir(), "c.yaml", `
llm:
  max_retries: 4
  providers:
    plain: {base_url: "http://a/v1"}
    own: {base_url: "http://b/v1", timeout: 5s, max_retries: 0}
    nulls: {base_url: "http://c/v1", timeout: ~, max_retries: ~}
`)
	cfg := mustLoad(t, path, []string{"BOT_LLM__TIMEOUT=90s"})
	want := map[string]config.LLMProvider{
		"plain": {BaseURL: "http://a/v1", Timeout: 90 * time.Second, MaxRetries: 4},
		"own":   {BaseURL: "http://b/v1", Timeout: 5 * time.Second, MaxRetries: 0},
		"nulls": {BaseURL: "http://c/v1", Timeout: 90 * time.Second, MaxRetries: 4},
	}
	if !reflect.DeepEqual(cfg.LLM.Providers, want) {
		t.Errorf("providers = %+v\nwant %+v", cfg.LLM.Providers, want)
	}
}

// TestEndpoint: "" is the top-level endpoint, a name its provider, anything else nothing.
func TestEndpoint(t *testing.T) {
	cfg := mustLoad(t, writeFile(t, t.TempDir(), "c.yaml", validProfilesYAML), []string{"BOT_LLM__API_KEY=sk-top"})
	top, ok := cfg.LLM.Endpoint("")
	if !ok || top != (config.LLMProvider{BaseURL: config.DefaultLLMBaseURL, APIKey: "sk-top", Model: "deepseek-chat",
		Timeout: 2 * time.Minute, MaxRetries: 3}) {
		t.Errorf("Endpoint(\"\") = %+v, %v", top, ok)
	}
	if local, ok := cfg.LLM.Endpoint("local"); !ok || local.Model != "llama3.1" || local.Timeout != 2*time.Minute {
		t.Errorf("Endpoint(local) = %+v, %v", local, ok)
	}
	if _, ok := cfg.LLM.Endpoint("remote"); ok {
		t.Error("Endpoint(remote) found something")
	}
}

// TestProviderAPIKeyFile: api_key_file is read relative to the config file's folder into
// api_key; setting both, or a file that cannot be read, is an error naming the key.
func TestProviderAPIKeyFile(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "hosted-key", "  sk-from-a-file\n")
	cfg := mustLoad(t, writeFile(t, dir, "c.yaml", `
llm:
  providers:
    hosted: {base_url: "https://llm.example.com/v1", api_key_file: hosted-key}
    local: {base_url: "http://localhost:11434/v1", api_key_file: ~}
`), nil)
	if got := cfg.LLM.Providers["hosted"].APIKey; got != "sk-from-a-file" {
		t.Errorf("api_key = %q, want the file's contents trimmed", got)
	}
	if got := cfg.LLM.Providers["local"].APIKey; got != "" {
		t.Errorf("local api_key = %q", got)
	}

	for name, tc := range map[string]struct{ yaml, msg string }{
		"both":         {"llm:\n  providers:\n    h: {base_url: 'http://h', api_key: S3CRET-inline, api_key_file: hosted-key}\n", "not both"},
		"missing file": {"llm:\n  providers:\n    h: {base_url: 'http://h', api_key_file: nonexistent}\n", "no such file"},
		"not a path":   {"llm:\n  providers:\n    h: {base_url: 'http://h', api_key_file: [a]}\n", "file path"},
	} {
		t.Run(name, func(t *testing.T) {
			ve := loadProblems(t, writeFile(t, dir, "bad.yaml", tc.yaml), nil)
			if !ve.Has("llm.providers.h.api_key_file") || !strings.Contains(ve.Error(), tc.msg) {
				t.Errorf("want a problem at llm.providers.h.api_key_file saying %q: %v", tc.msg, ve)
			}
			assertNoSecret(t, "Load error", ve.Error())
		})
	}
}

// TestProfilesFromTheEnvironment: the scalar keys come from the environment; the structured
// ones are refused there with a message saying where they go.
func TestProfilesFromTheEnvironment(t *testing.T) {
	cfg := mustLoad(t, "", []string{"BOT_LLM__VISION=true", "BOT_LLM__TRANSCRIPTION__MODEL=whisper-1",
		"BOT_LLM__TRANSCRIPTION__PROVIDER=local"})
	if !cfg.LLM.Vision || cfg.LLM.Transcription.Model != "whisper-1" || cfg.LLM.Transcription.Provider != "local" {
		t.Errorf("llm = %+v", cfg.LLM)
	}
	var ve *config.ValidationError
	if err := cfg.Validate(); !errors.As(err, &ve) || !ve.Has("llm.transcription.provider") {
		t.Errorf("Validate() = %v, want the unknown transcription provider", err)
	}

	// An empty variable is ignored, as every empty BOT_ variable is.
	mustLoad(t, "", []string{"BOT_PROFILES=", "BOT_LLM__PROVIDERS__LOCAL__API_KEY="})
	ve = loadProblems(t, "", []string{
		"BOT_PROFILES=support", "BOT_PROFILES__SUPPORT__MODEL=x", "BOT_ROUTES=[]",
		"BOT_LLM__PROVIDERS__LOCAL__API_KEY=S3CRET-env", "BOT_TOOLS__SERVERS__A__URL=http://h",
	})
	for _, k := range []string{"profiles", "profiles.support.model", "routes", "llm.providers.local.api_key", "tools.servers.a.url"} {
		if !ve.Has(k) {
			t.Errorf("no problem at %s: %v", k, ve)
		}
	}
	if !strings.Contains(ve.Error(), "YAML file only") {
		t.Errorf("the problems do not say where the keys go: %v", ve)
	}
	assertNoSecret(t, "Load error", ve.Error())
}

// TestProfilesRedactedLoadsBack: Redacted prints profiles, routes and providers in the file's
// spelling, provider keys hidden, and what it prints loads back to the same configuration.
func TestProfilesRedactedLoadsBack(t *testing.T) {
	cfg := mustLoad(t, writeFile(t, t.TempDir(), "c.yaml", validProfilesYAML+"  - match: {dm: false, user: \"42\", enterprise: E1}\n    profile: support\n"), nil)
	out := cfg.Redacted()
	for _, want := range []string{"system_prompt: You answer questions about our product.", "tools: []",
		`guild: "112233445566778899"`, "max_concurrent: 2", "dm: false", "transcription:\n    provider: local\n    model: whisper-1"} {
		if !strings.Contains(out, want) {
			t.Errorf("Redacted() lacks %q:\n%s", want, out)
		}
	}
	again := mustLoad(t, writeFile(t, t.TempDir(), "printed.yaml", out), nil)
	if !reflect.DeepEqual(again.Profiles, cfg.Profiles) || !reflect.DeepEqual(again.Routes, cfg.Routes) ||
		!reflect.DeepEqual(again.LLM, cfg.LLM) {
		t.Errorf("round trip changed the profiles:\n%s\nvs\n%s", again.Redacted(), out)
	}
}
