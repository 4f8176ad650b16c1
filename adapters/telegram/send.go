package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"strconv"
	"strings"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/render"
)

// MaxText is the longest message text Telegram accepts; Send splits longer messages.
const MaxText = render.TelegramMaxText

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
func (c *Channel) Send(ctx context.Context, to channels.Target, m channels.Message) (channels.MessageRef, error) {
	ref := channels.MessageRef{Conv: to.Conv}
	chat, err := chatID(to.Conv)
	if err != nil {
		return ref, err
	}
	ps, err := c.pages.Pieces(m)
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
		id, err := c.sendPiece(ctx, chat, to.Conv.Thread, replyTo, p, i > 0)
		if err != nil {
			return ref, err
		}
		if i == 0 {
			c.typing.Sent(to.Conv.String()) // Telegram's "typing…" ends with a message
		}
		ref.IDs = append(ref.IDs, id)
	}
	return ref, nil
}

// sendPiece posts one piece; wait says a 429 is waited out here (callWaiting) rather than
// returned (call).
func (c *Channel) sendPiece(ctx context.Context, chat int64, thread, replyTo string, p piece, wait bool) (string, error) {
	if c.cfg.Pacing {
		// The chat's slot first, then the overall one (see pacer).
		if err := c.sleep(ctx, c.pacer.reserve(chat, c.now())); err != nil {
			return "", fmt.Errorf("telegram: send: %w", err)
		}
		if err := c.sleep(ctx, c.pacer.reserveGlobal(c.now())); err != nil {
			return "", fmt.Errorf("telegram: send: %w", err)
		}
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
	call := c.api.call
	if wait {
		call = c.api.callWaiting
	}
	raw, err := call(ctx, "sendMessage", params, false)
	if err != nil && parseEntitiesError(err) {
		c.cfg.Logger.Warn("telegram: HTML refused; sending as plain text", "err", err)
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
func (c *Channel) Edit(ctx context.Context, ref channels.MessageRef, m channels.Message) (channels.MessageRef, error) {
	return c.edit(ctx, ref, m, false)
}

// EditFinal is Edit without the throttle wait: it edits at once and supersedes any progress edit
// still waiting, so the final answer is never dropped or overwritten. The first piece edits
// ref's first message; further pieces edit ref's further messages or are sent as new ones;
// messages of ref beyond the pieces are deleted. "Message is not modified" counts as success;
// a message that no longer exists is channels.ErrMessageGone (delivery then sends anew).
func (c *Channel) EditFinal(ctx context.Context, ref channels.MessageRef, m channels.Message) (channels.MessageRef, error) {
	return c.edit(ctx, ref, m, true)
}

func (c *Channel) edit(ctx context.Context, ref channels.MessageRef, m channels.Message, final bool) (channels.MessageRef, error) {
	chat, err := chatID(ref.Conv)
	if err != nil {
		return ref, err
	}
	if ref.ID() == "" {
		return ref, fmt.Errorf("telegram: edit: %w: empty message ref", channels.ErrMessageGone)
	}
	if isDraftRef(ref.ID()) {
		return c.editDraft(ctx, chat, ref, m, final)
	}
	ps, err := c.pages.Pieces(m)
	if err != nil {
		return ref, err
	}
	ok, err := c.edits.acquire(ctx, editKey{chat: chat, msg: ref.ID()}, final, c.now)
	if err != nil {
		return ref, fmt.Errorf("telegram: edit: %w", err)
	}
	if !ok {
		return ref, nil // superseded by a newer edit of the same message
	}
	out := channels.MessageRef{Conv: ref.Conv}
	for i, p := range ps {
		if i < len(ref.IDs) {
			if err := c.editPiece(ctx, chat, ref.IDs[i], p); err != nil {
				return ref, err
			}
			out.IDs = append(out.IDs, ref.IDs[i])
			continue
		}
		// Edits are safe to make again; a piece posted anew is not (see Send).
		id, err := c.sendPiece(ctx, chat, ref.Conv.Thread, "", p, len(out.IDs) > len(ref.IDs))
		if err != nil {
			return out, err
		}
		out.IDs = append(out.IDs, id)
	}
	for _, id := range ref.IDs[min(len(ps), len(ref.IDs)):] {
		if err := c.deleteOne(ctx, chat, id); err != nil {
			return out, err
		}
	}
	return out, nil
}

func (c *Channel) editPiece(ctx context.Context, chat int64, id string, p piece) error {
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
	_, err := c.api.call(ctx, "editMessageText", params, true)
	if err != nil && parseEntitiesError(err) {
		params["text"] = plainText(p.text)
		delete(params, "parse_mode")
		_, err = c.api.call(ctx, "editMessageText", params, true)
	}
	if errors.Is(err, channels.ErrNotModified) {
		return nil
	}
	return err
}

// Delete deletes every message of ref (for a draft's ref, the messages it posted, see
// stream.go). A message already gone counts as deleted.
func (c *Channel) Delete(ctx context.Context, ref channels.MessageRef) error {
	chat, err := chatID(ref.Conv)
	if err != nil {
		return err
	}
	if isDraftRef(ref.ID()) {
		return c.deleteDraft(ctx, chat, ref)
	}
	for _, id := range ref.IDs {
		if err := c.deleteOne(ctx, chat, id); err != nil {
			return err
		}
	}
	return nil
}

func (c *Channel) deleteOne(ctx context.Context, chat int64, id string) error {
	c.edits.forget(editKey{chat: chat, msg: id})
	_, err := c.api.call(ctx, "deleteMessage", tgbotapi.Params{"chat_id": strconv.FormatInt(chat, 10), "message_id": id}, true)
	if errors.Is(err, channels.ErrMessageGone) {
		return nil
	}
	return err
}

// Typing sends the "typing" chat action (shown for about 5 s) to the conversation's chat and
// topic; where an answer streams by drafts there, it also shows the draft again once the last
// one is about to lapse (refreshDraft).
func (c *Channel) Typing(ctx context.Context, to channels.Target) error {
	chat, err := chatID(to.Conv)
	if err != nil {
		return err
	}
	params := tgbotapi.Params{"chat_id": strconv.FormatInt(chat, 10), "action": "typing"}
	if to.Conv.Thread != "" {
		params["message_thread_id"] = to.Conv.Thread
	}
	draft := c.drafts.openIn(to.Conv)
	// A signal, not a message: sent off the caller's path (the router signals inside an update's
	// hand-over), once while it still shows, in one attempt of at most typingTimeout, never
	// waiting for a 429's retry_after — so a rate-limit storm never holds the intake up.
	c.typing.Signal(to.Conv.String(), func(ctx context.Context) error {
		if draft != nil {
			c.refreshDraft(ctx, draft)
		}
		_, err := c.api.callOnce(ctx, "sendChatAction", params)
		return err
	})
	return nil
}

// typingTimeout bounds one typing signal; typingLasts is a little less than the 5 s Telegram
// shows one.
const (
	typingTimeout = 2 * time.Second
	typingLasts   = 4 * time.Second
)

// maxNotice is the longest callback answer text Telegram shows.
const maxNotice = 200

// RespondInteraction answers the callback query in.ID with notice (shown to the clicker only,
// cut to 200 characters; empty just stops the spinner). Queries the Handler leaves unanswered are
// answered empty by the adapter when the Handler returns, so every click is answered.
func (c *Channel) RespondInteraction(ctx context.Context, in *channels.Interaction, notice string) error {
	if in == nil || in.ID == "" {
		return errors.New("telegram: respond: no callback query id")
	}
	if r := []rune(notice); len(r) > maxNotice {
		notice = string(r[:maxNotice-1]) + "…"
	}
	c.answered.CompareAndSwap(in.ID, false, true) // only for a query being dispatched now
	return c.answer(ctx, in.ID, notice)
}

func (c *Channel) answer(ctx context.Context, id, text string) error {
	params := tgbotapi.Params{"callback_query_id": id}
	if text != "" {
		params["text"] = text
	}
	_, err := c.api.callWaiting(ctx, "answerCallbackQuery", params, true)
	return err
}

// Bounds on retrying a command registration in the background: the first retry waits
// regRetryMin (or a 429's retry_after, when longer), each later one twice the one before, up
// to regRetryMax. A retry is one getMyCommands and at most one setMyCommands.
const (
	regRetryMin = 2 * time.Second
	regRetryMax = 5 * time.Minute
)

// RegisterCommands sets the bot's command menu to cmds (admin-only commands are left out of the
// menu everyone sees), calling setMyCommands only when the list differs from getMyCommands.
// Names are lowercased and lose a leading '/'.
//
// A registration refused for now — rate limited past the call's own waits, a 5xx, a network
// error — is retried in the background (kit.LaterRetry) until it succeeds or the channel
// stops: RegisterCommands then logs a warning and returns nil. It returns an error when
// retrying cannot help: the channel is not started or has stopped, ctx ended, Telegram refused
// the token or the list itself (another 4xx), or its answer was unreadable. A later call
// replaces a retry still pending.
func (c *Channel) RegisterCommands(ctx context.Context, cmds []channels.CommandSpec) error {
	c.reg.Cancel()
	want := menuCommands(cmds)
	err := c.registerCommands(ctx, want)
	if err == nil || !registrationRetryable(ctx, err) {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// Under c.mu with stopped checked, so the wait group is never added to after StopIntake
	// set stopped and began to wait.
	if c.ctx == nil || c.ctx.Err() != nil || c.life.Stopped() {
		return err
	}
	c.reg.Start(c.ctx, &c.wg, err, registrationRetryable, func(ctx context.Context) error {
		return c.registerCommands(ctx, want)
	})
	return nil
}

// menuCommands is the menu everyone sees for cmds.
func menuCommands(cmds []channels.CommandSpec) []tgbotapi.BotCommand {
	want := make([]tgbotapi.BotCommand, 0, len(cmds))
	for _, s := range cmds {
		if s.AdminOnly {
			continue
		}
		desc := s.Description
		if desc == "" {
			desc = s.Name
		}
		want = append(want, tgbotapi.BotCommand{Command: strings.ToLower(strings.TrimPrefix(s.Name, "/")), Description: desc})
	}
	return want
}

// errUnreadableCommands: getMyCommands answered with something that is not a command list.
var errUnreadableCommands = errors.New("telegram: getMyCommands: unreadable result")

// registerCommands is one registration: getMyCommands, then setMyCommands when they differ.
func (c *Channel) registerCommands(ctx context.Context, want []tgbotapi.BotCommand) error {
	raw, err := c.api.callWaiting(ctx, "getMyCommands", nil, true)
	if err != nil {
		return err
	}
	var have []tgbotapi.BotCommand
	if err := json.Unmarshal(raw, &have); err != nil {
		return fmt.Errorf("%w: %w", errUnreadableCommands, err)
	}
	if equalCommands(have, want) {
		return nil
	}
	b, err := json.Marshal(want)
	if err != nil {
		return fmt.Errorf("telegram: setMyCommands: %w", err)
	}
	_, err = c.api.callWaiting(ctx, "setMyCommands", tgbotapi.Params{"commands": string(b)}, true)
	return err
}

// registrationRetryable tells a registration refused for now (a rate limit past the call's own
// waits, a 5xx, a network error) from one retrying cannot help.
func registrationRetryable(ctx context.Context, err error) bool {
	if ctx.Err() != nil || errors.Is(err, channels.ErrUnauthorized) || errors.Is(err, errUnreadableCommands) {
		return false
	}
	if _, limited := errors.AsType[*channels.RateLimitError](err); limited {
		return true
	}
	if ae, ok := errors.AsType[*APIError](err); ok {
		return ae.Code >= 500
	}
	return true
}

func equalCommands(a, b []tgbotapi.BotCommand) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
