package main

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/switchboard-bot/switchboard/core/runs"
)

// TestRedisLeaseCensus proves the census behind shared lease sets, on a real Redis and on the
// embedded store: attending counts each owner once, leaving takes one out at once, and an owner
// who stops attending drops out once its time lapses.
func TestRedisLeaseCensus(t *testing.T) {
	onRealAndEmbeddedRedis(t, func(t *testing.T, client redis.UniversalClient, prefix string, embedded bool) {
		ctx := context.Background()
		l := redisLease{c: client, prefix: prefix}
		const g = "discord:1:2"
		attend := func(owner string, ttl time.Duration, want int) {
			t.Helper()
			n, err := l.Attend(ctx, g, owner, ttl)
			if err != nil || n != want {
				t.Fatalf("%s attends: %d, %v; want %d alive", owner, n, err, want)
			}
		}
		attend("a", time.Minute, 1)
		attend("b", time.Minute, 2)
		attend("a", time.Minute, 2)
		if err := l.Leave(ctx, g, "b"); err != nil {
			t.Fatal(err)
		}
		attend("a", time.Minute, 1)
		attend("c", 30*time.Millisecond, 2)
		waitFor(t, "c's attendance to lapse", 5*time.Second, func() bool {
			n, err := l.Attend(ctx, g, "a", time.Minute)
			return err == nil && n == 1
		})
		if ms := client.PTTL(ctx, prefix+"intake:members:"+g).Val(); !embedded && (ms <= 0 || ms > 3*time.Minute) {
			t.Errorf("the census key expires in %v, want within three TTLs", ms)
		}
	})
}

// onRealAndEmbeddedRedis runs f on the shared test Redis and on the embedded store (embedded
// true), each under a fresh key prefix it cleans up after.
func onRealAndEmbeddedRedis(t *testing.T, f func(t *testing.T, client redis.UniversalClient, prefix string, embedded bool)) {
	t.Helper()
	for _, url := range []string{testRedisURL, ""} {
		name := "redis"
		if url == "" {
			name = "embedded"
		}
		t.Run(name, func(t *testing.T) {
			client, closeRedis, _, err := runs.OpenRedis(context.Background(), runs.RedisOptions{URL: url, ConnectTimeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer closeRedis()
			prefix := uniquePrefix()
			defer cleanRedis(t, prefix)
			f(t, client, prefix, url == "")
		})
	}
}
