// Package threads keeps conversation state in Redis: which thread a conversation is on, the
// thread's session log (so a restart continues the conversation), pending clarifications, short
// tokens for platforms with tiny callback data, per-thread settings, and idempotency records of
// run outcomes (so a replayed run never posts twice).
//
// A conversation is named by an opaque key the caller chooses (e.g. "telegram/-/12345/7"). All
// keys of one conversation share a Redis Cluster hash tag, and every multi-key step is one Lua
// script, so the store works the same on a single Redis, Sentinel, Cluster, or the embedded
// miniredis. Session events are opaque JSON: this package never looks inside them.
//
// The hot path is a few round trips: Intake (the router's claim and reads, one pipeline),
// BeginRun and FinishRun (a run's start and end, one script each on the conversation's tag),
// Lookup (delivery's record reads, one pipeline). Pipelines may span slots; scripts never do.
package threads

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults applied by New to zero Options fields.
const (
	DefaultPrefix                 = "sb:"
	DefaultHistoryTurns           = 50
	DefaultClarificationTTL       = time.Hour
	DefaultClarificationRetention = 24 * time.Hour
	// DefaultOutcomeTTL keeps a run's records for a day: every attempt of a run falls within
	// minutes of its first (five tries ride out a few minutes of model outage; a lease is
	// taken over in seconds), and each answered message leaves about 0.8 KB of records, so
	// Redis holds one day's traffic of them rather than a week's.
	DefaultOutcomeTTL = 24 * time.Hour
)

// maxConvKeyLen bounds conversation keys; real ones are well under 200 bytes.
const maxConvKeyLen = 1024

// Options configure a Store. Zero fields take the defaults above.
type Options struct {
	// Prefix starts every key the store writes ("sb:" by default); tests and tenants use their own.
	Prefix string
	// HistoryTurns is how many turns of a session log are kept; see AppendTurn.
	HistoryTurns int
	// ClarificationTTL is how long a clarification stays answerable when PutClarification is
	// given no ExpiresAt.
	ClarificationTTL time.Duration
	// ClarificationRetention is how long a clarification's record is kept after it expires, so a
	// late click gets ErrClarificationExpired rather than ErrClarificationNotFound. The Redis TTL
	// of the record is ExpiresAt + ClarificationRetention.
	ClarificationRetention time.Duration
	// OutcomeTTL is how long FinishRun, RecordOutbound and RecordOutcome remember a run (a day
	// by default).
	OutcomeTTL time.Duration
	// Now is the clock (time.Now by default). Expiry of clarifications is judged by it, so tests
	// can move time.
	Now func() time.Time
}

// Store is conversation state in Redis. It is safe for concurrent use, and several Stores (in
// several processes) on the same Redis and prefix share the state.
type Store struct {
	r    rdb
	keys keyspace
	opts Options
	ids  idGen
}

// New returns a Store on client. It does not contact Redis; the first call does.
func New(client redis.UniversalClient, opts Options) *Store {
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	if opts.HistoryTurns <= 0 {
		opts.HistoryTurns = DefaultHistoryTurns
	}
	if opts.ClarificationTTL <= 0 {
		opts.ClarificationTTL = DefaultClarificationTTL
	}
	if opts.ClarificationRetention <= 0 {
		opts.ClarificationRetention = DefaultClarificationRetention
	}
	if opts.OutcomeTTL <= 0 {
		opts.OutcomeTTL = DefaultOutcomeTTL
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Store{r: newRDB(client), keys: keyspace{prefix: opts.Prefix}, opts: opts}
}

// Thread is the current thread of a conversation.
type Thread struct {
	// ID is unique and sorts by creation time (ULID-shaped, 26 characters). It changes on Reset.
	ID string
	// ConvKey is the conversation the thread belongs to.
	ConvKey string
	// CreatedAt is when this thread (not the conversation) began, to the millisecond.
	CreatedAt time.Time
	// Settings are the per-thread preferences (SetSettings); Reset carries them over.
	Settings Settings
	// SessionID names the agent session whose event log this thread holds; the lead layer hands
	// it to the agent runtime. It is unique and changes together with ID.
	SessionID string
}

// Settings are a thread's preferences. The zero value means "use the configured defaults".
type Settings struct {
	// Model overrides the configured model for this thread when non-empty.
	Model string `json:"model,omitempty"`
	// Extra holds further string preferences by name, for callers that need more than Model.
	Extra map[string]string `json:"extra,omitempty"`
}

func checkConvKey(convKey string) error {
	if convKey == "" || len(convKey) > maxConvKeyLen {
		return invalid("conversation key must be 1 to %d bytes", maxConvKeyLen)
	}
	return nil
}

// Ensure returns the conversation's thread, creating it if there is none. created reports
// whether this call created it. Concurrent first calls for one conversation (from any number of
// goroutines or processes) all return the same thread, and exactly one of them sees created.
func (s *Store) Ensure(ctx context.Context, convKey string) (th Thread, created bool, err error) {
	if err := checkConvKey(convKey); err != nil {
		return Thread{}, false, fmt.Errorf("threads: ensure: %w", err)
	}
	ck := s.keys.conv(convKey)
	now := s.opts.Now()
	created, fields, err := s.r.ensureThread(ctx, ck.thread, s.ids.next(now), convKey, now, s.ids.next(now))
	if err != nil {
		return Thread{}, false, fmt.Errorf("threads: ensure %q: %w", convKey, err)
	}
	th, err = decodeThread(ck.thread, convKey, fields)
	if err != nil {
		return Thread{}, false, fmt.Errorf("threads: ensure %q: %w", convKey, err)
	}
	return th, created, nil
}

// Get returns the conversation's thread, or ErrThreadNotFound.
func (s *Store) Get(ctx context.Context, convKey string) (Thread, error) {
	if err := checkConvKey(convKey); err != nil {
		return Thread{}, fmt.Errorf("threads: get: %w", err)
	}
	ck := s.keys.conv(convKey)
	fields, err := s.r.hgetall(ctx, ck.thread)
	if err != nil {
		return Thread{}, fmt.Errorf("threads: get %q: %w", convKey, err)
	}
	if len(fields) == 0 {
		return Thread{}, fmt.Errorf("threads: get %q: %w", convKey, ErrThreadNotFound)
	}
	th, err := decodeThread(ck.thread, convKey, fields)
	if err != nil {
		return Thread{}, fmt.Errorf("threads: get %q: %w", convKey, err)
	}
	return th, nil
}

// Reset starts the conversation over (the `new` command), in one atomic step: a new thread id
// and session id, the old session log deleted, and a pending clarification cancelled (taking it
// then returns ErrClarificationCancelled). Settings carry over to the new thread: they are the
// conversation's preferences, not part of what was said. A conversation without a thread gets
// one. Turns that runs of the old thread append later fail with ErrStaleThread.
func (s *Store) Reset(ctx context.Context, convKey string) (Thread, error) {
	if err := checkConvKey(convKey); err != nil {
		return Thread{}, fmt.Errorf("threads: reset: %w", err)
	}
	ck := s.keys.conv(convKey)
	now := s.opts.Now()
	_, _, fields, err := s.r.resetThread(ctx, ck, s.ids.next(now), convKey, now, s.ids.next(now))
	if err != nil {
		return Thread{}, fmt.Errorf("threads: reset %q: %w", convKey, err)
	}
	th, err := decodeThread(ck.thread, convKey, fields)
	if err != nil {
		return Thread{}, fmt.Errorf("threads: reset %q: %w", convKey, err)
	}
	return th, nil
}

// SetSettings replaces the settings of the conversation's thread. It returns ErrThreadNotFound
// when the conversation has no thread (call Ensure first).
func (s *Store) SetSettings(ctx context.Context, convKey string, settings Settings) error {
	if err := checkConvKey(convKey); err != nil {
		return fmt.Errorf("threads: set settings: %w", err)
	}
	b, err := encodeSettings(settings)
	if err != nil {
		return fmt.Errorf("threads: set settings %q: %w", convKey, err)
	}
	ok, err := s.r.setSettings(ctx, s.keys.conv(convKey).thread, b)
	if err != nil {
		return fmt.Errorf("threads: set settings %q: %w", convKey, err)
	}
	if !ok {
		return fmt.Errorf("threads: set settings %q: %w", convKey, ErrThreadNotFound)
	}
	return nil
}

// GetSettings returns the settings of the conversation's thread, or ErrThreadNotFound.
func (s *Store) GetSettings(ctx context.Context, convKey string) (Settings, error) {
	th, err := s.Get(ctx, convKey)
	if err != nil {
		return Settings{}, err
	}
	return th.Settings, nil
}
