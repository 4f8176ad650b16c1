package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	slackgo "github.com/slack-go/slack"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/jsonwire"
)

// APIError is an error answer of the Web API ({"ok":false,"error":Code} or an HTTP status).
// It unwraps to the channels sentinel it means (channels.ErrMessageGone, ErrCardRefused,
// ErrUnreachable, ErrNotModified) when there is one, so callers classify it with errors.Is. It
// never holds a token.
type APIError struct {
	Method string
	// Code is Slack's error code ("channel_not_found"), or "http_<status>".
	Code string
	kind error
}

func (e *APIError) Error() string { return fmt.Sprintf("slack: %s: %s", e.Method, e.Code) }

// Unwrap returns the sentinels the answer means: a channels sentinel, and for a refused token
// ErrAuth with channels.ErrUnreachable (the bot cannot write there; retrying cannot help).
func (e *APIError) Unwrap() []error {
	switch e.kind {
	case nil:
		return nil
	case ErrAuth:
		return []error{ErrAuth, channels.ErrUnreachable}
	}
	return []error{e.kind}
}

// ErrAuth is wrapped by errors that mean the token is not (or no longer) valid.
var ErrAuth = errors.New("slack: the token was refused")

// classify maps Slack's error codes — documented machine codes, not prose — to sentinels.
func classify(code string) error {
	switch code {
	case "message_not_found", "cant_update_message", "cant_delete_message", "edit_window_closed", "thread_not_found":
		return channels.ErrMessageGone
	case "invalid_blocks", "invalid_blocks_format", "msg_too_long", "too_many_attachments", "invalid_attachments",
		"markdown_text_conflict", "invalid_arguments":
		return channels.ErrCardRefused
	case "channel_not_found", "not_in_channel", "is_archived", "restricted_action", "user_not_in_channel",
		"cannot_reply_to_message", "team_access_not_granted", "ekm_access_denied", "messages_tab_disabled":
		return channels.ErrUnreachable
	case "invalid_auth", "not_authed", "token_revoked", "token_expired", "account_inactive", "no_permission", "missing_scope", "not_allowed_token_type":
		return ErrAuth
	}
	return nil
}

// rateLimitCodes are ok:false codes that mean "slow down" without a Retry-After.
func rateLimited(code string) bool { return code == "ratelimited" || code == "rate_limited" }

// apiError turns a slack-go error into this adapter's: RateLimitedError →
// *channels.RateLimitError, SlackErrorResponse / StatusCodeError → *APIError; every text
// redacted.
func (c *Channel) apiError(method string, err error) error {
	if err == nil {
		return nil
	}
	if rl, ok := errors.AsType[*slackgo.RateLimitedError](err); ok {
		return &channels.RateLimitError{RetryAfter: rl.RetryAfter}
	}
	if se, ok := errors.AsType[slackgo.SlackErrorResponse](err); ok {
		if rateLimited(se.Err) {
			return &channels.RateLimitError{RetryAfter: time.Second}
		}
		return &APIError{Method: method, Code: se.Err, kind: classify(se.Err)}
	}
	if sc, ok := errors.AsType[slackgo.StatusCodeError](err); ok {
		return &APIError{Method: method, Code: fmt.Sprintf("http_%d", sc.Code)}
	}
	if err.Error() == "invalid_auth" || err.Error() == "not_authed" || err.Error() == "token_revoked" {
		return &APIError{Method: method, Code: err.Error(), kind: ErrAuth}
	}
	return c.redact.error(fmt.Errorf("slack: %s: %w", method, err))
}

// call runs one Web API call for workspace with the call timeout. With Pacing, it first waits
// for the workspace's budget of the method's tier (tierLimiter); it waits out rate limits
// (Retry-After, which also pauses that budget) while the total wait stays within MaxRetryWait;
// past that it returns the *channels.RateLimitError.
func (c *Channel) call(ctx context.Context, workspace, method string, f func(ctx context.Context) error) error {
	return c.callUnless(ctx, workspace, method, nil, f)
}

// errSuperseded: a newer call made this one pointless while it waited for its turn.
var errSuperseded = errors.New("slack: superseded by a newer call")

// callUnless is call that gives up with errSuperseded when, after a wait for the tier's budget
// or a rate limit, superseded reports true (a newer edit of the same message came meanwhile).
func (c *Channel) callUnless(ctx context.Context, workspace, method string, superseded func() bool, f func(ctx context.Context) error) error {
	team := teamOf(workspace)
	waited := time.Duration(0)
	for {
		if c.cfg.Pacing {
			if d := c.tiers.reserve(team, method, c.now()); d > 0 {
				if err := c.sleep(ctx, d); err != nil {
					return fmt.Errorf("slack: %s: %w", method, err)
				}
				if superseded != nil && superseded() {
					return errSuperseded
				}
			}
		}
		callCtx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout)
		err := c.apiError(method, f(callCtx))
		cancel()
		rl, ok := errors.AsType[*channels.RateLimitError](err)
		if !ok {
			return err
		}
		c.cfg.Metrics.RateLimited(method)
		wait := max(rl.RetryAfter, 50*time.Millisecond)
		if c.cfg.Pacing {
			// Calls of this tier booked from now on wait the pause out too.
			c.tiers.pause(team, method, c.now().Add(wait))
		}
		if waited+wait > c.cfg.MaxRetryWait {
			c.cfg.RateLimits.Limited(method, wait, false)
			return err
		}
		c.cfg.RateLimits.Limited(method, wait, true)
		c.log.Debug("slack: rate limited; waiting", "method", method, "wait", wait)
		if serr := c.sleep(ctx, wait); serr != nil {
			return fmt.Errorf("slack: %s: %w", method, serr)
		}
		waited += wait
		if superseded != nil && superseded() {
			return errSuperseded
		}
	}
}

// redactor removes secrets from error texts; installed workspaces' tokens join as they come.
type redactor struct {
	mu      sync.RWMutex
	secrets []string
}

func newRedactor(secrets ...string) *redactor { return &redactor{secrets: secrets} }

func (r *redactor) add(secret string) {
	if secret == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !slices.Contains(r.secrets, secret) {
		r.secrets = append(r.secrets, secret)
	}
}

func (r *redactor) string(s string) string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, sec := range r.secrets {
		if sec != "" {
			s = strings.ReplaceAll(s, sec, redacted)
		}
	}
	return s
}

// error returns err, or a redacted copy when its text holds a secret.
func (r *redactor) error(err error) error {
	if err == nil {
		return nil
	}
	if s := r.string(err.Error()); s != err.Error() {
		return errors.New(s)
	}
	return err
}

func (c *Channel) malformed(kind string, err error) {
	c.log.Warn("slack: skipping a malformed payload", "kind", kind, "err", c.redact.error(err))
	if c.cfg.OnMalformed != nil {
		c.cfg.OnMalformed()
	}
}

var _ slog.LogValuer = Config{}

// postMessage posts p with chat.postMessage and returns its ts. It is the one Web API call made
// without slack-go: every answer makes it, and slack-go form-encodes the blocks' JSON and then
// decodes the whole posted message back, blocks and all, where only the ts is needed. Its
// errors are slack-go's types (RateLimitedError, SlackErrorResponse, StatusCodeError), so the
// caller classifies them with apiError as any other call's.
func (c *Channel) postMessage(ctx context.Context, token, channel, thread string, p piece) (string, error) {
	pm := postMessageBody{Channel: channel, Text: p.text, Blocks: p.blocks, ThreadTS: thread}
	if p.key != "" {
		pm.Metadata = &slackgo.SlackMetadata{EventType: sentEventType,
			EventPayload: map[string]any{"key": p.key, "piece": p.index, "of": p.of}}
	}
	body, err := json.Marshal(pm)
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.APIURL+"chat.postMessage", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusTooManyRequests {
		retry, _ := strconv.ParseInt(resp.Header.Get("Retry-After"), 10, 64)
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return "", &slackgo.RateLimitedError{RetryAfter: time.Duration(retry) * time.Second}
	}
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return "", slackgo.StatusCodeError{Code: resp.StatusCode, Status: resp.Status}
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxPayloadBytes))
	if err != nil {
		return "", fmt.Errorf("reading the answer: %w", err)
	}
	out, err := readPosted(raw)
	if err != nil {
		return "", fmt.Errorf("reading the answer: %w", err)
	}
	if !out.OK {
		return "", slackgo.SlackErrorResponse{Err: out.Error}
	}
	return out.TS, nil
}

// posted is what the adapter reads of chat.postMessage's answer.
type posted struct {
	OK    bool   `json:"ok"`
	Error string `json:"error"`
	TS    string `json:"ts"`
}

var postedKeys = jsonwire.Keys{Names: []string{"ok", "error", "ts"}}

// readPosted reads chat.postMessage's answer as a json.Decoder reads its first value into a
// posted, in one pass that skips the message it echoes (blocks and all) when it can.
func readPosted(raw []byte) (posted, error) {
	var out posted
	r := jsonwire.NewReader(raw)
	r.Object(&postedKeys, func(k int) {
		switch k {
		case 0:
			out.OK = r.Bool()
		case 1:
			out.Error = r.Str()
		case 2:
			out.TS = r.Str()
		}
	})
	if r.End() {
		return out, nil
	}
	out = posted{}
	err := json.NewDecoder(bytes.NewReader(raw)).Decode(&out)
	return out, err
}

// postMessageBody is chat.postMessage's JSON body: link and media unfurls off.
type postMessageBody struct {
	Channel     string          `json:"channel"`
	Text        string          `json:"text"`
	Blocks      []slackgo.Block `json:"blocks,omitempty"`
	ThreadTS    string          `json:"thread_ts,omitempty"`
	UnfurlLinks bool            `json:"unfurl_links"`
	UnfurlMedia bool            `json:"unfurl_media"`
	// Metadata names a keyed message's piece (sentEventType) so FindSent can find it again.
	Metadata *slackgo.SlackMetadata `json:"metadata,omitempty"`
}
