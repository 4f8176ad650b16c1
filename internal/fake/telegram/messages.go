package telegramfake

import (
	"encoding/json"
	"slices"
	"strconv"
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

type callback struct {
	answered bool
	text     string
	alert    bool
}

func (s *Server) chat(id int64) *chat {
	c := s.chats[id]
	if c == nil {
		c = &chat{msgs: map[int]*Message{}, actions: map[string]int{}}
		s.chats[id] = c
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
func (s *Server) Posted(chatID int64) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chats[chatID]
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
func (s *Server) Message(chatID int64, id int) (Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.chats[chatID]; c != nil {
		if m := c.msgs[id]; m != nil {
			return *m, true
		}
	}
	return Message{}, false
}

// ChatActions returns how many times sendChatAction with action was called for chatID.
func (s *Server) ChatActions(chatID int64, action string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.chats[chatID]; c != nil {
		return c.actions[action]
	}
	return 0
}

// CallbackAnswer reports whether callback query id was answered and with what text.
func (s *Server) CallbackAnswer(queryID string) (text string, answered bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cb := s.callbacks[queryID]; cb != nil {
		return cb.text, cb.answered
	}
	return "", false
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

func (s *Server) sendMessage(p map[string]string) (any, *apiError) {
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
	c := s.chat(cid)
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
	return s.wireOut(m), nil
}

func jsonHasTrue(raw, key string) bool {
	var m map[string]any
	if raw == "" || json.Unmarshal([]byte(raw), &m) != nil {
		return false
	}
	v, _ := m[key].(bool)
	return v
}

func (s *Server) wireOut(m *Message) WireMessage {
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

func (s *Server) botMessage(p map[string]string, verb string) (*Message, *apiError) {
	cid, aerr := chatID(p)
	if aerr != nil {
		return nil, aerr
	}
	id, _ := strconv.Atoi(p["message_id"])
	c := s.chats[cid]
	if c == nil || c.msgs[id] == nil || c.msgs[id].Deleted {
		return nil, badRequest("message to " + verb + " not found")
	}
	m := c.msgs[id]
	if m.FromUser != BotID && verb == "edit" {
		return nil, badRequest("message can't be edited")
	}
	return m, nil
}

func (s *Server) editMessageText(p map[string]string) (any, *apiError) {
	m, aerr := s.botMessage(p, "edit")
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
	return s.wireOut(m), nil
}

func (s *Server) deleteMessage(p map[string]string) (any, *apiError) {
	m, aerr := s.botMessage(p, "delete")
	if aerr != nil {
		return nil, aerr
	}
	m.Deleted = true
	return true, nil
}

func (s *Server) sendChatAction(p map[string]string) (any, *apiError) {
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
	s.chat(cid).actions[p["action"]]++
	return true, nil
}

func (s *Server) answerCallbackQuery(p map[string]string) (any, *apiError) {
	cb := s.callbacks[p["callback_query_id"]]
	if cb == nil || cb.answered {
		return nil, badRequest("query is too old and response timeout expired or query ID is invalid")
	}
	if utf16Len(p["text"]) > 200 {
		return nil, badRequest("MESSAGE_TOO_LONG")
	}
	cb.answered, cb.text, cb.alert = true, p["text"], p["show_alert"] == "true"
	return true, nil
}

// Command is a bot command as setMyCommands takes it.
type Command struct {
	Command     string `json:"command"`
	Description string `json:"description"`
}

func (s *Server) setMyCommands(p map[string]string) (any, *apiError) {
	var cmds []Command
	if err := json.Unmarshal([]byte(p["commands"]), &cmds); err != nil {
		return nil, badRequest("can't parse commands JSON object")
	}
	for _, c := range cmds {
		if c.Command == "" || len(c.Command) > 32 || c.Description == "" || len(c.Description) > 256 {
			return nil, badRequest("BOT_COMMAND_INVALID")
		}
		for _, r := range c.Command {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
				return nil, badRequest("BOT_COMMAND_INVALID")
			}
		}
	}
	raw, _ := json.Marshal(cmds)
	s.commands = raw
	return true, nil
}

func (s *Server) getMyCommands(map[string]string) (any, *apiError) {
	return s.commands, nil
}

// Commands returns the bot's command list as last set.
func (s *Server) Commands() []Command {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Command
	_ = json.Unmarshal(s.commands, &out)
	return out
}

// WebhookInfo is the webhook state the fake keeps (getWebhookInfo, plus the secret).
type WebhookInfo struct {
	URL                string `json:"url"`
	HasCustomCert      bool   `json:"has_custom_certificate"`
	PendingUpdateCount int    `json:"pending_update_count"`
	// SecretToken is what setWebhook received; getWebhookInfo does not reveal it.
	SecretToken string `json:"-"`
}

func (s *Server) setWebhook(p map[string]string) (any, *apiError) {
	if p["url"] == "" {
		s.webhook = WebhookInfo{}
		return true, nil
	}
	s.webhook = WebhookInfo{URL: p["url"], SecretToken: p["secret_token"]}
	return true, nil
}

func (s *Server) deleteWebhook(p map[string]string) (any, *apiError) {
	s.webhook = WebhookInfo{}
	if p["drop_pending_updates"] == "true" {
		s.queue = nil
	}
	return true, nil
}

func (s *Server) getWebhookInfo(map[string]string) (any, *apiError) {
	w := s.webhook
	w.PendingUpdateCount = len(s.queue)
	return w, nil
}

// Webhook returns the webhook as last set (URL empty when none), secret included.
func (s *Server) Webhook() WebhookInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.webhook
}
