package telegram

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/conv"
)

// update is a Bot API Update as this adapter reads it: the library's types plus the fields its
// 2021 release lacks (forum topics).
type update struct {
	UpdateID      int64     `json:"update_id"`
	Message       *message  `json:"message,omitempty"`
	CallbackQuery *callback `json:"callback_query,omitempty"`
}

// message extends tgbotapi.Message with message_thread_id and is_topic_message; the outer
// reply_to_message shadows the embedded one so replies carry them too.
type message struct {
	tgbotapi.Message
	MessageThreadID int      `json:"message_thread_id,omitempty"`
	IsTopicMessage  bool     `json:"is_topic_message,omitempty"`
	ReplyToMessage  *message `json:"reply_to_message,omitempty"`
}

// callback extends tgbotapi.CallbackQuery so its message carries the topic fields.
type callback struct {
	tgbotapi.CallbackQuery
	Message *message `json:"message,omitempty"`
}

// errMalformedUpdate is wrapped by decodeUpdate's errors.
var errMalformedUpdate = errors.New("telegram: malformed update")

// maxUpdateBytes bounds an update body (webhook) — Telegram's are far smaller.
const maxUpdateBytes = 1 << 20

// decodeUpdate parses one Update. It fails on invalid JSON, a missing or non-positive
// update_id, and a message or callback without the parts every one has (chat, sender, id).
func decodeUpdate(data []byte) (update, error) {
	if len(data) > maxUpdateBytes {
		return update{}, fmt.Errorf("%w: %d bytes", errMalformedUpdate, len(data))
	}
	var u update
	if err := json.Unmarshal(data, &u); err != nil {
		return u, fmt.Errorf("%w: %w", errMalformedUpdate, err)
	}
	if u.UpdateID <= 0 {
		return u, fmt.Errorf("%w: no update_id", errMalformedUpdate)
	}
	if m := u.Message; m != nil && (m.Chat == nil || m.MessageID <= 0) {
		return u, fmt.Errorf("%w: message without chat or id", errMalformedUpdate)
	}
	if cq := u.CallbackQuery; cq != nil && (cq.ID == "" || cq.From == nil) {
		return u, fmt.Errorf("%w: callback query without id or sender", errMalformedUpdate)
	}
	return u, nil
}

// botIdentity is what inbound conversion needs to know about the bot.
type botIdentity struct {
	id       int64
	username string // without '@'
}

// eventID is the Inbound.EventID of an update.
func eventID(id int64) string { return "telegram:update:" + strconv.FormatInt(id, 10) }

// toInbound converts an update to an Inbound. ok is false for updates the bot ignores: kinds it
// does not handle (edits, channel posts, …), messages without text or caption, callbacks
// without a message, and commands addressed to another bot.
func toInbound(u update, bot botIdentity, now time.Time) (in channels.Inbound, ok bool) {
	switch {
	case u.Message != nil:
		return messageInbound(u, bot, now)
	case u.CallbackQuery != nil:
		return callbackInbound(u, now)
	}
	return in, false
}

func convKey(chat *tgbotapi.Chat, m *message) conv.Key {
	k := conv.Key{Platform: platform, Chat: strconv.FormatInt(chat.ID, 10)}
	// message_thread_id is also set on reply threads of ordinary supergroups; only a topic is
	// its own conversation: of a forum (is_topic_message), or of a private chat, which has no
	// reply threads, so that any message_thread_id there names a topic (Bot API 9.3).
	if m != nil && m.MessageThreadID != 0 && (m.IsTopicMessage || chat.Type == "private") {
		k.Thread = strconv.Itoa(m.MessageThreadID)
	}
	return k
}

func identity(u *tgbotapi.User) conv.Identity {
	if u == nil {
		return conv.Identity{Platform: platform}
	}
	name := strings.TrimSpace(u.FirstName + " " + u.LastName)
	if name == "" {
		name = u.UserName
	}
	return conv.Identity{Platform: platform, ChannelUserID: strconv.FormatInt(u.ID, 10), DisplayName: name}
}

func messageInbound(u update, bot botIdentity, now time.Time) (channels.Inbound, bool) {
	m := u.Message
	text, ents := m.Text, m.Entities
	if text == "" {
		text, ents = m.Caption, m.CaptionEntities
	}
	files := attachments(m)
	if text == "" && len(files) == 0 {
		return channels.Inbound{}, false
	}
	in := channels.Inbound{
		EventID:    eventID(u.UpdateID),
		Conv:       convKey(m.Chat, m),
		Identity:   identity(m.From),
		MessageID:  strconv.Itoa(m.MessageID),
		Files:      files,
		Direct:     m.Chat.Type == "private",
		FromBot:    m.From != nil && m.From.IsBot,
		ReceivedAt: now,
	}
	if r := m.ReplyToMessage; r != nil && !(m.IsTopicMessage && r.MessageID == m.MessageThreadID) {
		// In a forum topic an unreplied message "replies" to the topic's creation message.
		in.ReplyTo = strconv.Itoa(r.MessageID)
		if r.From != nil && r.From.ID == bot.id {
			in.AddressesBot = true
		}
	}
	u16 := utf16.Encode([]rune(text))
	var cut [][2]int // UTF-16 ranges to remove from the text
	for _, e := range ents {
		if e.Offset < 0 || e.Length <= 0 || e.Offset+e.Length > len(u16) {
			continue
		}
		word := string(utf16.Decode(u16[e.Offset : e.Offset+e.Length]))
		switch e.Type {
		case "mention":
			if strings.EqualFold(strings.TrimPrefix(word, "@"), bot.username) {
				in.AddressesBot = true
				if e.Offset == 0 {
					cut = append(cut, [2]int{0, e.Length})
				}
			}
		case "text_mention":
			if e.User != nil && e.User.ID == bot.id {
				in.AddressesBot = true
			}
		case "bot_command":
			if e.Offset != 0 {
				continue
			}
			_, target, addressed := strings.Cut(word, "@")
			if addressed && !strings.EqualFold(target, bot.username) {
				return channels.Inbound{}, false // a command for another bot
			}
			// A bare command in a group goes to every bot there (privacy mode lets it through), so
			// it counts as addressed to this one too.
			in.AddressesBot = true
			if addressed {
				at := len(utf16.Encode([]rune(word))) - len(target) - 1
				cut = append(cut, [2]int{at, e.Length})
			}
		}
	}
	if len(cut) > 0 {
		text = removeRanges(u16, cut)
	}
	in.Text = text
	if in.Direct {
		in.AddressesBot = true
	}
	return in, true
}

// removeRanges drops the UTF-16 ranges from s (ranges sorted by start, non-overlapping) and
// trims the leading space a removed leading mention leaves.
func removeRanges(u16 []uint16, cut [][2]int) string {
	out := make([]uint16, 0, len(u16))
	pos := 0
	for _, r := range cut {
		if r[0] < pos {
			continue
		}
		out = append(out, u16[pos:r[0]]...)
		pos = r[1]
	}
	out = append(out, u16[pos:]...)
	s := string(utf16.Decode(out))
	if len(cut) > 0 && cut[0][0] == 0 {
		s = strings.TrimLeft(s, " ,:")
	}
	return s
}

// attachments lists the files of a message, each named by fileRef: a document, the largest
// size of a photo, a voice note, an audio file, a video and a video note. A sticker is a
// reaction, not something to read: it is left out. A file without a name of its own is named
// after its kind, with the extension of its type.
func attachments(m *message) []conv.Attachment {
	var out []conv.Attachment
	add := func(id, name, mimeType string, size int) {
		if id != "" {
			out = append(out, conv.Attachment{Name: name, MIME: mimeType, Size: int64(size), URL: fileRef(id)})
		}
	}
	if d := m.Document; d != nil {
		add(d.FileID, orDefault(d.FileName, "document"), d.MimeType, d.FileSize)
	}
	if n := len(m.Photo); n > 0 {
		p := m.Photo[n-1] // the largest size comes last
		add(p.FileID, "photo.jpg", "image/jpeg", p.FileSize)
	}
	if v := m.Voice; v != nil {
		mimeType := orDefault(v.MimeType, "audio/ogg") // voice notes are OGG/Opus
		add(v.FileID, "voice"+extension(mimeType), mimeType, v.FileSize)
	}
	if a := m.Audio; a != nil {
		mimeType := orDefault(a.MimeType, "audio/mpeg")
		add(a.FileID, orDefault(a.FileName, "audio"+extension(mimeType)), mimeType, a.FileSize)
	}
	if v := m.Video; v != nil {
		mimeType := orDefault(v.MimeType, "video/mp4")
		add(v.FileID, orDefault(v.FileName, "video"+extension(mimeType)), mimeType, v.FileSize)
	}
	if v := m.VideoNote; v != nil {
		add(v.FileID, "video_note.mp4", "video/mp4", v.FileSize) // video notes are MPEG4
	}
	return out
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// extension is the usual file extension of the media types Telegram sends, "" for others.
func extension(mimeType string) string {
	switch mimeType {
	case "audio/ogg":
		return ".ogg"
	case "audio/mpeg":
		return ".mp3"
	case "audio/mp4", "audio/x-m4a", "audio/m4a":
		return ".m4a"
	case "audio/flac", "audio/x-flac":
		return ".flac"
	case "audio/wav", "audio/x-wav":
		return ".wav"
	case "video/mp4":
		return ".mp4"
	case "video/webm":
		return ".webm"
	case "video/quicktime":
		return ".mov"
	}
	return ""
}

// fileRefPrefix starts a fileRef.
const fileRefPrefix = "telegram-file:"

// fileRef names a Telegram file without its download URL, which holds the bot token: the URL
// is made with getFile when the bytes are needed (FetchFile).
func fileRef(id string) string { return fileRefPrefix + id }

func callbackInbound(u update, now time.Time) (channels.Inbound, bool) {
	cq := u.CallbackQuery
	if cq.Message == nil || cq.Message.Chat == nil {
		return channels.Inbound{}, false // inline-mode messages: not something this bot sends
	}
	conv := convKey(cq.Message.Chat, cq.Message)
	msgID := strconv.Itoa(cq.Message.MessageID)
	return channels.Inbound{
		EventID:      eventID(u.UpdateID),
		Conv:         conv,
		Identity:     identity(cq.From),
		AddressesBot: true,
		Direct:       cq.Message.Chat.Type == "private",
		FromBot:      cq.From.IsBot,
		MessageID:    msgID,
		Interaction: &channels.Interaction{
			ID:      cq.ID,
			Data:    cq.Data,
			Message: channels.MessageRef{Conv: conv, IDs: []string{msgID}},
		},
		ReceivedAt: now,
	}, true
}
