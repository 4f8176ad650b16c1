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
		AssistantView struct {
			Description string `yaml:"assistant_description"`
		} `yaml:"assistant_view"`
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
	// The assistant view: the bot opens in Slack's AI app pane (assistant_thread_started).
	if m.Features.AssistantView.Description == "" {
		t.Errorf("no assistant_view in the manifest:\n%s", out.String())
	}
	for _, e := range []string{"app_mention", "message.im", "message.channels", "app_uninstalled", "assistant_thread_started"} {
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
