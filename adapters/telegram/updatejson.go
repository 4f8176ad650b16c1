package telegram

import (
	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/switchboard-bot/switchboard/internal/jsonwire"
)

// The keys of the common update — a text message in a chat, with its sender, entities and forum
// topic — that readUpdate takes. Any other key gives up (Strict), leaving the update to
// encoding/json: each names a field encoding/json would fill, or one it would skip.
var (
	updateKeys  = jsonwire.Keys{Names: []string{"update_id", "message"}, Strict: true}
	messageKeys = jsonwire.Keys{Names: []string{"message_id", "from", "chat", "date", "text", "entities",
		"message_thread_id", "is_topic_message"}, Strict: true}
	userKeys   = jsonwire.Keys{Names: []string{"id", "is_bot", "first_name", "last_name", "username", "language_code"}, Strict: true}
	chatKeys   = jsonwire.Keys{Names: []string{"id", "type", "title", "username", "first_name", "last_name"}, Strict: true}
	entityKeys = jsonwire.Keys{Names: []string{"type", "offset", "length", "url", "language"}, Strict: true}
)

// unmarshalUpdate reads an update as json.Unmarshal does: the common text message in one pass
// (readUpdate), anything else by encoding/json. Each update of a batch is decoded once.
func unmarshalUpdate(data []byte) (update, error) {
	return jsonwire.Decode(data, readUpdate)
}

func readUpdate(r *jsonwire.Reader, u *update) {
	r.Object(&updateKeys, func(k int) {
		switch k {
		case 0:
			u.UpdateID = int64(r.Int())
		case 1:
			u.Message = &message{}
			readMessage(r, u.Message)
		}
	})
}

func readMessage(r *jsonwire.Reader, m *message) {
	r.Object(&messageKeys, func(k int) {
		switch k {
		case 0:
			m.MessageID = r.Int()
		case 1:
			m.From = &tgbotapi.User{}
			readUser(r, m.From)
		case 2:
			m.Chat = &tgbotapi.Chat{}
			r.Object(&chatKeys, func(k int) {
				switch k {
				case 0:
					m.Chat.ID = int64(r.Int())
				case 1:
					m.Chat.Type = r.Str()
				case 2:
					m.Chat.Title = r.Str()
				case 3:
					m.Chat.UserName = r.Str()
				case 4:
					m.Chat.FirstName = r.Str()
				case 5:
					m.Chat.LastName = r.Str()
				}
			})
		case 3:
			m.Date = r.Int()
		case 4:
			m.Text = r.Str()
		case 5:
			m.Entities = []tgbotapi.MessageEntity{} // as encoding/json makes of []
			r.Array(func() {
				var e tgbotapi.MessageEntity
				r.Object(&entityKeys, func(k int) {
					switch k {
					case 0:
						e.Type = r.Str()
					case 1:
						e.Offset = r.Int()
					case 2:
						e.Length = r.Int()
					case 3:
						e.URL = r.Str()
					case 4:
						e.Language = r.Str()
					}
				})
				m.Entities = append(m.Entities, e)
			})
		case 6:
			m.MessageThreadID = r.Int()
		case 7:
			m.IsTopicMessage = r.Bool()
		}
	})
}

func readUser(r *jsonwire.Reader, u *tgbotapi.User) {
	r.Object(&userKeys, func(k int) {
		switch k {
		case 0:
			u.ID = int64(r.Int())
		case 1:
			u.IsBot = r.Bool()
		case 2:
			u.FirstName = r.Str()
		case 3:
			u.LastName = r.Str()
		case 4:
			u.UserName = r.Str()
		case 5:
			u.LanguageCode = r.Str()
		}
	})
}
