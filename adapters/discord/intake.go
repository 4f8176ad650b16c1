package discord

import (
	"context"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/kit"
)

// Intake: what the gateway delivers, decoded, ordered per channel and handed to the router.

func (c *Channel) malformed(what string, err error) {
	c.cfg.Logger.Warn("discord: skipping a malformed "+what, "err", c.redact.String(err.Error()))
	if c.cfg.OnMalformedEvent != nil {
		c.cfg.OnMalformedEvent()
	}
}

// dispatch takes one gateway event, on the gateway's read loop: it must not block. Messages go
// to their channel's queue, in gateway order; interactions are answered at once, each on its
// own goroutine (a click needs an answer within 3 s, whatever the channel is busy with).
func (c *Channel) dispatch(g *gateway, seq int64, t string, data []byte) {
	switch t {
	case "MESSAGE_CREATE":
		m, err := decodeMessage(data)
		if err != nil {
			c.malformed("message", err)
			return
		}
		if m.Author.ID == c.BotID() {
			return // our own posts come back on the gateway
		}
		g.hold(seq)
		c.goOrdered(m.ChannelID, func(ctx context.Context) {
			if c.handleMessage(ctx, m) {
				g.done(seq)
			}
		})
	case "INTERACTION_CREATE":
		ix, err := decodeInteraction(data)
		if err != nil {
			c.malformed("interaction", err)
			return
		}
		c.places.learnInteraction(ix)
		c.goInteraction(ix)
	case "GUILD_CREATE":
		g, err := decodeGuild(data)
		if err != nil {
			c.malformed("guild", err)
			return
		}
		c.learnGuild(g)
	case "THREAD_CREATE", "THREAD_UPDATE", "CHANNEL_CREATE":
		ch, err := decodeChannel(data)
		if err != nil {
			c.malformed("channel", err)
			return
		}
		c.places.learnChannel(ch)
	}
}

func (c *Channel) lifeCtx() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ctx
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
func (c *Channel) goOrdered(key string, job func(ctx context.Context)) {
	ctx := c.lifeCtx()
	if ctx == nil || ctx.Err() != nil {
		return
	}
	queued := c.lanes.Run(key, func() {
		if ctx.Err() == nil {
			job(ctx)
		}
	})
	if !queued {
		c.cfg.Logger.Warn("discord: a channel's backlog is full; dropping a message", "channel", key, "backlog", maxQueued)
	}
}

// handleMessage converts and hands over one message; the router's errors are retried a few
// times (Discord does not redeliver), keeping the channel's order. It reports false when the
// message could not be handed over (a saved session then replays it to the next process).
func (c *Channel) handleMessage(ctx context.Context, m *discordgo.Message) bool {
	w, err := c.places.locate(ctx, m.ChannelID, m.GuildID)
	if err != nil {
		c.cfg.Logger.Warn("discord: cannot tell where a message was posted; skipping it", "channel", m.ChannelID, "err", err)
		return ctx.Err() == nil
	}
	opt := inboundOptions{replyInThread: c.cfg.ReplyInThread, mentionOnly: c.cfg.ThreadReplies == ThreadRepliesMention}
	in, ok := messageInbound(m, c.bot.identity(), w, opt, c.now())
	if !ok {
		return true
	}
	if in.Conv.Thread != "" && in.Conv.Thread == in.MessageID {
		c.threads.remember(in.MessageID, threadName(in.Text))
	}
	return c.handOver(ctx, in)
}

// handOver reports whether the router took the event.
func (c *Channel) handOver(ctx context.Context, in channels.Inbound) bool {
	c.mu.Lock()
	h := c.handler
	c.mu.Unlock()
	wait := 200 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := h.HandleInbound(ctx, c, in)
		if err == nil {
			return true
		}
		if attempt == 4 || ctx.Err() != nil {
			c.cfg.Logger.Error("discord: handing an event to the router failed; it is lost", "event", in.EventID,
				"conv", in.Conv.String(), "err", err)
			return false
		}
		if kit.Sleep(ctx, wait) != nil {
			return false
		}
		wait *= 2
	}
}
