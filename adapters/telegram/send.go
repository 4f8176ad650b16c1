package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"strconv"
	"strings"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/kit"
	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/render"
)

// MaxText is the longest message text Telegram accepts; Send splits longer messages.
const MaxText = render.TelegramMaxText

// sender posts, edits and deletes messages (Send, Edit, EditFinal, Delete) and files (SendFile,
// file.go), paced per chat and overall (Config.Pacing); a ref that names a draft stream goes to
// the streamer (stream.go).
type sender struct {
	cfg     *Config
	api     *botAPI
	clock   *kit.Clock
	pages   kit.Pages[piece] // what Pages rendered, for the Send or Edit that follows
	pacer   *pacer
	edits   *editThrottle
	signals *kit.TypingSignals // a message sent ends the chat's "typing…"
	streams *streamer
}

// piece is one Telegram message of a rendered channels.Message.
type piece struct {
	text string // HTML
	kb   *render.TelegramKeyboard
}

// renderPieces renders m: a card with render.Telegram (chunked, keyboard on the last piece),
// or markdown text converted to Telegram HTML and chunked. An invalid card or one that cannot be
// signed is ErrCardRefused, so delivery falls back to text.
func renderPieces(m channels.Message, key render.Key) ([]piece, error) {
	if m.Card != nil {
		msgs, err := render.Telegram(*m.Card, key)
		if err != nil {
			return nil, fmt.Errorf("telegram: render card: %w: %w", channels.ErrCardRefused, err)
		}
		out := make([]piece, 0, len(msgs))
		for _, msg := range msgs {
			out = append(out, piece{text: msg.Text, kb: msg.ReplyMarkup})
		}
		return out, nil
	}
	chunks := render.Chunk(render.ConvertMarkdown(m.Text, render.DialectTelegram), MaxText, render.DialectTelegram)
	if len(chunks) == 0 {
		return nil, errors.New("telegram: empty message")
	}
	out := make([]piece, len(chunks))
	for i, ch := range chunks {
		out[i] = piece{text: ch}
	}
	return out, nil
}

func chatID(k conv.Key) (int64, error) {
	id, err := strconv.ParseInt(k.Chat, 10, 64)
	if err != nil || id == 0 {
		return 0, fmt.Errorf("telegram: bad chat id %q", k.Chat)
	}
	return id, nil
}

// sentMessage is the part of a sent Message this adapter reads.
type sentMessage struct {
	MessageID int `json:"message_id"`
}

// sentMessageID reads the message_id of the message Telegram answered with (0 when there is
// none or it is unreadable).
func sentMessageID(raw []byte) int {
	var s sentMessage
	if json.Unmarshal(raw, &s) != nil {
		return 0
	}
	return s.MessageID
}

// Send posts m to the conversation: in its forum topic when Conv.Thread is set, as a reply to
// to.ReplyTo (on the first piece; sent anyway if that message is gone), split at 4,096
// characters with the keyboard on the last piece, paced per chat and overall when Config.Pacing
// is on. HTML Telegram refuses to parse is resent as plain text. The ref lists every message
// sent; on error it lists those sent before the error.
func (s *sender) Send(ctx context.Context, to channels.Target, m channels.Message) (channels.MessageRef, error) {
	ref := channels.MessageRef{Conv: to.Conv}
	chat, err := chatID(to.Conv)
	if err != nil {
		return ref, err
	}
	ps, err := s.pages.Pieces(m)
	if err != nil {
		return ref, err
	}
	for i, p := range ps {
		replyTo := ""
		if i == 0 {
			replyTo = to.ReplyTo
		}
		// A 429 of the first piece goes back to delivery, which sends again; one of a later
		// piece is waited out here, as sending again would post the first twice.
		id, err := s.sendPiece(ctx, chat, to.Conv.Thread, replyTo, p, i > 0)
		if err != nil {
			return ref, err
		}
		if i == 0 {
			s.signals.Sent(to.Conv.String()) // Telegram's "typing…" ends with a message
		}
		ref.IDs = append(ref.IDs, id)
	}
	return ref, nil
}

// sendPiece posts one piece; wait says a 429 is waited out here (callWaiting) rather than
// returned (call).
func (s *sender) sendPiece(ctx context.Context, chat int64, thread, replyTo string, p piece, wait bool) (string, error) {
	if err := s.pace(ctx, chat); err != nil {
		return "", fmt.Errorf("telegram: send: %w", err)
	}
	params := tgbotapi.Params{
		"chat_id":              strconv.FormatInt(chat, 10),
		"text":                 p.text,
		"parse_mode":           "HTML",
		"link_preview_options": `{"is_disabled":true}`,
	}
	if thread != "" {
		params["message_thread_id"] = thread
	}
	if replyTo != "" {
		if _, err := strconv.Atoi(replyTo); err == nil {
			params["reply_parameters"] = `{"message_id":` + replyTo + `,"allow_sending_without_reply":true}`
		}
	}
	if err := addKeyboard(params, p.kb); err != nil {
		return "", err
	}
	call := s.api.call
	if wait {
		call = s.api.callWaiting
	}
	raw, err := call(ctx, "sendMessage", params, false)
	if err != nil && parseEntitiesError(err) {
		s.cfg.Logger.Warn("telegram: HTML refused; sending as plain text", "err", err)
		params["text"] = plainText(p.text)
		delete(params, "parse_mode")
		raw, err = call(ctx, "sendMessage", params, false)
	}
	if err != nil {
		return "", err
	}
	id := sentMessageID(raw)
	if id == 0 {
		return "", fmt.Errorf("telegram: sendMessage: unreadable result")
	}
	return strconv.Itoa(id), nil
}

// pace waits, with Config.Pacing on, for chat's send slot first and then the overall one (see
// pacer).
func (s *sender) pace(ctx context.Context, chat int64) error {
	if !s.cfg.Pacing {
		return nil
	}
	if err := s.clock.Sleep(ctx, s.pacer.reserve(chat, s.clock.Now())); err != nil {
		return err
	}
	return s.clock.Sleep(ctx, s.pacer.reserveGlobal(s.clock.Now()))
}

func addKeyboard(params tgbotapi.Params, kb *render.TelegramKeyboard) error {
	if kb == nil || len(kb.InlineKeyboard) == 0 {
		return nil
	}
	b, err := json.Marshal(kb)
	if err != nil {
		return fmt.Errorf("telegram: keyboard: %w", err)
	}
	params["reply_markup"] = string(b)
	return nil
}

// plainText turns Telegram HTML into the text it shows: tags dropped, entities decoded.
func plainText(s string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '<')
		if i < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:i])
		j := strings.IndexByte(s[i:], '>')
		if j < 0 {
			b.WriteString(s[i:])
			break
		}
		s = s[i+j+1:]
	}
	return html.UnescapeString(b.String())
}

// Edit replaces the message ref names with m, throttled per message (at most once a second in
// private chats, every 3 s in groups; the latest edit wins and superseded edits return ref with
// no error). Use EditFinal for the final answer. See EditFinal for how pieces map to messages,
// and stream.go for the ref of a draft (its first edit posts m in the draft's place).
func (s *sender) Edit(ctx context.Context, ref channels.MessageRef, m channels.Message) (channels.MessageRef, error) {
	return s.edit(ctx, ref, m, false)
}

// EditFinal is Edit without the throttle wait: it edits at once and supersedes any progress edit
// still waiting, so the final answer is never dropped or overwritten. The first piece edits
// ref's first message; further pieces edit ref's further messages or are sent as new ones;
// messages of ref beyond the pieces are deleted. "Message is not modified" counts as success;
// a message that no longer exists is channels.ErrMessageGone (delivery then sends anew).
func (s *sender) EditFinal(ctx context.Context, ref channels.MessageRef, m channels.Message) (channels.MessageRef, error) {
	return s.edit(ctx, ref, m, true)
}

func (s *sender) edit(ctx context.Context, ref channels.MessageRef, m channels.Message, final bool) (channels.MessageRef, error) {
	chat, err := chatID(ref.Conv)
	if err != nil {
		return ref, err
	}
	if ref.ID() == "" {
		return ref, fmt.Errorf("telegram: edit: %w: empty message ref", channels.ErrMessageGone)
	}
	if isDraftRef(ref.ID()) {
		return s.streams.editDraft(ctx, chat, ref, m, final)
	}
	ps, err := s.pages.Pieces(m)
	if err != nil {
		return ref, err
	}
	ok, err := s.edits.acquire(ctx, editKey{chat: chat, msg: ref.ID()}, final, s.clock.Now)
	if err != nil {
		return ref, fmt.Errorf("telegram: edit: %w", err)
	}
	if !ok {
		return ref, nil // superseded by a newer edit of the same message
	}
	out := channels.MessageRef{Conv: ref.Conv}
	for i, p := range ps {
		if i < len(ref.IDs) {
			if err := s.editPiece(ctx, chat, ref.IDs[i], p); err != nil {
				return ref, err
			}
			out.IDs = append(out.IDs, ref.IDs[i])
			continue
		}
		// Edits are safe to make again; a piece posted anew is not (see Send).
		id, err := s.sendPiece(ctx, chat, ref.Conv.Thread, "", p, len(out.IDs) > len(ref.IDs))
		if err != nil {
			return out, err
		}
		out.IDs = append(out.IDs, id)
	}
	for _, id := range ref.IDs[min(len(ps), len(ref.IDs)):] {
		if err := s.deleteOne(ctx, chat, id); err != nil {
			return out, err
		}
	}
	return out, nil
}

func (s *sender) editPiece(ctx context.Context, chat int64, id string, p piece) error {
	params := tgbotapi.Params{
		"chat_id":              strconv.FormatInt(chat, 10),
		"message_id":           id,
		"text":                 p.text,
		"parse_mode":           "HTML",
		"link_preview_options": `{"is_disabled":true}`,
	}
	if err := addKeyboard(params, p.kb); err != nil {
		return err
	}
	_, err := s.api.call(ctx, "editMessageText", params, true)
	if err != nil && parseEntitiesError(err) {
		params["text"] = plainText(p.text)
		delete(params, "parse_mode")
		_, err = s.api.call(ctx, "editMessageText", params, true)
	}
	if errors.Is(err, channels.ErrNotModified) {
		return nil
	}
	return err
}

// Delete deletes every message of ref (for a draft's ref, the messages it posted, see
// stream.go). A message already gone counts as deleted.
func (s *sender) Delete(ctx context.Context, ref channels.MessageRef) error {
	chat, err := chatID(ref.Conv)
	if err != nil {
		return err
	}
	if isDraftRef(ref.ID()) {
		return s.streams.deleteDraft(ctx, chat, ref)
	}
	for _, id := range ref.IDs {
		if err := s.deleteOne(ctx, chat, id); err != nil {
			return err
		}
	}
	return nil
}

func (s *sender) deleteOne(ctx context.Context, chat int64, id string) error {
	s.edits.forget(editKey{chat: chat, msg: id})
	_, err := s.api.call(ctx, "deleteMessage", tgbotapi.Params{"chat_id": strconv.FormatInt(chat, 10), "message_id": id}, true)
	if errors.Is(err, channels.ErrMessageGone) {
		return nil
	}
	return err
}
