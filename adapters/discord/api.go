package discord

import (
	"context"
	"errors"
	"fmt"
	"io"
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
// bot keeps Discord's global limit, discordgo's own retries included. That wait is bounded by
// the request's context — the caller's, a run's for a send — and not by the attempt's timeout
// (rest.request hands it over with withAttemptTimeout), which starts only once the slot is
// granted: a request queued behind the bot's own pacer waits its turn however long the queue,
// and only Discord's answer is timed.
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
			// The caller's context ended while the request waited for its slot: its error, as
			// is (classify keeps it), never a sign that Discord is down.
			return nil, err
		}
	}
	cancel := context.CancelFunc(func() {})
	if d, ok := r.Context().Value(attemptTimeoutKey{}).(time.Duration); ok && d > 0 {
		ctx, c := context.WithTimeout(r.Context(), d)
		r, cancel = r.WithContext(ctx), c
	}
	if rw.base.Host != "discord.com" || rw.base.Scheme != "https" {
		r = r.Clone(r.Context())
		r.URL.Scheme, r.URL.Host, r.Host = rw.base.Scheme, rw.base.Host, rw.base.Host
		if p := strings.TrimRight(rw.base.Path, "/"); p != "" {
			r.URL.Path = p + r.URL.Path
		}
	}
	resp, err := rw.next.RoundTrip(r)
	if err != nil {
		cancel()
		return nil, err
	}
	// The attempt lasts until its answer is read: discordgo reads the body, then closes it.
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// cancelOnClose ends an attempt's timeout when its answer's body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// attemptTimeoutKey carries the timeout of one REST attempt (Config.CallTimeout) in a request's
// context to rewrite, which starts it when the request leaves for Discord.
type attemptTimeoutKey struct{}

// withAttemptTimeout returns ctx carrying d as the timeout of each attempt made with it: the time
// from the moment a request is sent — after its wait for a global slot — to its answer read.
func withAttemptTimeout(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, attemptTimeoutKey{}, d)
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

// tokenPaths matches the secret part of interaction and webhook URLs: with the bot token, what
// the adapter's kit.Redactor keeps out of its errors and log lines.
var tokenPaths = regexp.MustCompile(`(interactions/\d+/|webhooks/\d+/)[^/?\s"]+`)

// newRedactor is the redactor of the bot token and of interactions' tokens.
func newRedactor(token string) *kit.Redactor {
	r := kit.NewRedactor(token)
	r.AddPattern(tokenPaths)
	return r
}

// classify turns a discordgo error into this adapter's: 429 is *channels.RateLimitError, 401
// wraps channels.ErrUnauthorized, a message gone channels.ErrMessageGone, a channel gone or
// forbidden channels.ErrUnreachable. The text never holds the token.
func (r *rest) classify(op string, err error) error {
	if err == nil {
		return nil
	}
	var rl *discordgo.RateLimitError
	if errors.As(err, &rl) {
		ra := time.Duration(0)
		if rl.TooManyRequests != nil {
			ra = rl.RetryAfter
		}
		return &channels.RateLimitError{RetryAfter: max(ra, minRateLimitWait)}
	}
	var re *discordgo.RESTError
	if errors.As(err, &re) && re.Response != nil {
		e := &apiError{op: op, status: re.Response.StatusCode}
		if re.Message != nil {
			e.code, e.message = re.Message.Code, r.redact.String(re.Message.Message)
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
	return fmt.Errorf("discord: %s: %s", op, r.redact.String(err.Error()))
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
// in 10 minutes, then a Cloudflare ban of the bot's IP), so a call waiting them out retries a
// few times at most, and never sooner than minRateLimitWait: a retry_after of a millisecond or
// none would otherwise make a tight loop of refused requests.
const (
	maxRateLimitRetries = 5
	minRateLimitWait    = 50 * time.Millisecond
)

// rest is the adapter's bridge to Discord's REST API (through discordgo): one request, its
// error (classify, redacted), retries of server errors and its rate limits (kit.RetryAfter: see
// call). Safe for concurrent use.
type rest struct {
	timeout time.Duration // Config.CallTimeout, per attempt
	redact  *kit.Redactor
	limits  *kit.RetryAfter
	sleep   func(ctx context.Context, d time.Duration) error // the channel's clock's
}

// Calls and their rate limits (kit.RetryAfter). call returns a 429 at once as a
// *channels.RateLimitError (of at least minRateLimitWait): the sends, edits, deletes and files,
// which delivery retries after the retry_after (channels.RetryRateLimited). A typing signal is
// made once (RetryAfter.Once). callWaiting waits 429s out here (at most maxRateLimitRetries
// times and Config.MaxRetryWait in all): the calls nobody above retries — start-up, command
// registration, interaction answers, the look-ups intake needs — and the later pieces of a
// message, which a retry of the whole send would post twice. discordgo's own bucket limiter
// runs inside fn and spaces calls by the X-RateLimit headers.

// call makes one REST call whose caller retries its 429s.
func (r *rest) call(ctx context.Context, op string, fn func(opts ...discordgo.RequestOption) error) error {
	return r.limits.Pass(op, r.request(ctx, op, fn))
}

// callWaiting makes one REST call whose 429s are waited out here.
func (r *rest) callWaiting(ctx context.Context, op string, fn func(opts ...discordgo.RequestOption) error) error {
	return r.limits.Wait(ctx, op, func(ctx context.Context) error { return r.request(ctx, op, fn) })
}

// callMaybeWaiting is callWaiting when wait is set, else call.
func (r *rest) callMaybeWaiting(ctx context.Context, wait bool, op string, fn func(opts ...discordgo.RequestOption) error) error {
	if wait {
		return r.callWaiting(ctx, op, fn)
	}
	return r.call(ctx, op, fn)
}

// request runs one REST call with ctx, retrying 500/503/504 twice; any other error, a 429
// included, is returned after the one request. Each attempt is timed from when it is sent
// (CallTimeout, see rewrite): its wait for a slot of the global limit is bounded by ctx alone,
// and a wait cut by ctx's end returns ctx's error (context.Canceled or DeadlineExceeded, as
// classify keeps them).
func (r *rest) request(ctx context.Context, op string, fn func(opts ...discordgo.RequestOption) error) error {
	callCtx := withAttemptTimeout(ctx, r.timeout)
	for fivexx := 0; ; fivexx++ {
		err := r.classify(op, fn(discordgo.WithContext(callCtx)))
		if err == nil || apiStatus(err) < 500 || fivexx >= 2 {
			return err
		}
		if err := r.sleep(ctx, time.Duration(fivexx+1)*250*time.Millisecond); err != nil {
			return fmt.Errorf("discord: %s: %w", op, err)
		}
	}
}
