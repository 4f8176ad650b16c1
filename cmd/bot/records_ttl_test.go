package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchboard-bot/switchboard/config"
	"github.com/switchboard-bot/switchboard/core/threads"
	"github.com/switchboard-bot/switchboard/internal/poll"
	"github.com/switchboard-bot/switchboard/internal/redisscan"
)

// TestRunRecordsAreKeptADay proves an answered message's run records — the run's outcome and
// result, the closing message's record and its intent — are kept a day, not a week: Redis holds
// one day's traffic of them. More tries allowed keep them an hour a try.
func TestRunRecordsAreKeptADay(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		attempts int
		want     time.Duration
	}{
		{"default attempts", 0, 24 * time.Hour},
		{"48 attempts", 48, 48 * time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newE2E(t, func(c *config.Config) {
				if tc.attempts > 0 {
					c.Runs.MaxAttempts = tc.attempts
				}
			})
			e.start()
			e.tg.PushPrivate(ann, "hello")
			e.waitAnswers(ann.ID, 1)

			c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
			defer c.Close()
			ctx := context.Background()
			// The records are written before the answer is sent, the closing message's record
			// right after it: wait for that one.
			var keys []string
			poll.Until(t, "the closing message's record", func() bool {
				keys = keys[:0]
				err := redisscan.Each(ctx, c, e.cfg.Redis.Prefix+"*run:*", func(k string) error {
					keys = append(keys, k)
					return nil
				})
				return err == nil && hasSuffix(keys, ":out:final")
			})
			for _, suffix := range []string{":out:final", ":out:final.intent"} {
				if !hasSuffix(keys, suffix) {
					t.Errorf("no record *%s among %v", suffix, keys)
				}
			}
			var runHash bool
			for _, k := range keys {
				ttl, err := c.PTTL(ctx, k).Result()
				if err != nil || ttl <= tc.want-time.Minute || ttl > tc.want {
					t.Errorf("TTL of %s = %v, %v; want %v", k, ttl, err, tc.want)
				}
				runHash = runHash || strings.Contains(k, "}:run:")
			}
			if !runHash {
				t.Errorf("no run record {conv:…}:run:<id> among %v", keys)
			}
		})
	}
}

func hasSuffix(keys []string, suffix string) bool {
	return slices.ContainsFunc(keys, func(k string) bool { return strings.HasSuffix(k, suffix) })
}

func TestRecordTTL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		attempts int
		want     time.Duration
	}{{0, threads.DefaultOutcomeTTL}, {5, 24 * time.Hour}, {24, 24 * time.Hour}, {25, 25 * time.Hour}, {1000, 1000 * time.Hour}} {
		if got := recordTTL(tc.attempts); got != tc.want {
			t.Errorf("recordTTL(%d) = %v, want %v", tc.attempts, got, tc.want)
		}
	}
}
