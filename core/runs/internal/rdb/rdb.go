// Package rdb holds every Redis command and Lua script of the run queue, and nothing else: the
// key layout, the scripts (scripts.go) and one typed method per operation. It knows entries as
// opaque bytes; envelopes, signatures and workers live in package runs.
//
// A Store is a handful of components on one connection, one per part of the queue's Redis, each
// in the file named after it: Mailboxes (a conversation's mailbox and state), Leases (the
// workers' hold on a conversation), Admissions (the global gate and pending count), Hints (the
// ready stream and its consumer group), Rescues (the unhinted index), DeadLetters (the
// dead-letter stream) and Counters (the totals, their recent buckets, and the settlement).
package rdb

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/switchboard-bot/switchboard/internal/redisbatch"
)

// Store is the queue's view of Redis: the connection and the components on it. All keys start
// with the prefix; conversation keys carry the conversation's hash tag, global keys the tag
// {global}.
type Store struct {
	*conn
	mailboxes   *Mailboxes
	leases      *Leases
	admissions  *Admissions
	hints       *Hints
	rescues     *Rescues
	deadLetters *DeadLetters
	counters    *Counters
}

// conn is what every component of one Store holds: the client, the pipeline its calls share,
// the key prefix and the workers' consumer group, and the keys built from them.
type conn struct {
	c      redis.UniversalClient
	pipe   *redisbatch.Batcher
	prefix string
	group  string
	// clock, when set (tests), replaces Redis's clock for the recent-throughput buckets: ms.
	clock func() int64
}

// New returns a store on client c under prefix.
func New(c redis.UniversalClient, prefix string) *Store {
	cn := &conn{c: c, pipe: redisbatch.New(c), prefix: prefix, group: "workers"}
	return &Store{
		conn:        cn,
		mailboxes:   &Mailboxes{cn},
		leases:      &Leases{cn},
		admissions:  &Admissions{cn},
		hints:       &Hints{cn},
		rescues:     &Rescues{cn},
		deadLetters: &DeadLetters{cn},
		counters:    &Counters{cn},
	}
}

// Client is the underlying client.
func (s *Store) Client() redis.UniversalClient { return s.c }

// Mailboxes returns the conversations' mailboxes.
func (s *Store) Mailboxes() *Mailboxes { return s.mailboxes }

// Leases returns the workers' leases on conversations.
func (s *Store) Leases() *Leases { return s.leases }

// Admissions returns the global gate.
func (s *Store) Admissions() *Admissions { return s.admissions }

// Hints returns the ready stream.
func (s *Store) Hints() *Hints { return s.hints }

// Rescues returns the unhinted index.
func (s *Store) Rescues() *Rescues { return s.rescues }

// DeadLetters returns the dead-letter stream.
func (s *Store) DeadLetters() *DeadLetters { return s.deadLetters }

// Counters returns the totals and the settlement.
func (s *Store) Counters() *Counters { return s.counters }

func (cn *conn) stKey(tag string) string { return cn.prefix + tag + ":st" }
func (cn *conn) qKey(tag string) string  { return cn.prefix + tag + ":q" }
func (cn *conn) g(name string) string    { return cn.prefix + "{global}:" + name }

// readyKey is the stream of hints (Hints.ReadyKey).
func (cn *conn) readyKey() string { return cn.g("ready") }

// deadKey is the dead-letter stream (DeadLetters.DeadKey).
func (cn *conn) deadKey() string { return cn.g("dead") }

// unhintedKey is the unhinted index (Rescues.UnhintedKey).
func (cn *conn) unhintedKey() string { return cn.g("unhinted") }

// admittedKey is the hash of admitted, unfinished runs (see scripts.go).
func (cn *conn) admittedKey() string { return cn.g("admitted") }

// recentKey is the hash of recent per-minute counters (see recent.go).
func (cn *conn) recentKey() string { return cn.g("recent") }

// cancelChannel is the pub/sub channel of cancels (Mailboxes.CancelChannel).
func (cn *conn) cancelChannel() string { return cn.prefix + "cancel" }

// recentNow is the time the scripts bucket and read at: 0 asks for Redis's clock.
func (cn *conn) recentNow() int64 {
	if cn.clock != nil {
		return cn.clock()
	}
	return 0
}

// eval runs script on keys in a pipeline shared with concurrent callers (internal/redisbatch):
// EVALSHA, and EVAL when Redis does not know the script yet. A ctx already ended fails at once;
// one that ends while the call waits does not withdraw it.
func (cn *conn) eval(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	return cn.pipe.Eval(ctx, script, keys, args...)
}

func isNoScript(err error) bool {
	return redis.HasErrorPrefix(err, "NOSCRIPT")
}

func b2s(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
