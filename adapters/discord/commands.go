package discord

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/switchboard-bot/switchboard/channels"
)

// The slash commands: /bot <subcommand> for everyone's commands and /botadmin <subcommand> for
// the admin ones. Discord sets default_member_permissions per top-level command only, so the
// admin commands have their own, hidden from members without the Administrator permission —
// or, with Config.AdminPermission, without that permission (server admins can change it in
// Server Settings → Integrations). The router still checks admin rights on every use.
const (
	commandName      = "bot"
	adminCommandName = "botadmin"
	argsOption       = "args"
)

// commandSet is the commands to register, from the router's list. /botadmin's
// default_member_permissions is adminPerm (Config.AdminPermission), or "0" (administrators
// only) when it is zero.
func commandSet(specs []channels.CommandSpec, adminPerm uint64) []*discordgo.ApplicationCommand {
	perms := int64(adminPerm & (1<<63 - 1)) // one permission bit, far below bit 63
	user := &discordgo.ApplicationCommand{Name: commandName, Description: "Talk to the bot: help, new conversation, cancel, status", Type: discordgo.ChatApplicationCommand}
	admin := &discordgo.ApplicationCommand{Name: adminCommandName, Description: "Bot administration", Type: discordgo.ChatApplicationCommand,
		DefaultMemberPermissions: &perms}
	for _, s := range specs {
		name := strings.ToLower(strings.TrimPrefix(s.Name, "/"))
		if name == "" || len(name) > 32 {
			continue
		}
		desc := s.Description
		if desc == "" {
			desc = name
		}
		if r := []rune(desc); len(r) > 100 {
			desc = string(r[:99]) + "…"
		}
		opt := &discordgo.ApplicationCommandOption{Type: discordgo.ApplicationCommandOptionSubCommand, Name: name, Description: desc}
		if s.AdminOnly {
			opt.Options = []*discordgo.ApplicationCommandOption{{Type: discordgo.ApplicationCommandOptionString,
				Name: argsOption, Description: "Arguments, as you would type them after the command"}}
			admin.Options = append(admin.Options, opt)
			continue
		}
		user.Options = append(user.Options, opt)
	}
	var out []*discordgo.ApplicationCommand
	for _, c := range []*discordgo.ApplicationCommand{user, admin} {
		if len(c.Options) > 0 {
			out = append(out, c)
		}
	}
	return out
}

// normalized is what comparison looks at: the fields this adapter sets.
type normalized struct {
	Name        string      `json:"name"`
	Description string      `json:"description"`
	Perms       *int64      `json:"perms"`
	Options     []normalOpt `json:"options"`
}

type normalOpt struct {
	Type        int         `json:"type"`
	Name        string      `json:"name"`
	Description string      `json:"description"`
	Required    bool        `json:"required"`
	Options     []normalOpt `json:"options"`
}

func normalOpts(os []*discordgo.ApplicationCommandOption) []normalOpt {
	var out []normalOpt
	for _, o := range os {
		if o == nil {
			continue
		}
		out = append(out, normalOpt{Type: int(o.Type), Name: o.Name, Description: o.Description, Required: o.Required, Options: normalOpts(o.Options)})
	}
	return out
}

func normalize(cs []*discordgo.ApplicationCommand) string {
	var out []normalized
	for _, c := range cs {
		if c == nil {
			continue
		}
		out = append(out, normalized{Name: c.Name, Description: c.Description, Perms: c.DefaultMemberPermissions, Options: normalOpts(c.Options)})
	}
	slices.SortFunc(out, func(a, b normalized) int { return strings.Compare(a.Name, b.Name) })
	b, _ := json.Marshal(out)
	return string(b)
}

// RegisterCommands registers /bot and /botadmin with their subcommands (globally, or in
// Config.DevGuild), fetching the registered ones first and overwriting them in bulk only when
// they differ, so restarts cost no writes (Discord allows 200 command creations a day).
func (c *Channel) RegisterCommands(ctx context.Context, specs []channels.CommandSpec) error {
	app := c.applicationID()
	if app == "" {
		return errors.New("discord: register commands: no application id (start the channel first)")
	}
	want := commandSet(specs, c.cfg.AdminPermission)
	var have []*discordgo.ApplicationCommand
	err := c.call(ctx, "get commands", func(opts ...discordgo.RequestOption) error {
		var err error
		have, err = c.s.ApplicationCommands(app, c.cfg.DevGuild, opts...)
		return err
	})
	if err != nil {
		return err
	}
	if normalize(have) == normalize(want) {
		c.cfg.Logger.Debug("discord: commands unchanged", "guild", c.cfg.DevGuild)
		return nil
	}
	err = c.call(ctx, "overwrite commands", func(opts ...discordgo.RequestOption) error {
		_, err := c.s.ApplicationCommandBulkOverwrite(app, c.cfg.DevGuild, want, opts...)
		return err
	})
	if err == nil {
		c.cfg.Logger.Info("discord: commands registered", "guild", c.cfg.DevGuild, "commands", len(want))
	}
	return err
}
