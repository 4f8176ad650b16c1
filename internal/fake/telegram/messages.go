package telegramfake

import (
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Button is an inline keyboard button.
type Button struct {
	Text         string `json:"text"`
	CallbackData string `json:"callback_data,omitempty"`
	URL          string `json:"url,omitempty"`
}

// Keyboard is an inline keyboard markup.
type Keyboard struct {
	InlineKeyboard [][]Button `json:"inline_keyboard"`
}

// Message is a message in a chat as the fake keeps it: what the bot posted (FromUser == BotID)
// with its edits applied, and what users sent.
type Message struct {
	ID       int
	ChatID   int64
	ThreadID int
	// Text is the latest text as sent (HTML source when ParseMode is HTML).
	Text      string
	ParseMode string
	Keyboard  [][]Button
	ReplyTo   int
	FromUser  int64
	Edits     int
	Deleted   bool
	// Document is the file of a sendDocument message (Text is then its caption).
	Document *Document
	// At is when the message was sent (for a bot message: when sendMessage was served), for
	// latency measurements.
	At time.Time
}

type chat struct {
	nextID int
	msgs   map[int]*Message
	order  []int
	// actions counts sendChatAction calls per action.
	actions map[string]int
	// drafts are the sendMessageDraft calls accepted, in order.
	drafts []Draft
}

// messages are the chats and their messages: what the bot posts (sendMessage,
// editMessageText, deleteMessage, and sendDocument and sendMessageDraft through documents and
// drafts), what users send (updates), and the chat actions.
type messages struct {
	mu *sync.Mutex
	// chats are guarded by mu.
	chats map[int64]*chat
}

// chatLocked is chat id, made on first use.
func (ms *messages) chatLocked(id int64) *chat {
	c := ms.chats[id]
	if c == nil {
		c = &chat{msgs: map[int]*Message{}, actions: map[string]int{}}
		ms.chats[id] = c
	}
	return c
}

// wire is message id as a reply_to_message or callback message.
func (c *chat) wire(id int, ch Chat) *WireMessage {
	w := &WireMessage{MessageID: id, Chat: ch, Date: time.Now().Unix()}
	if m := c.msgs[id]; m != nil {
		w.Text = m.Text
		if m.FromUser == BotID {
			w.From = &User{ID: BotID, IsBot: true, FirstName: BotName, Username: BotUsername}
		} else {
			w.From = &User{ID: m.FromUser}
		}
		if m.ThreadID != 0 {
			w.MessageThreadID, w.IsTopicMessage = m.ThreadID, true
		}
	}
	return w
}

// Posted returns the messages the bot posted in chatID that are not deleted, oldest first, with
// edits applied.
func (ms *messages) Posted(chatID int64) []Message {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	c := ms.chats[chatID]
	if c == nil {
		return nil
	}
	var out []Message
	for _, id := range c.order {
		if m := c.msgs[id]; m.FromUser == BotID && !m.Deleted {
			cp := *m
			cp.Keyboard = slices.Clone(m.Keyboard)
			if m.Document != nil {
				d := *m.Document
				d.Data = slices.Clone(d.Data)
				cp.Document = &d
			}
			out = append(out, cp)
		}
	}
	return out
}

// Message returns message id of chatID (deleted ones included) and whether it exists.
func (ms *messages) Message(chatID int64, id int) (Message, bool) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if c := ms.chats[chatID]; c != nil {
		if m := c.msgs[id]; m != nil {
			return *m, true
		}
	}
	return Message{}, false
}

// ChatActions returns how many times sendChatAction with action was called for chatID.
func (ms *messages) ChatActions(chatID int64, action string) int {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if c := ms.chats[chatID]; c != nil {
		return c.actions[action]
	}
	return 0
}

func chatID(p map[string]string) (int64, *apiError) {
	id, err := strconv.ParseInt(p["chat_id"], 10, 64)
	if err != nil || id == 0 {
		return 0, badRequest("chat not found")
	}
	return id, nil
}

// checkText validates text for parse mode mode.
func checkText(text, mode string) *apiError {
	visible := text
	if mode == "HTML" {
		v, err := ParseHTML(text)
		if err != nil {
			return badRequest("can't parse entities: " + err.Error())
		}
		visible = v
	} else if mode != "" {
		return badRequest("unsupported parse_mode")
	}
	n := utf16Len(visible)
	if n == 0 {
		return badRequest("message text is empty")
	}
	if n > MaxTextLen {
		return badRequest("message is too long")
	}
	return nil
}

func parseKeyboard(raw string) ([][]Button, *apiError) {
	if raw == "" {
		return nil, nil
	}
	var kb Keyboard
	if err := json.Unmarshal([]byte(raw), &kb); err != nil {
		return nil, badRequest("can't parse reply keyboard markup JSON object")
	}
	for _, row := range kb.InlineKeyboard {
		for _, b := range row {
			if b.Text == "" {
				return nil, badRequest("text buttons are unallowed in the inline keyboard")
			}
			if len(b.CallbackData) > 64 || b.CallbackData == "" && b.URL == "" {
				return nil, badRequest("BUTTON_DATA_INVALID")
			}
		}
	}
	return kb.InlineKeyboard, nil
}

func (ms *messages) sendMessage(p map[string]string) (any, *apiError) {
	cid, aerr := chatID(p)
	if aerr != nil {
		return nil, aerr
	}
	if aerr := checkText(p["text"], p["parse_mode"]); aerr != nil {
		return nil, aerr
	}
	kb, aerr := parseKeyboard(p["reply_markup"])
	if aerr != nil {
		return nil, aerr
	}
	c := ms.chatLocked(cid)
	thread, _ := strconv.Atoi(p["message_thread_id"])
	reply, _ := strconv.Atoi(p["reply_to_message_id"])
	if rp := p["reply_parameters"]; rp != "" {
		var r struct {
			MessageID int `json:"message_id"`
		}
		if json.Unmarshal([]byte(rp), &r) != nil {
			return nil, badRequest("can't parse reply parameters JSON object")
		}
		reply = r.MessageID
	}
	if reply != 0 && p["allow_sending_without_reply"] != "true" && !jsonHasTrue(p["reply_parameters"], "allow_sending_without_reply") {
		if m := c.msgs[reply]; m == nil || m.Deleted {
			return nil, badRequest("message to be replied not found")
		}
	}
	c.nextID++
	m := &Message{ID: c.nextID, ChatID: cid, ThreadID: thread, Text: p["text"], ParseMode: p["parse_mode"], Keyboard: kb, ReplyTo: reply, FromUser: BotID, At: time.Now()}
	c.msgs[m.ID] = m
	c.order = append(c.order, m.ID)
	return wireOut(m), nil
}

func jsonHasTrue(raw, key string) bool {
	var m map[string]any
	if raw == "" || json.Unmarshal([]byte(raw), &m) != nil {
		return false
	}
	v, _ := m[key].(bool)
	return v
}

func wireOut(m *Message) WireMessage {
	ch := Chat{ID: m.ChatID, Type: "supergroup"}
	if m.ChatID > 0 {
		ch.Type = "private"
	}
	w := WireMessage{MessageID: m.ID, From: &User{ID: BotID, IsBot: true, FirstName: BotName, Username: BotUsername}, Chat: ch, Date: time.Now().Unix()}
	if m.ParseMode == "HTML" {
		w.Text, _ = ParseHTML(m.Text)
	} else {
		w.Text = m.Text
	}
	if m.ThreadID != 0 {
		w.MessageThreadID, w.IsTopicMessage = m.ThreadID, true
	}
	if m.Keyboard != nil {
		w.ReplyMarkup = &Keyboard{InlineKeyboard: m.Keyboard}
	}
	if d := m.Document; d != nil {
		w.Caption, w.Text = w.Text, ""
		w.Document = &WireDocument{FileID: d.FileID, FileUniqueID: d.FileID, FileName: d.FileName, MimeType: d.MimeType, FileSize: len(d.Data)}
	}
	return w
}

func (ms *messages) botMessage(p map[string]string, verb string) (*Message, *apiError) {
	cid, aerr := chatID(p)
	if aerr != nil {
		return nil, aerr
	}
	id, _ := strconv.Atoi(p["message_id"])
	c := ms.chats[cid]
	if c == nil || c.msgs[id] == nil || c.msgs[id].Deleted {
		return nil, badRequest("message to " + verb + " not found")
	}
	m := c.msgs[id]
	if m.FromUser != BotID && verb == "edit" {
		return nil, badRequest("message can't be edited")
	}
	return m, nil
}

func (ms *messages) editMessageText(p map[string]string) (any, *apiError) {
	m, aerr := ms.botMessage(p, "edit")
	if aerr != nil {
		return nil, aerr
	}
	if aerr := checkText(p["text"], p["parse_mode"]); aerr != nil {
		return nil, aerr
	}
	kb, aerr := parseKeyboard(p["reply_markup"])
	if aerr != nil {
		return nil, aerr
	}
	oldVisible, newVisible := m.Text, p["text"]
	if m.ParseMode == "HTML" {
		oldVisible, _ = ParseHTML(m.Text)
	}
	if p["parse_mode"] == "HTML" {
		newVisible, _ = ParseHTML(p["text"])
	}
	// Telegram compares the rendered text, entities and markup; the HTML source is close enough.
	if oldVisible == newVisible && m.Text == p["text"] && slices.EqualFunc(m.Keyboard, kb, slices.Equal) {
		return nil, badRequest("message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message")
	}
	m.Text, m.ParseMode, m.Keyboard = p["text"], p["parse_mode"], kb
	m.Edits++
	return wireOut(m), nil
}

func (ms *messages) deleteMessage(p map[string]string) (any, *apiError) {
	m, aerr := ms.botMessage(p, "delete")
	if aerr != nil {
		return nil, aerr
	}
	m.Deleted = true
	return true, nil
}

func (ms *messages) sendChatAction(p map[string]string) (any, *apiError) {
	cid, aerr := chatID(p)
	if aerr != nil {
		return nil, aerr
	}
	switch p["action"] {
	case "typing", "upload_photo", "record_video", "upload_video", "record_voice", "upload_voice",
		"upload_document", "choose_sticker", "find_location", "record_video_note", "upload_video_note":
	default:
		return nil, badRequest("wrong parameter action in request")
	}
	ms.chatLocked(cid).actions[p["action"]]++
	return true, nil
}
