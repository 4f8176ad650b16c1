package router

import (
	"context"
	"time"

	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/core/runs"
	"github.com/switchboard-bot/switchboard/core/threads"
)

// Queue is what the router asks of the run queue: taking runs in, and the admin commands'
// view and control of it. *runs.Queue implements it.
type Queue interface {
	Enqueuer
	Admin
}

// Enqueuer takes runs in.
type Enqueuer interface {
	// Enqueue appends env to its conversation's mailbox.
	Enqueue(ctx context.Context, env *runs.Envelope) error
	// EnqueueOnce is Enqueue, once per event: a second call for the same event is refused
	// (runs.ErrDuplicate) for ttl.
	EnqueueOnce(ctx context.Context, env *runs.Envelope, event string, ttl time.Duration) error
	// SeenKey is the key EnqueueOnce marks an event with (the router's dedupe claim shares its
	// hash slot).
	SeenKey(c conv.Key, event string) string
	// Paused reports whether the bot takes no new requests.
	Paused(ctx context.Context) (bool, error)
}

// Admin is the queue as the admin commands see and steer it.
type Admin interface {
	Cancel(ctx context.Context, conv conv.Key, runID string) (runs.Cancelled, error)
	ConvDepth(ctx context.Context, conv conv.Key) (runs.ConvDepth, error)
	Depth(ctx context.Context) (runs.Depth, error)
	Stats(ctx context.Context) (runs.Stats, error)
	Recent(ctx context.Context) (runs.Recent, error)
	DeadLetters(ctx context.Context, limit int) ([]runs.DeadLetter, error)
	Replay(ctx context.Context, runID string) (string, error)
	Drop(ctx context.Context, runID string) error
	Pause(ctx context.Context) error
	Resume(ctx context.Context) error
}

// Signer signs the envelopes the router queues. *runs.Signer implements it.
type Signer interface {
	Sign(env *runs.Envelope)
}

// Inbox is where the router claims inbound events and keeps what it routes them by: marks, and
// the runtime allow and deny lists. *threads.Inbox implements it.
type Inbox interface {
	// Intake reads and claims, in one round trip, what an inbound message needs.
	Intake(ctx context.Context, req threads.IntakeRequest) (threads.IntakeResult, error)
	Claims
	AllowUser(ctx context.Context, platform, userID string) error
	DenyUser(ctx context.Context, platform, userID string) error
}

// Claims are the one-time claims and marks: an event handled once, a decision taken once.
type Claims interface {
	Claim(ctx context.Context, key string, ttl time.Duration) (bool, error)
	CompleteClaim(ctx context.Context, key, token string, ttl time.Duration) error
	ReleaseClaim(ctx context.Context, key, token string) error
	Release(ctx context.Context, key string) error
	Mark(ctx context.Context, key string, value []byte, ttl time.Duration) error
	Marked(ctx context.Context, key string) (value []byte, found bool, err error)
	Unmark(ctx context.Context, key string) error
}

// Clarifications are the open questions and approvals of conversations. *threads.Clarifications
// implements it.
type Clarifications interface {
	Get(ctx context.Context, id string) (threads.Clarification, error)
	Pending(ctx context.Context, convKey string) (c threads.Clarification, ok bool, err error)
	Take(ctx context.Context, id, answeringUserID string) (threads.Clarification, error)
	Withdraw(ctx context.Context, convKey string) (c threads.Clarification, ok bool, err error)
}

// Threads are the conversations' threads, as the commands start them over and set their
// preferences. *threads.Conversations implements it.
type Threads interface {
	Ensure(ctx context.Context, convKey string) (th threads.Thread, created bool, err error)
	Reset(ctx context.Context, convKey string) (threads.Thread, error)
	SetSettings(ctx context.Context, convKey string, settings threads.Settings) error
}

var (
	_ Queue          = (*runs.Queue)(nil)
	_ Signer         = (*runs.Signer)(nil)
	_ Inbox          = (*threads.Inbox)(nil)
	_ Clarifications = (*threads.Clarifications)(nil)
	_ Threads        = (*threads.Conversations)(nil)
)
