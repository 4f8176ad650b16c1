package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	slackgo "github.com/slack-go/slack"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/render"
)

// interaction is an interactivity payload (block_actions, view_submission, …) as this adapter
// reads it; like callback, it is decoded here so that the blocks of the clicked message, which
// the bot does not need, can never make a click unreadable.
type interaction struct {
	Type       string `json:"type"`
	TriggerID  string `json:"trigger_id"`
	Team       idObj  `json:"team"`
	Enterprise *idObj `json:"enterprise"`
	User       struct {
		ID     string `json:"id"`
		TeamID string `json:"team_id"`
		Name   string `json:"name"`
	} `json:"user"`
	Channel   idObj `json:"channel"`
	Container struct {
		ChannelID string `json:"channel_id"`
		MessageTS string `json:"message_ts"`
		ThreadTS  string `json:"thread_ts"`
	} `json:"container"`
	Message struct {
		TS       string `json:"ts"`
		ThreadTS string `json:"thread_ts"`
	} `json:"message"`
	Actions []struct {
		ActionID        string      `json:"action_id"`
		BlockID         string      `json:"block_id"`
		Type            string      `json:"type"`
		Value           string      `json:"value"`
		ActionTS        string      `json:"action_ts"`
		SelectedOption  *optionObj  `json:"selected_option"`
		SelectedOptions []optionObj `json:"selected_options"`
	} `json:"actions"`
	View *struct {
		ID              string `json:"id"`
		CallbackID      string `json:"callback_id"`
		PrivateMetadata string `json:"private_metadata"`
		State           struct {
			Values map[string]map[string]stateValue `json:"values"`
		} `json:"state"`
	} `json:"view"`
}

type idObj struct {
	ID string `json:"id"`
}

type optionObj struct {
	Value string `json:"value"`
}

type stateValue struct {
	Type            string      `json:"type"`
	Value           *string     `json:"value"`
	SelectedOption  *optionObj  `json:"selected_option"`
	SelectedOptions []optionObj `json:"selected_options"`
}

// decodeInteraction parses an interactivity payload (the JSON of the payload= form field, or of
// an interactive envelope). It fails on invalid JSON, a missing type or user, and payloads past
// maxPayloadBytes.
func decodeInteraction(data []byte) (interaction, error) {
	var it interaction
	if len(data) > maxPayloadBytes {
		return it, fmt.Errorf("%w: %d bytes", errMalformed, len(data))
	}
	if err := json.Unmarshal(data, &it); err != nil {
		return it, fmt.Errorf("%w: %w", errMalformed, err)
	}
	if it.Type == "" || it.User.ID == "" {
		return it, fmt.Errorf("%w: interaction without a type or a user", errMalformed)
	}
	return it, nil
}

// formMeta is what a modal carries in its private_metadata: where the form was clicked open and
// the ids of its fields, so a submission can be given back keyed as the router reads it.
type formMeta struct {
	Conv   string   `json:"c"`
	MsgTS  string   `json:"m,omitempty"`
	Fields []string `json:"f,omitempty"`
}

// maxPrivateMetadata is Slack's limit on a view's private_metadata.
const maxPrivateMetadata = 3000

// responder is how to answer an interaction privately: who clicked, where.
type responder struct {
	workspace, channel, user, thread string
}

// interactionInbound converts a block_actions or view_submission payload. ok is false for
// other kinds (view_closed, shortcuts, …) and for clicks without an action or a place.
func interactionInbound(it interaction, now time.Time) (in channels.Inbound, r responder, ok bool) {
	ent := ""
	if it.Enterprise != nil {
		ent = it.Enterprise.ID
	}
	userTeam := it.User.TeamID
	if userTeam == "" {
		userTeam = it.Team.ID
	}
	id := conv.Identity{Platform: platform, ChannelUserID: UserID(ent, userTeam, it.User.ID), DisplayName: it.User.Name}
	ws := workspace(ent, it.Team.ID)
	switch it.Type {
	case "block_actions":
		if len(it.Actions) == 0 {
			return in, r, false
		}
		ch := it.Container.ChannelID
		if ch == "" {
			ch = it.Channel.ID
		}
		msgTS := it.Container.MessageTS
		if msgTS == "" {
			msgTS = it.Message.TS
		}
		if ch == "" || msgTS == "" {
			return in, r, false // a click in a modal or on the home tab: nothing this bot sends
		}
		thread := it.Container.ThreadTS
		if thread == "" {
			thread = it.Message.ThreadTS
		}
		k := conv.Key{Platform: platform, Workspace: ws, Chat: ch, Thread: thread}
		a := it.Actions[0]
		values := map[string][]string{}
		if a.SelectedOption != nil {
			values[a.ActionID] = append(values[a.ActionID], a.SelectedOption.Value)
		}
		for _, o := range a.SelectedOptions {
			values[a.ActionID] = append(values[a.ActionID], o.Value)
		}
		if len(values) == 0 {
			values = nil
		}
		in = channels.Inbound{
			EventID: triggerEventID(it.TriggerID, a.ActionTS), Conv: k, Identity: id,
			AddressesBot: true, Direct: strings.HasPrefix(ch, "D"), MessageID: msgTS,
			Interaction: &channels.Interaction{ID: it.TriggerID, Data: a.ActionID, Values: values,
				Message: channels.MessageRef{Conv: k, IDs: []string{msgTS}}},
			ReceivedAt: now,
		}
		return in, responder{workspace: ws, channel: ch, user: it.User.ID, thread: thread}, true
	case "view_submission":
		if it.View == nil || it.View.CallbackID == "" {
			return in, r, false
		}
		var meta formMeta
		if json.Unmarshal([]byte(it.View.PrivateMetadata), &meta) != nil {
			return in, r, false // not a modal this bot opened
		}
		k, okKey := conv.ParseKey(meta.Conv)
		if !okKey || k.Platform != platform || k.Chat == "" {
			return in, r, false
		}
		in = channels.Inbound{
			EventID: triggerEventID(it.TriggerID, ""), Conv: k, Identity: id, AddressesBot: true,
			Direct: strings.HasPrefix(k.Chat, "D"), MessageID: meta.MsgTS,
			Interaction: &channels.Interaction{ID: it.TriggerID, Data: it.View.CallbackID,
				Values: submittedValues(it.View.State.Values, meta.Fields)},
			ReceivedAt: now,
		}
		if meta.MsgTS != "" {
			in.Interaction.Message = channels.MessageRef{Conv: k, IDs: []string{meta.MsgTS}}
		}
		return in, responder{workspace: k.Workspace, channel: k.Chat, user: it.User.ID, thread: k.Thread}, true
	}
	return in, r, false
}

func triggerEventID(trigger, actionTS string) string {
	if trigger == "" {
		if actionTS == "" {
			return ""
		}
		return "action:" + actionTS
	}
	return "trigger:" + trigger
}

// submittedValues turns a modal's state into the router's values: input block "f<i>" (as
// render.SlackModal names them) under the form's field id i, anything else (the free-text
// input) under its block id. Selected options give their values (signed choice ids), text
// inputs their text.
func submittedValues(state map[string]map[string]stateValue, fields []string) map[string][]string {
	out := map[string][]string{}
	blocks := make([]string, 0, len(state))
	for b := range state {
		blocks = append(blocks, b)
	}
	sort.Strings(blocks)
	for _, b := range blocks {
		key := b
		if n, ok := strings.CutPrefix(b, "f"); ok {
			if i, err := strconv.Atoi(n); err == nil && i >= 0 && i < len(fields) {
				key = fields[i]
			}
		}
		for _, v := range state[b] {
			switch {
			case v.SelectedOption != nil:
				out[key] = append(out[key], v.SelectedOption.Value)
			case len(v.SelectedOptions) > 0:
				for _, o := range v.SelectedOptions {
					out[key] = append(out[key], o.Value)
				}
			case v.Value != nil && *v.Value != "":
				out[key] = append(out[key], *v.Value)
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// ephemeralPrefix marks an Inbound.MessageID that names no message but the user who ran a
// slash command: Send answers a "reply" to it with chat.postEphemeral to that user, so command
// answers are seen by the one who asked only.
const ephemeralPrefix = "ephemeral:"

// slashInbound converts a slash command (form fields over HTTP; the same fields as a JSON
// object of strings over Socket Mode). command is the configured command ("/bot"); another
// command, or one without a user, team or channel, is an error. An empty text is "help".
func slashInbound(v url.Values, command string, now time.Time) (channels.Inbound, error) {
	user, team, ch := v.Get("user_id"), v.Get("team_id"), v.Get("channel_id")
	if user == "" || team == "" || ch == "" || v.Get("command") == "" {
		return channels.Inbound{}, fmt.Errorf("%w: slash command without a user, team, channel or command", errMalformed)
	}
	if !strings.EqualFold(v.Get("command"), command) {
		return channels.Inbound{}, fmt.Errorf("%w: unknown command %q", errMalformed, v.Get("command"))
	}
	words := strings.Fields(v.Get("text"))
	name, args := "help", []string(nil)
	if len(words) > 0 {
		name, args = strings.ToLower(strings.TrimPrefix(words[0], "/")), words[1:]
	}
	ent := v.Get("enterprise_id")
	k := conv.Key{Platform: platform, Workspace: workspace(ent, team), Chat: ch}
	return channels.Inbound{
		EventID:      triggerEventID(v.Get("trigger_id"), ""),
		Conv:         k,
		Identity:     conv.Identity{Platform: platform, ChannelUserID: UserID(ent, team, user), DisplayName: v.Get("user_name")},
		Text:         strings.TrimSpace(v.Get("command") + " " + v.Get("text")),
		AddressesBot: true,
		Direct:       strings.HasPrefix(ch, "D"),
		MessageID:    ephemeralPrefix + user,
		Command:      name,
		Args:         args,
		ReceivedAt:   now,
	}, nil
}

// slashValues reads the JSON object of strings a slash_commands envelope carries.
func slashValues(data []byte) (url.Values, error) {
	if len(data) > maxPayloadBytes {
		return nil, fmt.Errorf("%w: %d bytes", errMalformed, len(data))
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%w: %w", errMalformed, err)
	}
	v := url.Values{}
	for k, x := range m {
		if s, ok := x.(string); ok {
			v.Set(k, s)
		}
	}
	return v, nil
}

// interactions answers clicks privately (RespondInteraction) and opens modals (OpenForm), for
// the interactions being handed over (handling).
type interactions struct {
	cfg      *Config
	web      *webAPI
	installs *installs
	pending  sync.Map // trigger id → responder, while its interaction is handled
}

// handling keeps r, the clicker of interaction id, while it is handed over; done forgets it.
func (x *interactions) handling(id string, r responder) (done func()) {
	x.pending.Store(id, r)
	return func() { x.pending.Delete(id) }
}

// maxNotice bounds an ephemeral notice.
const maxNotice = 2000

// RespondInteraction tells the user who clicked, privately (chat.postEphemeral in the channel
// and thread of the click). An empty notice sends nothing: the click was already acknowledged.
func (x *interactions) RespondInteraction(ctx context.Context, in *channels.Interaction, notice string) error {
	if in == nil {
		return errors.New("slack: respond: no interaction")
	}
	if strings.TrimSpace(notice) == "" {
		return nil
	}
	v, ok := x.pending.Load(in.ID)
	if !ok {
		return errors.New("slack: respond: the interaction is no longer being handled")
	}
	r := v.(responder)
	if rs := []rune(notice); len(rs) > maxNotice {
		notice = string(rs[:maxNotice-1]) + "…"
	}
	text := render.ConvertMarkdown(notice, render.DialectSlack)
	api, err := x.installs.client(ctx, r.workspace)
	if err != nil {
		return err
	}
	return x.web.callWaiting(ctx, r.workspace, "chat.postEphemeral", func(ctx context.Context) error {
		opts := []slackgo.MsgOption{slackgo.MsgOptionText(text, false)}
		if r.thread != "" {
			opts = append(opts, slackgo.MsgOptionTS(r.thread))
		}
		_, err := api.PostEphemeralContext(ctx, r.channel, r.user, opts...)
		return err
	})
}

// OpenForm opens form as a modal (views.open with the click's trigger id, which Slack honours
// for 3 s). The modal carries where it was opened and its field ids, so its submission comes
// back as an Inbound of that conversation with values keyed by field id.
func (x *interactions) OpenForm(ctx context.Context, in *channels.Interaction, form render.Form) error {
	if in == nil || in.ID == "" {
		return errors.New("slack: open form: no trigger id")
	}
	view, err := render.SlackModal(render.Card{Title: "Question", Status: render.StatusWaiting, Form: &form}, x.cfg.ActionKey)
	if err != nil {
		return fmt.Errorf("slack: open form: %w", err)
	}
	meta := formMeta{Conv: in.Message.Conv.String(), MsgTS: in.Message.ID()}
	for _, f := range form.Fields {
		meta.Fields = append(meta.Fields, f.ID)
	}
	mb, err := json.Marshal(meta)
	if err != nil || len(mb) > maxPrivateMetadata {
		return errors.New("slack: open form: the form's metadata is too large for a modal")
	}
	raw, err := json.Marshal(view)
	if err != nil {
		return fmt.Errorf("slack: open form: %w", err)
	}
	var req slackgo.ModalViewRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return fmt.Errorf("slack: open form: %w", err)
	}
	req.PrivateMetadata = string(mb)
	api, err := x.installs.client(ctx, in.Message.Conv.Workspace)
	if err != nil {
		return err
	}
	return x.web.callWaiting(ctx, in.Message.Conv.Workspace, "views.open", func(ctx context.Context) error {
		_, err := api.OpenViewContext(ctx, in.ID, req)
		return err
	})
}
