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
// A Store is a handful of components, one per concern, each in the file named after it
// (conversations.go, history.go, clarifications.go, inbox.go, records.go, tokens.go), and all of
// the store's Redis in one layer beside them (rdb, in redis.go and redis_<component>.go).
//
// The hot path is a few round trips: Inbox.Intake (the router's claim and reads, one pipeline),
// History.BeginRun and History.FinishRun (a run's start and end, one script each on the
// conversation's tag), Records.Lookup (delivery's record reads, one pipeline). Pipelines may
// span slots; scripts never do.
package threads

import (
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
	// ClarificationTTL is how long a clarification stays answerable when Clarifications.Put is
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

// Store is conversation state in Redis, held by components, one per concern: Conversations (the
// threads and their settings), History (session logs and run records), Clarifications (open
// questions and approvals), Inbox (the router's claims, marks and access lists, and Intake),
// Records (a run's outbound records and outcomes) and Tokens (short callback tokens). New makes
// them together on one client, prefix and options. Each is safe for concurrent use, and several
// Stores (in several processes) on the same Redis and prefix share the state.
type Store struct {
	conversations  *Conversations
	history        *History
	clarifications *Clarifications
	inbox          *Inbox
	records        *Records
	tokens         *Tokens
}

// shared is what every component of one Store holds: the Redis layer (every command and script
// goes through it), the keyspace, the options with their defaults applied, and the generator of
// the ids the store makes (threads, sessions, clarifications).
type shared struct {
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
	sh := &shared{r: newRDB(client), keys: keyspace{prefix: opts.Prefix}, opts: opts}
	return &Store{
		conversations:  &Conversations{sh},
		history:        &History{sh},
		clarifications: &Clarifications{sh},
		inbox:          &Inbox{sh},
		records:        &Records{sh},
		tokens:         &Tokens{sh},
	}
}

// Conversations returns the store's threads of conversations.
func (s *Store) Conversations() *Conversations { return s.conversations }

// History returns the store's session logs and run records.
func (s *Store) History() *History { return s.history }

// Clarifications returns the store's open questions and approvals.
func (s *Store) Clarifications() *Clarifications { return s.clarifications }

// Inbox returns the store's claims, marks and access lists: what the router routes by.
func (s *Store) Inbox() *Inbox { return s.inbox }

// Records returns the store's outbound records and outcomes of runs.
func (s *Store) Records() *Records { return s.records }

// Tokens returns the store's short tokens.
func (s *Store) Tokens() *Tokens { return s.tokens }

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
