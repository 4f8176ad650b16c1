package discord

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/conv"
)

// locate says where a guild channel sits (a thread, and its parent), from what the gateway
// told (GUILD_CREATE, THREAD_CREATE, interactions) or else from GET /channels/{id}, remembered.
func (c *Channel) locate(ctx context.Context, channelID, guildID string) (where, error) {
	if guildID == "" {
		return where{}, nil
	}
	if v, ok := c.where.Load(channelID); ok {
		return v.(where), nil
	}
	var ch *discordgo.Channel
	err := c.call(ctx, "GET channel", func(opts ...discordgo.RequestOption) error {
		var err error
		ch, err = c.s.Channel(channelID, opts...)
		return err
	})
	if err != nil {
		return where{}, err
	}
	w := where{Guild: guildID, Parent: ch.ParentID, Thread: ch.IsThread()}
	c.where.Store(channelID, w)
	return w, nil
}

func (c *Channel) learnChannel(ch channelInfo) {
	if isThreadType(ch.Type) {
		c.where.Store(ch.ID, where{Guild: ch.GuildID, Parent: ch.ParentID, Thread: true})
		return
	}
	c.where.Store(ch.ID, where{Guild: ch.GuildID})
}

func (c *Channel) learnGuild(g guildInfo) {
	self := c.BotID()
	c.mu.Lock()
	for _, r := range g.Roles {
		if r.Tags != nil && r.Tags.BotID != "" && r.Tags.BotID == self {
			if c.self.roles == nil {
				c.self.roles = map[string]bool{}
			}
			c.self.roles[r.ID] = true
		}
	}
	c.mu.Unlock()
	for _, ch := range g.Channels {
		ch.GuildID = g.ID
		c.learnChannel(ch)
	}
	for _, th := range g.Threads {
		th.GuildID = g.ID
		th.Type = max(th.Type, 11)
		c.learnChannel(th)
	}
}

func (c *Channel) rememberInteractionChannel(ix *interactionEvent) {
	if ix.Channel == nil || ix.Channel.ID == "" || ix.GuildID == "" {
		return
	}
	c.learnChannel(channelInfo{ID: ix.Channel.ID, Type: ix.Channel.Type, GuildID: ix.GuildID, ParentID: ix.Channel.ParentID})
}

// threadMaker starts the thread a channel mention is answered in, once, on the first outbound
// call to the conversation (typing or a message): a message the router refuses silently gets
// no thread.
type threadMaker struct {
	c     *Channel
	mu    sync.Mutex
	names map[string]string // message id → thread name
	locks map[string]*sync.Mutex
}

func newThreadMaker(c *Channel) *threadMaker {
	return &threadMaker{c: c, names: map[string]string{}, locks: map[string]*sync.Mutex{}}
}

// maxNames bounds the remembered thread names (of mentions not answered yet).
const maxNames = 4096

func (t *threadMaker) remember(msgID, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.names) >= maxNames {
		for k := range t.names {
			delete(t.names, k)
			break
		}
	}
	t.names[msgID] = name
}

// threadName is a thread's title from the message that starts it: its first line, at most 80
// characters, or "Conversation".
func threadName(text string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	line = strings.TrimSpace(line)
	if line == "" {
		return "Conversation"
	}
	if utf8.RuneCountInString(line) > 80 {
		r := []rune(line)
		line = string(r[:79]) + "…"
	}
	return line
}

// channelFor is the channel id outbound calls to k go to: the DM or channel, or the thread,
// which is started from the message k.Thread names when it does not exist yet.
func (t *threadMaker) channelFor(ctx context.Context, k conv.Key) (string, error) {
	if k.Thread == "" {
		if k.Chat == "" {
			return "", errors.New("discord: conversation without a channel")
		}
		return k.Chat, nil
	}
	c := t.c
	if v, ok := c.where.Load(k.Thread); ok && v.(where).Thread {
		return k.Thread, nil
	}
	t.mu.Lock()
	l := t.locks[k.Thread]
	if l == nil {
		l = &sync.Mutex{}
		t.locks[k.Thread] = l
	}
	name := t.names[k.Thread]
	t.mu.Unlock()
	l.Lock()
	defer func() {
		l.Unlock()
		t.mu.Lock()
		delete(t.locks, k.Thread)
		t.mu.Unlock()
	}()
	if v, ok := c.where.Load(k.Thread); ok && v.(where).Thread {
		return k.Thread, nil
	}
	if name == "" {
		name = "Conversation"
	}
	// discordgo's MessageThreadStartComplex keys its rate-limit bucket by message, and keeps
	// every bucket forever: one bucket per channel instead.
	ep := discordgo.EndpointChannelMessageThread(k.Chat, k.Thread)
	err := c.call(ctx, "start thread", func(opts ...discordgo.RequestOption) error {
		_, err := c.s.RequestWithBucketID("POST", ep, &discordgo.ThreadStart{Name: name, AutoArchiveDuration: 1440},
			discordgo.EndpointChannel(k.Chat)+"/threads-from-messages", opts...)
		return err
	})
	switch {
	case err == nil, apiCode(err) == codeThreadExists, errors.Is(err, channels.ErrMessageGone):
		// Started now, started before (a restart, a redelivery), or not a message of the
		// channel at all — a thread someone else started, which is its own channel.
		c.where.Store(k.Thread, where{Guild: k.Workspace, Parent: k.Chat, Thread: true})
		t.mu.Lock()
		delete(t.names, k.Thread)
		t.mu.Unlock()
		return k.Thread, nil
	case errors.Is(err, channels.ErrUnreachable), apiStatus(err) == http.StatusBadRequest:
		// No thread here (no Create Public Threads permission, a channel type without threads):
		// answer in the channel rather than not at all.
		c.cfg.Logger.Warn("discord: cannot start a thread; answering in the channel", "channel", k.Chat, "err", err)
		return k.Chat, nil
	}
	return "", err
}
