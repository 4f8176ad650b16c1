package telegramfake

import (
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Drafts as the Bot API documents them (https://core.telegram.org/bots/api#sendmessagedraft,
// Bot API 9.3 and later): sendMessageDraft streams a partial message to a user while it is
// being generated; the draft is an ephemeral preview that lasts about 30 seconds, and the bot
// must finalise it with sendMessage. Its parameters:
//
//   - chat_id (Integer, required): the target private chat — a group, supergroup or channel is
//     refused (400 "TEXTDRAFT_PEER_INVALID", what Telegram answers there);
//   - message_thread_id (Integer, optional): the target message thread (a topic of the private
//     chat);
//   - draft_id (Integer, required): non-zero; changes to drafts with the same id are animated;
//   - text (String): 0–4096 characters after entities parsing (Bot API 9.3 said 1–4096; the
//     current page allows an empty text, shown as "Thinking…");
//   - parse_mode (String, optional) or entities (JSON array of MessageEntity, optional).
//
// It returns True. A draft shows until it is 30 s old or a message arrives in the same chat and
// topic (https://core.telegram.org/api/bots/ai: clients drop a live draft "when receiving a
// normal message within the same chat/bot forum topic"). Error descriptions Telegram does not
// document are the fake's own.

// DraftLifetime is how long a draft shows without another update.
const DraftLifetime = 30 * time.Second

// Draft is one sendMessageDraft call the fake accepted.
type Draft struct {
	ChatID   int64
	ThreadID int
	DraftID  int64
	// Text is the text as sent (HTML source when ParseMode is HTML); Visible what it shows.
	Text      string
	ParseMode string
	Entities  []Entity
	Visible   string
	At        time.Time
	// after is the id of the chat's latest message when the draft was sent: a message with a
	// greater id in the same topic replaces the draft.
	after int
}

// drafts are the drafts the bot streams into private chats (sendMessageDraft), kept with their
// chat in messages.
type drafts struct {
	mu   *sync.Mutex
	msgs *messages
}

func (ds *drafts) sendMessageDraft(p map[string]string) (any, *apiError) {
	cid, aerr := chatID(p)
	if aerr != nil {
		return nil, aerr
	}
	if cid < 0 {
		// Groups, supergroups and channels have negative ids; drafts are for private chats.
		return nil, badRequest("TEXTDRAFT_PEER_INVALID")
	}
	draftID, err := strconv.ParseInt(p["draft_id"], 10, 64)
	if err != nil || draftID == 0 {
		return nil, badRequest("draft_id must be a non-zero integer")
	}
	thread := 0
	if raw := p["message_thread_id"]; raw != "" {
		if thread, err = strconv.Atoi(raw); err != nil {
			return nil, badRequest("message thread not found")
		}
	}
	text, mode := p["text"], p["parse_mode"]
	visible := text
	switch mode {
	case "":
	case "HTML":
		v, err := ParseHTML(text)
		if err != nil {
			return nil, badRequest("can't parse entities: " + err.Error())
		}
		visible = v
	default:
		return nil, badRequest("unsupported parse_mode")
	}
	if utf16Len(visible) > MaxTextLen {
		return nil, badRequest("message is too long")
	}
	var ents []Entity
	if raw := p["entities"]; raw != "" {
		if json.Unmarshal([]byte(raw), &ents) != nil {
			return nil, badRequest("can't parse entities JSON object")
		}
		n := utf16Len(visible)
		for _, e := range ents {
			if e.Type == "" || e.Offset < 0 || e.Length <= 0 || e.Offset+e.Length > n {
				return nil, badRequest("can't parse entities: an entity is beyond the end of the text")
			}
		}
	}
	c := ds.msgs.chatLocked(cid)
	c.drafts = append(c.drafts, Draft{ChatID: cid, ThreadID: thread, DraftID: draftID, Text: text, ParseMode: mode,
		Entities: ents, Visible: visible, At: time.Now(), after: c.nextID})
	return true, nil
}

// Drafts returns every draft the bot sent to chatID, oldest first.
func (ds *drafts) Drafts(chatID int64) []Draft {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if c := ds.msgs.chats[chatID]; c != nil {
		return slices.Clone(c.drafts)
	}
	return nil
}

// ShownDraft returns the draft a user sees in topic threadID of chatID (0: the chat itself)
// now, if any: the latest draft sent there, unless it is older than DraftLifetime or a message
// arrived in that topic after it.
func (ds *drafts) ShownDraft(chatID int64, threadID int) (Draft, bool) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	c := ds.msgs.chats[chatID]
	if c == nil {
		return Draft{}, false
	}
	for i := len(c.drafts) - 1; i >= 0; i-- {
		d := c.drafts[i]
		if d.ThreadID != threadID {
			continue
		}
		if time.Since(d.At) > DraftLifetime {
			return Draft{}, false
		}
		for _, id := range c.order {
			if m := c.msgs[id]; id > d.after && m.ThreadID == threadID {
				return Draft{}, false
			}
		}
		return d, true
	}
	return Draft{}, false
}
