package telegram

import (
	"context"
	"strconv"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/kit"
)

// typer shows "typing…" while a run works (Typing), off the caller's path (kit.TypingSignals);
// where an answer streams by drafts, its signals keep the draft showing too.
type typer struct {
	api     *botAPI
	signals *kit.TypingSignals
	streams *streamer
}

// Typing sends the "typing" chat action (shown for about 5 s) to the conversation's chat and
// topic; where an answer streams by drafts there, it also shows the draft again once the last
// one is about to lapse (refreshDraft).
func (t *typer) Typing(ctx context.Context, to channels.Target) error {
	chat, err := chatID(to.Conv)
	if err != nil {
		return err
	}
	params := tgbotapi.Params{"chat_id": strconv.FormatInt(chat, 10), "action": "typing"}
	if to.Conv.Thread != "" {
		params["message_thread_id"] = to.Conv.Thread
	}
	draft := t.streams.book.openIn(to.Conv)
	// A signal, not a message: sent off the caller's path (the router signals inside an update's
	// hand-over), once while it still shows, in one attempt of at most typingTimeout, never
	// waiting for a 429's retry_after — so a rate-limit storm never holds the intake up.
	t.signals.Signal(to.Conv.String(), func(ctx context.Context) error {
		if draft != nil {
			t.streams.refreshDraft(ctx, draft)
		}
		_, err := t.api.callOnce(ctx, "sendChatAction", params)
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
