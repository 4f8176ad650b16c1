package main

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/switchboard-bot/switchboard/adapters/discord"
	slackadapter "github.com/switchboard-bot/switchboard/adapters/slack"
	"github.com/switchboard-bot/switchboard/adapters/telegram"
	"github.com/switchboard-bot/switchboard/core/intake"
)

// The adapters' stores over core/intake, whose types are plain: each conversion below is field
// for field, so a field added on one side only fails to compile here. intake.Lease and
// intake.Offsets need none (they have the adapters' method sets already).

var (
	_ slackadapter.Installations = slackInstallations{}
	_ telegram.Inbox             = telegramInbox{}
	_ telegram.OffsetStore       = intake.Offsets{}
	_ discord.SessionStore       = discordSessions{}
)

// slackInstallations is the Slack adapter's Installations: intake's store, its Installation
// converted.
type slackInstallations struct{ *intake.Installations }

func newSlackInstallations(c redis.UniversalClient, prefix string, signingKey []byte) (slackInstallations, error) {
	s, err := intake.NewInstallations(c, prefix, signingKey)
	return slackInstallations{s}, err
}

func (s slackInstallations) Installation(ctx context.Context, team string) (slackadapter.Installation, bool, error) {
	inst, found, err := s.Installations.Installation(ctx, team)
	return slackadapter.Installation(inst), found, err
}

func (s slackInstallations) SaveInstallation(ctx context.Context, inst slackadapter.Installation) error {
	return s.Installations.SaveInstallation(ctx, intake.Installation(inst))
}

// telegramInbox is the Telegram adapter's Inbox: intake's, its batches converted.
type telegramInbox struct{ intake.Inbox }

func (in telegramInbox) Pending(ctx context.Context) ([]telegram.InboxBatch, error) {
	kept, err := in.Inbox.Pending(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]telegram.InboxBatch, len(kept))
	for i, b := range kept {
		out[i] = telegram.InboxBatch(b)
	}
	return out, nil
}

// discordSessions is the Discord adapter's SessionStore: intake's, its sessions converted.
type discordSessions struct{ s intake.Sessions }

func newDiscordSessions(c redis.UniversalClient, prefix, token string) discordSessions {
	return discordSessions{intake.NewSessions(c, prefix, token)}
}

func (d discordSessions) LoadSession(ctx context.Context, shard int) (discord.Session, error) {
	s, err := d.s.LoadSession(ctx, shard)
	return discord.Session(s), err
}

func (d discordSessions) SaveSession(ctx context.Context, shard int, s discord.Session) error {
	return d.s.SaveSession(ctx, shard, intake.Session(s))
}
