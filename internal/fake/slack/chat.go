package slackfake

import (
	"encoding/json"
	"strings"
	"time"
)

// Message is a message in a channel as the fake holds it, edits and deletion applied.
type Message struct {
	Channel  string
	TS       string
	ThreadTS string
	// User is who posted it: BotUserID for the bot's messages.
	User string
	Text string
	// Blocks is the JSON of the message's blocks ("" without blocks).
	Blocks string
	// UnfurlLinks and UnfurlMedia are the unfurl_links / unfurl_media parameters as sent.
	UnfurlLinks, UnfurlMedia string
	Edits                    int
	Deleted                  bool
	// Streaming is set between chat.startStream and chat.stopStream; Streamed on every
	// message made by chat.startStream, and Markdown holds its accumulated markdown_text (the
	// markdown_text parameters and markdown_text chunks, in order). Plan is the latest
	// plan_update title, Tasks the task_update chunks merged by id in first-seen order, and
	// TaskUpdates every task_update received, in order. A chat.update replaces all of it.
	Streaming, Streamed bool
	Markdown            string
	Appends             int
	DisplayMode         string
	Plan                string
	Tasks               []Task
	TaskUpdates         []Task
	// Files are the ids of the files the message shares (files.completeUploadExternal).
	Files []string
	// Metadata is the message metadata's JSON as posted ("" without): conversations.history
	// and conversations.replies return it.
	Metadata string
	// At is when the message was posted.
	At time.Time
}

// Ephemeral is a chat.postEphemeral call: visible to User only.
type Ephemeral struct {
	Channel, User, ThreadTS, Text, Blocks string
}

// chat are the messages of every channel — the bot's (chat.postMessage, chat.update, chat.delete,
// and the streams of chat.startStream) and users' (kept by the event builders) — and the
// ephemeral messages (chat.postEphemeral).
type chat struct {
	st *store
	// Guarded by st.mu.
	byChannel map[string][]*Message // channel → messages in post order
	byTS      map[string]*Message   // channel+"/"+ts → message
	ephem     []Ephemeral
}

func newChat(st *store) *chat {
	return &chat{st: st, byChannel: map[string][]*Message{}, byTS: map[string]*Message{}}
}

// Posted returns copies of the bot's messages in channel that are not deleted, in post order.
func (c *chat) Posted(channel string) []Message {
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	var out []Message
	for _, m := range c.byChannel[channel] {
		if m.User == BotUserID && !m.Deleted {
			out = append(out, *m)
		}
	}
	return out
}

// AllPosted returns copies of every message the bot posted anywhere (deleted ones included).
func (c *chat) AllPosted() []Message {
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	var out []Message
	for _, ms := range c.byChannel {
		for _, m := range ms {
			if m.User == BotUserID {
				out = append(out, *m)
			}
		}
	}
	return out
}

// Ephemerals returns the ephemeral messages posted, in order.
func (c *chat) Ephemerals() []Ephemeral {
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	return append([]Ephemeral(nil), c.ephem...)
}

// NewTS returns a fresh message timestamp, later than every one before.
func (c *chat) NewTS() string { return c.st.newTS() }

// addLocked keeps m, a new message, in its channel.
func (c *chat) addLocked(m *Message) {
	c.byChannel[m.Channel] = append(c.byChannel[m.Channel], m)
	c.byTS[m.Channel+"/"+m.TS] = m
}

// lookupLocked is the message of channel with ts, nil if none.
func (c *chat) lookupLocked(channel, ts string) *Message { return c.byTS[channel+"/"+ts] }

// checkContent applies Slack's message limits to text and blocks.
func checkContent(p map[string]string) *apiErr {
	text, blocks := p["text"], p["blocks"]
	if strings.TrimSpace(text) == "" && blocks == "" {
		return slackErr("no_text")
	}
	if len([]rune(text)) > MaxText {
		return slackErr("msg_too_long")
	}
	if blocks == "" {
		return nil
	}
	var bs []struct {
		Type string `json:"type"`
		Text *struct {
			Text string `json:"text"`
		} `json:"text"`
	}
	if err := json.Unmarshal([]byte(blocks), &bs); err != nil || len(bs) > MaxBlocks {
		return slackErr("invalid_blocks")
	}
	for _, b := range bs {
		if b.Type == "" {
			return slackErr("invalid_blocks")
		}
		if b.Type == "section" && b.Text != nil && len([]rune(b.Text.Text)) > MaxSectionText {
			return slackErr("invalid_blocks")
		}
	}
	return nil
}

func (c *chat) postMessage(p map[string]string) (map[string]any, *apiErr) {
	ch := p["channel"]
	if ch == "" {
		return nil, slackErr("channel_not_found")
	}
	if e := checkContent(p); e != nil {
		return nil, e
	}
	m := &Message{Channel: ch, TS: c.st.newTSLocked(), ThreadTS: p["thread_ts"], User: BotUserID, Text: p["text"],
		Blocks: p["blocks"], UnfurlLinks: p["unfurl_links"], UnfurlMedia: p["unfurl_media"], Metadata: p["metadata"], At: time.Now()}
	if m.Metadata != "" && !json.Valid([]byte(m.Metadata)) {
		return nil, slackErr("invalid_metadata_format")
	}
	c.addLocked(m)
	return map[string]any{"channel": ch, "ts": m.TS, "message": map[string]any{"text": m.Text, "ts": m.TS, "user": BotUserID, "bot_id": BotID}}, nil
}

func (c *chat) updateMessage(p map[string]string) (map[string]any, *apiErr) {
	m := c.lookupLocked(p["channel"], p["ts"])
	if m == nil || m.Deleted {
		return nil, slackErr("message_not_found")
	}
	if m.User != BotUserID {
		return nil, slackErr("cant_update_message")
	}
	if e := checkContent(p); e != nil {
		return nil, e
	}
	m.Text, m.Blocks = p["text"], p["blocks"]
	m.Markdown, m.Plan, m.Tasks = "", "", nil // the update replaces what was streamed
	m.Edits++
	return map[string]any{"channel": m.Channel, "ts": m.TS, "text": m.Text}, nil
}

func (c *chat) deleteMessage(p map[string]string) (map[string]any, *apiErr) {
	m := c.lookupLocked(p["channel"], p["ts"])
	if m == nil || m.Deleted {
		return nil, slackErr("message_not_found")
	}
	if m.User != BotUserID {
		return nil, slackErr("cant_delete_message")
	}
	m.Deleted = true
	return map[string]any{"channel": m.Channel, "ts": m.TS}, nil
}

func (c *chat) postEphemeral(p map[string]string) (map[string]any, *apiErr) {
	if p["channel"] == "" {
		return nil, slackErr("channel_not_found")
	}
	if p["user"] == "" {
		return nil, slackErr("user_not_in_channel")
	}
	if e := checkContent(p); e != nil {
		return nil, e
	}
	c.ephem = append(c.ephem, Ephemeral{Channel: p["channel"], User: p["user"], ThreadTS: p["thread_ts"], Text: p["text"], Blocks: p["blocks"]})
	return map[string]any{"message_ts": c.st.newTSLocked()}, nil
}
