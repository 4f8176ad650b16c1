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
	"strconv"
	"time"

	slackgo "github.com/slack-go/slack"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/kit"
)

// APIError is an error answer of the Web API ({"ok":false,"error":Code} or an HTTP status).
// It unwraps to the channels sentinels it means (channels.ErrMessageGone, ErrCardRefused,
// ErrUnreachable, ErrNotModified, ErrUnauthorized) when there are any, so callers classify it
// with errors.Is. It never holds a token.
type APIError struct {
	Method string
	// Code is Slack's error code ("channel_not_found"), or "http_<status>".
	Code  string
	kinds []error
}

func (e *APIError) Error() string { return fmt.Sprintf("slack: %s: %s", e.Method, e.Code) }

// Unwrap returns the sentinels the answer means (see classify).
func (e *APIError) Unwrap() []error { return e.kinds }

// ErrAuth is wrapped by errors that mean the token is not (or no longer) valid, or lacks the
// permission the call needs.
var ErrAuth = errors.New("slack: the token was refused")

// classify maps Slack's error codes — documented machine codes, not prose — to sentinels. A
// token Slack refuses (wrong, revoked, expired, of a deactivated account or the wrong type) is
// ErrAuth and channels.ErrUnauthorized — the operator must fix the credentials — and, as a
// token refused for want of a permission is too, channels.ErrUnreachable: the bot cannot write
// there, and retrying cannot help.
func classify(code string) []error {
	switch code {
	case "invalid_auth", "not_authed", "token_revoked", "token_expired", "account_inactive", "not_allowed_token_type":
		return []error{ErrAuth, channels.ErrUnauthorized, channels.ErrUnreachable}
	case "no_permission", "missing_scope":
		return []error{ErrAuth, channels.ErrUnreachable}
	}
	if kind := classifyMessage(code); kind != nil {
		return []error{kind}
	}
	return nil
}

// classifyMessage maps the codes about a message or a conversation.
func classifyMessage(code string) error {
	switch code {
	case "message_not_found", "cant_update_message", "cant_delete_message", "edit_window_closed", "thread_not_found":
		return channels.ErrMessageGone
	case "invalid_blocks", "invalid_blocks_format", "msg_too_long", "too_many_attachments", "invalid_attachments",
		"markdown_text_conflict", "invalid_arguments":
		return channels.ErrCardRefused
	case "channel_not_found", "not_in_channel", "is_archived", "restricted_action", "user_not_in_channel",
		"cannot_reply_to_message", "team_access_not_granted", "ekm_access_denied", "messages_tab_disabled":
		return channels.ErrUnreachable
	}
	return nil
}

// rateLimitCodes are ok:false codes that mean "slow down" without a Retry-After.
func rateLimited(code string) bool { return code == "ratelimited" || code == "rate_limited" }

// apiError turns a slack-go error into this adapter's, by slack-go's types:
// RateLimitedError → *channels.RateLimitError (of at least minRateLimitWait),
// SlackErrorResponse (every {"ok":false} answer, its code in Err) and StatusCodeError →
// *APIError; anything else wrapped with its text redacted.
func (w *webAPI) apiError(method string, err error) error {
	if err == nil {
		return nil
	}
	if rl, ok := errors.AsType[*slackgo.RateLimitedError](err); ok {
		return &channels.RateLimitError{RetryAfter: max(rl.RetryAfter, minRateLimitWait)}
	}
	if se, ok := errors.AsType[slackgo.SlackErrorResponse](err); ok {
		if rateLimited(se.Err) {
			return &channels.RateLimitError{RetryAfter: time.Second}
		}
		return &APIError{Method: method, Code: se.Err, kinds: classify(se.Err)}
	}
	if sc, ok := errors.AsType[slackgo.StatusCodeError](err); ok {
		return &APIError{Method: method, Code: fmt.Sprintf("http_%d", sc.Code)}
	}
	return w.redact.Error(fmt.Errorf("slack: %s: %w", method, err))
}

// webAPI is the adapter's bridge to the Web API: a call's error (apiError, redacted), its
// pacing and rate limits (request; kit.RetryAfter: see call), and the calls made as JSON here
// rather than through slack-go (postJSON: chat.postMessage, assistant.threads.setStatus).
// Safe for concurrent use.
type webAPI struct {
	cfg    *Config
	redact *kit.Redactor
	limits *kit.RetryAfter
	tiers  *tierLimiter
	// now and sleep are the channel's (tests replace them).
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error
}

// minRateLimitWait is the shortest Retry-After a 429 is reported with.
const minRateLimitWait = 50 * time.Millisecond

// Calls and their rate limits (kit.RetryAfter). call returns a 429 at once as a
// *channels.RateLimitError: it makes the sends, edits, deletes, files and stream updates that
// delivery retries after the Retry-After (channels.RetryRateLimited). callWaiting waits 429s
// out here while the waits stay within MaxRetryWait: the calls nobody above retries — the
// assistant threads' prompts and titles, answers to clicks, modals, look-ups of sent messages —
// and the rest of an operation Slack already took part of (a long message's later pieces, a
// stream's appends after it started), which a retry of the whole would post twice. Every 429
// is counted (Metrics.RateLimited) and, with Pacing, pauses the method's tier for the
// workspace.

// call runs one Web API call for workspace whose caller retries its 429s.
func (w *webAPI) call(ctx context.Context, workspace, method string, f func(ctx context.Context) error) error {
	return w.limits.Pass(method, w.request(ctx, workspace, method, nil, f))
}

// callWaiting runs one Web API call for workspace whose 429s are waited out here.
func (w *webAPI) callWaiting(ctx context.Context, workspace, method string, f func(ctx context.Context) error) error {
	return w.limits.Wait(ctx, method, func(ctx context.Context) error { return w.request(ctx, workspace, method, nil, f) })
}

// callMaybeWaiting is callWaiting when wait is set, else call.
func (w *webAPI) callMaybeWaiting(ctx context.Context, wait bool, workspace, method string, f func(ctx context.Context) error) error {
	if wait {
		return w.callWaiting(ctx, workspace, method, f)
	}
	return w.call(ctx, workspace, method, f)
}

// errSuperseded: a newer call made this one pointless while it waited for its turn.
var errSuperseded = errors.New("slack: superseded by a newer call")

// request makes one Web API call for workspace within the call timeout. With Pacing, it first
// waits for the workspace's budget of the method's tier (tierLimiter), and gives up with
// errSuperseded when superseded (if set) reports true after that wait (a newer edit of the same
// message came meanwhile). A 429 is counted, pauses the tier, and is returned.
func (w *webAPI) request(ctx context.Context, workspace, method string, superseded func() bool, f func(ctx context.Context) error) error {
	team := teamOf(workspace)
	if w.cfg.Pacing {
		if d := w.tiers.reserve(team, method, w.now()); d > 0 {
			if err := w.sleep(ctx, d); err != nil {
				return fmt.Errorf("slack: %s: %w", method, err)
			}
			if superseded != nil && superseded() {
				return errSuperseded
			}
		}
	}
	callCtx, cancel := context.WithTimeout(ctx, w.cfg.CallTimeout)
	err := w.apiError(method, f(callCtx))
	cancel()
	if rl, ok := errors.AsType[*channels.RateLimitError](err); ok {
		w.cfg.Metrics.RateLimited(method)
		if w.cfg.Pacing {
			// Calls of this tier booked from now on wait the pause out too.
			w.tiers.pause(team, method, w.now().Add(rl.RetryAfter))
		}
	}
	return err
}

var _ slog.LogValuer = Config{}

// postMessage posts p with chat.postMessage and returns its ts. It is made without slack-go:
// every answer makes it, and slack-go form-encodes the blocks' JSON and then decodes the whole
// posted message back, blocks and all, where only the ts is needed.
func (w *webAPI) postMessage(ctx context.Context, token, channel, thread string, p piece) (string, error) {
	pm := postMessageBody{Channel: channel, Text: p.text, Blocks: p.blocks, ThreadTS: thread}
	if p.key != "" {
		pm.Metadata = &slackgo.SlackMetadata{EventType: sentEventType,
			EventPayload: map[string]any{"key": p.key, "piece": p.index, "of": p.of}}
	}
	out, err := w.postJSON(ctx, token, "chat.postMessage", pm)
	return out.TS, err
}

// postJSON makes one Web API call of method with body as its JSON arguments (every method the
// adapter calls this way takes application/json) and token in the Authorization header, and
// reads the answer. Its errors are slack-go's types (RateLimitedError, SlackErrorResponse,
// StatusCodeError), so the caller classifies them with apiError as any other call's.
func (w *webAPI) postJSON(ctx context.Context, token, method string, body any) (posted, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return posted{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.cfg.APIURL+method, bytes.NewReader(raw))
	if err != nil {
		return posted{}, err
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := w.cfg.HTTPClient.Do(req)
	if err != nil {
		return posted{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusTooManyRequests {
		retry, _ := strconv.ParseInt(resp.Header.Get("Retry-After"), 10, 64)
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return posted{}, &slackgo.RateLimitedError{RetryAfter: time.Duration(retry) * time.Second}
	}
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return posted{}, slackgo.StatusCodeError{Code: resp.StatusCode, Status: resp.Status}
	}
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxPayloadBytes))
	if err != nil {
		return posted{}, fmt.Errorf("reading the answer: %w", err)
	}
	out, err := readPosted(answer)
	if err != nil {
		return posted{}, fmt.Errorf("reading the answer: %w", err)
	}
	if !out.OK {
		return posted{}, slackgo.SlackErrorResponse{Err: out.Error}
	}
	return out, nil
}

// posted is what the adapter reads of an answer to postJSON: ok, the error, and
// chat.postMessage's ts.
type posted struct {
	OK    bool   `json:"ok"`
	Error string `json:"error"`
	TS    string `json:"ts"`
}

// readPosted reads an answer as a json.Decoder reads its first value into a posted.
func readPosted(raw []byte) (posted, error) {
	var out posted
	err := json.NewDecoder(bytes.NewReader(raw)).Decode(&out)
	return out, err
}

// postMessageBody is chat.postMessage's JSON body: link and media unfurls off (arguments only
// chat.postMessage takes). https://docs.slack.dev/reference/methods/chat.postMessage
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
