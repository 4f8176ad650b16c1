package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/config"
	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/core/profile"
)

// profilesYAML configures profiles and routes on top of a Telegram bot.
const profilesYAML = `
telegram: {token: "123456:ABC-def_ghi"}
llm:
  model: deepseek-chat
  system_prompt: Top-level prompt.
  vision: true
  providers:
    local:
      base_url: http://localhost:11434/v1
      api_key: sk-SECRET-PROVIDER-KEY-0123
      model: llama3.1
runs: {history_turns: 30}
subagents: {max_depth: 3, max_concurrent: 5}
profiles:
  support:
    system_prompt: You answer questions about our product.
    models: [deepseek-chat, deepseek-reasoner]
    tools: ["tickets__*", "wiki__search"]
    vision: false
    history_turns: 20
    subagents: {max_depth: 1}
  community:
    provider: local
    tools: []
    subagents: {max_depth: 0}
routes:
  - match: {platform: slack, team: T0123, channel: C0456}
    profile: support
  - match: {platform: discord, guild: 112233445566778899}
    profile: community
  - match: {platform: telegram, dm: true}
    profile: default
  - match: {platform: telegram}
    profile: support
`

func writeConfig(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func runCheckConfig(t *testing.T, environ []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = runContext(context.Background(), append([]string{"check-config"}, args...), strings.NewReader(""), &out, &errb, environ)
	return code, out.String(), errb.String()
}

// TestProfileSetFromConfig: the default profile is the top-level settings; a configured profile
// takes what it leaves unset from them, its provider's model when it names a provider but no
// model, and the other subagent limit from subagents.*; the routes keep their order.
func TestProfileSetFromConfig(t *testing.T) {
	t.Parallel()
	cfg, err := config.Load(writeConfig(t, profilesYAML), nil)
	if err != nil {
		t.Fatal(err)
	}
	set, err := profileSet(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]profile.Profile{
		"default": {Name: "default", SystemPrompt: "Top-level prompt.", Model: "deepseek-chat", Vision: true,
			HistoryTurns: 30, Subagents: profile.Subagents{MaxDepth: 3, MaxConcurrent: 5}},
		"support": {Name: "support", SystemPrompt: "You answer questions about our product.", Model: "deepseek-chat",
			Models: []string{"deepseek-chat", "deepseek-reasoner"}, Tools: []string{"tickets__*", "wiki__search"},
			Vision: false, HistoryTurns: 20, Subagents: profile.Subagents{MaxDepth: 1, MaxConcurrent: 5}},
		"community": {Name: "community", SystemPrompt: "Top-level prompt.", Model: "llama3.1", Provider: "local",
			Tools: []string{}, Vision: true, HistoryTurns: 30, Subagents: profile.Subagents{MaxDepth: 0, MaxConcurrent: 5}},
	}
	if got := set.Names(); !reflect.DeepEqual(got, []string{"default", "community", "support"}) {
		t.Errorf("Names() = %v", got)
	}
	for name, w := range want {
		if got, ok := set.Profile(name); !ok || !reflect.DeepEqual(got, w) {
			t.Errorf("profile %s = %+v\nwant %+v", name, got, w)
		}
	}
	routes := []struct {
		facts   profile.Facts
		route   int
		profile string
	}{
		{profile.Facts{Key: conv.Key{Platform: "slack", Workspace: "E1/T0123", Chat: "C0456"}}, 0, "support"},
		{profile.Facts{Key: conv.Key{Platform: "discord", Workspace: "112233445566778899", Chat: "5"}}, 1, "community"},
		{profile.Facts{Key: conv.Key{Platform: "telegram", Chat: "42"}, Direct: true}, 2, "default"},
		{profile.Facts{Key: conv.Key{Platform: "telegram", Chat: "-100"}}, 3, "support"},
		{profile.Facts{Key: conv.Key{Platform: "console", Chat: "local"}}, -1, "default"},
	}
	for _, r := range routes {
		got := set.Resolve(r.facts)
		if got.Route != r.route || got.Profile.Name != r.profile {
			t.Errorf("%v: route %d profile %s, want %d %s (%s)", r.facts.Key, got.Route, got.Profile.Name, r.route, r.profile, got.Why)
		}
	}
}

// TestProfileSetFromDefaultConfig: a configuration without profiles has the default alone, which
// every conversation gets.
func TestProfileSetFromDefaultConfig(t *testing.T) {
	t.Parallel()
	set, err := profileSet(config.Default())
	if err != nil {
		t.Fatal(err)
	}
	if got := set.Names(); !reflect.DeepEqual(got, []string{"default"}) {
		t.Errorf("Names() = %v", got)
	}
	r := set.Resolve(profile.Facts{Key: conv.Key{Platform: "slack", Workspace: "T1", Chat: "C1"}})
	if r.Route != -1 || r.Profile.Model != config.DefaultLLMModel || r.Profile.Tools != nil || r.Profile.Models != nil {
		t.Errorf("Resolve = %+v", r)
	}
}

// TestCheckConfigPrintsProfiles: after the configuration, check-config lists every profile with
// its model and endpoint, tools, vision, history and subagents, as YAML comments, so that what
// it prints still loads; no secret shows.
func TestCheckConfigPrintsProfiles(t *testing.T) {
	t.Parallel()
	code, out, errOut := runCheckConfig(t, nil, "-c", writeConfig(t, profilesYAML))
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "configuration OK") {
		t.Errorf("stderr: %s", errOut)
	}
	for _, want := range []string{
		"# Profiles (model@provider",
		"default    model: deepseek-chat ",
		"tools: all the policy allows",
		"community  model: llama3.1@local ",
		"tools: none",
		"subagents: off",
		"support    model: deepseek-chat ",
		"tools: tickets__*, wiki__search",
		"vision: no",
		"history: 20 turns",
		"subagents: depth 1, 5 at once",
		"models: deepseek-chat, deepseek-reasoner",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if i, j := strings.Index(out, "routes:"), strings.Index(out, "# Profiles"); i < 0 || j < i {
		t.Errorf("the profiles are not after the configuration:\n%s", out)
	}
	if strings.Contains(out+errOut, "SECRET") {
		t.Errorf("output shows a secret:\n%s\n%s", out, errOut)
	}
	if _, err := config.Load(writeConfig(t, out), nil); err != nil {
		t.Errorf("the printed configuration does not load: %v", err)
	}
}

// TestCheckConfigReportsProfileProblems: a route to an unknown profile, a profile naming an
// unknown provider: each named by its key, exit 2, and no profile list.
func TestCheckConfigReportsProfileProblems(t *testing.T) {
	t.Parallel()
	bad := strings.Replace(profilesYAML, "    profile: community", "    profile: comunity", 1)
	bad = strings.Replace(bad, "    provider: local", "    provider: remote", 1)
	code, out, errOut := runCheckConfig(t, nil, "-c", writeConfig(t, bad))
	if code != 2 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	for _, want := range []string{`routes[1].profile: no profile "comunity"`, `profiles.community.provider: no provider "remote"`} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if strings.Contains(out, "# Profiles") {
		t.Errorf("profiles listed for a configuration that does not resolve:\n%s", out)
	}
}

// TestCheckConfigRoute: --route says which profile a conversation gets and why, and exits 0.
func TestCheckConfigRoute(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, profilesYAML)
	tests := []struct {
		route string
		want  []string
	}{
		{"slack:T0123:C0456:", []string{"conversation: slack:T0123:C0456:", "profile: support",
			`why: route 0 (platform slack, team T0123, channel C0456) → profile "support"`, "tools: tickets__*, wiki__search"}},
		{"slack:E9/T0123:C0456:1712.5 user=E9:U1", []string{"profile: support", "user: E9:U1", "why: route 0 "}},
		{"discord:112233445566778899:55:", []string{"profile: community", "model: llama3.1@local", "tools: none",
			`why: route 1 (platform discord, guild 112233445566778899) → profile "community"`}},
		{"telegram::42: dm", []string{"dm: yes", "profile: default",
			"why: route 2 (platform telegram, dm true) → the default profile (the top-level settings)", "model: deepseek-chat\n"}},
		{"telegram::-100:", []string{"profile: support", "why: route 3 (platform telegram)"}},
		{"console::local:", []string{"profile: default", "why: no route matches → the default profile (the top-level settings)",
			"tools: all the policy allows", "history: 30 turns", "subagents: depth 3, 5 at once", "vision: yes", "models: any"}},
	}
	for _, tt := range tests {
		t.Run(tt.route, func(t *testing.T) {
			code, out, errOut := runCheckConfig(t, nil, "-c", path, "--route", tt.route)
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, "telegram:\n") || errOut != "" {
				t.Errorf("--route printed more than the answer:\n%s\n%s", out, errOut)
			}
		})
	}
	// The single-dash spelling and the file from BOT_CONFIG work too.
	code, out, _ := runCheckConfig(t, []string{"BOT_CONFIG=" + path}, "-route=slack:T0123:C0456:")
	if code != 0 || !strings.Contains(out, "profile: support") {
		t.Errorf("-route=…: exit %d\n%s", code, out)
	}
}

// TestCheckConfigRouteRefusesMalformedInput: a malformed conversation key, an unknown flag, a
// configuration that does not load or resolve: exit 2 with the reason.
func TestCheckConfigRouteRefusesMalformedInput(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, profilesYAML)
	tests := []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"three parts", []string{"-c", path, "--route", "slack:T0123:C0456"}, nil, "is not a conversation key"},
		{"empty", []string{"-c", path, "--route", ""}, nil, "no conversation key"},
		{"unknown platform", []string{"-c", path, "--route", "irc::chan:"}, nil, "platform must be one of"},
		{"unknown flag after the key", []string{"-c", path, "--route", "slack:T1:C1: admin"}, nil, `unknown flag "admin"`},
		{"no value", []string{"-c", path, "--route"}, nil, "flag needs an argument"},
		{"unknown option", []string{"-c", path, "--rout", "x"}, nil, "usage: bot check-config"},
		{"stray argument", []string{"-c", path, "slack:T1:C1:"}, nil, "unexpected argument"},
		{"config does not load", []string{"--route", "slack:T1:C1:"}, []string{"BOT_RUNS__WORKERS=many"}, "runs.workers"},
		{"route to no profile", []string{"-c", writeConfig(t, "routes: [{match: {}, profile: nobody}]\n"), "--route", "slack:T1:C1:"},
			nil, `routes[0]: no profile "nobody"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCheckConfig(t, tt.env, tt.args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2\n%s\n%s", code, out, errOut)
			}
			if !strings.Contains(errOut, tt.want) {
				t.Errorf("stderr lacks %q:\n%s", tt.want, errOut)
			}
		})
	}
}

// TestCheckConfigRouteWithOtherProblems: a problem that does not stop the answer (here an
// unknown provider) is reported, and the answer still exits 0.
func TestCheckConfigRouteWithOtherProblems(t *testing.T) {
	t.Parallel()
	bad := strings.Replace(profilesYAML, "    provider: local", "    provider: remote", 1)
	code, out, errOut := runCheckConfig(t, nil, "-c", writeConfig(t, bad), "--route", "discord:112233445566778899:1:")
	if code != 0 || !strings.Contains(out, "profile: community") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "profiles.community.provider") {
		t.Errorf("stderr does not report the problem:\n%s", errOut)
	}
}
