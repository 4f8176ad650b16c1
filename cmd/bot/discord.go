package main

import (
	"encoding/hex"
	"errors"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchboard-bot/switchboard/adapters/discord"
	"github.com/switchboard-bot/switchboard/channels/kit"
	"github.com/switchboard-bot/switchboard/config"
	"github.com/switchboard-bot/switchboard/core/intake"
	"github.com/switchboard-bot/switchboard/render"
)

// discordInteractionsPath is where the HTTP interactions endpoint is served when
// discord.public_key is set (the Developer Portal's Interactions Endpoint URL points there).
const discordInteractionsPath = "/discord/interactions"

// newDiscord builds the Discord channel from the discord.* settings, keeping its gateway
// sessions in sessions across restarts. Events the adapter skips as malformed are counted as
// refused inbound.
func newDiscord(cfg *config.Config, log *slog.Logger, key render.Key, m *metrics, sessions discord.SessionStore, leases discordHooks) (*discord.Channel, error) {
	pub, _ := hex.DecodeString(cfg.Discord.PublicKey) // validated: 64 hex digits or empty
	adminPerm, _ := config.DiscordPermission(cfg.Discord.AdminPermission)
	conns := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_discord_gateway_connections_total",
		Help: "Discord gateway connections made, by kind: identify (a new session) or resume (missed events replayed).",
	}, []string{"kind"})
	if err := m.reg.Register(conns); err != nil {
		return nil, err
	}
	globalRate := 0 // the adapter's default: Discord's global limit
	if !cfg.Discord.Pacing {
		globalRate = -1
	}
	return discord.New(discord.Config{
		Sessions:   sessions,
		GlobalRate: globalRate,
		OnConnect: func(_ int, resumed bool) {
			if resumed {
				conns.WithLabelValues("resume").Inc()
			} else {
				conns.WithLabelValues("identify").Inc()
			}
		},
		PublicKey: pub,
		// Validated: a name config.DiscordPermission knows, or "" (0, off).
		AdminPermission: adminPerm,
		Token:           cfg.Discord.Token,
		APIURL:          cfg.Discord.APIURL,
		ApplicationID:   cfg.Discord.ApplicationID,
		ReplyInThread:   cfg.Discord.ReplyInThread,
		ThreadReplies:   discord.ThreadReplies(cfg.Discord.ThreadReplies),
		Intents:         discordIntents(cfg.Discord.MessageContent),
		DevGuild:        cfg.Discord.DevGuild,
		ShardID:         cfg.Discord.ShardID,
		ShardCount:      cfg.Discord.ShardCount,
		AutoShard:       cfg.Discord.AutoShard,
		TypingAfter:     kit.DefaultTypingAfter,
		Logger:          log.With("channel", "discord"),
		ActionKey:       key,
		OnMalformedEvent: func() {
			m.refused.WithLabelValues("discord", "malformed").Inc()
		},
		RateLimits: leases.rateLimits,
		Lease:      leases.lease,
		LeaseName:  "discord:" + intake.DiscordBotID(cfg.Discord.Token),
		LeaseOwner: leases.owner,
		OnLease: func(_ int, held bool) {
			if leases.onLease != nil {
				leases.onLease(held)
			}
		},
		OnTakeover: func(int) {
			if leases.onTakeover != nil {
				leases.onTakeover()
			}
		},
	})
}

// discordHooks hold the shards among the processes sharing one Redis; the zero value runs every
// shard of the plan in this process.
type discordHooks struct {
	lease      kit.Lease
	owner      string
	onLease    func(held bool)
	onTakeover func()
	rateLimits *kit.RateLimitLog
}

// discordIntents are the gateway intents discord.message_content asks for.
func discordIntents(messageContent bool) int {
	if messageContent {
		return discord.DefaultIntents
	}
	return discord.MentionOnlyIntents
}

// discordIntentHint says what to do when Discord refused the message content intent.
func discordIntentHint(err error) (string, bool) {
	if errors.Is(err, discord.ErrIntentDisallowed) {
		return "open the Discord Developer Portal → your application → Bot → Privileged Gateway Intents, " +
			"turn on Message Content Intent, save, and start the bot again; or, to answer mentions and DMs only, " +
			"set discord.message_content: false and discord.thread_replies: mention", true
	}
	return "", false
}
