package slack

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/conv"
)

// errMalformed is wrapped by every decoding error: the payload is not something Slack sends.
var errMalformed = errors.New("slack: malformed payload")

// maxPayloadBytes bounds one payload (an Events API body, an interaction, a command).
const maxPayloadBytes = 1 << 20

// callback is an Events API payload (the body of an HTTP delivery, the payload of an
// events_api envelope) as this adapter reads it. It is decoded here rather than with
// slackevents.ParseEvent, which rejects a whole event for one block it cannot read: the blocks
// of a user's message are not needed, its text is.
type callback struct {
	Type         string `json:"type"`
	Challenge    string `json:"challenge"`
	TeamID       string `json:"team_id"`
	EnterpriseID string `json:"enterprise_id"`
	EventID      string `json:"event_id"`
	// Event is decoded with the callback, in the same pass.
	Event *innerEvent `json:"event"`
	// IsEnterpriseInstall marks an event for an org-wide install on Enterprise Grid (Slack
	// says so here or on the authorization).
	IsEnterpriseInstall bool `json:"is_enterprise_install"`
	// Authorizations name the installation the event is for: its bot user in that workspace,
	// and whether it is an org-wide install.
	Authorizations []authorization `json:"authorizations"`
}

// authorization is one entry of a callback's authorizations.
type authorization struct {
	UserID              string `json:"user_id"`
	IsBot               bool   `json:"is_bot"`
	EnterpriseID        string `json:"enterprise_id"`
	IsEnterpriseInstall bool   `json:"is_enterprise_install"`
}

// orgWide returns the enterprise whose org-wide install (Enterprise Grid) the event is for, or
// "" when it is for a workspace's own install.
func (cb callback) orgWide() string {
	ent := cb.EnterpriseID
	install := cb.IsEnterpriseInstall
	for _, a := range cb.Authorizations {
		if a.IsEnterpriseInstall {
			install = true
			if ent == "" {
				ent = a.EnterpriseID
			}
		}
	}
	if !install {
		return ""
	}
	return ent
}

// innerEvent is the event of a callback: message, app_mention, app_uninstalled, tokens_revoked,
// and the AI surfaces' assistant_thread_started and app_home_opened.
type innerEvent struct {
	Type        string      `json:"type"`
	Subtype     string      `json:"subtype"`
	Channel     string      `json:"channel"`
	ChannelType string      `json:"channel_type"`
	User        string      `json:"user"`
	UserTeam    string      `json:"user_team"`
	Team        string      `json:"team"`
	Text        string      `json:"text"`
	TS          string      `json:"ts"`
	ThreadTS    string      `json:"thread_ts"`
	BotID       string      `json:"bot_id"`
	Files       []eventFile `json:"files"`
	// Tab is app_home_opened's: the App Home tab opened, "home" or "messages".
	Tab     string `json:"tab"`
	EventTS string `json:"event_ts"`
	// AssistantThread is assistant_thread_started's thread.
	AssistantThread struct {
		UserID    string `json:"user_id"`
		ChannelID string `json:"channel_id"`
		ThreadTS  string `json:"thread_ts"`
	} `json:"assistant_thread"`
	// Tokens are the revoked tokens' owners of tokens_revoked.
	Tokens struct {
		Bot []string `json:"bot"`
	} `json:"tokens"`
}

// eventFile is a file object of a message event, as attachments reads it.
type eventFile struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	MIME       string `json:"mimetype"`
	Size       int64  `json:"size"`
	URLPrivate string `json:"url_private"`
	// URLPrivateDownload serves the file as a download (Content-Disposition: attachment).
	URLPrivateDownload string `json:"url_private_download"`
}

// decodeCallback parses an Events API payload. It fails on invalid JSON, on an event_callback
// without a team or an event object, and on bodies past maxPayloadBytes.
func decodeCallback(data []byte) (callback, innerEvent, error) {
	var cb callback
	var ev innerEvent
	if len(data) > maxPayloadBytes {
		return cb, ev, fmt.Errorf("%w: %d bytes", errMalformed, len(data))
	}
	if err := json.Unmarshal(data, &cb); err != nil {
		return cb, ev, fmt.Errorf("%w: %w", errMalformed, err)
	}
	switch cb.Type {
	case "url_verification":
		if cb.Challenge == "" {
			return cb, ev, fmt.Errorf("%w: url_verification without a challenge", errMalformed)
		}
		return cb, ev, nil
	case "app_rate_limited":
		// Slack stopped delivering events for a minute (30,000 an hour per workspace).
		return cb, ev, nil
	case "event_callback":
	default:
		return cb, ev, fmt.Errorf("%w: payload type %q", errMalformed, cb.Type)
	}
	// An org-wide install's events may name only the enterprise (its uninstall, for one).
	if (cb.TeamID == "" && cb.EnterpriseID == "") || cb.Event == nil {
		return cb, ev, fmt.Errorf("%w: event_callback without a team or an event", errMalformed)
	}
	ev = *cb.Event
	if ev.Type == "" {
		return cb, ev, fmt.Errorf("%w: event without a type", errMalformed)
	}
	return cb, ev, nil
}

// ThreadReplies says which messages in threads the bot reads without a mention.
type ThreadReplies string

// The thread reply policies.
const (
	// RepliesAll hands every message in a thread to the router, which answers those in threads
	// the bot is part of.
	RepliesAll ThreadReplies = "all"
	// RepliesMention reads threads only where the bot is mentioned.
	RepliesMention ThreadReplies = "mention"
)

// self is what event conversion needs to know about the bot and the configuration.
type self struct {
	userID, botID string
	// team and enterprise are the configured bot token's own workspace and organization
	// (auth.test), the only ones that token serves when workspaces install the app.
	team, enterprise string
	threads          ThreadReplies
	replyInThread    bool
	// agentView roots a thread at each top-level DM message (Config.AgentView).
	agentView bool
}

// workspace is the conversation key's workspace part: the team, prefixed by the Enterprise Grid
// org where there is one.
func workspace(enterprise, team string) string {
	if enterprise != "" && team != "" {
		return enterprise + "/" + team
	}
	if team == "" {
		return enterprise
	}
	return team
}

// UserID is the channel_user_id of a Slack user: the org (Enterprise Grid id, where present;
// else the workspace's team id) and the user id, joined by ':' — e.g. "T0123:U0456". User ids are
// unique within an org, so the same person is the same channel_user_id in every workspace of a
// grid. This is what admins.slack and access.slack.allow list.
func UserID(enterprise, team, user string) string {
	org := enterprise
	if org == "" {
		org = team
	}
	return org + ":" + user
}

// messageEventID is the Inbound.EventID of a message: its channel and ts, which Slack's two
// events for one post (app_mention and message) and every redelivery share.
func messageEventID(channel, ts string) string { return "msg:" + channel + ":" + ts }

// callbackEventID is the Inbound.EventID of an event that is not a message (an assistant
// thread started): Slack's event_id, which every redelivery of the event repeats; without one,
// what the event is about (fallback).
func callbackEventID(cb callback, fallback string) string {
	if cb.EventID != "" {
		return "ev:" + cb.EventID
	}
	return fallback
}

// eventKind says what an event means to intake.
type eventKind int

const (
	kindIgnore      eventKind = iota
	kindMessage               // an Inbound for the router
	kindUninstall             // app_uninstalled / tokens_revoked: stop work for the workspace
	kindAssistant             // assistant_thread_started: offer the suggested prompts in the new thread
	kindAgentOpened           // app_home_opened on the Messages tab: offer them at the top of the DM
)

// eventInbound converts one decoded event. It reports kindIgnore for what the bot deliberately
// does not read: edits and deletions (message_changed, message_deleted), other subtypes
// (joins, topics, bot_message), messages without text or files, and — with RepliesMention —
// unmentioned thread replies; top-level channel messages without a mention come only in their
// app_mention form — and the bot's own posts; what the user views while the AI surface is
// open (assistant_thread_context_changed, app_context_changed), which no run reads; the App
// Home's Home tab. Messages from other bots are handed over with FromBot set: the router
// refuses and counts them.
//
// The AI surfaces: an app on features.assistant_view learns of a new assistant thread from
// assistant_thread_started (kindAssistant, its Conv the thread), whose messages then come as
// message.im replies in it; an app on features.agent_view learns that a user opened its
// conversation from app_home_opened on the Messages tab (kindAgentOpened, its Conv the DM),
// and each top-level message there is a thread of its own (self.agentView).
// https://docs.slack.dev/ai/migrating-to-agent-messaging/
func eventInbound(cb callback, ev innerEvent, me self, now time.Time) (channels.Inbound, eventKind) {
	if ev.Type == "app_mention" || ev.Type == "message" {
		return messageInbound(cb, ev, me, now)
	}
	return appEvent(cb, ev, now)
}

// appEvent converts an event that is not a message: an uninstall, an AI surface opened, or
// one the bot ignores.
func appEvent(cb callback, ev innerEvent, now time.Time) (channels.Inbound, eventKind) {
	switch ev.Type {
	case "app_uninstalled":
		return channels.Inbound{}, kindUninstall
	case "assistant_thread_started":
		at := ev.AssistantThread
		if at.ChannelID == "" || at.ThreadTS == "" {
			return channels.Inbound{}, kindIgnore
		}
		k := conv.Key{Platform: platform, Workspace: workspace(cb.EnterpriseID, cb.TeamID), Chat: at.ChannelID, Thread: at.ThreadTS}
		id := callbackEventID(cb, "assistant:"+at.ChannelID+":"+at.ThreadTS)
		return channels.Inbound{EventID: id, Conv: k, ReceivedAt: now}, kindAssistant
	case "app_home_opened":
		if ev.Tab != "messages" || ev.Channel == "" {
			return channels.Inbound{}, kindIgnore
		}
		k := conv.Key{Platform: platform, Workspace: workspace(cb.EnterpriseID, cb.TeamID), Chat: ev.Channel}
		id := callbackEventID(cb, "home:"+ev.Channel+":"+ev.EventTS)
		return channels.Inbound{EventID: id, Conv: k, ReceivedAt: now}, kindAgentOpened
	case "tokens_revoked":
		if len(ev.Tokens.Bot) > 0 { // user tokens revoked leave the bot working
			return channels.Inbound{}, kindUninstall
		}
	}
	// assistant_thread_context_changed, app_context_changed and the rest.
	return channels.Inbound{}, kindIgnore
}

// messageInbound converts a message or app_mention event (see eventInbound for what it
// ignores).
func messageInbound(cb callback, ev innerEvent, me self, now time.Time) (channels.Inbound, eventKind) {
	switch ev.Subtype {
	case "", "file_share", "thread_broadcast", "me_message", "bot_message":
	default:
		return channels.Inbound{}, kindIgnore
	}
	if ev.Channel == "" || ev.TS == "" {
		return channels.Inbound{}, kindIgnore
	}
	if (me.userID != "" && ev.User == me.userID) || (me.botID != "" && ev.BotID == me.botID) {
		// The bot's own posts come back as message events: nothing to route, not worth a log line.
		return channels.Inbound{}, kindIgnore
	}
	for _, a := range cb.Authorizations {
		if a.IsBot && a.UserID != "" {
			me.userID = a.UserID // the bot's user in this event's workspace (apps installed in many)
			break
		}
	}
	if me.userID != "" && ev.User == me.userID {
		return channels.Inbound{}, kindIgnore
	}
	text, mentioned := stripMention(ev.Text, me.userID)
	files := attachments(ev.Files)
	if strings.TrimSpace(text) == "" && len(files) == 0 {
		return channels.Inbound{}, kindIgnore
	}
	direct := ev.Type == "message" && ev.ChannelType == "im"
	addressed := direct || ev.Type == "app_mention" || mentioned
	if !addressed {
		// A channel message without a mention: only a reply in a thread can concern the bot.
		if ev.ThreadTS == "" || me.threads != RepliesAll || ev.Type != "message" {
			return channels.Inbound{}, kindIgnore
		}
	}
	userTeam := ev.UserTeam
	if userTeam == "" {
		userTeam = ev.Team
	}
	if userTeam == "" {
		userTeam = cb.TeamID
	}
	fromBot := ev.BotID != "" || ev.Subtype == "bot_message"
	return channels.Inbound{
		EventID:      messageEventID(ev.Channel, ev.TS),
		Conv:         messageConv(cb, ev, direct, me),
		Identity:     conv.Identity{Platform: platform, ChannelUserID: userIDOrEmpty(cb.EnterpriseID, userTeam, ev.User)},
		Text:         text,
		AddressesBot: addressed,
		Direct:       direct,
		FromBot:      fromBot,
		MessageID:    ev.TS,
		Files:        files,
		ReceivedAt:   now,
	}, kindMessage
}

// messageConv is a message's conversation: its thread, or a thread rooted at it for a top-level
// mention (self.replyInThread) and a top-level message in an agent's DM (self.agentView), else
// the channel's (or the DM's) top level.
func messageConv(cb callback, ev innerEvent, direct bool, me self) conv.Key {
	k := conv.Key{Platform: platform, Workspace: workspace(cb.EnterpriseID, cb.TeamID), Chat: ev.Channel, Thread: ev.ThreadTS}
	switch {
	case k.Thread != "":
	case !direct && me.replyInThread:
		k.Thread = ev.TS // a top-level mention is answered in a thread rooted at it
	case direct && me.agentView:
		k.Thread = ev.TS // so is a top-level message in an agent's DM: Slack shows it as a thread
	}
	return k
}

func userIDOrEmpty(enterprise, team, user string) string {
	if user == "" {
		return ""
	}
	return UserID(enterprise, team, user)
}

// stripMention removes mentions of the bot (<@U…> or <@U…|name>) from text, and reports whether
// there was one. A leading mention takes the separators after it.
func stripMention(text, botUser string) (string, bool) {
	if botUser == "" || !strings.Contains(text, "<@"+botUser) {
		return text, false
	}
	found := false
	var b strings.Builder
	rest := text
	for {
		i := strings.Index(rest, "<@"+botUser)
		if i < 0 {
			b.WriteString(rest)
			break
		}
		j := strings.IndexByte(rest[i:], '>')
		if j < 0 {
			b.WriteString(rest)
			break
		}
		tag := rest[i+2 : i+j]
		if tag != botUser && !strings.HasPrefix(tag, botUser+"|") {
			b.WriteString(rest[:i+j+1])
			rest = rest[i+j+1:]
			continue
		}
		found = true
		b.WriteString(rest[:i])
		rest = rest[i+j+1:]
	}
	if !found {
		return text, false
	}
	return strings.TrimLeft(strings.TrimSpace(b.String()), ",: "), true
}

// attachments lists a message's files, each with what FetchFile needs: its
// url_private_download (url_private when Slack gives no download URL; none for a file Slack
// hides, such as one past a free workspace's history) and its size.
func attachments(fs []eventFile) []conv.Attachment {
	var out []conv.Attachment
	for _, f := range fs {
		if f.ID == "" {
			continue
		}
		name := f.Name
		if name == "" {
			name = f.ID
		}
		// The URLs hold no secret: fetching them needs the bot token in a header.
		u := f.URLPrivateDownload
		if u == "" {
			u = f.URLPrivate
		}
		out = append(out, conv.Attachment{Name: name, MIME: f.MIME, Size: f.Size, URL: u})
	}
	return out
}
