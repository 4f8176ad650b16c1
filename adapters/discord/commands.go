package discord

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/kit"
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

// command is an application command as the bot registers it, the body of the bulk overwrite
// ("Bulk Overwrite Global/Guild Application Commands", JSON params): the documented fields it
// uses and nothing else, none null. discordgo's ApplicationCommand would send "options": null
// and, on every option, "channel_types": null, "choices": null, "options": null, "required":
// false on subcommands (which take no required) and "autocomplete": false on subcommands (only
// STRING, INTEGER and NUMBER options take it): the bot sends its own body.
type command struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Type        int    `json:"type"`
	// DefaultMemberPermissions is a permission bit set as a decimal string; absent: everyone.
	DefaultMemberPermissions *string         `json:"default_member_permissions,omitempty"`
	Options                  []commandOption `json:"options,omitempty"`
}

// commandOption is an option of a command ("Application Command Option Structure") with the
// fields valid for its type only: type, name and description for every type; options for a
// SUB_COMMAND (or SUB_COMMAND_GROUP); required for the other types, sent when true (false is its
// default).
type commandOption struct {
	Type        int             `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Required    bool            `json:"required,omitempty"`
	Options     []commandOption `json:"options,omitempty"`
}

// commandSet is the commands to register, from the router's list. /botadmin's
// default_member_permissions is adminPerm (Config.AdminPermission), or "0" (administrators
// only) when it is zero.
func commandSet(specs []channels.CommandSpec, adminPerm uint64) []command {
	perms := strconv.FormatUint(adminPerm&(1<<63-1), 10) // one permission bit, far below bit 63
	chat := int(discordgo.ChatApplicationCommand)
	user := command{Name: commandName, Description: "Talk to the bot: help, new conversation, cancel, status", Type: chat}
	admin := command{Name: adminCommandName, Description: "Bot administration", Type: chat, DefaultMemberPermissions: &perms}
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
		opt := commandOption{Type: int(discordgo.ApplicationCommandOptionSubCommand), Name: name, Description: desc}
		if s.AdminOnly {
			opt.Options = []commandOption{{Type: int(discordgo.ApplicationCommandOptionString),
				Name: argsOption, Description: "Arguments, as you would type them after the command"}}
			admin.Options = append(admin.Options, opt)
			continue
		}
		user.Options = append(user.Options, opt)
	}
	out := []command{} // an empty list, never null: the overwrite then removes every command
	for _, c := range []command{user, admin} {
		if len(c.Options) > 0 {
			out = append(out, c)
		}
	}
	return out
}

// registered is the registered commands as the bot would have sent them, for comparison.
func registered(cs []*discordgo.ApplicationCommand) []command {
	var out []command
	for _, c := range cs {
		if c == nil {
			continue
		}
		rc := command{Name: c.Name, Description: c.Description, Type: int(c.Type), Options: registeredOpts(c.Options)}
		if c.DefaultMemberPermissions != nil {
			p := strconv.FormatInt(*c.DefaultMemberPermissions, 10)
			rc.DefaultMemberPermissions = &p
		}
		out = append(out, rc)
	}
	return out
}

func registeredOpts(os []*discordgo.ApplicationCommandOption) []commandOption {
	var out []commandOption
	for _, o := range os {
		if o == nil {
			continue
		}
		out = append(out, commandOption{Type: int(o.Type), Name: o.Name, Description: o.Description, Required: o.Required,
			Options: registeredOpts(o.Options)})
	}
	return out
}

// normalize is what comparison looks at: the fields this adapter sets, commands in name order.
func normalize(cs []command) string {
	cs = slices.Clone(cs)
	for i := range cs {
		cs[i].Type = 0 // 1 whether sent or defaulted
	}
	slices.SortFunc(cs, func(a, b command) int { return strings.Compare(a.Name, b.Name) })
	b, _ := json.Marshal(cs)
	return string(b)
}

// commands keeps the slash commands registered (RegisterCommands), retrying a registration
// refused for now in the background while the intake lives.
type commands struct {
	cfg     *Config
	rest    *rest
	s       *discordgo.Session
	bot     *botSelf
	workers *kit.Workers
	// reg retries a registration refused at start (tests set its Wait to record the waits
	// instead of sleeping them).
	reg *kit.LaterRetry
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
func (cm *commands) RegisterCommands(ctx context.Context, specs []channels.CommandSpec) error {
	specs = slices.Clone(specs) // a retry may read them after RegisterCommands returned
	return cm.reg.Try(ctx, cm.workers, registrationRetryable, func(ctx context.Context) error { return cm.register(ctx, specs) })
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

// register is one registration: GET the registered commands, PUT them when they differ.
func (cm *commands) register(ctx context.Context, specs []channels.CommandSpec) error {
	app := cm.bot.application()
	if app == "" {
		return errNoApplication
	}
	want := commandSet(specs, cm.cfg.AdminPermission)
	var have []*discordgo.ApplicationCommand
	err := cm.rest.callWaiting(ctx, "get commands", func(opts ...discordgo.RequestOption) error {
		var err error
		have, err = cm.s.ApplicationCommands(app, cm.cfg.DevGuild, opts...)
		return err
	})
	if err != nil {
		return err
	}
	if normalize(registered(have)) == normalize(want) {
		cm.cfg.Logger.Debug("discord: commands unchanged", "guild", cm.cfg.DevGuild)
		return nil
	}
	ep := discordgo.EndpointApplicationGlobalCommands(app)
	if cm.cfg.DevGuild != "" {
		ep = discordgo.EndpointApplicationGuildCommands(app, cm.cfg.DevGuild)
	}
	err = cm.rest.callWaiting(ctx, "overwrite commands", func(opts ...discordgo.RequestOption) error {
		// The route's bucket, as discordgo's ApplicationCommandBulkOverwrite keys it.
		_, err := cm.s.RequestWithBucketID("PUT", ep, want, ep, opts...)
		return err
	})
	if err == nil {
		cm.cfg.Logger.Info("discord: commands registered", "guild", cm.cfg.DevGuild, "commands", len(want))
	}
	return err
}
