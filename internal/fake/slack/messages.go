package slackfake

import (
	"encoding/json"
	"fmt"
	"strconv"
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

// View is a modal opened with views.open.
type View struct {
	TriggerID string
	View      string // the view's JSON
}

// Status is an assistant.threads.setStatus call ("" clears the status), with the loading
// messages it rotates through.
type Status struct {
	Channel, ThreadTS, Status string
	LoadingMessages           []string
}

// Posted returns copies of the bot's messages in channel that are not deleted, in post order.
func (s *Server) Posted(channel string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, m := range s.messages[channel] {
		if m.User == BotUserID && !m.Deleted {
			out = append(out, *m)
		}
	}
	return out
}

// AllPosted returns copies of every message the bot posted anywhere (deleted ones included).
func (s *Server) AllPosted() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, ms := range s.messages {
		for _, m := range ms {
			if m.User == BotUserID {
				out = append(out, *m)
			}
		}
	}
	return out
}

// Ephemerals returns the ephemeral messages posted, in order.
func (s *Server) Ephemerals() []Ephemeral {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Ephemeral(nil), s.ephem...)
}

// Views returns the modals opened, in order.
func (s *Server) Views() []View {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]View(nil), s.views...)
}

// Statuses returns the assistant thread statuses set, in order.
func (s *Server) Statuses() []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Status(nil), s.statuses...)
}

// NewTS returns a fresh message timestamp, later than every one before.
func (s *Server) NewTS() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.newTSLocked()
}

func (s *Server) newTSLocked() string {
	s.seq++
	return fmt.Sprintf("%d.%06d", s.tsClock+s.seq/1000000, s.seq%1000000)
}

// NewTriggerID issues a trigger id that views.open accepts for TriggerTTL.
func (s *Server) NewTriggerID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	id := fmt.Sprintf("%d.%d.fake%x", s.tsClock, s.seq, s.seq*7919)
	s.triggers[id] = time.Now()
	return id
}

// ExpireTriggers makes every trigger issued so far unusable.
func (s *Server) ExpireTriggers() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id := range s.triggers {
		s.triggers[id] = time.Time{}
	}
}

func (s *Server) addMessageLocked(m *Message) {
	s.messages[m.Channel] = append(s.messages[m.Channel], m)
	s.byTS[m.Channel+"/"+m.TS] = m
}

// handlers are the Web API methods; they run with s.mu held.
var handlers = map[string]func(s *Server, p map[string]string) (map[string]any, *apiErr){
	"auth.test": func(s *Server, _ map[string]string) (map[string]any, *apiErr) {
		return map[string]any{"url": "https://fake.slack.test/", "team": TeamName, "user": "switchboard",
			"team_id": TeamID, "user_id": BotUserID, "bot_id": BotID}, nil
	},
	"apps.connections.open": func(s *Server, _ map[string]string) (map[string]any, *apiErr) {
		s.seq++
		u := "ws" + strings.TrimPrefix(s.srv.URL, "http") + "/socket?ticket=" + fmt.Sprint(s.seq)
		return map[string]any{"url": u}, nil
	},
	"chat.postMessage":            postMessage,
	"chat.update":                 updateMessage,
	"chat.delete":                 deleteMessage,
	"chat.postEphemeral":          postEphemeral,
	"views.open":                  openView,
	"conversations.replies":       replies,
	"conversations.history":       history,
	"assistant.threads.setStatus": setStatus,
	"assistant.threads.setTitle":  func(s *Server, p map[string]string) (map[string]any, *apiErr) { return recordOnly(s, p, "channel_id") },
	"chat.startStream":            startStream,
	"chat.appendStream":           appendStream,
	"chat.stopStream":             stopStream,
	"assistant.threads.setSuggestedPrompts": func(s *Server, p map[string]string) (map[string]any, *apiErr) {
		if !json.Valid([]byte(p["prompts"])) {
			return nil, slackErr("invalid_arguments")
		}
		return recordOnly(s, p, "channel_id")
	},
}

// teamHandlers are the Web API methods that need the workspace whose token made the call; they
// run with s.mu held.
var teamHandlers = map[string]func(s *Server, p map[string]string, team string) (map[string]any, *apiErr){
	"files.getUploadURLExternal":   getUploadURL,
	"files.completeUploadExternal": completeUpload,
}

func recordOnly(_ *Server, p map[string]string, required string) (map[string]any, *apiErr) {
	if p[required] == "" {
		return nil, slackErr("channel_not_found")
	}
	return nil, nil
}

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

func postMessage(s *Server, p map[string]string) (map[string]any, *apiErr) {
	ch := p["channel"]
	if ch == "" {
		return nil, slackErr("channel_not_found")
	}
	if e := checkContent(p); e != nil {
		return nil, e
	}
	m := &Message{Channel: ch, TS: s.newTSLocked(), ThreadTS: p["thread_ts"], User: BotUserID, Text: p["text"],
		Blocks: p["blocks"], UnfurlLinks: p["unfurl_links"], UnfurlMedia: p["unfurl_media"], Metadata: p["metadata"], At: time.Now()}
	if m.Metadata != "" && !json.Valid([]byte(m.Metadata)) {
		return nil, slackErr("invalid_metadata_format")
	}
	s.addMessageLocked(m)
	return map[string]any{"channel": ch, "ts": m.TS, "message": map[string]any{"text": m.Text, "ts": m.TS, "user": BotUserID, "bot_id": BotID}}, nil
}

func updateMessage(s *Server, p map[string]string) (map[string]any, *apiErr) {
	m := s.byTS[p["channel"]+"/"+p["ts"]]
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

func deleteMessage(s *Server, p map[string]string) (map[string]any, *apiErr) {
	m := s.byTS[p["channel"]+"/"+p["ts"]]
	if m == nil || m.Deleted {
		return nil, slackErr("message_not_found")
	}
	if m.User != BotUserID {
		return nil, slackErr("cant_delete_message")
	}
	m.Deleted = true
	return map[string]any{"channel": m.Channel, "ts": m.TS}, nil
}

func postEphemeral(s *Server, p map[string]string) (map[string]any, *apiErr) {
	if p["channel"] == "" {
		return nil, slackErr("channel_not_found")
	}
	if p["user"] == "" {
		return nil, slackErr("user_not_in_channel")
	}
	if e := checkContent(p); e != nil {
		return nil, e
	}
	s.ephem = append(s.ephem, Ephemeral{Channel: p["channel"], User: p["user"], ThreadTS: p["thread_ts"], Text: p["text"], Blocks: p["blocks"]})
	return map[string]any{"message_ts": s.newTSLocked()}, nil
}

func openView(s *Server, p map[string]string) (map[string]any, *apiErr) {
	issued, ok := s.triggers[p["trigger_id"]]
	switch {
	case !ok:
		return nil, slackErr("invalid_trigger_id")
	case time.Since(issued) > TriggerTTL:
		return nil, slackErr("expired_trigger_id")
	}
	var v struct {
		Type   string            `json:"type"`
		Title  json.RawMessage   `json:"title"`
		Blocks []json.RawMessage `json:"blocks"`
	}
	if err := json.Unmarshal([]byte(p["view"]), &v); err != nil || v.Type != "modal" || len(v.Title) == 0 || len(v.Blocks) > 100 {
		return nil, slackErr("invalid_arguments")
	}
	delete(s.triggers, p["trigger_id"]) // a trigger opens one view
	s.views = append(s.views, View{TriggerID: p["trigger_id"], View: p["view"]})
	s.seq++
	return map[string]any{"view": map[string]any{"id": fmt.Sprintf("V%06d", s.seq), "type": "modal"}}, nil
}

func replies(s *Server, p map[string]string) (map[string]any, *apiErr) {
	ch, ts := p["channel"], p["ts"]
	if s.byTS[ch+"/"+ts] == nil {
		return nil, slackErr("thread_not_found")
	}
	var out []map[string]any
	for _, m := range s.messages[ch] {
		if m.Deleted || (m.TS != ts && m.ThreadTS != ts) {
			continue
		}
		if p["oldest"] != "" && tsBefore(m.TS, p["oldest"]) {
			continue
		}
		out = append(out, wireMessage(m, p["include_all_metadata"] == "true" || p["include_all_metadata"] == "1"))
	}
	return map[string]any{"messages": out, "has_more": false}, nil
}

// history is conversations.history: the channel's top-level messages (a thread's parent
// included, its replies not), newest first, from oldest on when given, up to limit (100 by
// default), with their metadata when include_all_metadata is set.
func history(s *Server, p map[string]string) (map[string]any, *apiErr) {
	ch := p["channel"]
	if ch == "" {
		return nil, slackErr("channel_not_found")
	}
	limit, err := strconv.Atoi(p["limit"])
	if err != nil || limit <= 0 {
		limit = 100
	}
	msgs := s.messages[ch]
	out := []map[string]any{}
	for i := len(msgs) - 1; i >= 0 && len(out) < limit; i-- {
		m := msgs[i]
		if m.Deleted || m.ThreadTS != "" && m.ThreadTS != m.TS {
			continue
		}
		if p["oldest"] != "" && tsBefore(m.TS, p["oldest"]) {
			continue
		}
		out = append(out, wireMessage(m, p["include_all_metadata"] == "true" || p["include_all_metadata"] == "1"))
	}
	return map[string]any{"messages": out, "has_more": false}, nil
}

// wireMessage is m as conversations.history and conversations.replies return it, with its
// metadata when asked for (include_all_metadata).
func wireMessage(m *Message, metadata bool) map[string]any {
	w := map[string]any{"type": "message", "ts": m.TS, "thread_ts": m.ThreadTS, "user": m.User, "text": m.Text}
	if metadata && m.Metadata != "" {
		w["metadata"] = json.RawMessage(m.Metadata)
	}
	return w
}

// tsBefore reports whether Slack timestamp a ("seconds.micros") is earlier than b.
func tsBefore(a, b string) bool {
	af, _ := strconv.ParseFloat(a, 64)
	bf, _ := strconv.ParseFloat(b, 64)
	return af < bf
}

// MaxLoadingMessages is how many loading_messages assistant.threads.setStatus takes.
const MaxLoadingMessages = 10

// setStatus is assistant.threads.setStatus: channel_id and thread_ts are required, and
// loading_messages, when sent, is an array (a JSON array in a form body) of at most
// MaxLoadingMessages strings. https://docs.slack.dev/reference/methods/assistant.threads.setStatus
func setStatus(s *Server, p map[string]string) (map[string]any, *apiErr) {
	if p["channel_id"] == "" || p["thread_ts"] == "" {
		return nil, slackErr("invalid_arguments")
	}
	var loading []string
	if raw, ok := p["loading_messages"]; ok {
		if err := json.Unmarshal([]byte(raw), &loading); err != nil || len(loading) > MaxLoadingMessages {
			return nil, slackErr("invalid_arguments")
		}
	}
	s.statuses = append(s.statuses, Status{Channel: p["channel_id"], ThreadTS: p["thread_ts"], Status: p["status"], LoadingMessages: loading})
	return nil, nil
}
