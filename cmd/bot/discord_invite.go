package main

import (
	"context"
	"fmt"
	"time"

	"github.com/switchboard-bot/switchboard/adapters/discord"
	"github.com/switchboard-bot/switchboard/config"
)

// The discord-invite subcommand registers itself here, beside the rest of the Discord wiring.
func init() {
	commands = append(commands, command{
		name: "discord-invite", synopsis: "[-c FILE]", config: true,
		summary: "print the URL that adds the Discord bot to a server",
		detail: `Prints the OAuth2 URL that invites the bot (scopes bot and applications.commands, with the
permissions answering in threads needs). The application id is discord.application_id, or is
asked of Discord with discord.token. Exit status 2 when neither is configured, 1 when Discord
cannot be asked.`,
		run: func(ctx context.Context, inv invocation) int {
			cfg, code := loadConfig(inv, (*config.Config).Validate)
			if cfg == nil {
				return code
			}
			return discordInvite(ctx, cfg, inv)
		},
	})
}

func discordInvite(ctx context.Context, cfg *config.Config, inv invocation) int {
	id := cfg.Discord.ApplicationID
	if id == "" {
		if cfg.Discord.Token == "" {
			fmt.Fprintln(inv.stderr, "bot: discord.application_id or discord.token is needed to make the invite URL (see docs/discord.md)")
			return exitConfig
		}
		ch, err := discord.New(discord.Config{Token: cfg.Discord.Token, APIURL: cfg.Discord.APIURL, CallTimeout: 15 * time.Second})
		if err != nil {
			fmt.Fprintln(inv.stderr, "bot:", err)
			return exitConfig
		}
		if id, err = ch.FetchApplicationID(ctx); err != nil {
			fmt.Fprintln(inv.stderr, "bot:", explainStart("discord", err))
			return exitEnv
		}
	}
	fmt.Fprintln(inv.stdout, discord.InviteURL(id))
	fmt.Fprintln(inv.stderr, "Open it, pick the server, authorize. Turn on Message Content Intent under Bot in the Developer Portal first.")
	return exitOK
}
