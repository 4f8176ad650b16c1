package discord

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/conv"
)

// errMalformed is wrapped by the decoders' errors.
var errMalformed = errors.New("discord: malformed event")

// maxEventBytes bounds one dispatch's data; Discord's are far smaller.
const maxEventBytes = 4 << 20

// Message types that carry a user's words (DEFAULT, REPLY); the rest are system notices.
const (
	msgDefault = 0
	msgReply   = 19
)

// botIdentity is what inbound conversion needs to know about the bot.
type botIdentity struct {
	id    string
	roles map[string]bool // the bot's managed role per guild
}

// botSelf is who the bot is, as READY, users/@me or a saved session told: its user id, its
// managed roles (a mention of one addresses the bot) and its application id. Safe for
// concurrent use.
type botSelf struct {
	mu    sync.Mutex
	id    string
	roles map[string]bool
	appID string // Config.ApplicationID, else READY's, else the user id
}

// set records the bot's user id and, unless one is known, its application id.
func (b *botSelf) set(id, appID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.id = id
	if b.appID == "" {
		b.appID = appID
	}
	if b.appID == "" {
		b.appID = id
	}
}

// addRoles records managed roles of the bot.
func (b *botSelf) addRoles(roles ...string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.roles == nil {
		b.roles = map[string]bool{}
	}
	for _, r := range roles {
		b.roles[r] = true
	}
}

func (b *botSelf) userID() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.id
}

func (b *botSelf) application() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.appID
}

// identity is a copy of the bot's identity, for decoding events.
func (b *botSelf) identity() botIdentity {
	b.mu.Lock()
	defer b.mu.Unlock()
	roles := make(map[string]bool, len(b.roles))
	for r := range b.roles {
		roles[r] = true
	}
	return botIdentity{id: b.id, roles: roles}
}

// saved is what a saved session keeps of the bot.
func (b *botSelf) saved() (id, appID string, roles []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for r := range b.roles {
		roles = append(roles, r)
	}
	return b.id, b.appID, roles
}

// where says where a channel id sits: Thread when it is a thread, then Parent is its channel.
type where struct {
	Guild  string
	Parent string
	Thread bool
}

// decodeMessage parses a MESSAGE_CREATE. It fails on invalid JSON and on a message without an
// id, a channel or an author.
func decodeMessage(data []byte) (*discordgo.Message, error) {
	if len(data) > maxEventBytes {
		return nil, fmt.Errorf("%w: %d bytes", errMalformed, len(data))
	}
	var m discordgo.Message
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%w: %w", errMalformed, err)
	}
	if m.ID == "" || m.ChannelID == "" || m.Author == nil || m.Author.ID == "" {
		return nil, fmt.Errorf("%w: message without id, channel or author", errMalformed)
	}
	return &m, nil
}

func identity(u *discordgo.User) conv.Identity {
	id := conv.Identity{Platform: platform}
	if u == nil {
		return id
	}
	id.ChannelUserID = u.ID
	id.DisplayName = u.GlobalName
	if id.DisplayName == "" {
		id.DisplayName = u.Username
	}
	return id
}

// inboundOptions are the configuration choices conversion follows.
type inboundOptions struct {
	replyInThread bool
	mentionOnly   bool // discord.thread_replies: mention
}

// messageInbound converts a user message. ok is false for messages the bot ignores: its own,
// system messages, empty ones, and (with thread_replies: mention) unaddressed ones in threads.
// w is where the message's channel sits.
func messageInbound(m *discordgo.Message, bot botIdentity, w where, opt inboundOptions, now time.Time) (channels.Inbound, bool) {
	if m.Author.ID == bot.id || (m.Type != msgDefault && m.Type != msgReply) {
		return channels.Inbound{}, false
	}
	mentioned := false
	for _, u := range m.Mentions {
		if u != nil && u.ID == bot.id {
			mentioned = true
		}
	}
	for _, r := range m.MentionRoles {
		if bot.roles[r] {
			mentioned = true
		}
	}
	if ref := m.ReferencedMessage; ref != nil && ref.Author != nil && ref.Author.ID == bot.id {
		mentioned = true
	}
	text := stripMentions(m.Content, bot)
	files := attachments(m.Attachments)
	if strings.TrimSpace(text) == "" && len(files) == 0 {
		return channels.Inbound{}, false
	}
	in := channels.Inbound{
		EventID:      m.ID,
		Identity:     identity(m.Author),
		Text:         text,
		MessageID:    m.ID,
		Files:        files,
		FromBot:      m.Author.Bot,
		AddressesBot: mentioned,
		ReceivedAt:   now,
	}
	if m.MessageReference != nil {
		in.ReplyTo = m.MessageReference.MessageID
	}
	switch {
	case m.GuildID == "":
		in.Direct, in.AddressesBot = true, true
		in.Conv = conv.Key{Platform: platform, Chat: m.ChannelID}
	case w.Thread:
		if opt.mentionOnly && !mentioned {
			return channels.Inbound{}, false
		}
		in.Conv = conv.Key{Platform: platform, Workspace: m.GuildID, Chat: w.Parent, Thread: m.ChannelID}
	default:
		in.Conv = conv.Key{Platform: platform, Workspace: m.GuildID, Chat: m.ChannelID}
		if mentioned && opt.replyInThread {
			// Answered in a new thread started from this message: the thread's id will be the
			// message's id, so the conversation is keyed by it from the start.
			in.Conv.Thread = m.ID
		}
	}
	return in, true
}

// stripMentions removes the bot's own mentions (user and managed role) and tidies the space
// they leave.
func stripMentions(s string, bot botIdentity) string {
	if bot.id != "" {
		s = strings.ReplaceAll(s, "<@"+bot.id+">", "")
		s = strings.ReplaceAll(s, "<@!"+bot.id+">", "")
	}
	for r := range bot.roles {
		s = strings.ReplaceAll(s, "<@&"+r+">", "")
	}
	return strings.TrimLeft(strings.TrimSpace(s), ",: ")
}

func attachments(as []*discordgo.MessageAttachment) []conv.Attachment {
	var out []conv.Attachment
	for _, a := range as {
		if a == nil || a.URL == "" {
			continue
		}
		name := a.Filename
		if name == "" {
			name = "file"
		}
		out = append(out, conv.Attachment{Name: name, MIME: a.ContentType, Size: int64(a.Size), URL: a.URL})
	}
	return out
}

// interactionEvent is an INTERACTION_CREATE: discordgo's Interaction plus the channel object it
// lacks (which says whether the channel is a thread, and its parent).
type interactionEvent struct {
	*discordgo.Interaction
	Channel *struct {
		ID       string `json:"id"`
		Type     int    `json:"type"`
		ParentID string `json:"parent_id"`
	}
	// Permissions is member.permissions as sent (a guild interaction's member's permissions in
	// the channel, a decimal string), "" when absent; parsePermissions reads it.
	Permissions string
	// modal is a modal submit's data, decoded by takeModalSubmit; nil for other interactions.
	modal *modalSubmit
}

// decodeInteraction parses an INTERACTION_CREATE. It fails on invalid JSON and on an
// interaction without id, token, channel or user.
func decodeInteraction(data []byte) (*interactionEvent, error) {
	if len(data) > maxEventBytes {
		return nil, fmt.Errorf("%w: %d bytes", errMalformed, len(data))
	}
	data, modal, err := takeModalSubmit(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errMalformed, err)
	}
	var ix discordgo.Interaction
	if err := json.Unmarshal(data, &ix); err != nil {
		return nil, fmt.Errorf("%w: %w", errMalformed, err)
	}
	var extra struct {
		Channel *struct {
			ID       string `json:"id"`
			Type     int    `json:"type"`
			ParentID string `json:"parent_id"`
		} `json:"channel"`
		Member *struct {
			Permissions json.RawMessage `json:"permissions"`
		} `json:"member"`
	}
	_ = json.Unmarshal(data, &extra)
	if ix.ID == "" || ix.Token == "" || ix.ChannelID == "" || user(&ix) == nil {
		return nil, fmt.Errorf("%w: interaction without id, token, channel or user", errMalformed)
	}
	ev := &interactionEvent{Interaction: &ix, Channel: extra.Channel, modal: modal}
	if extra.Member != nil && len(extra.Member.Permissions) > 0 {
		// Kept as sent: discordgo reads it into an int64, where "-1" would be every bit.
		_ = json.Unmarshal(extra.Member.Permissions, &ev.Permissions)
	}
	return ev, nil
}

func user(ix *discordgo.Interaction) *discordgo.User {
	if ix.Member != nil && ix.Member.User != nil && ix.Member.User.ID != "" {
		return ix.Member.User
	}
	if ix.User != nil && ix.User.ID != "" {
		return ix.User
	}
	return nil
}

// isThreadType reports whether a channel type is a thread (news, public, private).
func isThreadType(t int) bool { return t == 10 || t == 11 || t == 12 }

// interactionConv is the conversation an interaction happened in.
func interactionConv(ix *interactionEvent, w where) conv.Key {
	switch {
	case ix.GuildID == "":
		return conv.Key{Platform: platform, Chat: ix.ChannelID}
	case w.Thread:
		return conv.Key{Platform: platform, Workspace: ix.GuildID, Chat: w.Parent, Thread: ix.ChannelID}
	}
	return conv.Key{Platform: platform, Workspace: ix.GuildID, Chat: ix.ChannelID}
}

// commandReplyPrefix marks Inbound.MessageID of a slash command: replies to it answer the
// interaction (its deferred response, then follow-ups) instead of posting in the channel.
const commandReplyPrefix = "interaction:"

// interactionInbound converts a component click, a modal submit or a slash command. ok is false
// for kinds the bot does not handle (pings, autocomplete) and for commands that are not ours.
// adminPerm is Config.AdminPermission: a guild member whose permissions, as Discord sent them
// with the interaction, hold it is marked PlatformAdmin; malformed permissions hold nothing.
func interactionInbound(ix *interactionEvent, w where, now time.Time, adminPerm uint64) (channels.Inbound, bool) {
	k := interactionConv(ix, w)
	in := channels.Inbound{
		EventID:      "interaction:" + ix.ID,
		Conv:         k,
		Identity:     identity(user(ix.Interaction)),
		AddressesBot: true,
		Direct:       ix.GuildID == "",
		FromBot:      user(ix.Interaction).Bot,
		ReceivedAt:   now,
	}
	if adminPerm != 0 && ix.GuildID != "" && ix.Permissions != "" {
		if perms, err := parsePermissions(ix.Permissions); err == nil && holds(perms, adminPerm) {
			in.PlatformAdmin = true
		}
	}
	var msgRef channels.MessageRef
	if ix.Message != nil && ix.Message.ID != "" {
		in.MessageID = ix.Message.ID
		msgRef = channels.MessageRef{Conv: k, IDs: []string{ix.Message.ID}}
	}
	switch ix.Type {
	case discordgo.InteractionMessageComponent:
		d, ok := ix.Data.(discordgo.MessageComponentInteractionData)
		if !ok || d.CustomID == "" {
			return channels.Inbound{}, false
		}
		it := &channels.Interaction{ID: ix.ID, Token: ix.Token, Data: d.CustomID, Message: msgRef}
		if len(d.Values) > 0 {
			it.Values = map[string][]string{d.CustomID: append([]string(nil), d.Values...)}
		}
		in.Interaction = it
	case discordgo.InteractionModalSubmit:
		if ix.modal == nil || ix.modal.CustomID == "" {
			return channels.Inbound{}, false
		}
		in.Interaction = &channels.Interaction{ID: ix.ID, Token: ix.Token, Data: ix.modal.CustomID, Values: ix.modal.inputs(), Message: msgRef}
	case discordgo.InteractionApplicationCommand:
		d, ok := ix.Data.(discordgo.ApplicationCommandInteractionData)
		if !ok || (d.Name != commandName && d.Name != adminCommandName) || len(d.Options) == 0 || d.Options[0] == nil {
			return channels.Inbound{}, false
		}
		sub := d.Options[0]
		if sub.Type != discordgo.ApplicationCommandOptionSubCommand || sub.Name == "" {
			return channels.Inbound{}, false
		}
		in.Command = sub.Name
		for _, o := range sub.Options {
			if o != nil && o.Type == discordgo.ApplicationCommandOptionString {
				if s, ok := o.Value.(string); ok {
					in.Args = append(in.Args, strings.Fields(s)...)
				}
			}
		}
		in.Text = "/" + sub.Name
		if len(in.Args) > 0 {
			in.Text += " " + strings.Join(in.Args, " ")
		}
		in.MessageID = commandReplyPrefix + ix.ID
	default:
		return channels.Inbound{}, false
	}
	return in, true
}

// guildInfo is the part of a GUILD_CREATE this adapter keeps: the bot's managed role and the
// threads' parents.
type guildInfo struct {
	ID       string        `json:"id"`
	Roles    []guildRole   `json:"roles"`
	Channels []channelInfo `json:"channels"`
	Threads  []channelInfo `json:"threads"`
}

// guildRole is a role of a guild; a managed role of a bot names it in its tags.
type guildRole struct {
	ID   string `json:"id"`
	Tags *struct {
		BotID string `json:"bot_id"`
	} `json:"tags"`
}

// channelInfo is a channel or thread as GUILD_CREATE, THREAD_CREATE and GET /channels give it.
type channelInfo struct {
	ID       string `json:"id"`
	Type     int    `json:"type"`
	GuildID  string `json:"guild_id"`
	ParentID string `json:"parent_id"`
}

// decodeGuild parses a GUILD_CREATE. It fails on invalid JSON and on a guild without id; roles
// and channels without an id, and threads without a parent, are dropped (a thread is keyed by its
// parent: one without would make a conversation with no chat).
func decodeGuild(data []byte) (guildInfo, error) {
	var g guildInfo
	if err := json.Unmarshal(data, &g); err != nil {
		return guildInfo{}, fmt.Errorf("%w: %w", errMalformed, err)
	}
	if g.ID == "" {
		return guildInfo{}, fmt.Errorf("%w: guild without id", errMalformed)
	}
	g.Roles = slices.DeleteFunc(g.Roles, func(r guildRole) bool { return r.ID == "" })
	g.Channels = slices.DeleteFunc(g.Channels, func(c channelInfo) bool { return c.ID == "" })
	g.Threads = slices.DeleteFunc(g.Threads, func(c channelInfo) bool { return c.ID == "" || c.ParentID == "" })
	return g, nil
}

// decodeChannel parses a channel or thread (THREAD_CREATE, THREAD_UPDATE, CHANNEL_CREATE, GET
// /channels/{id}). It fails on invalid JSON, a channel without id and a thread without parent.
func decodeChannel(data []byte) (channelInfo, error) {
	if len(data) > maxEventBytes {
		return channelInfo{}, fmt.Errorf("%w: %d bytes", errMalformed, len(data))
	}
	var c channelInfo
	if err := json.Unmarshal(data, &c); err != nil {
		return channelInfo{}, fmt.Errorf("%w: %w", errMalformed, err)
	}
	if c.ID == "" {
		return channelInfo{}, fmt.Errorf("%w: channel without id", errMalformed)
	}
	if isThreadType(c.Type) && c.ParentID == "" {
		return channelInfo{}, fmt.Errorf("%w: thread without parent", errMalformed)
	}
	return c, nil
}

// ready is the part of READY the gateway keeps.
type ready struct {
	SessionID   string              `json:"session_id"`
	ResumeURL   string              `json:"resume_gateway_url"`
	User        struct{ ID string } `json:"user"`
	Application struct{ ID string } `json:"application"`
}

// decodeReady parses READY. It fails on invalid JSON and a missing session id or bot user; a
// resume URL that is not a websocket URL is dropped (resumes then use the generic URL).
func decodeReady(data []byte) (ready, error) {
	var r ready
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("%w: READY: %w", errMalformed, err)
	}
	if r.SessionID == "" || r.User.ID == "" {
		return r, fmt.Errorf("%w: READY without session id or user", errMalformed)
	}
	if r.ResumeURL != "" && !strings.HasPrefix(r.ResumeURL, "wss://") && !strings.HasPrefix(r.ResumeURL, "ws://") {
		r.ResumeURL = ""
	}
	return r, nil
}
