package discordfake

import (
	"encoding/json"
	"net/http"
	"slices"
	"time"
)

// Channel types (Discord's numbers).
const (
	ChannelText         = 0
	ChannelDM           = 1
	ChannelPublicThread = 11
)

// Channel is a guild text channel, a DM or a thread.
type Channel struct {
	ID       string
	Type     int
	GuildID  string
	ParentID string
	Name     string
	// Recipient is the user of a DM.
	Recipient string
	// AutoArchiveDuration (minutes; 0: not given, the channel's default) and RateLimitPerUser
	// (seconds) are a thread's, as started.
	AutoArchiveDuration int
	RateLimitPerUser    int
}

func (c *Channel) wire() map[string]any {
	w := map[string]any{"id": c.ID, "type": c.Type, "name": c.Name}
	if c.GuildID != "" {
		w["guild_id"] = c.GuildID
	}
	if c.ParentID != "" {
		w["parent_id"] = c.ParentID
	}
	return w
}

// channels are the guilds the bot is in and their channels, the DMs and the threads: what tests
// add, GET /channels/{channel}, POST /users/@me/channels (a DM), typing, and the GUILD_CREATE a
// guild is announced with.
type channels struct {
	st *store
	gw *gateway
	// byID and guilds are guarded by st.mu.
	byID   map[string]*Channel
	guilds []string
}

func newChannels(st *store, gw *gateway) *channels {
	return &channels{st: st, gw: gw, byID: map[string]*Channel{}}
}

// guildOfLocked is the guild of channel id ("" for a DM or an unknown channel).
func (cs *channels) guildOfLocked(id string) string {
	if ch := cs.byID[id]; ch != nil {
		return ch.GuildID
	}
	return ""
}

// Guild adds a guild the bot is in (announced with GUILD_CREATE after READY) with one text
// channel, and returns the channel's id.
//
// A guild added while the bot is connected is announced at once, as when the bot joins one.
func (cs *channels) Guild(guildID string) (channelID string) {
	cs.st.mu.Lock()
	added := !slices.Contains(cs.guilds, guildID)
	if added {
		cs.guilds = append(cs.guilds, guildID)
	}
	channelID = cs.st.newIDLocked()
	cs.byID[channelID] = &Channel{ID: channelID, Type: ChannelText, GuildID: guildID, Name: "general-" + channelID[len(channelID)-4:]}
	cs.st.mu.Unlock()
	if added {
		cs.gw.dispatch("GUILD_CREATE", cs.guildCreate(guildID))
	}
	return channelID
}

// TextChannel adds a text channel to guildID and returns its id.
func (cs *channels) TextChannel(guildID string) string {
	cs.st.mu.Lock()
	defer cs.st.mu.Unlock()
	id := cs.st.newIDLocked()
	cs.byID[id] = &Channel{ID: id, Type: ChannelText, GuildID: guildID, Name: "general-" + id[len(id)-4:]}
	return id
}

// DM adds the DM channel between the bot and userID and returns its id.
func (cs *channels) DM(userID string) string {
	cs.st.mu.Lock()
	defer cs.st.mu.Unlock()
	id := cs.st.newIDLocked()
	cs.byID[id] = &Channel{ID: id, Type: ChannelDM, Recipient: userID}
	return id
}

// postUserChannel is POST /users/@me/channels: the bot opens (or finds) its DM with
// recipient_id.
func (cs *channels) postUserChannel(_ http.ResponseWriter, _ *http.Request, body []byte) (int, any) {
	var b struct {
		RecipientID string `json:"recipient_id"`
	}
	if err := json.Unmarshal(body, &b); err != nil || b.RecipientID == "" {
		return errorResp(http.StatusBadRequest, 50035, "Invalid Form Body: recipient_id")
	}
	cs.st.mu.Lock()
	defer cs.st.mu.Unlock()
	for _, c := range cs.byID {
		if c.Type == ChannelDM && c.Recipient == b.RecipientID {
			return http.StatusOK, c.wire()
		}
	}
	c := &Channel{ID: cs.st.newIDLocked(), Type: ChannelDM, Recipient: b.RecipientID}
	cs.byID[c.ID] = c
	return http.StatusOK, c.wire()
}

// DMWith returns the id of the bot's DM with userID, "" when there is none.
func (cs *channels) DMWith(userID string) string {
	cs.st.mu.Lock()
	defer cs.st.mu.Unlock()
	for _, c := range cs.byID {
		if c.Type == ChannelDM && c.Recipient == userID {
			return c.ID
		}
	}
	return ""
}

// UserThread adds a thread a user started in parentID (not from a bot message) and returns its
// id. The bot learns of it from the messages posted in it.
func (cs *channels) UserThread(parentID string) string {
	cs.st.mu.Lock()
	defer cs.st.mu.Unlock()
	id := cs.st.newIDLocked()
	parent := cs.byID[parentID]
	guild := ""
	if parent != nil {
		guild = parent.GuildID
	}
	cs.byID[id] = &Channel{ID: id, Type: ChannelPublicThread, GuildID: guild, ParentID: parentID, Name: "thread"}
	return id
}

// ChannelInfo returns the channel with id, if it exists (threads the bot created included).
func (cs *channels) ChannelInfo(id string) (Channel, bool) {
	cs.st.mu.Lock()
	defer cs.st.mu.Unlock()
	c, ok := cs.byID[id]
	if !ok {
		return Channel{}, false
	}
	return *c, true
}

func (cs *channels) getChannel(_ http.ResponseWriter, r *http.Request, _ []byte) (int, any) {
	cs.st.mu.Lock()
	defer cs.st.mu.Unlock()
	ch, ok := cs.byID[r.PathValue("channel")]
	if !ok {
		return errorResp(http.StatusNotFound, 10003, "Unknown Channel")
	}
	return http.StatusOK, ch.wire()
}

func (cs *channels) postTyping(_ http.ResponseWriter, r *http.Request, _ []byte) (int, any) {
	cs.st.mu.Lock()
	defer cs.st.mu.Unlock()
	if _, ok := cs.byID[r.PathValue("channel")]; !ok {
		return errorResp(http.StatusNotFound, 10003, "Unknown Channel")
	}
	return http.StatusNoContent, nil
}

// guildIDs are the guilds the bot is in, in the order added.
func (cs *channels) guildIDs() []string {
	cs.st.mu.Lock()
	defer cs.st.mu.Unlock()
	return append([]string(nil), cs.guilds...)
}

// guildCreate is the GUILD_CREATE event of guild id: its channels and threads, and the bot's
// managed role.
func (cs *channels) guildCreate(id string) map[string]any {
	cs.st.mu.Lock()
	defer cs.st.mu.Unlock()
	var chans, threads []any
	for _, c := range cs.byID {
		if c.GuildID != id {
			continue
		}
		if c.Type == ChannelPublicThread {
			threads = append(threads, c.wire())
		} else {
			chans = append(chans, c.wire())
		}
	}
	return map[string]any{
		"id": id, "name": "guild " + id, "unavailable": false,
		"roles": []any{
			map[string]any{"id": id, "name": "@everyone", "permissions": "0"},
			map[string]any{"id": BotRoleID, "name": BotUsername, "managed": true, "permissions": "0", "tags": map[string]any{"bot_id": BotID}},
		},
		"channels": orEmpty(chans), "threads": orEmpty(threads), "members": []any{}, "joined_at": time.Now().UTC().Format(time.RFC3339),
	}
}
