package telegram

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/channels/kit"
	"github.com/switchboard-bot/switchboard/render"
)

// DefaultAPIURL is the Bot API base URL used when Config.APIURL is empty.
const DefaultAPIURL = "https://api.telegram.org"

// Mode is how updates arrive.
type Mode string

// The inbound modes.
const (
	ModePolling Mode = "polling"
	ModeWebhook Mode = "webhook"
)

// Config configures a Channel. Token is required; everything else has a default.
type Config struct {
	// Token is the bot token from BotFather. It never appears in logs or errors.
	Token string
	// APIURL is the Bot API base URL without a trailing slash (a local Bot API server, a fake
	// in tests); default DefaultAPIURL.
	APIURL string
	// Mode is ModePolling (default) or ModeWebhook.
	Mode Mode
	// WebhookURL is the public HTTPS URL Telegram posts updates to (webhook mode); the caller
	// mounts WebhookHandler at its path.
	WebhookURL string
	// WebhookSecret is sent to Telegram as secret_token and must come back in the
	// X-Telegram-Bot-Api-Secret-Token header of every delivery; required in webhook mode
	// (1–256 characters of A-Z a-z 0-9 _ -).
	WebhookSecret string
	// Pacing spaces messages per chat (about one a second, 20 a minute in groups) without holding
	// up other chats, and over all chats (at most 30 in any second, Telegram's limit for a bot).
	// Configuration turns it on by default (telegram.pacing); false turns both off for local Bot
	// API servers and load tests.
	Pacing bool
	// Drafts streams answers in private chats (topics included) as they are written, with
	// Telegram's drafts (sendMessageDraft, Bot API 9.3), finalised by one sendMessage: no
	// placeholder and no edits there (channels.Streamer, stream.go). Groups and channels, where
	// Telegram has no drafts, and chats where a draft is refused keep the placeholder edited in
	// place. Off (the zero value), every chat posts and edits. Delivery should space a stream's
	// appends about a second apart (delivery.Options.StreamEvery["telegram"]); the adapter
	// sends at most one draft a second per answer either way.
	Drafts bool
	// BotUsername is the bot's @username without '@'. Start learns it from getMe; a value set
	// here is replaced by what getMe says.
	BotUsername string
	// HTTPClient makes the requests; default a client with no overall timeout (each call carries
	// its own context deadline) keeping 256 idle connections.
	HTTPClient *http.Client
	// Offsets keeps the polling offset across restarts; default an in-memory store.
	Offsets OffsetStore
	// Inbox, when set, keeps each fetched batch of updates durable in one write before it is
	// confirmed (the next getUpdates), so that taking updates in never waits on their hand-over;
	// the batches are handed over from memory in order, and what a stopped or dead poller left
	// in it is handed over by the next one first. Shared like Offsets under a Lease.
	Inbox Inbox
	// Lease, when set, makes polling exclusive among the processes sharing it (Telegram serves
	// one getUpdates per bot at a time): the process holding the lease "telegram:<bot id>"
	// polls, from the offset in Offsets; the others stand by — they still send — and one takes
	// over within about LeaseTTL when the poller dies, at once when it stops. Offsets must then be
	// shared too. Unused in webhook mode. Nil: this process polls unconditionally.
	Lease kit.Lease
	// LeaseOwner names this process in the lease; default a random id.
	LeaseOwner string
	// LeaseTTL is the lease's lifetime without renewal; default kit.DefaultLeaseTTL (10 s).
	LeaseTTL time.Duration
	// OnLease, when set, is called with true when this process starts polling under the lease
	// and with false when it stops (lost, released); it must return quickly.
	OnLease func(polling bool)
	// OnTakeover, when set, is called when this process takes the polling lease after another
	// process held it (it died, or handed it over); it must return quickly.
	OnTakeover func()
	// RateLimits counts the rate limits the adapter meets and logs them at most once a minute
	// (kit.RateLimitLog); default one of the adapter's own, on Logger. Per-429 lines are
	// Debug only.
	RateLimits *kit.RateLimitLog
	// TypingAfter is how long a typing signal waits before it is sent, dropped if a message is
	// posted meanwhile (kit.TypingOptions.After); zero sends it at once. cmd/bot passes
	// kit.DefaultTypingAfter.
	TypingAfter time.Duration
	// Logger receives operator logs; default slog.Default().
	Logger *slog.Logger
	// ActionKey signs the callback data of inline keyboards rendered from cards.
	ActionKey render.Key
	// PollTimeout is the long-poll timeout sent to getUpdates; default 25 s.
	PollTimeout time.Duration
	// MaxRetryWait bounds the total time a call nobody above retries (a callback answer, the
	// command menu, the webhook at start) waits on 429 retry_after before returning a
	// *channels.RateLimitError; default 30 s.
	MaxRetryWait time.Duration
	// CallTimeout bounds each call other than getUpdates; default 30 s.
	CallTimeout time.Duration
	// OnMalformedUpdate, when set, is called once for each update skipped as malformed (an
	// element of a getUpdates answer or a webhook body that is not a readable update), for a
	// metric; it must return quickly. An update whose id can be read is counted once; one
	// whose id cannot may be counted again if it is fetched again.
	OnMalformedUpdate func()
}

// String is redacted: it never shows the token or the webhook secret.
func (c Config) String() string {
	return fmt.Sprintf("telegram.Config{APIURL:%q Mode:%q Token:%s}", c.APIURL, c.Mode, redacted)
}

// GoString is redacted like String.
func (c Config) GoString() string { return c.String() }

// LogValue is redacted like String.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }

// withDefaults validates c and fills in the defaults Config documents.
func (c Config) withDefaults() (Config, error) {
	if c.Token == "" {
		return c, errors.New("telegram: token is required")
	}
	if strings.ContainsAny(c.Token, "/?#% ") {
		return c, errors.New("telegram: token has characters a bot token never has")
	}
	if c.APIURL == "" {
		c.APIURL = DefaultAPIURL
	}
	c.APIURL = strings.TrimRight(c.APIURL, "/")
	switch c.Mode {
	case "":
		c.Mode = ModePolling
	case ModePolling:
	case ModeWebhook:
		if c.WebhookURL == "" {
			return c, errors.New("telegram: webhook mode needs a webhook URL")
		}
		if !validSecret(c.WebhookSecret) {
			return c, errors.New("telegram: webhook mode needs a webhook secret of 1–256 characters A-Z a-z 0-9 _ -")
		}
	default:
		return c, fmt.Errorf("telegram: unknown mode %q (want polling or webhook)", c.Mode)
	}
	if c.HTTPClient == nil {
		// One host takes every call: keep enough idle connections for concurrent sends (the
		// default transport keeps two).
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 256, 256
		c.HTTPClient = &http.Client{Transport: tr}
	}
	if c.Offsets == nil {
		c.Offsets = &MemoryOffsets{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.LeaseOwner == "" {
		c.LeaseOwner = kit.NewOwner()
	}
	if c.PollTimeout <= 0 {
		c.PollTimeout = 25 * time.Second
	}
	if c.MaxRetryWait <= 0 {
		c.MaxRetryWait = 30 * time.Second
	}
	if c.CallTimeout <= 0 {
		c.CallTimeout = 30 * time.Second
	}
	return c, nil
}

func validSecret(s string) bool {
	if len(s) == 0 || len(s) > 256 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}
