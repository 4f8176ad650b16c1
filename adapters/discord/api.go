package discord

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/kit"
)

// rewrite sends discordgo's requests, which always name https://discord.com, to Config.APIURL.
// discordgo has no base-URL option, and its package Endpoint variables are computed at init and
// shared by every session, so the host is rewritten per request instead. Every request but an
// interaction endpoint's first waits for a slot of global (nil: no global limit), so that the
// bot keeps Discord's global limit, discordgo's own retries included.
type rewrite struct {
	base   *url.URL
	next   http.RoundTripper
	global *pacer
}

func (rw rewrite) RoundTrip(r *http.Request) (*http.Response, error) {
	if rw.global != nil && !globalExempt(r.URL.Path) {
		if _, err := rw.global.wait(r.Context()); err != nil {
			if r.Body != nil {
				_ = r.Body.Close() // a RoundTripper closes the body, even on error
			}
			return nil, err
		}
	}
	if rw.base.Host == "discord.com" && rw.base.Scheme == "https" {
		return rw.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host, r.Host = rw.base.Scheme, rw.base.Host, rw.base.Host
	if p := strings.TrimRight(rw.base.Path, "/"); p != "" {
		r.URL.Path = p + r.URL.Path
	}
	return rw.next.RoundTrip(r)
}

// Discord's JSON error codes this adapter tells apart.
const (
	codeUnknownChannel     = 10003
	codeUnknownMessage     = 10008
	codeUnknownWebhook     = 10015
	codeUnknownInteraction = 10062
	codeMissingAccess      = 50001
	codeCannotDM           = 50007
	codeMissingPermissions = 50013
	codeInvalidFormBody    = 50035
	codeAlreadyAcked       = 40060
	codeThreadExists       = 160004
)

// apiError is a REST error with what Discord said, and never the request (its headers hold the
// token).
type apiError struct {
	op      string
	status  int
	code    int
	message string
	kind    error // a channels sentinel, or nil
}

func (e *apiError) Error() string {
	s := fmt.Sprintf("discord: %s: HTTP %d", e.op, e.status)
	if e.code != 0 {
		s += fmt.Sprintf(" code %d", e.code)
	}
	if e.message != "" {
		s += ": " + e.message
	}
	if e.kind != nil {
		s += " (" + e.kind.Error() + ")"
	}
	return s
}

func (e *apiError) Unwrap() error { return e.kind }

// tokenPaths matches the secret part of interaction and webhook URLs.
var tokenPaths = regexp.MustCompile(`(interactions/\d+/|webhooks/\d+/)[^/?\s"]+`)

// redactor keeps the bot token and interaction tokens out of error text.
type redactor struct{ token string }

func (r redactor) string(s string) string {
	if r.token != "" {
		s = strings.ReplaceAll(s, r.token, "[redacted]")
	}
	return tokenPaths.ReplaceAllString(s, "${1}[redacted]")
}

// classify turns a discordgo error into this adapter's: 429 is *channels.RateLimitError, 401
// wraps channels.ErrUnauthorized, a message gone channels.ErrMessageGone, a channel gone or
// forbidden channels.ErrUnreachable. The text never holds the token.
func (c *Channel) classify(op string, err error) error {
	if err == nil {
		return nil
	}
	var rl *discordgo.RateLimitError
	if errors.As(err, &rl) {
		ra := time.Duration(0)
		if rl.TooManyRequests != nil {
			ra = rl.RetryAfter
		}
		return &channels.RateLimitError{RetryAfter: max(ra, 10*time.Millisecond)}
	}
	var re *discordgo.RESTError
	if errors.As(err, &re) && re.Response != nil {
		e := &apiError{op: op, status: re.Response.StatusCode}
		if re.Message != nil {
			e.code, e.message = re.Message.Code, c.redact.string(re.Message.Message)
		}
		switch {
		case e.status == http.StatusUnauthorized:
			e.kind = channels.ErrUnauthorized
		case e.code == codeUnknownMessage:
			e.kind = channels.ErrMessageGone
		case e.code == codeUnknownChannel, e.code == codeMissingAccess, e.code == codeMissingPermissions,
			e.code == codeCannotDM, e.status == http.StatusForbidden:
			e.kind = channels.ErrUnreachable
		}
		return e
	}
	if errors.Is(err, discordgo.ErrUnauthorized) {
		return fmt.Errorf("discord: %s: %w", op, channels.ErrUnauthorized)
	}
	// A context's end keeps its sentinel, not the error around it: a *url.Error's text names the
	// request's URL, and an interaction's or a webhook's URL holds its token.
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("discord: %s: %w", op, context.Canceled)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("discord: %s: %w", op, context.DeadlineExceeded)
	}
	return fmt.Errorf("discord: %s: %s", op, c.redact.string(err.Error()))
}

func apiCode(err error) int {
	var e *apiError
	if errors.As(err, &e) {
		return e.code
	}
	return 0
}

func apiStatus(err error) int {
	var e *apiError
	if errors.As(err, &e) {
		return e.status
	}
	return 0
}

// Bounds on waiting out 429s. Every 429 counts against Discord's invalid-request budget (10,000
// in 10 minutes, then a Cloudflare ban of the bot's IP), so a call retries a few times at most,
// and never sooner than minRateLimitWait: a retry_after of a millisecond or none would otherwise
// make a tight loop of refused requests.
const (
	maxRateLimitRetries = 5
	minRateLimitWait    = 50 * time.Millisecond
)

// call runs one REST call with ctx, waiting out 429s (retry_after, at least minRateLimitWait, at
// most maxRateLimitRetries times and MaxRetryWait in all) and retrying 500/503/504 twice; it
// returns *channels.RateLimitError when the wait would be longer or the retries are spent. Other
// errors (a 4xx) are returned after the one request. discordgo's own bucket limiter runs inside
// fn and spaces calls by the X-RateLimit headers.
func (c *Channel) call(ctx context.Context, op string, fn func(opts ...discordgo.RequestOption) error) error {
	waited := time.Duration(0)
	fivexx, limited := 0, 0
	for {
		callCtx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout)
		err := c.classify(op, fn(discordgo.WithContext(callCtx)))
		cancel()
		if err == nil {
			return nil
		}
		var rl *channels.RateLimitError
		switch {
		case errors.As(err, &rl):
			wait := max(rl.RetryAfter, minRateLimitWait)
			if limited >= maxRateLimitRetries || waited+wait > c.cfg.MaxRetryWait {
				c.cfg.RateLimits.Limited(op, rl.RetryAfter, false)
				return &channels.RateLimitError{RetryAfter: wait}
			}
			limited++
			c.cfg.RateLimits.Limited(op, rl.RetryAfter, true)
			waited += wait
			c.cfg.Logger.Debug("discord: rate limited; waiting", "op", op, "retry_after", rl.RetryAfter, "wait", wait)
			if err := kit.Sleep(ctx, wait); err != nil {
				return fmt.Errorf("discord: %s: %w", op, err)
			}
		case apiStatus(err) >= 500 && fivexx < 2:
			fivexx++
			if err := kit.Sleep(ctx, time.Duration(fivexx)*250*time.Millisecond); err != nil {
				return fmt.Errorf("discord: %s: %w", op, err)
			}
		default:
			return err
		}
	}
}
