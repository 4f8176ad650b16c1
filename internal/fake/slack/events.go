package slackfake

import (
	"encoding/json"
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

func (s *Server) fill(m *Msg) {
	if m.Team == "" {
		m.Team = TeamID
	}
	if m.ChannelType == "" {
		m.ChannelType = "channel"
	}
	if m.TS == "" {
		m.TS = s.NewTS()
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
func (s *Server) Callback(event map[string]any) map[string]any {
	s.mu.Lock()
	s.seq++
	id := fmt.Sprintf("Ev%010d", s.seq)
	s.mu.Unlock()
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
func (s *Server) remember(m Msg) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byTS[m.Channel+"/"+m.TS] == nil {
		s.addMessageLocked(&Message{Channel: m.Channel, TS: m.TS, ThreadTS: m.ThreadTS, User: m.User, Text: m.Text})
	}
}

// PushMessage delivers a "message" event for m over Socket Mode and returns the message's ts
// and the envelope id.
func (s *Server) PushMessage(m Msg) (ts, envelope string) {
	cb, ts := s.MessageCallback(m)
	return ts, s.Send("events_api", cb)
}

// MessageCallback is the event_callback of a "message" event for m (defaults filled in, the
// message kept in its channel's history), to Send over Socket Mode or DeliverEvent over HTTP;
// it returns the message's ts with it.
func (s *Server) MessageCallback(m Msg) (callback map[string]any, ts string) {
	s.fill(&m)
	s.remember(m)
	return s.Callback(m.event("message")), m.TS
}

// PushMention delivers an "app_mention" event for m (the text should hold <@BotUserID>).
func (s *Server) PushMention(m Msg) (ts, envelope string) {
	s.fill(&m)
	s.remember(m)
	return m.TS, s.Send("events_api", s.Callback(m.event("app_mention")))
}

// PushMentionPair delivers what Slack sends for one channel post that mentions the bot: an
// app_mention and a message event, same channel and ts, different event ids. It returns the
// ts and both envelope ids.
func (s *Server) PushMentionPair(m Msg) (ts string, envelopes [2]string) {
	cbs, ts := s.MentionPairCallbacks(m)
	envelopes[0] = s.Send("events_api", cbs[0])
	envelopes[1] = s.Send("events_api", cbs[1])
	return ts, envelopes
}

// MentionPairCallbacks are the two event_callbacks Slack sends for one channel post that
// mentions the bot (app_mention, then message; see PushMentionPair), with the message's ts.
func (s *Server) MentionPairCallbacks(m Msg) (callbacks [2]map[string]any, ts string) {
	s.fill(&m)
	s.remember(m)
	return [2]map[string]any{s.Callback(m.event("app_mention")), s.Callback(m.event("message"))}, m.TS
}

// AssistantThreadStarted is the event_callback of an assistant_thread_started: user opened
// the app's assistant pane (apps on features.assistant_view), which started the thread
// threadTS in the DM channel. https://docs.slack.dev/reference/events/assistant_thread_started
func (s *Server) AssistantThreadStarted(user, channel, threadTS string) map[string]any {
	return s.Callback(map[string]any{"type": "assistant_thread_started", "event_ts": s.NewTS(),
		"assistant_thread": map[string]any{"user_id": user, "channel_id": channel, "thread_ts": threadTS,
			"context": map[string]any{}}})
}

// AssistantThreadContextChanged is the event_callback of an assistant_thread_context_changed:
// user, with the assistant thread threadTS open, moved to the channel viewed.
// https://docs.slack.dev/reference/events/assistant_thread_context_changed
func (s *Server) AssistantThreadContextChanged(user, channel, threadTS, viewed string) map[string]any {
	return s.Callback(map[string]any{"type": "assistant_thread_context_changed", "event_ts": s.NewTS(),
		"assistant_thread": map[string]any{"user_id": user, "channel_id": channel, "thread_ts": threadTS,
			"context": map[string]any{"channel_id": viewed, "team_id": TeamID}}})
}

// AppHomeOpened is the event_callback of an app_home_opened: user opened the tab ("home" or
// "messages") of the app's App Home, whose DM is channel. For an app on features.agent_view,
// "messages" is the user opening the agent's conversation.
// https://docs.slack.dev/reference/events/app_home_opened
func (s *Server) AppHomeOpened(user, channel, tab string) map[string]any {
	return s.Callback(map[string]any{"type": "app_home_opened", "user": user, "channel": channel, "tab": tab,
		"event_ts": s.NewTS()})
}

// AppContextChanged is the event_callback of an app_context_changed (apps on
// features.agent_view): user, with the app visible, now views the channel viewed.
// https://docs.slack.dev/reference/events/app_context_changed
func (s *Server) AppContextChanged(user, channel, viewed string) map[string]any {
	return s.Callback(map[string]any{"type": "app_context_changed", "user": user, "channel": channel,
		"event_ts": s.NewTS(), "context": map[string]any{"entities": []map[string]any{
			{"type": "slack#/types/channel_id", "value": viewed, "team_id": TeamID}}}})
}

// Mention is the mrkdwn that mentions the bot.
func Mention() string { return "<@" + BotUserID + ">" }

// Action is a click on an interactive element of a message the bot posted.
type Action struct {
	User, Team string
	Channel    string
	// MessageTS is the clicked message's ts; ThreadTS its thread's.
	MessageTS, ThreadTS string
	ActionID            string
	// Type is the element type: "button" (default), "static_select", …
	Type  string
	Value string
	// Selected are the selected option values of a select.
	Selected []string
}

// BlockActions builds a block_actions interaction payload for a with a fresh trigger id.
func (s *Server) BlockActions(a Action) map[string]any {
	if a.Team == "" {
		a.Team = TeamID
	}
	if a.Type == "" {
		a.Type = "button"
	}
	act := map[string]any{"type": a.Type, "action_id": a.ActionID, "block_id": "b1", "action_ts": s.NewTS()}
	switch {
	case a.Type == "button":
		act["value"] = a.Value
	case len(a.Selected) == 1 && a.Type == "static_select":
		act["selected_option"] = map[string]any{"text": map[string]any{"type": "plain_text", "text": "x"}, "value": a.Selected[0]}
	default:
		var opts []map[string]any
		for _, v := range a.Selected {
			opts = append(opts, map[string]any{"text": map[string]any{"type": "plain_text", "text": "x"}, "value": v})
		}
		act["selected_options"] = opts
	}
	container := map[string]any{"type": "message", "message_ts": a.MessageTS, "channel_id": a.Channel, "is_ephemeral": false}
	msg := map[string]any{"type": "message", "ts": a.MessageTS, "user": BotUserID, "bot_id": BotID, "text": "card"}
	if a.ThreadTS != "" {
		container["thread_ts"] = a.ThreadTS
		msg["thread_ts"] = a.ThreadTS
	}
	return map[string]any{
		"type": "block_actions", "api_app_id": AppID, "token": "fake-verification-token",
		"team":       map[string]any{"id": a.Team, "domain": "fake"},
		"user":       map[string]any{"id": a.User, "username": a.User, "name": a.User, "team_id": a.Team},
		"container":  container,
		"channel":    map[string]any{"id": a.Channel, "name": "chan"},
		"message":    msg,
		"trigger_id": s.NewTriggerID(), "response_url": s.URL() + "/response/" + a.Channel,
		"actions": []map[string]any{act},
	}
}

// PushAction delivers a block_actions interaction over Socket Mode; it returns the envelope id.
func (s *Server) PushAction(a Action) string { return s.Send("interactive", s.BlockActions(a)) }

// Submission is a submitted modal: the view as views.open received it, and the state values
// by block id and action id, each a list of selected option values or one typed text.
type Submission struct {
	User, Team string
	View       View
	Values     map[string]map[string][]string
	Texts      map[string]map[string]string
}

// ViewSubmission builds a view_submission payload, carrying the opened view's callback_id and
// private_metadata.
func (s *Server) ViewSubmission(sub Submission) map[string]any {
	if sub.Team == "" {
		sub.Team = TeamID
	}
	var v struct {
		CallbackID      string `json:"callback_id"`
		PrivateMetadata string `json:"private_metadata"`
	}
	_ = json.Unmarshal([]byte(sub.View.View), &v)
	state := map[string]any{}
	for block, acts := range sub.Values {
		m := map[string]any{}
		for aid, vals := range acts {
			var opts []map[string]any
			for _, val := range vals {
				opts = append(opts, map[string]any{"text": map[string]any{"type": "plain_text", "text": "x"}, "value": val})
			}
			if len(opts) == 1 {
				m[aid] = map[string]any{"type": "radio_buttons", "selected_option": opts[0]}
			} else {
				m[aid] = map[string]any{"type": "checkboxes", "selected_options": opts}
			}
		}
		state[block] = m
	}
	for block, acts := range sub.Texts {
		m, _ := state[block].(map[string]any)
		if m == nil {
			m = map[string]any{}
		}
		for aid, text := range acts {
			m[aid] = map[string]any{"type": "plain_text_input", "value": text}
		}
		state[block] = m
	}
	return map[string]any{
		"type": "view_submission", "api_app_id": AppID, "token": "fake-verification-token",
		"team":       map[string]any{"id": sub.Team, "domain": "fake"},
		"user":       map[string]any{"id": sub.User, "username": sub.User, "name": sub.User, "team_id": sub.Team},
		"trigger_id": s.NewTriggerID(),
		"view": map[string]any{"id": "V000001", "type": "modal", "callback_id": v.CallbackID,
			"private_metadata": v.PrivateMetadata, "state": map[string]any{"values": state}},
	}
}

// PushSubmission delivers a view_submission over Socket Mode; it returns the envelope id.
func (s *Server) PushSubmission(sub Submission) string {
	return s.Send("interactive", s.ViewSubmission(sub))
}

// Slash is a slash command invocation.
type Slash struct {
	Command, Text, User, Channel, ChannelName, Team string
}

// SlashValues are the fields of a slash command as Slack sends them (form fields over HTTP,
// a JSON object of strings over Socket Mode), with a fresh trigger id.
func (s *Server) SlashValues(c Slash) url.Values {
	if c.Team == "" {
		c.Team = TeamID
	}
	return url.Values{
		"token": {"fake-verification-token"}, "team_id": {c.Team}, "team_domain": {"fake"},
		"channel_id": {c.Channel}, "channel_name": {c.ChannelName}, "user_id": {c.User}, "user_name": {c.User},
		"command": {c.Command}, "text": {c.Text}, "api_app_id": {AppID},
		"response_url": {s.URL() + "/commands/" + c.Channel}, "trigger_id": {s.NewTriggerID()},
	}
}

// PushSlash delivers a slash command over Socket Mode; it returns the envelope id.
func (s *Server) PushSlash(c Slash) string {
	vals := s.SlashValues(c)
	m := map[string]string{}
	for k, v := range vals {
		m[k] = v[0]
	}
	return s.Send("slash_commands", m)
}

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
