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
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/switchboard-bot/switchboard/channels"
)

// APIError is an error answer from the Bot API. It unwraps to the sentinel it means
// (channels.ErrNotModified, channels.ErrMessageGone, channels.ErrCardRefused,
// channels.ErrUnreachable, channels.ErrUnauthorized, ErrConflict) when there is one, so callers
// classify it with errors.Is. It never holds the bot token.
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

// Unwrap returns the channels sentinel the answer means, or nil.
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

// redactor removes the bot token from errors of the HTTP layer, whose *url.Error carries the
// request URL (which holds the token).
type redactor struct{ token string }

const redacted = "<redacted>"

func (r redactor) string(s string) string {
	if r.token == "" {
		return s
	}
	return strings.ReplaceAll(s, r.token, redacted)
}

// error returns err with the token removed from its text. A *url.Error is rebuilt with a
// redacted URL and keeps its cause (context.Canceled, net errors) for errors.Is; anything else
// holding the token is flattened to its redacted text.
func (r redactor) error(err error) error {
	if err == nil || r.token == "" {
		return err
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		inner := ue.Err
		if inner != nil && strings.Contains(inner.Error(), r.token) {
			inner = errors.New(r.string(inner.Error()))
		}
		return &url.Error{Op: ue.Op, URL: r.string(ue.URL), Err: inner}
	}
	if strings.Contains(err.Error(), r.token) {
		return errors.New(r.string(err.Error()))
	}
	return err
}

// callOnce makes one Bot API call, bound to ctx.
func (c *Channel) callOnce(ctx context.Context, method string, params tgbotapi.Params) (json.RawMessage, error) {
	status, body, err := c.post(ctx, method, params)
	if err != nil {
		return nil, err
	}
	res, err := c.result(ctx, method, status, body)
	if err == nil {
		c.tokenAccepted()
	}
	return res, err
}

// post sends params to method as a form, as the library does, and reads the answer's body
// whole (readAnswer).
func (c *Channel) post(ctx context.Context, method string, params tgbotapi.Params) (status int, body []byte, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.APIURL+"/bot"+c.cfg.Token+"/"+method, strings.NewReader(encodeParams(params)))
	if err != nil {
		return 0, nil, c.apiError(ctx, method, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, c.apiError(ctx, method, err)
	}
	defer resp.Body.Close()
	if body, err = readAnswer(resp); err != nil {
		return 0, nil, c.apiError(ctx, method, err)
	}
	return resp.StatusCode, body, nil
}

// result reads an answer's body with decodeAnswer — one pass, the result not copied (the
// library's json.Decoder read each answer twice and copied it) — and returns its result, or the
// *APIError it is.
func (c *Channel) result(ctx context.Context, method string, status int, body []byte) (json.RawMessage, error) {
	a, err := decodeAnswer(body)
	if err != nil {
		return nil, c.apiError(ctx, method, fmt.Errorf("HTTP %d: %w", status, err))
	}
	if !a.ok {
		te := &tgbotapi.Error{Code: a.code, Message: a.description}
		if a.params != nil {
			te.ResponseParameters = *a.params
		}
		return nil, c.apiError(ctx, method, te)
	}
	return a.result, nil
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
func (c *Channel) apiError(ctx context.Context, method string, err error) error {
	var te *tgbotapi.Error
	if errors.As(err, &te) {
		ae := &APIError{Method: method, Code: te.Code, Description: c.redact.string(te.Message), kind: classify(te.Code, te.Message)}
		if te.RetryAfter > 0 {
			ae.RetryAfter = time.Duration(te.RetryAfter) * time.Second
		}
		if te.Code == http.StatusUnauthorized {
			c.tokenRefused(method)
		}
		return ae
	}
	if ctx.Err() != nil {
		return fmt.Errorf("telegram: %s: %w", method, ctx.Err())
	}
	return fmt.Errorf("telegram: %s: %w", method, c.redact.error(err))
}

// maxAttempts bounds retries of one call (429s and server errors).
const maxAttempts = 6

// call makes a Bot API call, honouring 429 retry_after (waiting while the total wait stays within
// Config.MaxRetryWait, else returning a *channels.RateLimitError) and retrying server errors
// with backoff. Transport errors are retried only when idempotent is true: a sendMessage whose
// answer was lost may have been delivered.
func (c *Channel) call(ctx context.Context, method string, params tgbotapi.Params, idempotent bool) (json.RawMessage, error) {
	return c.retrying(ctx, method, idempotent, func(ctx context.Context) (json.RawMessage, error) {
		return c.callOnce(ctx, method, params)
	})
}

// upload makes a Bot API call that uploads files (multipart), retried like call.
func (c *Channel) upload(ctx context.Context, method string, params tgbotapi.Params, files []tgbotapi.RequestFile, idempotent bool) (json.RawMessage, error) {
	return c.retrying(ctx, method, idempotent, func(ctx context.Context) (json.RawMessage, error) {
		bot := *c.bot // a shallow copy per call, so each call carries its own client
		bot.Client = ctxClient{ctx: ctx, c: c.http}
		resp, err := bot.UploadFiles(method, params, files)
		if err == nil {
			c.tokenAccepted()
			return resp.Result, nil
		}
		// The library's UploadFiles leaves the error's code out (its MakeRequest sets it): put
		// it back from the answer, so that a 5xx is retried, a 429 waited out, a 401 or 403
		// read as the refusal it is.
		if te, ok := errors.AsType[*tgbotapi.Error](err); ok && te.Code == 0 && resp != nil {
			te.Code = resp.ErrorCode
		}
		return nil, c.apiError(ctx, method, err)
	})
}

// retrying runs once (one attempt of method) with call's retry rules.
func (c *Channel) retrying(ctx context.Context, method string, idempotent bool, once func(context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
	var waited time.Duration
	for attempt := 1; ; attempt++ {
		res, err := once(ctx)
		if err == nil {
			return res, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		var ae *APIError
		var wait time.Duration
		switch {
		case errors.As(err, &ae) && ae.Code == http.StatusTooManyRequests:
			wait = max(ae.RetryAfter, time.Second)
			if waited+wait > c.cfg.MaxRetryWait || attempt >= maxAttempts {
				c.cfg.RateLimits.Limited(method, wait, false)
				return nil, fmt.Errorf("telegram: %s: %w", method, &channels.RateLimitError{RetryAfter: wait})
			}
			c.cfg.RateLimits.Limited(method, wait, true)
			waited += wait
		case ae != nil && ae.Code >= 500, ae == nil && idempotent:
			if attempt >= 3 {
				return nil, err
			}
			wait = backoff(attempt)
		default:
			return nil, err
		}
		c.cfg.Logger.Debug("telegram: retrying call", "method", method, "attempt", attempt, "wait", wait, "err", err)
		if err := c.sleep(ctx, wait); err != nil {
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
