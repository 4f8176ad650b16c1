package rdb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Hints are the ready stream, where a conversation that may have work is announced, and the
// workers' consumer group on it: reading hints, taking over a silent consumer's, keeping held ones
// alive (Touch), listing the queued ones and pruning dead consumers. Spent hints are acknowledged
// by the settlement (Counters.Settle).
type Hints struct{ *conn }

// ReadyKey is the stream of hints: "conversation <tag> may have work".
func (s *Hints) ReadyKey() string { return s.readyKey() }

// Hint is one ready-stream entry: conversation Tag may have work.
type Hint struct {
	ID  string
	Tag string
}

// EnsureGroup creates the workers' consumer group on the ready stream (and the stream) when
// missing; it reads from the start so hints added before the group existed are served.
func (s *Hints) EnsureGroup(ctx context.Context) error {
	err := s.c.XGroupCreateMkStream(ctx, s.readyKey(), s.group, "0").Err()
	if err != nil && !redis.HasErrorPrefix(err, "BUSYGROUP") {
		return fmt.Errorf("rdb: create consumer group: %w", err)
	}
	return nil
}

// Read reads up to count new hints for consumer, blocking up to block. No hint is not an
// error.
func (s *Hints) Read(ctx context.Context, consumer string, count int, block time.Duration) ([]Hint, error) {
	res, err := s.c.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: s.group, Consumer: consumer, Streams: []string{s.readyKey(), ">"},
		Count: int64(count), Block: block,
	}).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("rdb: read hints: %w", err)
	}
	var out []Hint
	for _, st := range res {
		out = append(out, toHints(st.Messages)...)
	}
	return out, nil
}

// AutoClaim moves up to count hints idle for at least minIdle (their holder stopped heartbeating)
// to consumer.
func (s *Hints) AutoClaim(ctx context.Context, consumer string, minIdle time.Duration, count int) ([]Hint, error) {
	msgs, _, err := s.c.XAutoClaim(ctx, &redis.XAutoClaimArgs{
		Stream: s.readyKey(), Group: s.group, Consumer: consumer, MinIdle: minIdle, Start: "0-0", Count: int64(count),
	}).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("rdb: autoclaim hints: %w", err)
	}
	return toHints(msgs), nil
}

// Touch resets the idle time of hints consumer holds, so AutoClaim leaves them alone (part of the
// heartbeat).
func (s *Hints) Touch(ctx context.Context, consumer string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	err := s.c.XClaimJustID(ctx, &redis.XClaimArgs{
		Stream: s.readyKey(), Group: s.group, Consumer: consumer, MinIdle: 0, Messages: ids,
	}).Err()
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("rdb: touch %d hints: %w", len(ids), err)
	}
	return nil
}

// PruneConsumers deletes up to max consumers of the workers' group that hold no pending hint and
// have been idle for at least minIdle, except keep, and returns their names. Every process start
// adds a consumer; this removes dead processes' names once the recoverer has reclaimed their
// hints (see the prune script for why it is safe).
func (s *Hints) PruneConsumers(ctx context.Context, keep string, minIdle time.Duration, max int) ([]string, error) {
	names, err := s.eval(ctx, scriptPrune, []string{s.readyKey()}, s.group, minIdle.Milliseconds(), keep, max).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("rdb: prune idle consumers: %w", err)
	}
	return names, nil
}

// hintsPage is how many ready-stream entries one read of Hints.Queued takes.
const hintsPage = 1000

// Queued returns the conversation tags of every hint in the ready stream. Spent hints are
// acknowledged and deleted together, so these are the hints not yet read, or read and not yet
// spent: each conversation named is scheduled to be served, however long it waits for a worker.
// It reads the whole stream (in pages), which holds about one hint per scheduled conversation:
// for the backstop scan, which visits every conversation anyway.
func (s *Hints) Queued(ctx context.Context) (map[string]struct{}, error) {
	tags := map[string]struct{}{}
	start := "-"
	for {
		msgs, err := s.c.XRangeN(ctx, s.readyKey(), start, "+", hintsPage).Result()
		if err != nil {
			return nil, fmt.Errorf("rdb: read the queued hints: %w", err)
		}
		for _, h := range toHints(msgs) {
			tags[h.Tag] = struct{}{}
		}
		if len(msgs) < hintsPage {
			return tags, nil
		}
		start = "(" + msgs[len(msgs)-1].ID
	}
}

func toHints(msgs []redis.XMessage) []Hint {
	out := make([]Hint, 0, len(msgs))
	for _, m := range msgs {
		tag, _ := m.Values["c"].(string)
		out = append(out, Hint{ID: m.ID, Tag: tag})
	}
	return out
}
