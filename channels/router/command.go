package router

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/core/runs"
	"github.com/switchboard-bot/switchboard/core/threads"
)

// ToolsInfo is what /tools shows and does; cmd/bot backs it with the tools from MCP servers.
type ToolsInfo interface {
	// ToolsReport lists the servers, their state and tools, as markdown; admins also see the
	// policy.
	ToolsReport(admin bool) string
	// ReloadTools reconnects every server (re-reading their secret files).
	ReloadTools()
}

// Places tells which profile (prompt, model, tools) a conversation gets; cmd/bot backs it
// with the configured profiles and routes.
type Places interface {
	// Place says, for an admin, which profile a message from k gets and why: its name, model
	// and tools, and the route that chose it.
	Place(k conv.Key, direct bool, user string) string
	// Models are what /model may choose in k's profile; nil allows any.
	Models(k conv.Key, direct bool, user string) []string
}

// greetingCommands are the commands a platform's client sends on its own — Telegram's /start
// when someone opens the bot for the first time, and the /settings it suggests every bot
// supports. They are answered with the greeting, and left out of the command menu.
var greetingCommands = map[string]bool{"start": true, "settings": true}

// command runs one command and replies with text straight through the channel.
func (cmd commands) command(ctx context.Context, ch channels.Channel, in channels.Inbound, name string, args []string, admin bool) error {
	platform, user := in.Conv.Platform, in.Identity.ChannelUserID
	if greetingCommands[name] {
		cmd.r.m.Command(platform, name)
		cmd.r.reply(ctx, ch, in, greeting(in.Direct)+"\nSend /help for the commands.")
		return nil
	}
	spec, ok := channels.LookupCommand(name)
	if !ok {
		cmd.r.refuse(platform, "unknown_command", "unknown command", in)
		cmd.r.reply(ctx, ch, in, fmt.Sprintf("I don't know the command /%s. Send /help for the list.", name))
		return nil
	}
	if spec.AdminOnly && !admin {
		cmd.r.m.Refused(platform, "admin_only")
		cmd.r.log.Warn("channels: a non-admin tried an admin command", "platform", platform, "user", user, "command", name, "conv", in.Conv.String())
		cmd.r.reply(ctx, ch, in, fmt.Sprintf("Sorry, /%s is for admins only.", name))
		return nil
	}
	cmd.r.m.Command(platform, name)
	text, err := cmd.runCommand(ctx, in, name, args, admin)
	if err != nil {
		cmd.r.log.Error("channels: command failed", "platform", platform, "command", name, "conv", in.Conv.String(), "err", err)
		text = fmt.Sprintf("Sorry, /%s failed. Please try again.", name)
	}
	cmd.r.reply(ctx, ch, in, text)
	return nil
}

func (cmd commands) runCommand(ctx context.Context, in channels.Inbound, name string, args []string, admin bool) (string, error) {
	platform, conv := in.Conv.Platform, in.Conv.String()
	switch name {
	case "help":
		return greeting(in.Direct) + "\n\n" + helpText(admin), nil
	case "new":
		if _, err := cmd.r.opt.Threads.Reset(ctx, conv); err != nil {
			return "", err
		}
		return "Started a new conversation; earlier messages are forgotten.", nil
	case "cancel":
		return cmd.cancel(ctx, in)
	case "status":
		return cmd.statusText(ctx, in)
	case "whoami":
		role := "not an admin"
		if admin {
			role = "an admin"
		}
		who := in.Identity.DisplayName
		if who != "" {
			who = " (" + who + ")"
		}
		return fmt.Sprintf("You are `%s`%s on %s; you are %s.", in.Identity.ChannelUserID, who, platform, role), nil
	case "allow", "deny":
		return cmd.access(ctx, in, name, args)
	case "admins":
		list := cmd.r.opt.Admins[platform]
		if len(list) == 0 {
			return "No admins are configured for " + platform + ".", nil
		}
		return "Admins on " + platform + ": `" + strings.Join(list, "`, `") + "`", nil
	case "stats":
		return cmd.statsText(ctx)
	case "deadletters":
		return cmd.deadLetters(ctx, args)
	case "pause":
		if err := cmd.r.opt.Queue.Pause(ctx); err != nil {
			return "", err
		}
		cmd.r.log.Warn("channels: intake paused by an admin", "platform", platform, "admin", in.Identity.ChannelUserID)
		return "Paused: new requests are refused until /resume. Queued ones still run.", nil
	case "resume":
		if err := cmd.r.opt.Queue.Resume(ctx); err != nil {
			return "", err
		}
		cmd.r.log.Warn("channels: intake resumed by an admin", "platform", platform, "admin", in.Identity.ChannelUserID)
		return "Resumed: taking new requests.", nil
	case "model":
		return cmd.model(ctx, in, args)
	case "profile":
		if cmd.r.opt.Places == nil {
			return "No profiles are configured: every chat gets the top-level settings.", nil
		}
		return cmd.r.opt.Places.Place(in.Conv, in.Direct, in.Identity.ChannelUserID), nil
	case "tools":
		return cmd.toolsCommand(in, args, admin), nil
	}
	return "", fmt.Errorf("channels: command %q has no handler", name)
}

// cancel cancels the conversation's running and queued runs and withdraws its open question.
func (cmd commands) cancel(ctx context.Context, in channels.Inbound) (string, error) {
	conv := in.Conv.String()
	c, err := cmd.r.opt.Queue.Cancel(ctx, in.Conv, "")
	if err != nil {
		return "", err
	}
	// A question the bot is waiting on is withdrawn too: its buttons and a typed reply no
	// longer answer it, and the next message starts afresh.
	_, asked, err := cmd.r.opt.Clarifications.Withdraw(ctx, conv)
	if err != nil {
		return "", err
	}
	n := boolInt(c.Active != "") + len(c.Removed)
	switch {
	case n == 0 && !asked:
		return "Nothing to cancel.", nil
	case n == 0:
		return "Withdrew the open question.", nil
	case asked:
		return fmt.Sprintf("Cancelled %s and withdrew the open question.", plural(n, "request", "requests")), nil
	}
	return fmt.Sprintf("Cancelled %s.", plural(n, "request", "requests")), nil
}

// access allows or denies a user (name "allow" or "deny") on the admin's platform.
func (cmd commands) access(ctx context.Context, in channels.Inbound, name string, args []string) (string, error) {
	platform := in.Conv.Platform
	if len(args) != 1 {
		return fmt.Sprintf("Usage: /%s <user id>", name), nil
	}
	var err error
	if name == "allow" {
		err = cmd.r.opt.Inbox.AllowUser(ctx, platform, args[0])
	} else {
		err = cmd.r.opt.Inbox.DenyUser(ctx, platform, args[0])
	}
	if errors.Is(err, threads.ErrInvalidArgument) {
		return "That is not a valid user id.", nil
	}
	if err != nil {
		return "", err
	}
	cmd.r.log.Info("channels: access changed by an admin", "platform", platform, "admin", in.Identity.ChannelUserID, "command", name, "user", args[0])
	if name == "allow" {
		return fmt.Sprintf("Allowed `%s` on %s.", args[0], platform), nil
	}
	return fmt.Sprintf("Denied `%s` on %s.", args[0], platform), nil
}

// greeting is one line saying what the bot does and how to ask it something: in a direct chat by
// just writing, in a group by mentioning it or replying to it.
func greeting(direct bool) string {
	if direct {
		return "Hi! I am an assistant with a team of helper agents: just write your question or task here and I will answer."
	}
	return "Hi! I am an assistant with a team of helper agents: mention me in your message (or reply to one of mine) with your question or task and I will answer."
}

func helpText(admin bool) string {
	var b strings.Builder
	b.WriteString("Commands:")
	for _, c := range channels.Commands() {
		if c.AdminOnly && !admin {
			continue
		}
		b.WriteString("\n/" + c.Name + " — " + c.Description)
	}
	return b.String()
}

func (cmd commands) statusText(ctx context.Context, in channels.Inbound) (string, error) {
	d, err := cmd.r.opt.Queue.ConvDepth(ctx, in.Conv)
	if err != nil {
		return "", err
	}
	var parts []string
	switch {
	case d.Running:
		parts = append(parts, fmt.Sprintf("Working on a request; %s in this chat.", plural(int(d.Queued), "run", "runs")))
	case d.Queued > 0:
		parts = append(parts, fmt.Sprintf("%s queued in this chat.", plural(int(d.Queued), "run", "runs")))
	default:
		parts = append(parts, "Idle: nothing queued in this chat.")
	}
	c, ok, err := cmd.r.opt.Clarifications.Pending(ctx, in.Conv.String())
	if err != nil {
		return "", err
	}
	if ok {
		who := "you"
		if c.AllowedUserID != in.Identity.ChannelUserID {
			who = "`" + c.AllowedUserID + "`"
		}
		parts = append(parts, fmt.Sprintf("A question is waiting for an answer from %s.", who))
	}
	if paused, err := cmd.r.opt.Queue.Paused(ctx); err == nil && paused {
		parts = append(parts, "The bot is paused by an admin.")
	}
	return strings.Join(parts, "\n"), nil
}

func (cmd commands) statsText(ctx context.Context) (string, error) {
	d, err := cmd.r.opt.Queue.Depth(ctx)
	if err != nil {
		return "", err
	}
	s, err := cmd.r.opt.Queue.Stats(ctx)
	if err != nil {
		return "", err
	}
	recent, err := cmd.r.opt.Queue.Recent(ctx)
	if err != nil {
		return "", err
	}
	paused, err := cmd.r.opt.Queue.Paused(ctx)
	if err != nil {
		return "", err
	}
	running := 0
	for _, c := range d.Conversations {
		if c.Running {
			running++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Queue: %d pending in %d conversations (%d running); workers in this process: %d", d.Pending, len(d.Conversations), running, cmd.r.opt.Workers)
	if paused {
		b.WriteString("; intake paused")
	}
	fmt.Fprintf(&b, "\nRuns: %d answered, %d waiting, %d cancelled, %d failed, %d retries", s.Answered, s.Waiting, s.Cancelled, s.Failed, s.Retries)
	m, h := recent.LastMinute, recent.LastHour
	fmt.Fprintf(&b, "\nLast minute: %d answered, %d failed, %d dead-lettered · last hour: %d answered, %d failed, %d dead-lettered",
		m.Answered, m.Failed, m.DeadLettered, h.Answered, h.Failed, h.DeadLettered)
	fmt.Fprintf(&b, "\nDead letters: %d (%d signature failures); leases lost: %d", d.DeadLetters, s.SignatureFailures, s.LeasesLost)
	return b.String(), nil
}

// maxListedDeadLetters bounds the `deadletters list` reply.
const maxListedDeadLetters = 20

func (cmd commands) deadLetters(ctx context.Context, args []string) (string, error) {
	verb := "list"
	if len(args) > 0 {
		verb = strings.ToLower(args[0])
	}
	switch {
	case verb == "list" && len(args) <= 1:
		ds, err := cmd.r.opt.Queue.DeadLetters(ctx, maxListedDeadLetters)
		if err != nil {
			return "", err
		}
		if len(ds) == 0 {
			return "No dead letters.", nil
		}
		var b strings.Builder
		fmt.Fprintf(&b, "Dead letters (oldest first, up to %d):", maxListedDeadLetters)
		for _, d := range ds {
			fmt.Fprintf(&b, "\n`%s` %s — %s (%d attempts, %s)", d.RunID, d.Conv.Platform, d.Reason, d.Attempts, d.At.UTC().Format("2006-01-02 15:04"))
		}
		return b.String(), nil
	case (verb == "replay" || verb == "drop") && len(args) == 2:
		var err error
		var replayed string
		if verb == "replay" {
			replayed, err = cmd.r.opt.Queue.Replay(ctx, args[1])
		} else {
			err = cmd.r.opt.Queue.Drop(ctx, args[1])
		}
		var busy *runs.BusyError
		verify := runs.VerifyReason(err)
		switch {
		case errors.Is(err, runs.ErrNotFound):
			return fmt.Sprintf("No dead letter has run id `%s`.", args[1]), nil
		case errors.Is(err, runs.ErrPaused):
			return "Intake is paused; /resume first.", nil
		case errors.As(err, &busy):
			return "The queue is full; try again later.", nil
		case verify == "malformed":
			return fmt.Sprintf("Dead letter `%s` cannot be decoded; /deadletters drop it.", args[1]), nil
		case verify != "":
			return fmt.Sprintf("Dead letter `%s` fails its signature check (%s), so it is not run again; /deadletters drop it.", args[1], verify), nil
		case err != nil && replayed != "":
			return fmt.Sprintf("Replayed `%s` as run `%s`, but it is still listed: /deadletters drop it.", args[1], replayed), nil
		case err != nil:
			return "", err
		}
		if verb == "replay" {
			return fmt.Sprintf("Replayed `%s` as run `%s`.", args[1], replayed), nil
		}
		return fmt.Sprintf("Dropped `%s`.", args[1]), nil
	}
	return "Usage: /deadletters [list | replay <run id> | drop <run id>]", nil
}

// validModel bounds what `model` accepts: a model id, not arbitrary text.
func validModel(s string) bool {
	if s == "" || len(s) > 100 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._:/-", c) >= 0) {
			return false
		}
	}
	return true
}

func (cmd commands) model(ctx context.Context, in channels.Inbound, args []string) (string, error) {
	conv := in.Conv.String()
	th, _, err := cmd.r.opt.Threads.Ensure(ctx, conv)
	if err != nil {
		return "", err
	}
	if len(args) == 0 {
		if th.Settings.Model == "" {
			return "This chat uses the configured default model.", nil
		}
		return fmt.Sprintf("This chat uses the model `%s`.", th.Settings.Model), nil
	}
	if len(args) != 1 || !validModel(args[0]) {
		return "Usage: /model <name> — letters, digits and . _ : / - only.", nil
	}
	if cmd.r.opt.Places != nil {
		if allowed := cmd.r.opt.Places.Models(in.Conv, in.Direct, in.Identity.ChannelUserID); allowed != nil && !slices.Contains(allowed, args[0]) {
			if len(allowed) == 0 {
				return "This chat's profile does not let /model choose a model.", nil
			}
			return "This chat's profile allows only these models: `" + strings.Join(allowed, "`, `") + "`.", nil
		}
	}
	s := th.Settings
	s.Model = args[0]
	if err := cmd.r.opt.Threads.SetSettings(ctx, conv, s); err != nil {
		return "", err
	}
	return fmt.Sprintf("This chat now uses the model `%s`.", s.Model), nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// toolsCommand answers /tools and /tools reload.
func (cmd commands) toolsCommand(in channels.Inbound, args []string, admin bool) string {
	if cmd.r.opt.Tools == nil {
		return "No tool servers are configured."
	}
	if len(args) > 0 && strings.EqualFold(args[0], "reload") {
		if !admin {
			return "Sorry, /tools reload is for admins only."
		}
		cmd.r.opt.Tools.ReloadTools()
		cmd.r.log.Info("channels: tool servers reloaded by an admin", "platform", in.Conv.Platform, "admin", in.Identity.ChannelUserID)
		return "Reconnecting the tool servers; /tools shows their state."
	}
	return cmd.r.opt.Tools.ToolsReport(admin)
}
