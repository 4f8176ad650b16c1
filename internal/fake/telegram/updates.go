package telegramfake

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"
	"unicode/utf16"
)

// User is a Telegram user as the wire format has it.
type User struct {
	ID        int64  `json:"id"`
	IsBot     bool   `json:"is_bot"`
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name,omitempty"`
	Username  string `json:"username,omitempty"`
}

// Chat is a Telegram chat as the wire format has it. Type is private, group, supergroup or
// channel.
type Chat struct {
	ID      int64  `json:"id"`
	Type    string `json:"type"`
	Title   string `json:"title,omitempty"`
	IsForum bool   `json:"is_forum,omitempty"`
}

// Entity is a message entity; Offset and Length count UTF-16 code units.
type Entity struct {
	Type   string `json:"type"`
	Offset int    `json:"offset"`
	Length int    `json:"length"`
	User   *User  `json:"user,omitempty"`
}

// WireMessage is a message as getUpdates delivers it.
type WireMessage struct {
	MessageID       int          `json:"message_id"`
	MessageThreadID int          `json:"message_thread_id,omitempty"`
	IsTopicMessage  bool         `json:"is_topic_message,omitempty"`
	From            *User        `json:"from,omitempty"`
	Chat            Chat         `json:"chat"`
	Date            int64        `json:"date"`
	Text            string       `json:"text,omitempty"`
	Entities        []Entity     `json:"entities,omitempty"`
	Caption         string       `json:"caption,omitempty"`
	CaptionEntities []Entity     `json:"caption_entities,omitempty"`
	ReplyToMessage  *WireMessage `json:"reply_to_message,omitempty"`
	ReplyMarkup     *Keyboard    `json:"reply_markup,omitempty"`
	// Document is set on messages the bot sent with sendDocument, and on users' documents.
	Document *WireDocument `json:"document,omitempty"`
	// The files of users' messages other than documents (In.Files).
	Photo     []WireMedia `json:"photo,omitempty"`
	Voice     *WireMedia  `json:"voice,omitempty"`
	Audio     *WireMedia  `json:"audio,omitempty"`
	Video     *WireMedia  `json:"video,omitempty"`
	VideoNote *WireMedia  `json:"video_note,omitempty"`
	Sticker   *WireMedia  `json:"sticker,omitempty"`
}

// In describes a message a user sends, for PushMessage. Entities are derived from Text (bot
// commands at the start, @mentions) unless Entities is set.
type In struct {
	Chat Chat
	From User
	Text string
	// Caption sends Text as a photo caption instead.
	Caption bool
	// ThreadID puts the message in a topic: of a forum supergroup, or of a private chat with the
	// bot (Bot API 9.3: such messages carry message_thread_id and is_topic_message too).
	ThreadID int
	// ReplyTo is the id of a message in the same chat this one replies to.
	ReplyTo  int
	Entities []Entity
	// Files are files registered with AddFile that the message carries (Telegram sends one
	// file a message, with Text as its caption when Caption is set).
	Files []UserFile
}

// Private is a private chat with u.
func Private(u User) Chat { return Chat{ID: u.ID, Type: "private"} }

// Group is a supergroup chat; id should be negative, as Telegram's are.
func Group(id int64) Chat {
	return Chat{ID: id, Type: "supergroup", Title: "group " + strconv.FormatInt(id, 10)}
}

// Forum is a forum supergroup (topics enabled).
func Forum(id int64) Chat {
	c := Group(id)
	c.IsForum = true
	return c
}

// updates are the updates users make (the Push methods) queued until getUpdates confirms them
// (or TakeUpdates hands them to a webhook test), and the long polls waiting for them.
type updates struct {
	mu        *sync.Mutex
	msgs      *messages
	callbacks *callbacks
	webhook   *webhook
	// Guarded by mu.
	nextUpdate int64
	queue      []queued      // unconfirmed updates, ascending ids
	handed     int64         // the highest update id a getUpdates answer carried
	wake       chan struct{} // closed and replaced when an update is queued
	closed     bool
	// poller is the getUpdates call in flight, which a second one terminates (409), as
	// Telegram does; conflicts counts those terminations.
	poller    *pollCall
	conflicts int
}

type queued struct {
	id  int64
	raw json.RawMessage
}

func newUpdates(mu *sync.Mutex, msgs *messages, callbacks *callbacks) *updates {
	return &updates{mu: mu, msgs: msgs, callbacks: callbacks, nextUpdate: 100000, wake: make(chan struct{})}
}

// close wakes every waiting long poll, for good.
func (up *updates) close() {
	up.mu.Lock()
	if !up.closed {
		up.closed = true
		close(up.wake)
	}
	up.mu.Unlock()
}

// PushMessage queues a message update from a user and returns its update id and message id.
func (up *updates) PushMessage(in In) (updateID int64, messageID int) {
	up.mu.Lock()
	defer up.mu.Unlock()
	c := up.msgs.chatLocked(in.Chat.ID)
	c.nextID++
	m := WireMessage{MessageID: c.nextID, From: &in.From, Chat: in.Chat, Date: time.Now().Unix()}
	ents := in.Entities
	if ents == nil {
		ents = deriveEntities(in.Text)
	}
	if in.Caption {
		m.Caption, m.CaptionEntities = in.Text, ents
	} else {
		m.Text, m.Entities = in.Text, ents
	}
	if in.ThreadID != 0 {
		m.MessageThreadID, m.IsTopicMessage = in.ThreadID, true
	}
	if in.ReplyTo != 0 {
		m.ReplyToMessage = c.wire(in.ReplyTo, in.Chat)
		if in.ThreadID != 0 {
			m.MessageThreadID = in.ThreadID
		}
	} else if in.ThreadID != 0 {
		// In a forum topic an unreplied message replies to the topic's creation message.
		m.ReplyToMessage = &WireMessage{MessageID: in.ThreadID, Chat: in.Chat, MessageThreadID: in.ThreadID, IsTopicMessage: true}
	}
	for _, f := range in.Files {
		m.addFile(f)
	}
	c.msgs[m.MessageID] = &Message{ID: m.MessageID, ChatID: in.Chat.ID, ThreadID: in.ThreadID, Text: in.Text, FromUser: in.From.ID, ReplyTo: in.ReplyTo, At: time.Now()}
	c.order = append(c.order, m.MessageID)
	return up.pushLocked(map[string]any{"message": m}), m.MessageID
}

// PushPrivate queues a private message from u.
func (up *updates) PushPrivate(u User, text string) (updateID int64, messageID int) {
	return up.PushMessage(In{Chat: Private(u), From: u, Text: text})
}

// PushGroup queues a message from u in supergroup chatID; "@<BotUsername>" in text becomes a
// mention entity.
func (up *updates) PushGroup(chatID int64, u User, text string) (updateID int64, messageID int) {
	return up.PushMessage(In{Chat: Group(chatID), From: u, Text: text})
}

// PushTopic queues a message from u in forum topic threadID of forum supergroup chatID.
func (up *updates) PushTopic(chatID int64, threadID int, u User, text string) (updateID int64, messageID int) {
	return up.PushMessage(In{Chat: Forum(chatID), From: u, Text: text, ThreadID: threadID})
}

// PushPrivateTopic queues a message from u in topic threadID of u's private chat with the bot.
func (up *updates) PushPrivateTopic(u User, threadID int, text string) (updateID int64, messageID int) {
	return up.PushMessage(In{Chat: Private(u), From: u, Text: text, ThreadID: threadID})
}

// PushCallback queues a click by u on a button with callbackData of message messageID in
// chatID (which should be a message the bot posted), and returns the update id and the callback
// query id.
func (up *updates) PushCallback(chatID int64, messageID int, u User, callbackData string) (updateID int64, queryID string) {
	up.mu.Lock()
	defer up.mu.Unlock()
	c := up.msgs.chatLocked(chatID)
	chat := Chat{ID: chatID, Type: "supergroup"}
	if chatID > 0 {
		chat.Type = "private"
	}
	msg := c.wire(messageID, chat)
	if m := c.msgs[messageID]; m != nil && m.ThreadID != 0 && chatID < 0 {
		chat.IsForum = true // a private chat's topics make no forum of it
		msg.Chat = chat
	}
	queryID = strconv.FormatInt(up.nextUpdate+1, 10) + "cb"
	up.callbacks.addLocked(queryID)
	cq := map[string]any{"id": queryID, "from": u, "message": msg, "chat_instance": strconv.FormatInt(chatID, 10), "data": callbackData}
	return up.pushLocked(map[string]any{"callback_query": cq}), queryID
}

// PushRaw queues an update whose body (everything but update_id) is fields.
func (up *updates) PushRaw(fields map[string]any) (updateID int64) {
	up.mu.Lock()
	defer up.mu.Unlock()
	return up.pushLocked(fields)
}

// PushVerbatim queues raw, byte for byte, as the next update getUpdates (or TakeUpdates) hands
// out: a malformed update, which need not carry an update_id nor even be valid JSON. The fake
// files it under the returned id, the next in sequence as Telegram numbers updates; a
// getUpdates offset above it confirms it like any other.
func (up *updates) PushVerbatim(raw []byte) (updateID int64) {
	up.mu.Lock()
	defer up.mu.Unlock()
	up.nextUpdate++
	up.enqueueLocked(up.nextUpdate, append(json.RawMessage(nil), raw...))
	return up.nextUpdate
}

func (up *updates) pushLocked(fields map[string]any) int64 {
	up.nextUpdate++
	id := up.nextUpdate
	fields["update_id"] = id
	raw, err := json.Marshal(fields)
	if err != nil {
		panic("telegramfake: marshal update: " + err.Error())
	}
	delete(fields, "update_id")
	up.enqueueLocked(id, raw)
	return id
}

func (up *updates) enqueueLocked(id int64, raw json.RawMessage) {
	up.queue = append(up.queue, queued{id: id, raw: raw})
	if !up.closed {
		close(up.wake)
		up.wake = make(chan struct{})
	}
}

// TakeUpdates removes every queued update and returns their JSON bodies in order, as Telegram
// hands them to a webhook: tests of webhook mode push updates as usual, take them, and POST
// them to the bot's webhook handler themselves. A body queued with PushVerbatim comes back
// as it was pushed.
func (up *updates) TakeUpdates() []json.RawMessage {
	up.mu.Lock()
	defer up.mu.Unlock()
	out := make([]json.RawMessage, len(up.queue))
	for i, q := range up.queue {
		out[i] = q.raw
	}
	up.queue = nil
	return out
}

// Pending is the number of updates not yet confirmed by a getUpdates offset.
func (up *updates) Pending() int {
	up.mu.Lock()
	defer up.mu.Unlock()
	return len(up.queue)
}

// Undelivered is the number of updates no getUpdates answer has carried yet. Unlike Pending it
// does not fall when an offset confirms updates already delivered, so a confirmation arriving
// late (a long poll the bot abandoned) cannot hide an update queued meanwhile.
func (up *updates) Undelivered() int {
	up.mu.Lock()
	defer up.mu.Unlock()
	n := 0
	for _, q := range up.queue {
		if q.id > up.handed {
			n++
		}
	}
	return n
}

// deriveEntities finds a leading bot command and @mentions, with UTF-16 offsets.
func deriveEntities(text string) []Entity {
	var ents []Entity
	u16 := utf16.Encode([]rune(text))
	isWord := func(c uint16) bool {
		return c == '_' || c == '@' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	for i := 0; i < len(u16); i++ {
		if u16[i] != '/' && u16[i] != '@' || i > 0 && isWord(u16[i-1]) {
			continue
		}
		if u16[i] == '/' && i != 0 {
			continue
		}
		j := i + 1
		for j < len(u16) && isWord(u16[j]) && (u16[i] == '/' || u16[j] != '@') {
			j++
		}
		if j-i < 2 {
			continue
		}
		typ := "mention"
		if u16[i] == '/' {
			typ = "bot_command"
		}
		ents = append(ents, Entity{Type: typ, Offset: i, Length: j - i})
		i = j - 1
	}
	return ents
}

// getUpdates implements long polling: an offset confirms (forgets) every update below it; queued
// updates at or above it are answered at once, else the call waits up to timeout seconds for one
// and returns early when the client goes away. A call arriving while another is in flight ends
// that one with 409 Conflict "terminated by other getUpdates request", as Telegram does.
func (up *updates) getUpdates(r *http.Request, p map[string]string) (any, *apiError) {
	offset, _ := strconv.ParseInt(p["offset"], 10, 64)
	limit, _ := strconv.Atoi(p["limit"])
	if limit <= 0 || limit > 100 {
		limit = 100
	}
	timeout, _ := strconv.Atoi(p["timeout"])
	ctx := r.Context()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(timeout)*time.Second)
		defer cancel()
	}
	me, aerr := up.claim()
	if aerr != nil {
		return nil, aerr
	}
	defer up.release(me)
	for {
		out, wake, closed, aerr := up.take(me, offset, limit)
		if aerr != nil {
			return nil, aerr
		}
		if len(out) > 0 || timeout <= 0 || closed {
			return verbatimArray(out), nil
		}
		select {
		case <-wake:
		case <-me.terminated:
			return nil, &apiError{code: 409, desc: conflictDescription}
		case <-ctx.Done():
			return verbatimArray(nil), nil
		}
	}
}

// claim makes a new getUpdates call the one in flight, ending the one before it; it refuses the
// call while a webhook is set.
func (up *updates) claim() (*pollCall, *apiError) {
	me := &pollCall{terminated: make(chan struct{})}
	up.mu.Lock()
	defer up.mu.Unlock()
	if up.webhook.activeLocked() {
		return nil, &apiError{code: 409, desc: webhookConflictDescription}
	}
	if up.poller != nil {
		// Telegram serves one getUpdates per bot at a time: a newer call ends the one in flight.
		close(up.poller.terminated)
		up.conflicts++
	}
	up.poller = me
	return me, nil
}

// release ends me, a getUpdates call, unless a newer one ended it first.
func (up *updates) release(me *pollCall) {
	up.mu.Lock()
	if up.poller == me {
		up.poller = nil
	}
	up.mu.Unlock()
}

// take confirms the updates below offset and returns up to limit of those at or above it, with
// the channel closed when another is queued and whether the server closed; or the 409 that ends
// me when a newer call or a webhook took over.
func (up *updates) take(me *pollCall, offset int64, limit int) (out []json.RawMessage, wake chan struct{}, closed bool, aerr *apiError) {
	up.mu.Lock()
	defer up.mu.Unlock()
	select {
	case <-me.terminated:
		return nil, nil, false, &apiError{code: 409, desc: conflictDescription}
	default:
	}
	if up.webhook.activeLocked() {
		return nil, nil, false, &apiError{code: 409, desc: webhookConflictDescription}
	}
	if offset > 0 {
		n := 0
		for n < len(up.queue) && up.queue[n].id < offset {
			n++
		}
		up.queue = up.queue[n:]
	}
	for _, q := range up.queue {
		if q.id >= offset && len(out) < limit {
			out = append(out, q.raw)
			up.handed = max(up.handed, q.id)
		}
	}
	return out, up.wake, up.closed, nil
}

// Telegram's 409 answers: a getUpdates ended by a newer one, and one made while a webhook is set.
const (
	conflictDescription        = "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"
	webhookConflictDescription = "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"
)

// pollCall is one getUpdates call in flight; terminated is closed when a newer call ends it.
type pollCall struct{ terminated chan struct{} }

// Conflicts is how many getUpdates calls were ended with 409 Conflict by a newer one — what
// Telegram answers when two processes poll one bot at once. Zero means no two getUpdates calls
// were ever in flight together.
func (up *updates) Conflicts() int {
	up.mu.Lock()
	defer up.mu.Unlock()
	return up.conflicts
}
