package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Client connects to the test Redis on 127.0.0.1:6379 (CI starts one) and closes the client
// when the test ends.
func Client(tb testing.TB) redis.UniversalClient {
	tb.Helper()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		tb.Fatalf("the tests need Redis on 127.0.0.1:6379: %v", err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// Prefix returns a fresh key prefix whose keys are deleted (SCAN+DEL) when the test ends; the
// server is never flushed.
func Prefix(tb testing.TB, c redis.UniversalClient) string {
	tb.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	prefix := "sbtest:" + hex.EncodeToString(b[:]) + ":"
	tb.Cleanup(func() {
		ctx := context.Background()
		it := c.Scan(ctx, 0, prefix+"*", 500).Iterator()
		for it.Next(ctx) {
			c.Del(ctx, it.Val())
		}
		if err := it.Err(); err != nil {
			tb.Errorf("cleaning up %s: %v", prefix, err)
		}
	})
	return prefix
}
