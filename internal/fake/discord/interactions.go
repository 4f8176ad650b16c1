package discordfake

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Interaction types and callback types (Discord's numbers).
const (
	InteractionCommand     = 2
	InteractionComponent   = 3
	InteractionModalSubmit = 5

	CallbackMessage        = 4
	CallbackDeferred       = 5
	CallbackDeferredUpdate = 6
	CallbackUpdate         = 7
	CallbackModal          = 9

	FlagEphemeral = 1 << 6

	// AckDeadline is how long Discord waits for an interaction's first response.
	AckDeadline = 3 * time.Second
	// TokenLifetime is how long an interaction token takes follow-ups.
	TokenLifetime = 15 * time.Minute
)

// Response is one callback the bot made to an interaction.
type Response struct {
	Type int
	Data json.RawMessage
	At   time.Time
}

// Interaction is one interaction the fake dispatched and what the bot answered.
type Interaction struct {
	ID        string
	Token     string
	Type      int
	ChannelID string
	User      User
	CreatedAt time.Time
	// Data is the interaction's data as dispatched: a click's custom_id, a select's values, a
	// modal submit's components.
	Data      json.RawMessage
	Responses []Response
	// Original is the response message (type 4, or 5 once edited); Followups the later ones.
	Original  *Message
	Followups []*Message
}

// Acked reports whether the interaction got its first response, and how long after dispatch.
func (ix Interaction) Acked() (time.Duration, bool) {
	if len(ix.Responses) == 0 {
		return 0, false
	}
	return ix.Responses[0].At.Sub(ix.CreatedAt), true
}

// modalData is the data of a modal callback (type 9).
type modalData struct {
	Title      string      `json:"title"`
	CustomID   string      `json:"custom_id"`
	Components []Component `json:"components"`
}

// Modal decodes the modal the bot opened (callback type 9), if any: its custom_id and its inputs
// in order — each label's component, each action row's text input.
func (ix Interaction) Modal() (customID string, inputs []Component, ok bool) {
	d, labels, ok := ix.ModalLabels()
	if !ok {
		return "", nil, false
	}
	for _, c := range labels {
		switch {
		case c.Component != nil:
			inputs = append(inputs, *c.Component)
		case c.Type == TypeActionRow:
			inputs = append(inputs, c.Components...)
		}
	}
	return d, inputs, true
}

// ModalLabels decodes the modal the bot opened (callback type 9), if any: its custom_id and its
// top-level components as sent (labels, text displays, or rows of the older kind).
func (ix Interaction) ModalLabels() (customID string, components []Component, ok bool) {
	for _, r := range ix.Responses {
		if r.Type != CallbackModal {
			continue
		}
		var d modalData
		if json.Unmarshal(r.Data, &d) != nil {
			return "", nil, false
		}
		return d.CustomID, d.Components, true
	}
	return "", nil, false
}

// Replies are the texts of the interaction's response messages (original then follow-ups),
// ephemeral ones included.
func (ix Interaction) Replies() []Message {
	var out []Message
	if ix.Original != nil && !ix.Original.Pending {
		out = append(out, *ix.Original)
	}
	for _, m := range ix.Followups {
		out = append(out, *m)
	}
	return out
}

// interactions are the interactions tests dispatch (clicks, selects, modal submits, slash
// commands) and the bot's callbacks to them (POST /interactions/{id}/{token}/callback).
type interactions struct {
	st    *store
	chans *channels
	msgs  *messages
	gw    *gateway
	// Guarded by st.mu.
	byID    map[string]*Interaction
	byToken map[string]*Interaction
	perms   map[string]string // user id → member.permissions sent with guild interactions
}

func newInteractions(st *store, chans *channels, msgs *messages, gw *gateway) *interactions {
	return &interactions{st: st, chans: chans, msgs: msgs, gw: gw,
		byID: map[string]*Interaction{}, byToken: map[string]*Interaction{}, perms: map[string]string{}}
}

func randomToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return "aW50ZXJhY3Rpb24" + hex.EncodeToString(b)
}

func (is *interactions) newInteraction(typ int, channelID string, user User, data map[string]any, msgID string) *Interaction {
	is.st.mu.Lock()
	raw, _ := json.Marshal(data)
	ix := &Interaction{ID: is.st.newIDLocked(), Token: randomToken(), Type: typ, ChannelID: channelID, User: user, CreatedAt: time.Now(), Data: raw}
	is.byID[ix.ID] = ix
	is.byToken[ix.Token] = ix
	ch := is.chans.byID[channelID]
	perms, ok := is.perms[user.ID]
	if !ok {
		perms = "0"
	}
	var msg map[string]any
	if m, ok := is.msgs.byID[msgID]; ok {
		msg = m.wire()
	}
	is.st.mu.Unlock()

	w := map[string]any{"id": ix.ID, "application_id": ApplicationID, "type": typ, "token": ix.Token, "version": 1,
		"channel_id": channelID, "data": data, "locale": "en-US", "app_permissions": "0"}
	if ch != nil {
		w["channel"] = ch.wire()
		if ch.GuildID != "" {
			w["guild_id"] = ch.GuildID
			w["member"] = map[string]any{"user": user.wire(), "roles": []string{}, "permissions": perms,
				"joined_at": time.Now().UTC().Format(time.RFC3339)}
		} else {
			w["user"] = user.wire()
		}
	} else {
		w["user"] = user.wire()
	}
	if msg != nil {
		w["message"] = msg
	}
	is.gw.dispatch("INTERACTION_CREATE", w)
	return ix
}

// SetPermissions sets the permissions a user holds as a guild member (in every guild), which
// Discord sends with each of their guild interactions as member.permissions: a decimal string
// of permission bits (e.g. "32" for MANAGE_GUILD), sent as given. Default "0".
func (is *interactions) SetPermissions(userID, perms string) {
	is.st.mu.Lock()
	defer is.st.mu.Unlock()
	is.perms[userID] = perms
}

// Click dispatches a button click on message msgID in channelID and returns the interaction.
func (is *interactions) Click(channelID, msgID string, user User, customID string) string {
	return is.newInteraction(InteractionComponent, channelID, user,
		map[string]any{"custom_id": customID, "component_type": 2}, msgID).ID
}

// Select dispatches a string-select choice of values.
func (is *interactions) Select(channelID, msgID string, user User, customID string, values ...string) string {
	return is.newInteraction(InteractionComponent, channelID, user,
		map[string]any{"custom_id": customID, "component_type": 3, "values": orEmpty(values)}, msgID).ID
}

// Submit dispatches a modal submit: inputs maps each input's custom_id to what the user typed
// or, for a select, the value of the option picked (see SubmitValues).
func (is *interactions) Submit(channelID, msgID string, user User, customID string, inputs map[string]string) string {
	values := map[string][]string{}
	for id, v := range inputs {
		values[id] = []string{v}
	}
	return is.SubmitValues(channelID, msgID, user, customID, values)
}

// SubmitValues dispatches a modal submit: values maps each input's custom_id to what was typed
// (one value) or the values of the options picked in a select. The submit has the shape of the
// modal the bot last opened with customID, as Discord sends it (Component Reference: each
// input's "Interaction Response Structure"): an input in a label comes back in a label (type 18,
// its input as "component"), a text input with its "value", a select with its "values", a text
// display as its type and id, and every component with the id Discord numbers it by. As a user's
// client lets them, it dispatches nothing and returns "" when a required input is left empty or
// a select is given a value that is not one of its options. Without such a modal, each input is
// sent as a text input in an action row (a modal of the older kind).
func (is *interactions) SubmitValues(channelID, msgID string, user User, customID string, values map[string][]string) string {
	modal := is.openedModal(customID)
	if modal == nil {
		ids := make([]string, 0, len(values))
		for id := range values {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		var rows []any
		for _, id := range ids {
			rows = append(rows, map[string]any{"type": TypeActionRow, "components": []any{
				map[string]any{"type": TypeTextInput, "custom_id": id, "value": strings.Join(values[id], "\n")}}})
		}
		return is.newInteraction(InteractionModalSubmit, channelID, user,
			map[string]any{"custom_id": customID, "components": orEmpty(rows)}, msgID).ID
	}
	n := 0
	next := func() int { n++; return n }
	var comps []any
	for _, c := range modal {
		var in *Component
		out := map[string]any{"type": c.Type, "id": next()}
		switch {
		case c.Type == TypeLabel && c.Component != nil:
			in = c.Component
		case c.Type == TypeActionRow && len(c.Components) == 1:
			in = &c.Components[0]
		}
		if in != nil {
			sub, ok := submitted(*in, values[in.CustomID], next())
			if !ok {
				return ""
			}
			if c.Type == TypeLabel {
				out["component"] = sub
			} else {
				out["components"] = []any{sub}
			}
		}
		comps = append(comps, out)
	}
	return is.newInteraction(InteractionModalSubmit, channelID, user,
		map[string]any{"custom_id": customID, "components": orEmpty(comps)}, msgID).ID
}

// submitted is input in a modal submit, given vals; ok is false when the user's client would
// not submit them: a required input empty, a select value that is none of its options, more or
// fewer values than it takes.
func submitted(in Component, vals []string, id int) (map[string]any, bool) {
	required := in.Required == nil || *in.Required
	out := map[string]any{"type": in.Type, "id": id, "custom_id": in.CustomID}
	switch in.Type {
	case TypeTextInput:
		v := strings.Join(vals, "\n")
		if required && v == "" {
			return nil, false
		}
		out["value"] = v
	case TypeStringSelect:
		lo, hi := 1, 1
		if in.MinValues != nil {
			lo = *in.MinValues
		}
		if in.MaxValues != nil {
			hi = *in.MaxValues
		}
		if !required && len(vals) == 0 {
			lo = 0
		}
		if len(vals) < lo || len(vals) > hi {
			return nil, false
		}
		for _, v := range vals {
			if !slices.ContainsFunc(in.Options, func(o SelectOption) bool { return o.Value == v }) {
				return nil, false
			}
		}
		out["values"] = orEmpty(vals)
	default:
		out["values"] = orEmpty(vals)
	}
	return out, true
}

// openedModal is the top-level components of the modal the bot last opened with customID, or nil.
func (is *interactions) openedModal(customID string) []Component {
	is.st.mu.Lock()
	defer is.st.mu.Unlock()
	var found []Component
	var at time.Time
	for _, ix := range is.byID {
		for _, r := range ix.Responses {
			if r.Type != CallbackModal || r.At.Before(at) {
				continue
			}
			var d modalData
			if json.Unmarshal(r.Data, &d) == nil && d.CustomID == customID {
				found, at = d.Components, r.At
			}
		}
	}
	return found
}

// Slash dispatches a chat-input command /name sub [text] (a subcommand with an optional string
// option "text"); sub may be empty for a command without subcommands.
func (is *interactions) Slash(channelID string, user User, name, sub, text string) string {
	data := map[string]any{"id": is.st.newID(), "name": name, "type": 1}
	if sub != "" {
		opt := map[string]any{"name": sub, "type": 1}
		if text != "" {
			opt["options"] = []any{map[string]any{"name": "args", "type": 3, "value": text}}
		}
		data["options"] = []any{opt}
	}
	return is.newInteraction(InteractionCommand, channelID, user, data, "").ID
}

// ExpireToken ages interaction id past TokenLifetime, as if it had been dispatched more than 15
// minutes ago: its webhook calls (follow-ups, @original edits) fail as Discord's do, with 401
// Invalid Webhook Token.
func (is *interactions) ExpireToken(id string) {
	is.st.mu.Lock()
	defer is.st.mu.Unlock()
	if ix, ok := is.byID[id]; ok {
		ix.CreatedAt = time.Now().Add(-TokenLifetime - time.Minute)
	}
}

// InteractionByID returns what the bot did with an interaction.
func (is *interactions) InteractionByID(id string) (Interaction, bool) {
	is.st.mu.Lock()
	defer is.st.mu.Unlock()
	ix, ok := is.byID[id]
	if !ok {
		return Interaction{}, false
	}
	out := *ix
	out.Responses = append([]Response(nil), ix.Responses...)
	if ix.Original != nil {
		o := *ix.Original
		out.Original = &o
	}
	out.Followups = nil
	for _, m := range ix.Followups {
		c := *m
		out.Followups = append(out.Followups, &c)
	}
	return out, true
}

func (is *interactions) postCallback(_ http.ResponseWriter, r *http.Request, body []byte) (int, any) {
	var b struct {
		Type int             `json:"type"`
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return errorResp(http.StatusBadRequest, 50109, "The request body contains invalid JSON.")
	}
	is.st.mu.Lock()
	defer is.st.mu.Unlock()
	ix, ok := is.byID[r.PathValue("id")]
	if !ok || ix.Token != r.PathValue("token") || time.Since(ix.CreatedAt) > AckDeadline {
		return errorResp(http.StatusNotFound, 10062, "Unknown interaction")
	}
	if len(ix.Responses) > 0 {
		return errorResp(http.StatusBadRequest, 40060, "Interaction has already been acknowledged.")
	}
	switch b.Type {
	case CallbackMessage, CallbackDeferred:
		var mb messageBody
		if len(b.Data) > 0 {
			var ok bool
			if mb, ok = decodeMessageBody(b.Data); !ok {
				return errorResp(http.StatusBadRequest, 50035, "Invalid Form Body")
			}
			if b.Type == CallbackDeferred && mb.Flags&^FlagEphemeral != 0 {
				// "the only valid message flag you may use is EPHEMERAL": a V2 response is made
				// by editing the deferred one (Receiving and Responding).
				return invalidForm([]string{"data", "flags"}, "INTERACTION_RESPONSE_FLAGS_INVALID",
					"A deferred response takes the EPHEMERAL flag only")
			}
			if st, resp := mb.check(nil, b.Type == CallbackMessage); st != 0 {
				return st, resp
			}
		} else if b.Type == CallbackMessage {
			return errorResp(http.StatusBadRequest, 50006, "Cannot send an empty message")
		}
		m := is.responseMessageLocked(ix, &mb)
		m.Pending = b.Type == CallbackDeferred
		ix.Original = m
	case CallbackDeferredUpdate, CallbackUpdate:
		if ix.Type == InteractionCommand {
			return errorResp(http.StatusBadRequest, 50035, "Invalid Form Body: type: interaction response type not allowed")
		}
	case CallbackModal:
		if ix.Type == InteractionModalSubmit {
			return errorResp(http.StatusBadRequest, 50035, "Invalid Form Body: a modal cannot answer a modal")
		}
		var d modalData
		if err := json.Unmarshal(b.Data, &d); err != nil {
			return invalidForm([]string{"data"}, "MODEL_TYPE_CONVERT", "Only dictionaries may be used in a ModelType")
		}
		if err := checkModal(d.Title, d.CustomID, d.Components); err != nil {
			return formErr(err)
		}
	default:
		return errorResp(http.StatusBadRequest, 50035, "Invalid Form Body: type: unknown interaction response type")
	}
	ix.Responses = append(ix.Responses, Response{Type: b.Type, Data: b.Data, At: time.Now()})
	return http.StatusNoContent, nil
}

func (is *interactions) responseMessageLocked(ix *Interaction, mb *messageBody) *Message {
	m := &Message{ID: is.st.newIDLocked(), ChannelID: ix.ChannelID, GuildID: is.chans.guildOfLocked(ix.ChannelID), Author: User{ID: BotID, Username: BotUsername, Bot: true},
		Flags: mb.Flags, Ephemeral: mb.Flags&FlagEphemeral != 0, Interaction: ix.ID, CreatedAt: time.Now()}
	mb.apply(m)
	is.msgs.addLocked(m)
	return m
}
