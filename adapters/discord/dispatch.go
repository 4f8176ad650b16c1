package discord

import (
	"context"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/kit"
)

// dispatcher hands what the gateways deliver to the Handler: each event decoded, the messages
// ordered per channel (lanes); the interactions among them are answered by interactions
// (interaction.go). It holds the Handler from Start on.
type dispatcher struct {
	cfg          *Config
	redact       *kit.Redactor
	ch           channels.Channel // what the Handler is told the events came through
	bot          *botSelf
	places       *places
	threads      *threadMaker
	workers      *kit.Workers
	lanes        *kit.Lanes // messages handed to the router in order per channel
	interactions *interactions
	clock        *kit.Clock

	kit.Handoff[struct{}] // the Handler, from Start on
}

func (dp *dispatcher) malformed(what string, err error) {
	dp.cfg.Logger.Warn("discord: skipping a malformed "+what, "err", dp.redact.String(err.Error()))
	if dp.cfg.OnMalformedEvent != nil {
		dp.cfg.OnMalformedEvent()
	}
}

// dispatch takes one gateway event, on the gateway's read loop: it must not block. Messages go
// to their channel's queue, in gateway order; interactions are answered at once, each on its
// own goroutine (a click needs an answer within 3 s, whatever the channel is busy with).
func (dp *dispatcher) dispatch(g *gateway, seq int64, t string, data []byte) {
	switch t {
	case "MESSAGE_CREATE":
		m, err := decodeMessage(data)
		if err != nil {
			dp.malformed("message", err)
			return
		}
		if m.Author.ID == dp.bot.userID() {
			return // our own posts come back on the gateway
		}
		g.hold(seq)
		dp.goOrdered(m.ChannelID, func(ctx context.Context) {
			if dp.handleMessage(ctx, m) {
				g.done(seq)
			}
		})
	case "INTERACTION_CREATE":
		ix, err := decodeInteraction(data)
		if err != nil {
			dp.malformed("interaction", err)
			return
		}
		dp.places.learnInteraction(ix)
		dp.interactions.goHandle(ix)
	case "GUILD_CREATE":
		g, err := decodeGuild(data)
		if err != nil {
			dp.malformed("guild", err)
			return
		}
		dp.learnGuild(g)
	case "THREAD_CREATE", "THREAD_UPDATE", "CHANNEL_CREATE":
		ch, err := decodeChannel(data)
		if err != nil {
			dp.malformed("channel", err)
			return
		}
		dp.places.learnChannel(ch)
	}
}

// learnGuild takes a GUILD_CREATE: the bot's managed role there, and its channels.
func (dp *dispatcher) learnGuild(g guildInfo) {
	self := dp.bot.userID()
	for _, r := range g.Roles {
		if r.Tags != nil && r.Tags.BotID != "" && r.Tags.BotID == self {
			dp.bot.addRoles(r.ID)
		}
	}
	dp.places.learnGuild(g)
}

// Discord's gateway delivers a channel's messages in order and never again (a resumed session
// replays only what was missed), so they are handed over in its order, one channel at a time
// (kit.Lanes), and a channel's backlog is bounded rather than grow memory without end.
const (
	// maxRunners bounds the channels handed over at once (as Telegram's maxHandovers does).
	maxRunners = 64
	// maxQueued bounds one channel's backlog; past it new messages are dropped (logged).
	maxQueued = 10000
)

// goOrdered queues job behind its channel's earlier messages; a job whose turn comes after the
// intake stopped is skipped.
func (dp *dispatcher) goOrdered(key string, job func(ctx context.Context)) {
	ctx := dp.workers.Context()
	if ctx == nil || ctx.Err() != nil {
		return
	}
	queued := dp.lanes.Run(key, func() {
		if ctx.Err() == nil {
			job(ctx)
		}
	})
	if !queued {
		dp.cfg.Logger.Warn("discord: a channel's backlog is full; dropping a message", "channel", key, "backlog", maxQueued)
	}
}

// handleMessage converts and hands over one message; the router's errors are retried a few
// times (Discord does not redeliver), keeping the channel's order. It reports false when the
// message could not be handed over (a saved session then replays it to the next process).
func (dp *dispatcher) handleMessage(ctx context.Context, m *discordgo.Message) bool {
	w, err := dp.places.locate(ctx, m.ChannelID, m.GuildID)
	if err != nil {
		dp.cfg.Logger.Warn("discord: cannot tell where a message was posted; skipping it", "channel", m.ChannelID, "err", err)
		return ctx.Err() == nil
	}
	opt := inboundOptions{replyInThread: dp.cfg.ReplyInThread, mentionOnly: dp.cfg.ThreadReplies == ThreadRepliesMention}
	msg, ok := messageInbound(m, dp.bot.identity(), w, opt, dp.clock.Now())
	if !ok {
		return true
	}
	if msg.Conv.Thread != "" && msg.Conv.Thread == msg.MessageID {
		dp.threads.remember(msg.MessageID, threadName(msg.Text))
	}
	return dp.handOver(ctx, msg)
}

// handOver reports whether the router took the event.
func (dp *dispatcher) handOver(ctx context.Context, ev channels.Inbound) bool {
	h, _ := dp.State()
	wait := 200 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := h.HandleInbound(ctx, dp.ch, ev)
		if err == nil {
			return true
		}
		if attempt == 4 || ctx.Err() != nil {
			dp.cfg.Logger.Error("discord: handing an event to the router failed; it is lost", "event", ev.EventID,
				"conv", ev.Conv.String(), "err", err)
			return false
		}
		if dp.clock.Sleep(ctx, wait) != nil {
			return false
		}
		wait *= 2
	}
}
