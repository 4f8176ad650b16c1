package rdb

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// DeadLetters is the dead-letter stream: the runs that will not run again, with why, kept for
// the admin to list, replay or drop.
type DeadLetters struct{ *conn }

// DeadKey is the dead-letter stream.
func (s *DeadLetters) DeadKey() string { return s.deadKey() }

// DeadLetter is one entry of the dead-letter stream.
type DeadLetter struct {
	ID       string // stream id
	RunID    string
	Reason   string
	Envelope []byte
	Conv     string
	Attempts int
	At       time.Time
}

// Add records d (its ID is assigned), counts it, as a signature failure too when
// sigFailure, and removes the run of conversation tag from the admitted set.
func (s *DeadLetters) Add(ctx context.Context, tag string, d DeadLetter, sigFailure bool) (string, error) {
	id, err := s.eval(ctx, scriptDead, []string{s.deadKey(), s.admittedKey(), s.g("stats"), s.recentKey()},
		d.RunID, d.Reason, string(d.Envelope), d.Conv, d.Attempts, d.At.UnixMilli(), b2s(sigFailure), Member(tag, d.RunID), s.recentNow()).Text()
	if err != nil {
		return "", fmt.Errorf("rdb: dead-letter %s: %w", d.RunID, err)
	}
	return id, nil
}

// List lists up to limit dead letters, oldest first.
func (s *DeadLetters) List(ctx context.Context, limit int) ([]DeadLetter, error) {
	msgs, err := s.c.XRangeN(ctx, s.deadKey(), "-", "+", int64(limit)).Result()
	if err != nil {
		return nil, fmt.Errorf("rdb: list dead letters: %w", err)
	}
	out := make([]DeadLetter, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, parseDead(m))
	}
	return out, nil
}

// Find returns the dead letter of runID, scanning the stream.
func (s *DeadLetters) Find(ctx context.Context, runID string) (DeadLetter, bool, error) {
	start := "-"
	for {
		msgs, err := s.c.XRangeN(ctx, s.deadKey(), start, "+", 500).Result()
		if err != nil {
			return DeadLetter{}, false, fmt.Errorf("rdb: find dead letter %s: %w", runID, err)
		}
		for _, m := range msgs {
			if d := parseDead(m); d.RunID == runID {
				return d, true, nil
			}
		}
		if len(msgs) < 500 {
			return DeadLetter{}, false, nil
		}
		start = "(" + msgs[len(msgs)-1].ID
	}
}

// Delete removes one dead letter by stream id; it reports whether one was there.
func (s *DeadLetters) Delete(ctx context.Context, id string) (bool, error) {
	n, err := s.c.XDel(ctx, s.deadKey(), id).Result()
	if err != nil {
		return false, fmt.Errorf("rdb: delete dead letter %s: %w", id, err)
	}
	return n == 1, nil
}

// Count is the length of the dead-letter stream.
func (s *DeadLetters) Count(ctx context.Context) (int64, error) {
	n, err := s.c.XLen(ctx, s.deadKey()).Result()
	if err != nil {
		return 0, fmt.Errorf("rdb: count dead letters: %w", err)
	}
	return n, nil
}

func parseDead(m redis.XMessage) DeadLetter {
	str := func(k string) string { v, _ := m.Values[k].(string); return v }
	attempts, _ := strconv.Atoi(str("attempts"))
	at, _ := strconv.ParseInt(str("at"), 10, 64)
	return DeadLetter{ID: m.ID, RunID: str("run"), Reason: str("reason"), Envelope: []byte(str("env")),
		Conv: str("conv"), Attempts: attempts, At: time.UnixMilli(at)}
}
