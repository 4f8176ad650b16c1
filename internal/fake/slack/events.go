package slackfake

import (
	"fmt"
	"net/url"
	"time"
)

// Msg is a user's message, the input of the event builders. Zero fields get defaults: Team
// TeamID, ChannelType "channel", TS a fresh timestamp.
type Msg struct {
	Channel     string
	ChannelType string // "im", "channel", "group", "mpim"
	User        string
	Text        string
	TS          string
	ThreadTS    string
	Team        string
	Enterprise  string
	// Subtype is the message subtype ("bot_message", "message_changed", "file_share", …).
	Subtype string
	// BotID marks a message posted by a bot.
	BotID string
	Files []File
}

// File is a file shared with a message. AddFile makes one the fake serves; without its URLs,
// the file object points at a host that serves nothing.
type File struct {
	ID, Name, MIME string
	Size           int64
	// URLPrivate and URLPrivateDownload are the file object's url_private and
	// url_private_download.
	URLPrivate, URLPrivateDownload string
}

// events build the Events API's event_callbacks — users' messages and mentions (kept in chat's
// history), assistant threads, App Home — to send over Socket Mode (the Push methods) or to
// deliver signed over HTTP.
type events struct {
	st   *store
	chat *chat
	sock *socketControl
}

func (e *events) fill(m *Msg) {
	if m.Team == "" {
		m.Team = TeamID
	}
	if m.ChannelType == "" {
		m.ChannelType = "channel"
	}
	if m.TS == "" {
		m.TS = e.st.newTS()
	}
}

func (m Msg) event(typ string) map[string]any {
	ev := map[string]any{"type": typ, "channel": m.Channel, "user": m.User, "text": m.Text, "ts": m.TS,
		"event_ts": m.TS, "team": m.Team}
	if typ == "message" {
		ev["channel_type"] = m.ChannelType
	}
	if m.ThreadTS != "" {
		ev["thread_ts"] = m.ThreadTS
	}
	if m.Subtype != "" {
		ev["subtype"] = m.Subtype
	}
	if m.BotID != "" {
		ev["bot_id"] = m.BotID
	}
	if len(m.Files) > 0 {
		var fs []map[string]any
		for _, f := range m.Files {
			fs = append(fs, f.object(m.Team))
		}
		ev["files"] = fs
	}
	return ev
}

// Callback wraps an inner event in an event_callback payload (the body of an Events API
// delivery and the payload of an events_api envelope) with a fresh event id.
func (e *events) Callback(event map[string]any) map[string]any {
	e.st.mu.Lock()
	id := fmt.Sprintf("Ev%010d", e.st.nextLocked())
	e.st.mu.Unlock()
	team, _ := event["team"].(string)
	if team == "" {
		team = TeamID
	}
	cb := map[string]any{"token": "fake-verification-token", "team_id": team, "api_app_id": AppID,
		"event": event, "type": "event_callback", "event_id": id, "event_time": time.Now().Unix(),
		"authorizations": []map[string]any{{"team_id": team, "user_id": BotUserID, "is_bot": true}}}
	return cb
}

// remember keeps a user's message in the channel's history (so conversations.replies sees it).
func (e *events) remember(m Msg) {
	e.st.mu.Lock()
	defer e.st.mu.Unlock()
	if e.chat.lookupLocked(m.Channel, m.TS) == nil {
		e.chat.addLocked(&Message{Channel: m.Channel, TS: m.TS, ThreadTS: m.ThreadTS, User: m.User, Text: m.Text})
	}
}

// PushMessage delivers a "message" event for m over Socket Mode and returns the message's ts
// and the envelope id.
func (e *events) PushMessage(m Msg) (ts, envelope string) {
	cb, ts := e.MessageCallback(m)
	return ts, e.sock.Send("events_api", cb)
}

// MessageCallback is the event_callback of a "message" event for m (defaults filled in, the
// message kept in its channel's history), to Send over Socket Mode or DeliverEvent over HTTP;
// it returns the message's ts with it.
func (e *events) MessageCallback(m Msg) (callback map[string]any, ts string) {
	e.fill(&m)
	e.remember(m)
	return e.Callback(m.event("message")), m.TS
}

// PushMention delivers an "app_mention" event for m (the text should hold <@BotUserID>).
func (e *events) PushMention(m Msg) (ts, envelope string) {
	e.fill(&m)
	e.remember(m)
	return m.TS, e.sock.Send("events_api", e.Callback(m.event("app_mention")))
}

// PushMentionPair delivers what Slack sends for one channel post that mentions the bot: an
// app_mention and a message event, same channel and ts, different event ids. It returns the
// ts and both envelope ids.
func (e *events) PushMentionPair(m Msg) (ts string, envelopes [2]string) {
	cbs, ts := e.MentionPairCallbacks(m)
	envelopes[0] = e.sock.Send("events_api", cbs[0])
	envelopes[1] = e.sock.Send("events_api", cbs[1])
	return ts, envelopes
}

// MentionPairCallbacks are the two event_callbacks Slack sends for one channel post that
// mentions the bot (app_mention, then message; see PushMentionPair), with the message's ts.
func (e *events) MentionPairCallbacks(m Msg) (callbacks [2]map[string]any, ts string) {
	e.fill(&m)
	e.remember(m)
	return [2]map[string]any{e.Callback(m.event("app_mention")), e.Callback(m.event("message"))}, m.TS
}

// AssistantThreadStarted is the event_callback of an assistant_thread_started: user opened
// the app's assistant pane (apps on features.assistant_view), which started the thread
// threadTS in the DM channel. https://docs.slack.dev/reference/events/assistant_thread_started
func (e *events) AssistantThreadStarted(user, channel, threadTS string) map[string]any {
	return e.Callback(map[string]any{"type": "assistant_thread_started", "event_ts": e.st.newTS(),
		"assistant_thread": map[string]any{"user_id": user, "channel_id": channel, "thread_ts": threadTS,
			"context": map[string]any{}}})
}

// AssistantThreadContextChanged is the event_callback of an assistant_thread_context_changed:
// user, with the assistant thread threadTS open, moved to the channel viewed.
// https://docs.slack.dev/reference/events/assistant_thread_context_changed
func (e *events) AssistantThreadContextChanged(user, channel, threadTS, viewed string) map[string]any {
	return e.Callback(map[string]any{"type": "assistant_thread_context_changed", "event_ts": e.st.newTS(),
		"assistant_thread": map[string]any{"user_id": user, "channel_id": channel, "thread_ts": threadTS,
			"context": map[string]any{"channel_id": viewed, "team_id": TeamID}}})
}

// AppHomeOpened is the event_callback of an app_home_opened: user opened the tab ("home" or
// "messages") of the app's App Home, whose DM is channel. For an app on features.agent_view,
// "messages" is the user opening the agent's conversation.
// https://docs.slack.dev/reference/events/app_home_opened
func (e *events) AppHomeOpened(user, channel, tab string) map[string]any {
	return e.Callback(map[string]any{"type": "app_home_opened", "user": user, "channel": channel, "tab": tab,
		"event_ts": e.st.newTS()})
}

// AppContextChanged is the event_callback of an app_context_changed (apps on
// features.agent_view): user, with the app visible, now views the channel viewed.
// https://docs.slack.dev/reference/events/app_context_changed
func (e *events) AppContextChanged(user, channel, viewed string) map[string]any {
	return e.Callback(map[string]any{"type": "app_context_changed", "user": user, "channel": channel,
		"event_ts": e.st.newTS(), "context": map[string]any{"entities": []map[string]any{
			{"type": "slack#/types/channel_id", "value": viewed, "team_id": TeamID}}}})
}

// Mention is the mrkdwn that mentions the bot.
func Mention() string { return "<@" + BotUserID + ">" }

// object is f as a message event's file object.
func (f File) object(team string) map[string]any {
	private, download := f.URLPrivate, f.URLPrivateDownload
	if private == "" {
		base := "https://files.slack.test/files-pri/" + team + "-" + f.ID + "/"
		private, download = base+url.PathEscape(f.Name), base+"download/"+url.PathEscape(f.Name)
	}
	o := map[string]any{"id": f.ID, "name": f.Name, "title": f.Name, "mimetype": f.MIME, "size": f.Size,
		"mode": "hosted", "is_external": false, "url_private": private}
	if download != "" {
		o["url_private_download"] = download
	}
	return o
}
