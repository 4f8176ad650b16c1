package rdb

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchboard-bot/switchboard/internal/redisscan"
)

// Hint is one ready-stream entry: conversation Tag may have work.
type Hint struct {
	ID  string
	Tag string
}

// EnsureGroup creates the workers' consumer group on the ready stream (and the stream) when
// missing; it reads from the start so hints added before the group existed are served.
func (s *Store) EnsureGroup(ctx context.Context) error {
	err := s.c.XGroupCreateMkStream(ctx, s.ReadyKey(), s.group, "0").Err()
	if err != nil && !redis.HasErrorPrefix(err, "BUSYGROUP") {
		return fmt.Errorf("rdb: create consumer group: %w", err)
	}
	return nil
}

// ReadHints reads up to count new hints for consumer, blocking up to block. No hint is not an
// error.
func (s *Store) ReadHints(ctx context.Context, consumer string, count int, block time.Duration) ([]Hint, error) {
	res, err := s.c.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: s.group, Consumer: consumer, Streams: []string{s.ReadyKey(), ">"},
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
func (s *Store) AutoClaim(ctx context.Context, consumer string, minIdle time.Duration, count int) ([]Hint, error) {
	msgs, _, err := s.c.XAutoClaim(ctx, &redis.XAutoClaimArgs{
		Stream: s.ReadyKey(), Group: s.group, Consumer: consumer, MinIdle: minIdle, Start: "0-0", Count: int64(count),
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
func (s *Store) Touch(ctx context.Context, consumer string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	err := s.c.XClaimJustID(ctx, &redis.XClaimArgs{
		Stream: s.ReadyKey(), Group: s.group, Consumer: consumer, MinIdle: 0, Messages: ids,
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
func (s *Store) PruneConsumers(ctx context.Context, keep string, minIdle time.Duration, max int) ([]string, error) {
	names, err := s.eval(ctx, scriptPrune, []string{s.ReadyKey()}, s.group, minIdle.Milliseconds(), keep, max).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("rdb: prune idle consumers: %w", err)
	}
	return names, nil
}

func toHints(msgs []redis.XMessage) []Hint {
	out := make([]Hint, 0, len(msgs))
	for _, m := range msgs {
		tag, _ := m.Values["c"].(string)
		out = append(out, Hint{ID: m.ID, Tag: tag})
	}
	return out
}

// Pause stops intake: the ready script refuses new runs until Resume.
func (s *Store) Pause(ctx context.Context) error {
	if err := s.c.Set(ctx, s.g("paused"), "1", 0).Err(); err != nil {
		return fmt.Errorf("rdb: pause: %w", err)
	}
	return nil
}

// Resume restarts intake.
func (s *Store) Resume(ctx context.Context) error {
	if err := s.c.Del(ctx, s.g("paused")).Err(); err != nil {
		return fmt.Errorf("rdb: resume: %w", err)
	}
	return nil
}

// Paused reports whether intake is paused.
func (s *Store) Paused(ctx context.Context) (bool, error) {
	n, err := s.c.Exists(ctx, s.g("paused")).Result()
	if err != nil {
		return false, fmt.Errorf("rdb: read pause flag: %w", err)
	}
	return n == 1, nil
}

// Pending is the global count of admitted runs not yet finished.
func (s *Store) Pending(ctx context.Context) (int64, error) {
	n, err := s.c.HLen(ctx, s.admittedKey()).Result()
	if err != nil {
		return 0, fmt.Errorf("rdb: read pending count: %w", err)
	}
	return n, nil
}

// Stats reads the counters hash.
func (s *Store) Stats(ctx context.Context) (map[string]int64, error) {
	m, err := s.c.HGetAll(ctx, s.g("stats")).Result()
	if err != nil {
		return nil, fmt.Errorf("rdb: read stats: %w", err)
	}
	out := make(map[string]int64, len(m))
	for k, v := range m {
		n, _ := strconv.ParseInt(v, 10, 64)
		out[k] = n
	}
	return out, nil
}

// AddStats adds to counters and removes done (Member) from the admitted set directly (paths
// outside a worker's settle batch).
func (s *Store) AddStats(ctx context.Context, counters map[string]int64, done []string) error {
	return s.Settle(ctx, Settlement{Counters: counters, Done: done})
}

// ConvState is one scheduled conversation as the admin sees it.
type ConvState struct {
	Tag     string
	Conv    string
	Queued  int64
	Active  string
	Owner   string
	Attempt int
}

// ConvState reads tag's state; ok is false when the conversation is not scheduled.
func (s *Store) ConvState(ctx context.Context, tag string) (st ConvState, ok bool, err error) {
	var h *redis.MapStringStringCmd
	var l *redis.IntCmd
	// One tag: both keys share a slot, so the pipeline is one round trip even on a cluster.
	_, err = s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		h = p.HGetAll(ctx, s.stKey(tag))
		l = p.LLen(ctx, s.qKey(tag))
		return nil
	})
	if err != nil {
		return ConvState{}, false, fmt.Errorf("rdb: read state of %s: %w", tag, err)
	}
	m := h.Val()
	if len(m) == 0 {
		return ConvState{Tag: tag, Queued: l.Val()}, l.Val() > 0, nil
	}
	n, _ := strconv.Atoi(m["n"])
	return ConvState{Tag: tag, Conv: m["k"], Queued: l.Val(), Active: m["a"], Owner: m["o"], Attempt: n}, true, nil
}

// MailboxIDs lists the run ids queued in tag, head first.
func (s *Store) MailboxIDs(ctx context.Context, tag string) ([]string, error) {
	es, err := s.c.LRange(ctx, s.qKey(tag), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("rdb: list mailbox of %s: %w", tag, err)
	}
	out := make([]string, len(es))
	for i, e := range es {
		out[i], _ = SplitEntry(e)
	}
	return out, nil
}

// ScanConvs calls fn with the tag of every scheduled conversation, on every master of a
// cluster, one call at a time.
func (s *Store) ScanConvs(ctx context.Context, fn func(tag string) error) error {
	err := redisscan.Each(ctx, s.c, s.prefix+"{conv:*}:st", func(key string) error {
		return fn(strings.TrimSuffix(strings.TrimPrefix(key, s.prefix), ":st"))
	})
	if err != nil {
		return fmt.Errorf("rdb: scan conversations: %w", err)
	}
	return nil
}

// PublishCancel tells every worker process that runID was cancelled.
func (s *Store) PublishCancel(ctx context.Context, runID string) error {
	if err := s.c.Publish(ctx, s.CancelChannel(), runID).Err(); err != nil {
		return fmt.Errorf("rdb: publish cancel of %s: %w", runID, err)
	}
	return nil
}

// SubscribeCancels subscribes to cancel notices; the caller closes the returned PubSub.
func (s *Store) SubscribeCancels(ctx context.Context) (*redis.PubSub, error) {
	ps := s.c.Subscribe(ctx, s.CancelChannel())
	if _, err := ps.Receive(ctx); err != nil {
		_ = ps.Close()
		return nil, fmt.Errorf("rdb: subscribe to cancels: %w", err)
	}
	return ps, nil
}
