package discordfake

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
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

// Modal decodes the modal the bot opened (callback type 9), if any.
func (ix Interaction) Modal() (customID string, inputs []Component, ok bool) {
	for _, r := range ix.Responses {
		if r.Type != CallbackModal {
			continue
		}
		var d struct {
			CustomID   string      `json:"custom_id"`
			Components []Component `json:"components"`
		}
		if json.Unmarshal(r.Data, &d) != nil {
			return "", nil, false
		}
		for _, row := range d.Components {
			inputs = append(inputs, row.Components...)
		}
		return d.CustomID, inputs, true
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
	ix := &Interaction{ID: s.newIDLocked(), Token: randomToken(), Type: typ, ChannelID: channelID, User: user, CreatedAt: time.Now()}
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

// Submit dispatches a modal submit: inputs maps each text input's custom_id to its value.
func (s *Server) Submit(channelID, msgID string, user User, customID string, inputs map[string]string) string {
	var rows []any
	for id, v := range inputs {
		rows = append(rows, map[string]any{"type": 1, "components": []any{
			map[string]any{"type": 4, "custom_id": id, "value": v}}})
	}
	return s.newInteraction(InteractionModalSubmit, channelID, user,
		map[string]any{"custom_id": customID, "components": orEmpty(rows)}, msgID).ID
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
			if err := json.Unmarshal(b.Data, &mb); err != nil {
				return errorResp(http.StatusBadRequest, 50035, "Invalid Form Body")
			}
			if st, resp := mb.check(b.Type == CallbackMessage); st != 0 {
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
		var d struct {
			Title      string      `json:"title"`
			CustomID   string      `json:"custom_id"`
			Components []Component `json:"components"`
		}
		if err := json.Unmarshal(b.Data, &d); err != nil || d.Title == "" || d.CustomID == "" ||
			len(d.Components) == 0 || len(d.Components) > MaxRows {
			return errorResp(http.StatusBadRequest, 50035, "Invalid Form Body: modal")
		}
		for _, row := range d.Components {
			for _, c := range row.Components {
				if c.Type != 4 || len(c.CustomID) > MaxCustomID || len(c.Label) > 45 || c.Label == "" {
					return errorResp(http.StatusBadRequest, 50035, "Invalid Form Body: modal text input")
				}
			}
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
	var mb messageBody
	if err := json.Unmarshal(body, &mb); err != nil {
		return errorResp(http.StatusBadRequest, 50109, "The request body contains invalid JSON.")
	}
	if st, resp := mb.check(true); st != 0 {
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
	var mb messageBody
	if err := json.Unmarshal(body, &mb); err != nil {
		return errorResp(http.StatusBadRequest, 50109, "The request body contains invalid JSON.")
	}
	if st, resp := mb.check(false); st != 0 {
		return st, resp
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

// Command is a registered application command as the fake stores it.
type Command struct {
	ID                       string          `json:"id"`
	ApplicationID            string          `json:"application_id"`
	GuildID                  string          `json:"guild_id,omitempty"`
	Name                     string          `json:"name"`
	Description              string          `json:"description"`
	Type                     int             `json:"type,omitempty"`
	Options                  json.RawMessage `json:"options,omitempty"`
	DefaultMemberPermissions *string         `json:"default_member_permissions"`
	Version                  string          `json:"version"`
}

// Commands returns the commands registered globally (guild "") or for a guild.
func (s *Server) Commands(guild string) []Command {
	s.mu.Lock()
	raw := s.commands[guild]
	s.mu.Unlock()
	var out []Command
	_ = json.Unmarshal(raw, &out)
	return out
}

// CommandOverwrites counts successful bulk-overwrite PUTs (global and guild).
func (s *Server) CommandOverwrites() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.commandPUT
}

func (s *Server) getCommands(_ http.ResponseWriter, r *http.Request, _ []byte) (int, any) {
	if r.PathValue("app") != ApplicationID {
		return errorResp(http.StatusNotFound, 10002, "Unknown Application")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	raw := s.commands[r.PathValue("guild")]
	if raw == nil {
		raw = json.RawMessage("[]")
	}
	return http.StatusOK, raw
}

func (s *Server) putCommands(_ http.ResponseWriter, r *http.Request, body []byte) (int, any) {
	if r.PathValue("app") != ApplicationID {
		return errorResp(http.StatusNotFound, 10002, "Unknown Application")
	}
	var cmds []Command
	if err := json.Unmarshal(body, &cmds); err != nil {
		return errorResp(http.StatusBadRequest, 50109, "The request body contains invalid JSON.")
	}
	if len(cmds) > 100 {
		return errorResp(http.StatusBadRequest, 30032, "Maximum number of application commands reached (100)")
	}
	guild := r.PathValue("guild")
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range cmds {
		c := &cmds[i]
		if c.Name == "" || len(c.Name) > 32 || c.Description == "" || len(c.Description) > 100 {
			return errorResp(http.StatusBadRequest, 50035, "Invalid Form Body: name or description")
		}
		if c.ID == "" {
			c.ID = s.newIDLocked()
		}
		c.ApplicationID, c.GuildID = ApplicationID, guild
		if c.Type == 0 {
			c.Type = 1
		}
		c.Version = strconv.FormatUint(s.nextID, 10)
	}
	raw, _ := json.Marshal(cmds)
	s.commands[guild] = raw
	s.commandPUT++
	return http.StatusOK, json.RawMessage(raw)
}
