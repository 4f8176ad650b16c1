package slackfake

import (
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"
)

// Streaming limits, as Slack documents them: markdown_text (parameter or chunk) up to 12,000
// characters a call; a task's details and output up to 256.
const (
	MaxStreamText = 12000
	MaxTaskText   = 256
)

// Task is a task_update chunk as the fake holds it.
type Task struct {
	ID, Title, Status, Details, Output string
}

// chunk is one element of a streaming call's chunks array.
type chunk struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	ID      string          `json:"id"`
	Title   string          `json:"title"`
	Status  string          `json:"status"`
	Details string          `json:"details"`
	Output  string          `json:"output"`
	Sources json.RawMessage `json:"sources"`
	Blocks  json.RawMessage `json:"blocks"`
}

// decodeChunks reads a chunks parameter ("" is none) as Slack validates it: a JSON array of
// objects of a known type — markdown_text with its text (at most MaxStreamText characters),
// task_update with an id, a title, a known status and details and output of at most
// MaxTaskText characters, plan_update with a title, blocks with an array of blocks.
func decodeChunks(raw string) ([]chunk, *apiErr) {
	if raw == "" {
		return nil, nil
	}
	var cs []chunk
	if err := json.Unmarshal([]byte(raw), &cs); err != nil {
		return nil, slackErr("invalid_chunks")
	}
	for _, c := range cs {
		switch c.Type {
		case "markdown_text":
			if utf8.RuneCountInString(c.Text) > MaxStreamText {
				return nil, slackErr("msg_too_long")
			}
		case "task_update":
			switch {
			case c.ID == "" || c.Title == "":
				return nil, slackErr("invalid_chunks")
			case c.Status != "pending" && c.Status != "in_progress" && c.Status != "complete" && c.Status != "error":
				return nil, slackErr("invalid_chunks")
			case utf8.RuneCountInString(c.Details) > MaxTaskText || utf8.RuneCountInString(c.Output) > MaxTaskText:
				return nil, slackErr("invalid_chunks")
			}
		case "plan_update":
			if c.Title == "" {
				return nil, slackErr("invalid_chunks")
			}
		case "blocks":
			var bs []json.RawMessage
			if json.Unmarshal(c.Blocks, &bs) != nil || len(bs) == 0 || len(bs) > MaxBlocks {
				return nil, slackErr("invalid_blocks")
			}
		default:
			return nil, slackErr("invalid_chunks")
		}
	}
	return cs, nil
}

// streamContent checks a streaming call's markdown_text and chunks and returns the chunks.
func streamContent(p map[string]string) ([]chunk, *apiErr) {
	if utf8.RuneCountInString(p["markdown_text"]) > MaxStreamText {
		return nil, slackErr("msg_too_long")
	}
	return decodeChunks(p["chunks"])
}

// applyStream adds a call's markdown_text and chunks to a streamed message.
func applyStream(m *Message, p map[string]string, cs []chunk) {
	m.Markdown += p["markdown_text"]
	for _, c := range cs {
		switch c.Type {
		case "markdown_text":
			m.Markdown += c.Text
		case "plan_update":
			m.Plan = c.Title
		case "task_update":
			t := Task{ID: c.ID, Title: c.Title, Status: c.Status, Details: c.Details, Output: c.Output}
			m.TaskUpdates = append(m.TaskUpdates, t)
			found := false
			for i := range m.Tasks {
				if m.Tasks[i].ID == t.ID {
					m.Tasks[i], found = t, true
				}
			}
			if !found {
				m.Tasks = append(m.Tasks, t)
			}
		}
	}
}

// streams are chat.startStream, chat.appendStream and chat.stopStream: messages of chat's made
// and grown by streaming.
type streams struct {
	st   *store
	chat *chat
	// expireAfter > 0 ends a stream once it took that many appends (ExpireStreamsAfter); guarded
	// by st.mu.
	expireAfter int
}

// ExpireStreamsAfter makes the fake end every stream, as Slack does to a stream it closed on its
// side, once it has taken n appends (n <= 0: never): later appends and the stop answer
// message_not_in_streaming_state.
func (ss *streams) ExpireStreamsAfter(n int) {
	ss.st.mu.Lock()
	ss.expireAfter = n
	ss.st.mu.Unlock()
}

func (ss *streams) startStream(p map[string]string) (map[string]any, *apiErr) {
	ch := p["channel"]
	if ch == "" {
		return nil, slackErr("channel_not_found")
	}
	if p["thread_ts"] == "" {
		return nil, slackErr("invalid_arguments")
	}
	if mode := p["task_display_mode"]; mode != "" && mode != "timeline" && mode != "plan" {
		return nil, slackErr("invalid_arguments")
	}
	if !strings.HasPrefix(ch, "D") && (p["recipient_user_id"] == "" || p["recipient_team_id"] == "") {
		// Streaming into a channel needs the recipient.
		return nil, slackErr("missing_recipient_user_id")
	}
	cs, e := streamContent(p)
	if e != nil {
		return nil, e
	}
	m := &Message{Channel: ch, TS: ss.st.newTSLocked(), ThreadTS: p["thread_ts"], User: BotUserID,
		Streaming: true, Streamed: true, DisplayMode: p["task_display_mode"], At: time.Now()}
	applyStream(m, p, cs)
	ss.chat.addLocked(m)
	return map[string]any{"channel": ch, "ts": m.TS}, nil
}

// streamingMessage is the stream p names (channel, ts), as appendStream and stopStream find it:
// message_not_found, or message_not_in_streaming_state once it stopped or expired.
func (ss *streams) streamingMessage(p map[string]string) (*Message, *apiErr) {
	m := ss.chat.lookupLocked(p["channel"], p["ts"])
	if m == nil || m.Deleted {
		return nil, slackErr("message_not_found")
	}
	if ss.expireAfter > 0 && m.Appends >= ss.expireAfter {
		m.Streaming = false
	}
	if !m.Streaming {
		return nil, slackErr("message_not_in_streaming_state")
	}
	return m, nil
}

func (ss *streams) appendStream(p map[string]string) (map[string]any, *apiErr) {
	m, e := ss.streamingMessage(p)
	if e != nil {
		return nil, e
	}
	if p["markdown_text"] == "" && p["chunks"] == "" {
		return nil, slackErr("invalid_arguments")
	}
	cs, e := streamContent(p)
	if e != nil {
		return nil, e
	}
	applyStream(m, p, cs)
	m.Appends++
	return map[string]any{"channel": m.Channel, "ts": m.TS}, nil
}

func (ss *streams) stopStream(p map[string]string) (map[string]any, *apiErr) {
	m, e := ss.streamingMessage(p)
	if e != nil {
		return nil, e
	}
	cs, e := streamContent(p)
	if e != nil {
		return nil, e
	}
	applyStream(m, p, cs)
	if b := p["blocks"]; b != "" {
		m.Blocks = b
	}
	m.Streaming = false
	return map[string]any{"channel": m.Channel, "ts": m.TS, "message": map[string]any{"ts": m.TS, "text": m.Markdown, "streaming_state": "completed"}}, nil
}
