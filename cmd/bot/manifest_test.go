package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	slackadapter "github.com/switchboard-bot/switchboard/adapters/slack"
	"github.com/switchboard-bot/switchboard/config"
)

type manifest struct {
	Features struct {
		AgentView *struct {
			Description string `yaml:"agent_description"`
			Prompts     []struct {
				Title   string `yaml:"title"`
				Message string `yaml:"message"`
			} `yaml:"suggested_prompts"`
		} `yaml:"agent_view"`
		// AssistantView is the surface of apps made before agent_view; a new app cannot use it.
		AssistantView map[string]any `yaml:"assistant_view"`
		SlashCommands []struct {
			Command string `yaml:"command"`
			URL     string `yaml:"url"`
		} `yaml:"slash_commands"`
	} `yaml:"features"`
	OAuth struct {
		RedirectURLs []string `yaml:"redirect_urls"`
		Scopes       struct {
			Bot []string `yaml:"bot"`
		} `yaml:"scopes"`
	} `yaml:"oauth_config"`
	Settings struct {
		Events struct {
			RequestURL string   `yaml:"request_url"`
			BotEvents  []string `yaml:"bot_events"`
		} `yaml:"event_subscriptions"`
		Interactivity struct {
			Enabled    bool   `yaml:"is_enabled"`
			RequestURL string `yaml:"request_url"`
		} `yaml:"interactivity"`
		SocketMode bool `yaml:"socket_mode_enabled"`
	} `yaml:"settings"`
}

func parseManifest(t *testing.T, s string) manifest {
	t.Helper()
	var m manifest
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("the manifest is not YAML: %v\n%s", err, s)
	}
	return m
}

// TestSlackManifestMatchesTheConfiguration proves `bot slack-manifest` prints a manifest with
// the scopes and events the adapter reads, Socket Mode on by default, and in http mode the
// request URLs of the configured paths under -url.
func TestSlackManifestMatchesTheConfiguration(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	if code := runContext(context.Background(), []string{"slack-manifest"}, strings.NewReader(""), &out, &errb, []string{"BOT_SLACK__COMMAND=/sb"}); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	m := parseManifest(t, out.String())
	if !m.Settings.SocketMode || m.Settings.Events.RequestURL != "" || !m.Settings.Interactivity.Enabled {
		t.Errorf("socket mode manifest: %+v", m.Settings)
	}
	if len(m.Features.SlashCommands) != 1 || m.Features.SlashCommands[0].Command != "/sb" {
		t.Errorf("slash commands %+v", m.Features.SlashCommands)
	}
	for _, s := range []string{"app_mentions:read", "im:history", "channels:history", "chat:write", "assistant:write", "commands", "files:read", "files:write"} {
		if !slices.Contains(m.OAuth.Scopes.Bot, s) {
			t.Errorf("scope %s missing", s)
		}
	}
	// An app made from the manifest has the scopes an OAuth install asks for, no more, no fewer.
	if !slices.Equal(m.OAuth.Scopes.Bot, slackadapter.DefaultScopes) {
		t.Errorf("manifest bot scopes %v, the adapter's install asks %v", m.OAuth.Scopes.Bot, slackadapter.DefaultScopes)
	}
	for _, e := range []string{"app_mention", "message.im", "message.channels", "app_uninstalled"} {
		if !slices.Contains(m.Settings.Events.BotEvents, e) {
			t.Errorf("event %s missing", e)
		}
	}

	cfg := config.Default()
	cfg.Slack.Mode = config.SlackHTTP
	if _, err := slackManifest(cfg.Slack, ""); err == nil {
		t.Error("http mode without a public URL was accepted")
	}
	if _, err := slackManifest(cfg.Slack, "http://insecure.example.com"); err == nil {
		t.Error("http mode with a plain-http URL was accepted")
	}
	cfg.Slack.RedirectURL = "https://bot.example.com/slack/oauth/callback"
	s, err := slackManifest(cfg.Slack, "https://bot.example.com/")
	if err != nil {
		t.Fatal(err)
	}
	m = parseManifest(t, s)
	if m.Settings.SocketMode || m.Settings.Events.RequestURL != "https://bot.example.com/slack/events" ||
		m.Settings.Interactivity.RequestURL != "https://bot.example.com/slack/interactions" ||
		m.Features.SlashCommands[0].URL != "https://bot.example.com/slack/commands" ||
		len(m.OAuth.RedirectURLs) != 1 || m.OAuth.RedirectURLs[0] != cfg.Slack.RedirectURL {
		t.Errorf("http mode manifest:\n%s", s)
	}
}

// TestSlackManifestDeclaresTheAgentView proves the manifest makes an app of Slack's agent
// messaging experience, as Slack's app manifest reference has it: features.agent_view with an
// agent_description within Slack's 300 characters and slack.suggested_prompts as its
// suggested_prompts (four at most, titled as the adapter offers them), no assistant_view, the
// app_home_opened event that tells the adapter a user opened the agent's DM and message.im for
// what is said there, no assistant_thread_started (Slack sends it to assistant_view apps
// only), and assistant:write, which the prompts and titles need.
func TestSlackManifestDeclaresTheAgentView(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Slack.SuggestedPrompts = []string{"What can you do?", `Plan "my" week: ` + strings.Repeat("x", 80), "Three", "Four", "Five"}
	s, err := slackManifest(cfg.Slack, "")
	if err != nil {
		t.Fatal(err)
	}
	m := parseManifest(t, s)
	av := m.Features.AgentView
	if av == nil || av.Description == "" || len([]rune(av.Description)) > 300 {
		t.Fatalf("agent_view %+v, want one with an agent_description of at most 300 characters:\n%s", av, s)
	}
	if m.Features.AssistantView != nil {
		t.Errorf("the manifest still declares assistant_view: %v", m.Features.AssistantView)
	}
	want := slackadapter.SuggestedPrompts(cfg.Slack.SuggestedPrompts)
	if len(av.Prompts) != slackadapter.MaxSuggestedPrompts || len(want) != len(av.Prompts) {
		t.Fatalf("suggested prompts %+v, want the first %d of the configured", av.Prompts, slackadapter.MaxSuggestedPrompts)
	}
	for i, p := range av.Prompts {
		if p.Title != want[i].Title || p.Message != want[i].Message || p.Message != cfg.Slack.SuggestedPrompts[i] {
			t.Errorf("prompt %d is %+v, want %+v", i, p, want[i])
		}
	}
	if !slices.Contains(m.Settings.Events.BotEvents, "app_home_opened") || !slices.Contains(m.Settings.Events.BotEvents, "message.im") {
		t.Errorf("events %v: the agent's DM needs app_home_opened and message.im", m.Settings.Events.BotEvents)
	}
	if slices.Contains(m.Settings.Events.BotEvents, "assistant_thread_started") {
		t.Errorf("events %v: assistant_thread_started is for assistant_view apps", m.Settings.Events.BotEvents)
	}
	if !slices.Contains(m.OAuth.Scopes.Bot, "assistant:write") {
		t.Errorf("scopes %v: the prompts and titles need assistant:write", m.OAuth.Scopes.Bot)
	}

	cfg.Slack.SuggestedPrompts = nil
	if s, err = slackManifest(cfg.Slack, ""); err != nil {
		t.Fatal(err)
	}
	if m = parseManifest(t, s); m.Features.AgentView == nil || len(m.Features.AgentView.Prompts) != 0 {
		t.Errorf("without prompts: agent_view %+v", m.Features.AgentView)
	}
}
