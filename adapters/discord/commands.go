package discord

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

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

// Bounds on retrying a registration in the background: the first retry waits regRetryMin (or
// the 429's retry_after, when longer), each later one twice the one before, up to regRetryMax.
// A retry is one GET and at most one PUT (each waiting out a few 429s, as every call does), so
// even a registration refused for hours costs Discord's invalid-request budget next to nothing.
const (
	regRetryMin = 2 * time.Second
	regRetryMax = 5 * time.Minute
)

// RegisterCommands registers /bot and /botadmin with their subcommands (globally, or in
// Config.DevGuild), fetching the registered ones first and overwriting them in bulk only when
// they differ, so restarts cost no writes (Discord allows 200 command creations a day).
//
// Each call waits out a few 429s (see call). A registration still refused for now — rate
// limited for longer, a 5xx, a network error — is handed to a retry in the background
// (kit.LaterRetry: regRetryMin doubling to regRetryMax, never sooner than a 429's
// retry_after), until it succeeds or the channel stops; RegisterCommands then logs a warning and
// returns nil, and the retry logs each failure and the success. It returns an error when
// retrying cannot help: the channel is not started or has stopped, ctx ended, or Discord refused
// the registration itself (401, another 4xx). A later call replaces a retry still pending.
func (c *Channel) RegisterCommands(ctx context.Context, specs []channels.CommandSpec) error {
	c.reg.Cancel()
	err := c.registerCommands(ctx, specs)
	if err == nil || !registrationRetryable(ctx, err) {
		return err
	}
	specs = slices.Clone(specs)
	c.mu.Lock()
	defer c.mu.Unlock()
	// Under c.mu with stopped checked, so the wait group is never added to after Stop set
	// stopped and began to wait.
	if c.ctx == nil || c.ctx.Err() != nil || c.life.Stopped() {
		return err
	}
	c.reg.Start(c.ctx, &c.wg, err, registrationRetryable, func(ctx context.Context) error {
		return c.registerCommands(ctx, specs)
	})
	return nil
}

// registrationRetryable tells a registration refused for now from one retrying cannot help.
func registrationRetryable(ctx context.Context, err error) bool {
	if ctx.Err() != nil || errors.Is(err, channels.ErrUnauthorized) || errors.Is(err, errNoApplication) {
		return false
	}
	st := apiStatus(err)
	return st == 0 || st >= 500 || st == http.StatusTooManyRequests
}

var errNoApplication = errors.New("discord: register commands: no application id (start the channel first)")

// registerCommands is one registration: GET the registered commands, PUT them when they differ.
func (c *Channel) registerCommands(ctx context.Context, specs []channels.CommandSpec) error {
	app := c.bot.application()
	if app == "" {
		return errNoApplication
	}
	want := commandSet(specs, c.cfg.AdminPermission)
	var have []*discordgo.ApplicationCommand
	err := c.rest.callWaiting(ctx, "get commands", func(opts ...discordgo.RequestOption) error {
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
	err = c.rest.callWaiting(ctx, "overwrite commands", func(opts ...discordgo.RequestOption) error {
		_, err := c.s.ApplicationCommandBulkOverwrite(app, c.cfg.DevGuild, want, opts...)
		return err
	})
	if err == nil {
		c.cfg.Logger.Info("discord: commands registered", "guild", c.cfg.DevGuild, "commands", len(want))
	}
	return err
}
