package telegram

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/switchboard-bot/switchboard/channels/kit"
)

// SecretHeader is the header Telegram puts the webhook secret_token in.
const SecretHeader = "X-Telegram-Bot-Api-Secret-Token"

// webhook is webhook mode's intake: the webhook's registration at Start, and the handler of its
// deliveries, which hands each update over in its conversation's turn (gate).
type webhook struct {
	cfg        *Config
	api        *botAPI
	clock      *kit.Clock
	life       *kit.Lifecycle
	workers    *kit.Workers // counts the deliveries being handed over, which StopIntake waits for
	dispatcher *dispatcher
	gate       *convGate
}

// register registers the webhook with its secret (setWebhook); the library's WebhookConfig has
// no secret_token, so the parameters are built here.
func (wh *webhook) register(ctx context.Context) error {
	params := tgbotapi.Params{
		"url":             wh.cfg.WebhookURL,
		"secret_token":    wh.cfg.WebhookSecret,
		"allowed_updates": allowedUpdates,
	}
	if _, err := wh.api.callWaiting(ctx, "setWebhook", params, true); err != nil {
		return fmt.Errorf("telegram: setWebhook: %w", err)
	}
	return nil
}

// WebhookHandler is the http.Handler for webhook deliveries; mount it at the path of
// Config.WebhookURL on the shared listener. It answers 405 to anything but POST, 401 unless the
// X-Telegram-Bot-Api-Secret-Token header equals the secret (compared in constant time; logged
// at Debug only, the listener counts the 401s), 503 before Start or once the intake stopped
// (StopIntake, Stop, the end of Start's ctx; StopIntake waits for the deliveries it did not
// refuse to be handed over), 408 when the body does not arrive before the connection's read
// deadline (set by the listener), 400 when it cannot be read otherwise, 500 when the Handler
// fails or when an earlier update of the same conversation failed and was not redelivered yet
// (Telegram then redelivers), and 200 once the update is handed over (or was already, or is
// ignored, or is malformed — a body over 1 MiB among them, not read past that — logged,
// counted and skipped, so it never holds up the updates behind it). Concurrent deliveries are
// handed over concurrently across conversations and one at a time, in update order, within
// one.
func (wh *webhook) WebhookHandler() http.Handler {
	return http.HandlerFunc(wh.serve)
}

func (wh *webhook) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	got := []byte(r.Header.Get(SecretHeader))
	if wh.cfg.WebhookSecret == "" || subtle.ConstantTimeCompare(got, []byte(wh.cfg.WebhookSecret)) != 1 {
		// Debug, not Warn: anyone can send these, and a line each would let them fill the log.
		// The listener counts the 401s and logs them at a bounded rate.
		wh.cfg.Logger.Debug("telegram: webhook delivery with a wrong secret refused", "remote", r.RemoteAddr)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	if h, _ := wh.dispatcher.State(); h == nil || wh.life.Stopped() {
		http.Error(w, "not receiving", http.StatusServiceUnavailable)
		return
	}
	body, err := kit.ReadBody(w, r, maxUpdateBytes)
	if errors.Is(err, kit.ErrBodyTooLarge) {
		// Telegram sent it (the secret matched), and would redeliver it for as long as it keeps
		// trying: acknowledged unread and skipped as malformed, like any update past the bound.
		w.Header().Set("Connection", "close") // the rest of the body is not read
		wh.dispatcher.skipMalformed(0, 0, int(max(r.ContentLength, maxUpdateBytes+1)), fmt.Errorf("%w: %w", errMalformedUpdate, err))
		w.WriteHeader(http.StatusOK)
		return
	}
	if err != nil {
		wh.cfg.Logger.Debug("telegram: refused a webhook body", "remote", r.RemoteAddr, "err", err)
		kit.RefuseBody(w, err)
		return
	}
	u, err := decodeUpdate(body)
	if err != nil {
		// Acknowledged, not refused: Telegram would redeliver it for as long as it keeps trying,
		// holding up the updates behind it, and it would be as malformed every time.
		wh.dispatcher.skipMalformed(readUpdateID(body), 0, len(body), err)
		w.WriteHeader(http.StatusOK)
		return
	}
	if wh.dispatcher.seen.has(u.UpdateID) {
		w.WriteHeader(http.StatusOK) // a redelivery of an update already handed over
		return
	}
	// Held under the lock StopIntake takes first: no delivery joins its wait once it began, and
	// one that comes after it is refused, so that Telegram delivers it again.
	release, ok := wh.workers.Hold()
	if !ok {
		http.Error(w, "not receiving", http.StatusServiceUnavailable)
		return
	}
	err = wh.dispatchInOrder(r.Context(), u)
	release()
	if err != nil {
		if errors.Is(err, errHeldBack) {
			wh.cfg.Logger.Debug("telegram: webhook update held back behind a failed one; Telegram will redeliver", "update_id", u.UpdateID)
		} else {
			wh.cfg.Logger.Warn("telegram: handler refused a webhook update; Telegram will redeliver", "update_id", u.UpdateID, "err", err)
		}
		http.Error(w, "try again", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// dispatchInOrder dispatches a webhook update in its conversation's turn (see convGate), so
// concurrent deliveries reach the Handler one at a time per conversation, in update order.
func (wh *webhook) dispatchInOrder(ctx context.Context, u update) error {
	k := orderOf(u)
	if k.solo != 0 {
		return wh.dispatcher.dispatch(ctx, u)
	}
	if err := wh.gate.enter(ctx, k, u.UpdateID, wh.clock.Now); err != nil {
		return err
	}
	err := wh.dispatcher.dispatch(ctx, u)
	wh.gate.leave(k, u.UpdateID, err == nil, wh.clock.Now)
	return err
}
