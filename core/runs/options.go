package runs

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/switchboard-bot/switchboard/core/conv"
)

// Followup is what a message does when its conversation already has a run in progress.
type Followup string

// The follow-up policies.
const (
	// FollowupQueue (the default) queues the message behind the active run.
	FollowupQueue Followup = "queue"
	// FollowupInterrupt cancels the active run, drops the queued ones, and runs the newest.
	FollowupInterrupt Followup = "interrupt"
)

// Options configure a Queue and its Pools. Zero values take the documented defaults.
type Options struct {
	// Prefix starts every Redis key (default "sb:").
	Prefix string
	// Workers is the number of worker goroutines per Pool (runs.workers; default 4).
	Workers int
	// Lease is how long a worker owns a conversation without a heartbeat (default 10s). The
	// heartbeat renews every third of it; a dead worker's conversation is taken over about one
	// lease after its last heartbeat (within a lease and a recoverer tick).
	Lease time.Duration
	// MaxAttempts bounds tries of a run failing with transient errors, and of a run whose
	// workers keep dying, before it is dead-lettered (default 5).
	MaxAttempts int
	// RetryBase and RetryMax shape the exponential backoff with jitter between attempts
	// (defaults 500ms and 30s).
	RetryBase, RetryMax time.Duration
	// OutageRetryBase is the first wait before retrying a run that failed with an
	// *UnavailableError (default 5s); later waits are 4×, 12× and 24× it, then doubling, capped
	// at 30 min, with jitter over their last quarter.
	OutageRetryBase time.Duration
	// Followup is the default follow-up policy (runs.followup; default queue).
	Followup Followup
	// FollowupFor, when set, picks the policy per conversation (a per-thread setting); an empty
	// answer falls back to Followup.
	FollowupFor func(conv.Key) Followup
	// MaxPerConversation bounds queued runs per conversation (default 50; negative: no limit).
	MaxPerConversation int
	// MaxPending bounds admitted, unfinished runs over all conversations (default 10000;
	// negative: no limit).
	MaxPending int64
	// Signer verifies envelopes before a Pool runs them. Required for NewPool.
	Signer *Signer
	// Logger receives operator logs (default slog.Default()).
	Logger *slog.Logger
	// Consumer names this process among the workers (default host-pid-random).
	Consumer string
	// OnRecovery, when set, is told of each recovery a Pool makes, for metrics: n hints
	// reclaimed from a silent worker (RecoveryTakeover), a run queued but never scheduled and
	// now hinted (RecoveryRescue), a run tried again after a transient failure (RecoveryRetry).
	// It must return quickly.
	OnRecovery func(kind Recovery, n int)
}

// Recovery is a kind of recovery a Pool makes (Options.OnRecovery).
type Recovery string

// The recoveries.
const (
	RecoveryTakeover Recovery = "takeover"
	RecoveryRescue   Recovery = "rescue"
	RecoveryRetry    Recovery = "retry"
)

// recovered tells OnRecovery, if set.
func (o Options) recovered(kind Recovery, n int) {
	if o.OnRecovery != nil && n > 0 {
		o.OnRecovery(kind, n)
	}
}

func (o Options) withDefaults() (Options, error) {
	if o.Prefix == "" {
		o.Prefix = "sb:"
	}
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.Lease <= 0 {
		o.Lease = 10 * time.Second
	}
	if o.Lease < 300*time.Millisecond {
		return o, fmt.Errorf("runs: lease %s is under 300ms", o.Lease)
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 5
	}
	if o.RetryBase <= 0 {
		o.RetryBase = 500 * time.Millisecond
	}
	if o.RetryMax <= 0 {
		o.RetryMax = 30 * time.Second
	}
	if o.OutageRetryBase <= 0 {
		o.OutageRetryBase = 5 * time.Second
	}
	switch o.Followup {
	case "":
		o.Followup = FollowupQueue
	case FollowupQueue, FollowupInterrupt:
	default:
		return o, fmt.Errorf("runs: unknown follow-up policy %q (want queue or interrupt)", o.Followup)
	}
	if o.MaxPerConversation == 0 {
		o.MaxPerConversation = 50
	}
	if o.MaxPending == 0 {
		o.MaxPending = 10000
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Consumer == "" {
		host, _ := os.Hostname()
		var b [4]byte
		_, _ = rand.Read(b[:])
		o.Consumer = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	return o, nil
}

func (o Options) followupFor(k conv.Key) Followup {
	if o.FollowupFor != nil {
		if f := o.FollowupFor(k); f == FollowupQueue || f == FollowupInterrupt {
			return f
		}
	}
	return o.Followup
}

func limitOrZero[T int | int64](v T) T {
	if v < 0 {
		return 0
	}
	return v
}
