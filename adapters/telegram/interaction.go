package telegram

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/switchboard-bot/switchboard/channels"
)

// maxNotice is the longest callback answer text Telegram shows.
const maxNotice = 200

// interactions answers callback queries (the clicks on inline keyboards): the notice the Handler
// gives (RespondInteraction), or none, so that every click's spinner stops.
type interactions struct {
	api      *botAPI
	log      *slog.Logger
	answered sync.Map // callback query id → bool (answered), while its update is being handled
}

// RespondInteraction answers the callback query in.ID with notice (shown to the clicker only,
// cut to 200 characters; empty just stops the spinner). Queries the Handler leaves unanswered are
// answered empty by the adapter when the Handler returns, so every click is answered.
func (a *interactions) RespondInteraction(ctx context.Context, in *channels.Interaction, notice string) error {
	if in == nil || in.ID == "" {
		return errors.New("telegram: respond: no callback query id")
	}
	if r := []rune(notice); len(r) > maxNotice {
		notice = string(r[:maxNotice-1]) + "…"
	}
	a.answered.CompareAndSwap(in.ID, false, true) // only for a query being dispatched now
	return a.answer(ctx, in.ID, notice)
}

// handling marks query id as being handed over; done, called when the Handler returned, answers
// it with no notice unless RespondInteraction answered it meanwhile.
func (a *interactions) handling(ctx context.Context, id string) (done func()) {
	a.answered.Store(id, false)
	return func() {
		if v, _ := a.answered.LoadAndDelete(id); v == false {
			a.answerQuietly(ctx, id)
		}
	}
}

func (a *interactions) answer(ctx context.Context, id, text string) error {
	params := tgbotapi.Params{"callback_query_id": id}
	if text != "" {
		params["text"] = text
	}
	_, err := a.api.callWaiting(ctx, "answerCallbackQuery", params, true)
	return err
}

func (a *interactions) answerQuietly(ctx context.Context, queryID string) {
	ctx = context.WithoutCancel(ctx)
	if err := a.answer(ctx, queryID, ""); err != nil {
		a.log.Debug("telegram: answering a callback query failed", "err", err)
	}
}
