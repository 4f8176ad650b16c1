package discordfake

import (
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits the fake enforces, as Discord does.
const (
	MaxContent    = 2000
	MaxEmbeds     = 10
	MaxEmbedTotal = 6000
	MaxRows       = 5
	MaxCustomID   = 100
)

// User is a Discord user as the fake sends it in events.
type User struct {
	ID       string
	Username string
	Bot      bool
}

func (u User) wire() map[string]any {
	name := u.Username
	if name == "" {
		name = "user" + u.ID
	}
	return map[string]any{"id": u.ID, "username": name, "discriminator": "0", "global_name": name, "bot": u.Bot}
}

// Embed is the part of an embed tests read.
type Embed struct {
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Fields      []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"fields,omitempty"`
	Footer *struct {
		Text string `json:"text"`
	} `json:"footer,omitempty"`
}

// Text is everything the embed shows, joined by newlines.
func (e Embed) Text() string {
	parts := []string{e.Title, e.Description}
	for _, f := range e.Fields {
		parts = append(parts, f.Name, f.Value)
	}
	if e.Footer != nil {
		parts = append(parts, e.Footer.Text)
	}
	return strings.Join(parts, "\n")
}

func (e Embed) size() int {
	n := utf8.RuneCountInString(e.Title) + utf8.RuneCountInString(e.Description)
	for _, f := range e.Fields {
		n += utf8.RuneCountInString(f.Name) + utf8.RuneCountInString(f.Value)
	}
	if e.Footer != nil {
		n += utf8.RuneCountInString(e.Footer.Text)
	}
	return n
}

// AllowedMentions is a message's allowed_mentions as sent.
type AllowedMentions struct {
	Parse       []string `json:"parse"`
	Users       []string `json:"users,omitempty"`
	Roles       []string `json:"roles,omitempty"`
	RepliedUser bool     `json:"replied_user,omitempty"`
}

// Message is a message as the fake holds it, edits and deletion applied.
type Message struct {
	ID        string
	ChannelID string
	GuildID   string
	Author    User
	Content   string
	Embeds    []Embed
	// Components are the message's action rows, or, with FlagComponentsV2 in Flags, every
	// component it is made of.
	Components []Component
	// AllowedMentions is nil when the request had none.
	AllowedMentions *AllowedMentions
	// ReplyTo is message_reference.message_id.
	ReplyTo   string
	Nonce     string
	Flags     int
	Edits     int
	Deleted   bool
	Ephemeral bool
	// Pending: a deferred interaction response not yet edited ("thinking…").
	Pending bool
	// Interaction is the id of the interaction this message answers, if any.
	Interaction string
	// MentionedBot: a user message that mentions the bot.
	MentionedBot bool
	// Files are the files the bot attached (a multipart post), in order.
	Files     []File
	CreatedAt time.Time
}

// Text is the content, every embed's text and every text display's, joined by newlines.
func (m Message) Text() string {
	parts := []string{m.Content}
	for _, e := range m.Embeds {
		parts = append(parts, e.Text())
	}
	parts = append(parts, TextDisplays(m.Components)...)
	return strings.Join(parts, "\n")
}

// V2 reports whether the message is a Components V2 one (FlagComponentsV2).
func (m Message) V2() bool { return m.Flags&FlagComponentsV2 != 0 }

func (m *Message) wire() map[string]any {
	w := map[string]any{
		"id": m.ID, "channel_id": m.ChannelID, "author": m.Author.wire(), "content": m.Content,
		"timestamp": m.CreatedAt.UTC().Format(time.RFC3339Nano), "type": 0, "flags": m.Flags,
		"embeds": orEmpty(m.Embeds), "components": orEmpty(m.Components), "mentions": []any{},
		"attachments": filesWire(m), "tts": false, "mention_everyone": false, "pinned": false,
	}
	if m.GuildID != "" {
		w["guild_id"] = m.GuildID
	}
	if m.Nonce != "" {
		w["nonce"] = m.Nonce
	}
	if m.ReplyTo != "" {
		w["message_reference"] = map[string]any{"message_id": m.ReplyTo, "channel_id": m.ChannelID}
	}
	return w
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

var (
	userMention = regexp.MustCompile(`<@!?(\d+)>`)
	roleMention = regexp.MustCompile(`<@&(\d+)>`)
)

// Pings lists whom a message notifies, as Discord decides from its content (and a V2 message's
// text displays, which ping as content does) and allowed_mentions: "everyone" (for @everyone and
// @here), "user:<id>" and "role:<id>".
func Pings(m Message) []string {
	var out []string
	parse := []string{"everyone", "users", "roles"}
	var users, roles []string
	if am := m.AllowedMentions; am != nil {
		parse, users, roles = am.Parse, am.Users, am.Roles
	}
	text := strings.Join(append([]string{m.Content}, TextDisplays(m.Components)...), "\n")
	if slices.Contains(parse, "everyone") && (strings.Contains(text, "@everyone") || strings.Contains(text, "@here")) {
		out = append(out, "everyone")
	}
	for _, sm := range userMention.FindAllStringSubmatch(text, -1) {
		if slices.Contains(parse, "users") || slices.Contains(users, sm[1]) {
			out = append(out, "user:"+sm[1])
		}
	}
	for _, sm := range roleMention.FindAllStringSubmatch(text, -1) {
		if slices.Contains(parse, "roles") || slices.Contains(roles, sm[1]) {
			out = append(out, "role:"+sm[1])
		}
	}
	return out
}

// messages are the messages of every channel: users' (Post), the bot's (POST, PATCH and
// DELETE /channels/{channel}/messages, with nonce idempotency) and interaction responses.
type messages struct {
	st    *store
	chans *channels
	gw    *gateway
	// Guarded by st.mu.
	byChannel map[string][]*Message // channel id → messages in order of creation
	byID      map[string]*Message
	nonces    map[string]*Message // channel id + nonce → message
}

func newMessages(st *store, chans *channels, gw *gateway) *messages {
	return &messages{st: st, chans: chans, gw: gw,
		byChannel: map[string][]*Message{}, byID: map[string]*Message{}, nonces: map[string]*Message{}}
}

// addLocked keeps m, a new message, in its channel.
func (ms *messages) addLocked(m *Message) {
	ms.byChannel[m.ChannelID] = append(ms.byChannel[m.ChannelID], m)
	ms.byID[m.ID] = m
}

// Posted returns the visible messages of a channel in order: not deleted, not ephemeral, not a
// deferred response still thinking.
func (ms *messages) Posted(channelID string) []Message {
	ms.st.mu.Lock()
	defer ms.st.mu.Unlock()
	var out []Message
	for _, m := range ms.byChannel[channelID] {
		if !m.Deleted && !m.Ephemeral && !m.Pending {
			out = append(out, *m)
		}
	}
	return out
}

// PostedByBot is Posted restricted to the bot's messages.
func (ms *messages) PostedByBot(channelID string) []Message {
	var out []Message
	for _, m := range ms.Posted(channelID) {
		if m.Author.ID == BotID {
			out = append(out, m)
		}
	}
	return out
}

// Message returns a message by id (deleted ones too).
func (ms *messages) Message(id string) (Message, bool) {
	ms.st.mu.Lock()
	defer ms.st.mu.Unlock()
	m, ok := ms.byID[id]
	if !ok {
		return Message{}, false
	}
	return *m, true
}

// Attachment is a file on a user message. AddFile makes one the fake serves.
type Attachment struct {
	// ID is the attachment's id; default one derived from the message's.
	ID          string
	Filename    string
	ContentType string
	Size        int64
	URL         string
	// ProxyURL is the attachment's proxy_url; default URL.
	ProxyURL string
}

// UserMessage is a message a user posts.
type UserMessage struct {
	Channel string
	Author  User
	Content string
	// MentionBot prefixes the content with the bot's user mention; MentionRole with its managed
	// role's mention.
	MentionBot  bool
	MentionRole bool
	Attachments []Attachment
	// ReplyTo is the id of the message this one replies to.
	ReplyTo string
}

// Post records a user message and dispatches MESSAGE_CREATE; it returns the message id.
func (ms *messages) Post(um UserMessage) string {
	ms.st.mu.Lock()
	guild := ms.chans.guildOfLocked(um.Channel)
	content := um.Content
	var mentions []any
	var roles []string
	if um.MentionBot {
		content = "<@" + BotID + "> " + content
		mentions = append(mentions, botUser())
	}
	if um.MentionRole {
		content = "<@&" + BotRoleID + "> " + content
		roles = append(roles, BotRoleID)
	}
	m := &Message{ID: ms.st.newIDLocked(), ChannelID: um.Channel, GuildID: guild, Author: um.Author, Content: content,
		ReplyTo: um.ReplyTo, MentionedBot: um.MentionBot, CreatedAt: time.Now()}
	ms.addLocked(m)
	ms.st.mu.Unlock()

	w := m.wire()
	w["mentions"] = orEmpty(mentions)
	w["mention_roles"] = orEmpty(roles)
	var atts []any
	for i, a := range um.Attachments {
		id, proxy := a.ID, a.ProxyURL
		if id == "" {
			id = m.ID + "0" + string(rune('0'+i%10))
		}
		if proxy == "" {
			proxy = a.URL
		}
		atts = append(atts, map[string]any{"id": id, "filename": a.Filename,
			"content_type": a.ContentType, "size": a.Size, "url": a.URL, "proxy_url": proxy})
	}
	w["attachments"] = orEmpty(atts)
	if guild != "" {
		w["member"] = map[string]any{"roles": []string{}, "joined_at": time.Now().UTC().Format(time.RFC3339)}
	}
	ms.gw.dispatch("MESSAGE_CREATE", w)
	return m.ID
}

// Redeliver dispatches MESSAGE_CREATE again for a user message posted before (as Discord may
// after a resume), with a new sequence number and the same message. It reports whether the
// message exists.
func (ms *messages) Redeliver(messageID string) bool {
	ms.st.mu.Lock()
	m, ok := ms.byID[messageID]
	var w map[string]any
	if ok {
		w = m.wire()
	}
	ms.st.mu.Unlock()
	if !ok {
		return false
	}
	if m.MentionedBot {
		w["mentions"] = []any{botUser()}
	}
	ms.gw.dispatch("MESSAGE_CREATE", w)
	return true
}

func (ms *messages) postMessage(_ http.ResponseWriter, r *http.Request, body []byte) (int, any) {
	payload, files, st, resp := readMessagePost(r, body)
	if st != 0 {
		return st, resp
	}
	b, ok := decodeMessageBody(payload)
	if !ok {
		return errorResp(http.StatusBadRequest, 50109, "The request body contains invalid JSON.")
	}
	if st, resp := b.check(nil, true, files...); st != 0 {
		return st, resp
	}
	chID := r.PathValue("channel")
	ms.st.mu.Lock()
	defer ms.st.mu.Unlock()
	ch, ok := ms.chans.byID[chID]
	if !ok {
		return errorResp(http.StatusNotFound, 10003, "Unknown Channel")
	}
	nonce := nonceString(b.Nonce)
	if nonce != "" && len(nonce) > 25 {
		return errorResp(http.StatusBadRequest, 50035, "Invalid Form Body: nonce: Must be 25 or fewer in length.")
	}
	if b.EnforceNonce && nonce != "" {
		if m, ok := ms.nonces[chID+"/"+nonce]; ok && time.Since(m.CreatedAt) < 5*time.Minute {
			return http.StatusOK, m.wire()
		}
	}
	// Only these flags can be set on a new message (Create Message: flags).
	flags := b.Flags & (1<<2 | 1<<12 | 1<<13 | FlagComponentsV2)
	m := &Message{ID: ms.st.newIDLocked(), ChannelID: chID, GuildID: ch.GuildID, Author: User{ID: BotID, Username: BotUsername, Bot: true},
		Nonce: nonce, Flags: flags, CreatedAt: time.Now()}
	if b.MessageReference != nil {
		m.ReplyTo = b.MessageReference.MessageID
	}
	b.apply(m)
	for _, f := range files {
		f.ID = ms.st.newIDLocked()
		m.Files = append(m.Files, f)
	}
	ms.addLocked(m)
	if b.EnforceNonce && nonce != "" {
		ms.nonces[chID+"/"+nonce] = m
	}
	return http.StatusOK, m.wire()
}

func (ms *messages) ownMessageLocked(chID, msgID string) (*Message, int, any) {
	m, ok := ms.byID[msgID]
	if !ok || m.ChannelID != chID || m.Deleted {
		st, resp := errorResp(http.StatusNotFound, 10008, "Unknown Message")
		return nil, st, resp
	}
	return m, 0, nil
}

func (ms *messages) patchMessage(_ http.ResponseWriter, r *http.Request, body []byte) (int, any) {
	b, ok := decodeMessageBody(body)
	if !ok {
		return errorResp(http.StatusBadRequest, 50109, "The request body contains invalid JSON.")
	}
	ms.st.mu.Lock()
	defer ms.st.mu.Unlock()
	m, st, resp := ms.ownMessageLocked(r.PathValue("channel"), r.PathValue("message"))
	if m == nil {
		return st, resp
	}
	if m.Author.ID != BotID {
		return errorResp(http.StatusForbidden, 50005, "Cannot edit a message authored by another user")
	}
	if st, resp := b.check(m, false); st != 0 {
		return st, resp
	}
	b.apply(m)
	m.Edits++
	return http.StatusOK, m.wire()
}

func (ms *messages) deleteMessage(_ http.ResponseWriter, r *http.Request, _ []byte) (int, any) {
	ms.st.mu.Lock()
	defer ms.st.mu.Unlock()
	m, st, resp := ms.ownMessageLocked(r.PathValue("channel"), r.PathValue("message"))
	if m == nil {
		return st, resp
	}
	m.Deleted = true
	return http.StatusNoContent, nil
}
