package discord

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/conv"
)

// places remembers where each guild channel sits (a thread, and its parent), from what the
// gateway told (GUILD_CREATE, THREAD_CREATE, interactions) or else from GET /channels/{id}.
// Safe for concurrent use.
type places struct {
	where sync.Map // channel id → where
	rest  *rest
	s     *discordgo.Session
}

// locate says where a guild channel sits, asking Discord once for one it was not told of (the
// look-up a message's hand-over waits for: its 429s are waited out).
func (p *places) locate(ctx context.Context, channelID, guildID string) (where, error) {
	if guildID == "" {
		return where{}, nil
	}
	if v, ok := p.where.Load(channelID); ok {
		return v.(where), nil
	}
	var ch *discordgo.Channel
	err := p.rest.callWaiting(ctx, "GET channel", func(opts ...discordgo.RequestOption) error {
		var err error
		ch, err = p.s.Channel(channelID, opts...)
		return err
	})
	if err != nil {
		return where{}, err
	}
	w := where{Guild: guildID, Parent: ch.ParentID, Thread: ch.IsThread()}
	p.where.Store(channelID, w)
	return w, nil
}

// isThread reports whether channel id is known to be a thread.
func (p *places) isThread(id string) bool {
	v, ok := p.where.Load(id)
	return ok && v.(where).Thread
}

// learnThread records that thread id, of parent in guild, exists.
func (p *places) learnThread(id, guild, parent string) {
	p.where.Store(id, where{Guild: guild, Parent: parent, Thread: true})
}

func (p *places) learnChannel(ch channelInfo) {
	if isThreadType(ch.Type) {
		p.learnThread(ch.ID, ch.GuildID, ch.ParentID)
		return
	}
	p.where.Store(ch.ID, where{Guild: ch.GuildID})
}

// learnGuild records the channels and threads of a GUILD_CREATE.
func (p *places) learnGuild(g guildInfo) {
	for _, ch := range g.Channels {
		ch.GuildID = g.ID
		p.learnChannel(ch)
	}
	for _, th := range g.Threads {
		th.GuildID = g.ID
		th.Type = max(th.Type, 11)
		p.learnChannel(th)
	}
}

// learnInteraction records where an interaction happened.
func (p *places) learnInteraction(ix *interactionEvent) {
	if ix.Channel == nil || ix.Channel.ID == "" || ix.GuildID == "" {
		return
	}
	p.learnChannel(channelInfo{ID: ix.Channel.ID, Type: ix.Channel.Type, GuildID: ix.GuildID, ParentID: ix.Channel.ParentID})
}

// threadMaker starts the thread a channel mention is answered in, once, on the first outbound
// call to the conversation (typing or a message): a message the router refuses silently gets
// no thread.
type threadMaker struct {
	rest   *rest
	s      *discordgo.Session
	places *places
	log    *slog.Logger

	mu    sync.Mutex
	names map[string]string // message id → thread name
	locks map[string]*sync.Mutex
}

func newThreadMaker(r *rest, s *discordgo.Session, p *places, log *slog.Logger) *threadMaker {
	return &threadMaker{rest: r, s: s, places: p, log: log, names: map[string]string{}, locks: map[string]*sync.Mutex{}}
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

// threadFromMessage is the body of POST /channels/{channel.id}/messages/{message.id}/threads
// ("Start Thread from Message"), whose JSON params are name, auto_archive_duration and
// rate_limit_per_user only. discordgo's ThreadStart always sends "invitable" (a param of
// threads started without a message, without omitempty there) and carries "type" besides: the
// bot sends its own body, so that the route gets only what it takes.
type threadFromMessage struct {
	// Name is 1–100 characters (threadName keeps to 80).
	Name string `json:"name"`
	// AutoArchiveDuration is in minutes: 60, 1440, 4320 or 10080.
	AutoArchiveDuration int `json:"auto_archive_duration,omitempty"`
	// RateLimitPerUser is the slow mode in seconds (0–21600); nil leaves the default.
	RateLimitPerUser *int `json:"rate_limit_per_user,omitempty"`
}

// threadArchiveMinutes is how long a quiet thread stays in the channel list: a day.
const threadArchiveMinutes = 1440

// channelFor is the channel id outbound calls to k go to: the DM or channel, or the thread,
// which is started from the message k.Thread names when it does not exist yet.
func (t *threadMaker) channelFor(ctx context.Context, k conv.Key) (string, error) {
	if k.Thread == "" {
		if k.Chat == "" {
			return "", errors.New("discord: conversation without a channel")
		}
		return k.Chat, nil
	}
	if t.places.isThread(k.Thread) {
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
	if t.places.isThread(k.Thread) {
		return k.Thread, nil
	}
	if name == "" {
		name = "Conversation"
	}
	// discordgo's MessageThreadStartComplex keys its rate-limit bucket by message, and keeps
	// every bucket forever: one bucket per channel instead.
	ep := discordgo.EndpointChannelMessageThread(k.Chat, k.Thread)
	err := t.rest.call(ctx, "start thread", func(opts ...discordgo.RequestOption) error {
		_, err := t.s.RequestWithBucketID("POST", ep, threadFromMessage{Name: name, AutoArchiveDuration: threadArchiveMinutes},
			discordgo.EndpointChannel(k.Chat)+"/threads-from-messages", opts...)
		return err
	})
	switch {
	case err == nil, apiCode(err) == codeThreadExists, errors.Is(err, channels.ErrMessageGone):
		// Started now, started before (a restart, a redelivery), or not a message of the
		// channel at all — a thread someone else started, which is its own channel.
		t.places.learnThread(k.Thread, k.Workspace, k.Chat)
		t.mu.Lock()
		delete(t.names, k.Thread)
		t.mu.Unlock()
		return k.Thread, nil
	case errors.Is(err, channels.ErrUnreachable), apiStatus(err) == http.StatusBadRequest:
		// No thread here (no Create Public Threads permission, a channel type without threads):
		// answer in the channel rather than not at all.
		t.log.Warn("discord: cannot start a thread; answering in the channel", "channel", k.Chat, "err", err)
		return k.Chat, nil
	}
	return "", err
}
