package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"

	slackadapter "github.com/switchboard-bot/switchboard/adapters/slack"
	"github.com/switchboard-bot/switchboard/config"
)

// The command is registered here, beside the Slack wiring, rather than in main.go's table.
func init() {
	commands = append(commands, command{
		name: "slack-manifest", synopsis: "[-c FILE] [-url https://PUBLIC-HOST]", ownFlags: true,
		summary: "print the Slack app manifest for this configuration (paste it at api.slack.com/apps)",
		detail: `Prints an app manifest (YAML) that creates a Slack app matching the configuration: the bot
scopes and events Switchboard reads, Slack's agent messaging experience (features.agent_view,
the AI app surface of new apps, with slack.suggested_prompts), interactivity, and
slack.command. In socket mode (the
default) Socket Mode is enabled and no URL is needed; in http mode -url is the public base URL
in front of http.addr, and the request URLs are it plus slack.events_path,
slack.interactions_path and slack.commands_path.

flags:
  -c FILE   configuration file (YAML); BOT_CONFIG when empty
  -url URL  the public https base URL (http mode)`,
		run: func(_ context.Context, inv invocation) int {
			return slackManifestCommand(inv.args, inv.environ, inv.stdout, inv.stderr)
		},
	})
}

func slackManifestCommand(args, environ []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bot slack-manifest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("c", "", "configuration file (YAML); BOT_CONFIG when empty")
	public := fs.String("url", "", "the public https base URL (http mode)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitConfig
	}
	cfg, err := config.Load(*cfgPath, environ)
	if err != nil {
		fmt.Fprintln(stderr, "bot slack-manifest:", err)
		return exitConfig
	}
	m, err := slackManifest(cfg.Slack, *public)
	if err != nil {
		fmt.Fprintln(stderr, "bot slack-manifest:", err)
		return exitConfig
	}
	fmt.Fprint(stdout, m)
	return exitOK
}

// slackAgentDescription is the manifest's agent_view.agent_description (Slack takes 300
// characters at most).
const slackAgentDescription = "An agent team that can delegate, ask you questions and answer in cards"

// slackManifest is the app manifest for s; public is the https base URL of http mode. It
// follows Slack's app manifest reference (https://docs.slack.dev/reference/app-manifest) for
// an app on the agent messaging experience (features.agent_view: the app's conversations are
// the DM of its Messages tab, each top-level message a thread it answers in), which is all
// Slack lets a new app use; assistant_view, its predecessor, is kept for existing apps only.
// Its events: app_home_opened, the user opening that DM (the prompts are offered there), and
// message.im, what is said in it — assistant_thread_started is not sent to agent_view apps.
// https://docs.slack.dev/ai/migrating-to-agent-messaging/
func slackManifest(s config.Slack, public string) (string, error) {
	httpMode := s.Mode == config.SlackHTTP
	if httpMode {
		u, err := url.Parse(public)
		if err != nil || u.Scheme != "https" || u.Host == "" {
			return "", errors.New("http mode needs -url, the public https base URL Slack posts to")
		}
		public = strings.TrimRight(public, "/")
	}
	q := func(s string) string { return fmt.Sprintf("%q", s) }
	var b strings.Builder
	b.WriteString(`display_information:
  name: Switchboard
  description: An agent team in your workspace
features:
  bot_user:
    display_name: Switchboard
    always_online: true
  agent_view:
    agent_description: ` + q(slackAgentDescription) + `
`)
	if prompts := slackadapter.SuggestedPrompts(s.SuggestedPrompts); len(prompts) > 0 {
		b.WriteString("    suggested_prompts:\n")
		for _, p := range prompts {
			b.WriteString("      - title: " + q(p.Title) + "\n        message: " + q(p.Message) + "\n")
		}
	}
	b.WriteString(`  app_home:
    messages_tab_enabled: true
    messages_tab_read_only_enabled: false
  slash_commands:
    - command: ` + q(s.Command) + `
      description: "Switchboard: help, new, cancel, status, whoami"
      usage_hint: help
      should_escape: false
`)
	if httpMode {
		b.WriteString("      url: " + q(public+s.CommandsPath) + "\n")
	}
	b.WriteString("oauth_config:\n")
	if s.RedirectURL != "" {
		b.WriteString("  redirect_urls:\n    - " + q(s.RedirectURL) + "\n")
	}
	// The scopes an OAuth install asks for, so an app made from the manifest has exactly them.
	b.WriteString("  scopes:\n    bot:\n")
	for _, scope := range slackadapter.DefaultScopes {
		b.WriteString("      - " + scope + "\n")
	}
	b.WriteString(`settings:
  event_subscriptions:
`)
	if httpMode {
		b.WriteString("    request_url: " + q(public+s.EventsPath) + "\n")
	}
	b.WriteString(`    bot_events:
      - app_mention
      - message.channels
      - message.groups
      - message.im
      - message.mpim
      - app_home_opened
      - app_uninstalled
      - tokens_revoked
  interactivity:
    is_enabled: true
`)
	if httpMode {
		b.WriteString("    request_url: " + q(public+s.InteractionsPath) + "\n")
	}
	fmt.Fprintf(&b, "  org_deploy_enabled: false\n  socket_mode_enabled: %t\n  token_rotation_enabled: false\n", !httpMode)
	return b.String(), nil
}
