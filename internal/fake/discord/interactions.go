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

func randomToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return "aW50ZXJhY3Rpb24" + hex.EncodeToString(b)
}

func (s *Server) newInteraction(typ int, channelID string, user User, data map[string]any, msgID string) *Interaction {
	s.mu.Lock()
	raw, _ := json.Marshal(data)
	ix := &Interaction{ID: s.newIDLocked(), Token: randomToken(), Type: typ, ChannelID: channelID, User: user, CreatedAt: time.Now(), Data: raw}
	s.ixs[ix.ID] = ix
	s.ixByToken[ix.Token] = ix
	ch := s.channels[channelID]
	perms, ok := s.perms[user.ID]
	if !ok {
		perms = "0"
	}
	var msg map[string]any
	if m, ok := s.byID[msgID]; ok {
		msg = m.wire()
	}
	s.mu.Unlock()

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
	s.Dispatch("INTERACTION_CREATE", w)
	return ix
}

// SetPermissions sets the permissions a user holds as a guild member (in every guild), which
// Discord sends with each of their guild interactions as member.permissions: a decimal string
// of permission bits (e.g. "32" for MANAGE_GUILD), sent as given. Default "0".
func (s *Server) SetPermissions(userID, perms string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.perms[userID] = perms
}

// Click dispatches a button click on message msgID in channelID and returns the interaction.
func (s *Server) Click(channelID, msgID string, user User, customID string) string {
	return s.newInteraction(InteractionComponent, channelID, user,
		map[string]any{"custom_id": customID, "component_type": 2}, msgID).ID
}

// Select dispatches a string-select choice of values.
func (s *Server) Select(channelID, msgID string, user User, customID string, values ...string) string {
	return s.newInteraction(InteractionComponent, channelID, user,
		map[string]any{"custom_id": customID, "component_type": 3, "values": orEmpty(values)}, msgID).ID
}

// Submit dispatches a modal submit: inputs maps each input's custom_id to what the user typed
// or, for a select, the value of the option picked (see SubmitValues).
func (s *Server) Submit(channelID, msgID string, user User, customID string, inputs map[string]string) string {
	values := map[string][]string{}
	for id, v := range inputs {
		values[id] = []string{v}
	}
	return s.SubmitValues(channelID, msgID, user, customID, values)
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
func (s *Server) SubmitValues(channelID, msgID string, user User, customID string, values map[string][]string) string {
	modal := s.openedModal(customID)
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
		return s.newInteraction(InteractionModalSubmit, channelID, user,
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
	return s.newInteraction(InteractionModalSubmit, channelID, user,
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
func (s *Server) openedModal(customID string) []Component {
	s.mu.Lock()
	defer s.mu.Unlock()
	var found []Component
	var at time.Time
	for _, ix := range s.ixs {
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
func (s *Server) Slash(channelID string, user User, name, sub, text string) string {
	data := map[string]any{"id": s.newID(), "name": name, "type": 1}
	if sub != "" {
		opt := map[string]any{"name": sub, "type": 1}
		if text != "" {
			opt["options"] = []any{map[string]any{"name": "args", "type": 3, "value": text}}
		}
		data["options"] = []any{opt}
	}
	return s.newInteraction(InteractionCommand, channelID, user, data, "").ID
}

// ExpireToken ages interaction id past TokenLifetime, as if it had been dispatched more than 15
// minutes ago: its webhook calls (follow-ups, @original edits) fail as Discord's do, with 401
// Invalid Webhook Token.
func (s *Server) ExpireToken(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ix, ok := s.ixs[id]; ok {
		ix.CreatedAt = time.Now().Add(-TokenLifetime - time.Minute)
	}
}

// InteractionByID returns what the bot did with an interaction.
func (s *Server) InteractionByID(id string) (Interaction, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ix, ok := s.ixs[id]
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

func (s *Server) postCallback(_ http.ResponseWriter, r *http.Request, body []byte) (int, any) {
	var b struct {
		Type int             `json:"type"`
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return errorResp(http.StatusBadRequest, 50109, "The request body contains invalid JSON.")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ix, ok := s.ixs[r.PathValue("id")]
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
		m := s.responseMessageLocked(ix, &mb)
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

func (s *Server) responseMessageLocked(ix *Interaction, mb *messageBody) *Message {
	ch := s.channels[ix.ChannelID]
	guild := ""
	if ch != nil {
		guild = ch.GuildID
	}
	m := &Message{ID: s.newIDLocked(), ChannelID: ix.ChannelID, GuildID: guild, Author: User{ID: BotID, Username: BotUsername, Bot: true},
		Flags: mb.Flags, Ephemeral: mb.Flags&FlagEphemeral != 0, Interaction: ix.ID, CreatedAt: time.Now()}
	mb.apply(m)
	s.messages[ix.ChannelID] = append(s.messages[ix.ChannelID], m)
	s.byID[m.ID] = m
	return m
}

func (s *Server) tokenLocked(r *http.Request) (*Interaction, int, any) {
	ix, ok := s.ixByToken[r.PathValue("token")]
	if !ok || r.PathValue("app") != ApplicationID || time.Since(ix.CreatedAt) > TokenLifetime {
		st, resp := errorResp(http.StatusUnauthorized, 50027, "Invalid Webhook Token")
		return nil, st, resp
	}
	if len(ix.Responses) == 0 {
		st, resp := errorResp(http.StatusNotFound, 10015, "Unknown Webhook")
		return nil, st, resp
	}
	return ix, 0, nil
}

func (s *Server) postFollowup(_ http.ResponseWriter, r *http.Request, body []byte) (int, any) {
	mb, ok := decodeMessageBody(body)
	if !ok {
		return errorResp(http.StatusBadRequest, 50109, "The request body contains invalid JSON.")
	}
	if st, resp := mb.check(nil, true); st != 0 {
		return st, resp
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ix, st, resp := s.tokenLocked(r)
	if ix == nil {
		return st, resp
	}
	m := s.responseMessageLocked(ix, &mb)
	ix.Followups = append(ix.Followups, m)
	if r.URL.Query().Get("wait") == "false" {
		return http.StatusNoContent, nil
	}
	return http.StatusOK, m.wire()
}

func (s *Server) followupTargetLocked(ix *Interaction, id string) *Message {
	if id == "@original" {
		return ix.Original
	}
	for _, m := range ix.Followups {
		if m.ID == id {
			return m
		}
	}
	return nil
}

func (s *Server) patchFollowup(_ http.ResponseWriter, r *http.Request, body []byte) (int, any) {
	mb, ok := decodeMessageBody(body)
	if !ok {
		return errorResp(http.StatusBadRequest, 50109, "The request body contains invalid JSON.")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ix, st, resp := s.tokenLocked(r)
	if ix == nil {
		return st, resp
	}
	m := s.followupTargetLocked(ix, r.PathValue("message"))
	if m == nil || m.Deleted {
		return errorResp(http.StatusNotFound, 10008, "Unknown Message")
	}
	if st, resp := mb.check(m, false); st != 0 {
		return st, resp
	}
	mb.apply(m)
	m.Pending = false
	m.Edits++
	return http.StatusOK, m.wire()
}

func (s *Server) deleteFollowup(_ http.ResponseWriter, r *http.Request, _ []byte) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ix, st, resp := s.tokenLocked(r)
	if ix == nil {
		return st, resp
	}
	m := s.followupTargetLocked(ix, r.PathValue("message"))
	if m == nil || m.Deleted {
		return errorResp(http.StatusNotFound, 10008, "Unknown Message")
	}
	m.Deleted = true
	return http.StatusNoContent, nil
}
