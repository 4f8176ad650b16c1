package slackfake

import (
	"encoding/json"
	"net/url"
)

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

// interactivity builds the payloads of interactions — clicks (block_actions), modal submissions
// (view_submission) and slash commands — to send over Socket Mode (the Push methods) or to
// deliver signed over HTTP.
type interactivity struct {
	st    *store
	url   func() string // the server's base URL
	views *views
	sock  *socketControl
}

// BlockActions builds a block_actions interaction payload for a with a fresh trigger id.
func (ix *interactivity) BlockActions(a Action) map[string]any {
	if a.Team == "" {
		a.Team = TeamID
	}
	if a.Type == "" {
		a.Type = "button"
	}
	act := map[string]any{"type": a.Type, "action_id": a.ActionID, "block_id": "b1", "action_ts": ix.st.newTS()}
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
		"trigger_id": ix.views.NewTriggerID(), "response_url": ix.url() + "/response/" + a.Channel,
		"actions": []map[string]any{act},
	}
}

// PushAction delivers a block_actions interaction over Socket Mode; it returns the envelope id.
func (ix *interactivity) PushAction(a Action) string {
	return ix.sock.Send("interactive", ix.BlockActions(a))
}

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
func (ix *interactivity) ViewSubmission(sub Submission) map[string]any {
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
		"trigger_id": ix.views.NewTriggerID(),
		"view": map[string]any{"id": "V000001", "type": "modal", "callback_id": v.CallbackID,
			"private_metadata": v.PrivateMetadata, "state": map[string]any{"values": state}},
	}
}

// PushSubmission delivers a view_submission over Socket Mode; it returns the envelope id.
func (ix *interactivity) PushSubmission(sub Submission) string {
	return ix.sock.Send("interactive", ix.ViewSubmission(sub))
}

// Slash is a slash command invocation.
type Slash struct {
	Command, Text, User, Channel, ChannelName, Team string
}

// SlashValues are the fields of a slash command as Slack sends them (form fields over HTTP,
// a JSON object of strings over Socket Mode), with a fresh trigger id.
func (ix *interactivity) SlashValues(c Slash) url.Values {
	if c.Team == "" {
		c.Team = TeamID
	}
	return url.Values{
		"token": {"fake-verification-token"}, "team_id": {c.Team}, "team_domain": {"fake"},
		"channel_id": {c.Channel}, "channel_name": {c.ChannelName}, "user_id": {c.User}, "user_name": {c.User},
		"command": {c.Command}, "text": {c.Text}, "api_app_id": {AppID},
		"response_url": {ix.url() + "/commands/" + c.Channel}, "trigger_id": {ix.views.NewTriggerID()},
	}
}

// PushSlash delivers a slash command over Socket Mode; it returns the envelope id.
func (ix *interactivity) PushSlash(c Slash) string {
	vals := ix.SlashValues(c)
	m := map[string]string{}
	for k, v := range vals {
		m[k] = v[0]
	}
	return ix.sock.Send("slash_commands", m)
}
