package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/kit"
	"github.com/switchboard-bot/switchboard/core/conv"
)

// APIError is an error answer from the Bot API. It unwraps to the sentinel it means
// (channels.ErrNotModified, channels.ErrMessageGone, channels.ErrCardRefused,
// channels.ErrUnreachable, channels.ErrUnauthorized, ErrConflict, conv.ErrFileTooLarge) when
// there is one, so callers classify it with errors.Is, and a 429 to a *channels.RateLimitError
// of its retry_after (at least a second) for errors.As. It never holds the bot token.
type APIError struct {
	Method      string
	Code        int
	Description string
	// RetryAfter is parameters.retry_after of a 429 answer.
	RetryAfter time.Duration
	kind       error
}

func (e *APIError) Error() string {
	return fmt.Sprintf("telegram: %s: %d %s", e.Method, e.Code, e.Description)
}

// Unwrap returns the channels sentinel (or rate limit) the answer means, or nil.
func (e *APIError) Unwrap() error { return e.kind }

// ErrConflict is wrapped by the 409 Conflict answers of getUpdates: another process polls the
// same bot (Telegram ends one of two concurrent getUpdates), or a webhook is set.
var ErrConflict = errors.New("telegram: another receiver holds this bot's updates")

// classify maps a Bot API error answer to a channels sentinel. The Bot API gives no error codes
// finer than the HTTP status, so its description is the only signal; this is the one place that
// reads it.
func classify(code int, desc string) error {
	if code == http.StatusUnauthorized {
		// The token was revoked or replaced (@BotFather's /revoke) while the bot ran: the bot's
		// state, for the operator to fix, not the conversation's (ErrUnreachable).
		return channels.ErrUnauthorized
	}
	if code == http.StatusConflict {
		// "Conflict: terminated by other getUpdates request; …", "Conflict: can't use
		// getUpdates method while webhook is active; …".
		return ErrConflict
	}
	if code == http.StatusForbidden {
		// "Forbidden: bot was blocked by the user", "… bot was kicked from the group chat",
		// "… user is deactivated", "… bot can't initiate conversation with a user", …
		return channels.ErrUnreachable
	}
	if code != http.StatusBadRequest {
		return nil
	}
	d := strings.ToLower(desc)
	switch {
	case strings.Contains(d, "chat not found"), strings.Contains(d, "have no rights to send"),
		strings.Contains(d, "not enough rights to send"), strings.Contains(d, "group chat was upgraded"),
		strings.Contains(d, "topic_closed"), strings.Contains(d, "message thread not found"):
		return channels.ErrUnreachable
	case strings.Contains(d, "message is not modified"):
		return channels.ErrNotModified
	case strings.Contains(d, "message to edit not found"), strings.Contains(d, "message to delete not found"),
		strings.Contains(d, "message can't be edited"), strings.Contains(d, "message can't be deleted"):
		return channels.ErrMessageGone
	case strings.Contains(d, "can't parse entities"), strings.Contains(d, "button_data_invalid"),
		strings.Contains(d, "message is too long"), strings.Contains(d, "reply markup"):
		return channels.ErrCardRefused
	case strings.Contains(d, "file is too big"):
		// getFile of a file over the 20 MB a bot may download.
		return conv.ErrFileTooLarge
	}
	return nil
}

// errParseEntities marks an APIError about the HTML itself (not the keyboard), which a plain
// text retry can fix.
func parseEntitiesError(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && strings.Contains(strings.ToLower(ae.Description), "can't parse entities")
}

// ctxClient is the context bridge the library lacks: it binds every request the library makes
// to ctx, so cancelling ctx (Stop, for the long poll; the caller's ctx, for sends) aborts the
// request in flight.
type ctxClient struct {
	ctx context.Context
	c   *http.Client
}

func (d ctxClient) Do(req *http.Request) (*http.Response, error) {
	return d.c.Do(req.WithContext(d.ctx))
}

// redacted stands in for the token in Config's text; the adapter's errors and log lines pass
// through a kit.Redactor of the token (the HTTP layer's *url.Error carries the request URL, which
// holds it).
const redacted = kit.Redacted

// botAPI is the adapter's bridge to the Bot API: one call (callOnce, post, result), its error
// (apiError, redacted), retries of server errors (retrying) and its rate limits (kit.RetryAfter:
// see call), and whether Telegram refuses the token now. Safe for concurrent use.
type botAPI struct {
	cfg    *Config
	http   *http.Client
	redact *kit.Redactor
	limits *kit.RetryAfter
	// sleep is the channel's (tests replace it).
	sleep func(ctx context.Context, d time.Duration) error
	// bot is the library's client the uploads go through, each with a copy of its own. It is
	// set in New, before any call can read it, and never changed: a SendFile before or while
	// Start runs reads it as safely as one after (Start's getMe makes a client of its own).
	bot *tgbotapi.BotAPI
	// refused: the last answer to a call was 401 — the token was revoked or replaced.
	refused atomic.Bool
}

// tokenRefused records a 401 answer to method: the token was revoked or replaced while the bot
// ran (a wrong one is refused at Start). The first of a spell is logged, saying what to do;
// Ready reports it until a call succeeds again.
func (a *botAPI) tokenRefused(method string) {
	if a.refused.Swap(true) {
		return
	}
	a.cfg.Logger.Error("telegram: Telegram refused the bot token (401 Unauthorized): it was revoked or replaced in @BotFather; "+
		"set telegram.token (BOT_TELEGRAM__TOKEN) to the bot's current token and restart — until then no message is received or answered",
		"method", method)
}

// tokenAccepted ends a spell of refusals: a call succeeded.
func (a *botAPI) tokenAccepted() {
	if a.refused.Load() && a.refused.Swap(false) {
		a.cfg.Logger.Info("telegram: Telegram accepts the bot token again")
	}
}

// callOnce makes one Bot API call, bound to ctx.
func (a *botAPI) callOnce(ctx context.Context, method string, params tgbotapi.Params) (json.RawMessage, error) {
	status, body, err := a.post(ctx, method, params)
	if err != nil {
		return nil, err
	}
	res, err := a.result(ctx, method, status, body)
	if err == nil {
		a.tokenAccepted()
	}
	return res, err
}

// post sends params to method as a form, as the library does, and reads the answer's body
// whole (readAnswer).
func (a *botAPI) post(ctx context.Context, method string, params tgbotapi.Params) (status int, body []byte, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.cfg.APIURL+"/bot"+a.cfg.Token+"/"+method, strings.NewReader(encodeParams(params)))
	if err != nil {
		return 0, nil, a.apiError(ctx, method, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := a.http.Do(req)
	if err != nil {
		return 0, nil, a.apiError(ctx, method, err)
	}
	defer resp.Body.Close()
	if body, err = readAnswer(resp); err != nil {
		return 0, nil, a.apiError(ctx, method, err)
	}
	return resp.StatusCode, body, nil
}

// result reads an answer's body with decodeAnswer — one pass, the result not copied (the
// library's json.Decoder read each answer twice and copied it) — and returns its result, or the
// *APIError it is.
func (a *botAPI) result(ctx context.Context, method string, status int, body []byte) (json.RawMessage, error) {
	ans, err := decodeAnswer(body)
	if err != nil {
		return nil, a.apiError(ctx, method, fmt.Errorf("HTTP %d: %w", status, err))
	}
	if !ans.ok {
		te := &tgbotapi.Error{Code: ans.code, Message: ans.description}
		if ans.params != nil {
			te.ResponseParameters = *ans.params
		}
		return nil, a.apiError(ctx, method, te)
	}
	return ans.result, nil
}

// readAnswer reads an answer's body whole, at most maxAnswerBytes; in one allocation when the
// answer gives its length.
func readAnswer(resp *http.Response) ([]byte, error) {
	if n := resp.ContentLength; n >= 0 && n <= maxAnswerBytes {
		body := make([]byte, n)
		if _, err := io.ReadFull(resp.Body, body); err != nil {
			return nil, err
		}
		return body, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		return nil, err
	}
	if len(body) > maxAnswerBytes {
		return nil, fmt.Errorf("answer over %d bytes", maxAnswerBytes)
	}
	return body, nil
}

// encodeParams is params as a form body, names in order (as url.Values.Encode has them).
func encodeParams(params tgbotapi.Params) string {
	keys := make([]string, 0, len(params))
	size := 0
	for k, v := range params {
		keys = append(keys, k)
		size += len(k) + len(v) + 2
	}
	slices.Sort(keys)
	var b strings.Builder
	b.Grow(size + size/4)
	for i, k := range keys {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(url.QueryEscape(k))
		b.WriteByte('=')
		b.WriteString(url.QueryEscape(params[k]))
	}
	return b.String()
}

// apiError turns a failed call's error into an *APIError (an error answer) or a redacted,
// wrapped transport error.
func (a *botAPI) apiError(ctx context.Context, method string, err error) error {
	var te *tgbotapi.Error
	if errors.As(err, &te) {
		ae := &APIError{Method: method, Code: te.Code, Description: a.redact.String(te.Message), kind: classify(te.Code, te.Message)}
		if te.RetryAfter > 0 {
			ae.RetryAfter = time.Duration(te.RetryAfter) * time.Second
		}
		if te.Code == http.StatusTooManyRequests {
			ae.kind = &channels.RateLimitError{RetryAfter: max(ae.RetryAfter, time.Second)}
		}
		if te.Code == http.StatusUnauthorized {
			a.tokenRefused(method)
		}
		return ae
	}
	if ctx.Err() != nil {
		return fmt.Errorf("telegram: %s: %w", method, ctx.Err())
	}
	return fmt.Errorf("telegram: %s: %w", method, a.redact.Error(err))
}

// maxAttempts bounds the calls one call waiting out 429s makes (RetryAfter.Attempts).
const maxAttempts = 6

// Calls and their rate limits (kit.RetryAfter). call and upload return a 429 at once as a
// *channels.RateLimitError: they make the sends, edits, deletes and files that delivery retries
// after the retry_after (channels.RetryRateLimited). callWaiting waits 429s out here, while the
// waits stay within Config.MaxRetryWait: the calls nobody above retries (callback answers,
// command registration, the webhook at start) and the later pieces of a long message, which a
// retry of the whole send would post twice. All retry server errors with backoff, and transport
// errors when idempotent is true (a sendMessage whose answer was lost may have been delivered).

// call makes a Bot API call whose caller retries its 429s.
func (a *botAPI) call(ctx context.Context, method string, params tgbotapi.Params, idempotent bool) (json.RawMessage, error) {
	res, err := a.retrying(ctx, method, idempotent, func(ctx context.Context) (json.RawMessage, error) {
		return a.callOnce(ctx, method, params)
	})
	return res, a.limits.Pass(method, err)
}

// callWaiting makes a Bot API call whose 429s are waited out here.
func (a *botAPI) callWaiting(ctx context.Context, method string, params tgbotapi.Params, idempotent bool) (json.RawMessage, error) {
	var res json.RawMessage
	err := a.limits.Wait(ctx, method, func(ctx context.Context) error {
		var err error
		res, err = a.retrying(ctx, method, idempotent, func(ctx context.Context) (json.RawMessage, error) {
			return a.callOnce(ctx, method, params)
		})
		return err
	})
	return res, err
}

// upload makes a Bot API call that uploads files (multipart), its 429s returned as call's.
func (a *botAPI) upload(ctx context.Context, method string, params tgbotapi.Params, files []tgbotapi.RequestFile, idempotent bool) (json.RawMessage, error) {
	res, err := a.retrying(ctx, method, idempotent, func(ctx context.Context) (json.RawMessage, error) {
		bot := *a.bot // a shallow copy per call, so each call carries its own client
		bot.Client = ctxClient{ctx: ctx, c: a.http}
		resp, err := bot.UploadFiles(method, params, files)
		if err == nil {
			a.tokenAccepted()
			return resp.Result, nil
		}
		// The library's UploadFiles leaves the error's code out (its MakeRequest sets it): put
		// it back from the answer, so that a 5xx is retried, a 429 reported, a 401 or 403 read
		// as the refusal it is.
		if te, ok := errors.AsType[*tgbotapi.Error](err); ok && te.Code == 0 && resp != nil {
			te.Code = resp.ErrorCode
		}
		return nil, a.apiError(ctx, method, err)
	})
	return res, a.limits.Pass(method, err)
}

// retrying runs once (one attempt of method), retrying server errors (and transport errors when
// idempotent) with backoff; any other error, a 429 included, is returned at once.
func (a *botAPI) retrying(ctx context.Context, method string, idempotent bool, once func(context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
	for attempt := 1; ; attempt++ {
		res, err := once(ctx)
		if err == nil {
			return res, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		ae, isAPI := errors.AsType[*APIError](err)
		if !(isAPI && ae.Code >= 500 || !isAPI && idempotent) || attempt >= 3 {
			return nil, err
		}
		wait := backoff(attempt)
		a.cfg.Logger.Debug("telegram: retrying call", "method", method, "attempt", attempt, "wait", wait, "err", err)
		if err := a.sleep(ctx, wait); err != nil {
			return nil, fmt.Errorf("telegram: %s: %w", method, err)
		}
	}
}

// backoff is the wait before retry attempt n (1-based): 100 ms doubling, capped at 30 s.
func backoff(n int) time.Duration {
	d := 100 * time.Millisecond
	for i := 1; i < n && d < 30*time.Second; i++ {
		d *= 2
	}
	return min(d, 30*time.Second)
}
