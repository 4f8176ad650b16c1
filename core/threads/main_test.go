package threads

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// realRedisAddr is the Redis every test run needs (CI starts it; see .ci/run).
const realRedisAddr = "127.0.0.1:6379"

// backends are the servers the store's behaviour is proved against: the real Redis and the
// embedded miniredis that `bot chat` runs on when redis.url is empty.
var backends = []struct {
	name   string
	client func(t testing.TB) redis.UniversalClient
}{
	{"redis", realRedis},
	{"miniredis", embeddedRedis},
}

// forEachBackend runs fn as a subtest against every backend.
func forEachBackend(t *testing.T, fn func(t *testing.T, c redis.UniversalClient)) {
	t.Helper()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { fn(t, b.client(t)) })
	}
}

func realRedis(t testing.TB) redis.UniversalClient {
	t.Helper()
	c := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{realRedisAddr}})
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("the tests need a real Redis at %s (CI starts one): %v", realRedisAddr, err)
	}
	return c
}

func embeddedRedis(t testing.TB) redis.UniversalClient {
	t.Helper()
	mr := miniredis.RunT(t)
	c := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{mr.Addr()}})
	t.Cleanup(func() { c.Close() })
	return c
}

// uniquePrefix returns a key prefix no other test (or test run) uses, and removes every key
// under it when the test ends. It never flushes the database.
func uniquePrefix(t testing.TB, c redis.UniversalClient) string {
	t.Helper()
	var b [6]byte
	rand.Read(b[:])
	prefix := "sbtest:" + hex.EncodeToString(b[:]) + ":"
	t.Cleanup(func() { deletePrefix(t, c, prefix) })
	return prefix
}

func deletePrefix(t testing.TB, c redis.UniversalClient, prefix string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var cursor uint64
	for {
		keys, next, err := c.Scan(ctx, cursor, prefix+"*", 500).Result()
		if err != nil {
			t.Errorf("cleaning up %s: %v", prefix, err)
			return
		}
		for _, k := range keys {
			// One key per DEL: the keys of different conversations live in different cluster slots.
			if err := c.Del(ctx, k).Err(); err != nil {
				t.Errorf("cleaning up %s: %v", k, err)
			}
		}
		if cursor = next; cursor == 0 {
			return
		}
	}
}

// newTestStore returns a store under a fresh prefix on c.
func newTestStore(t testing.TB, c redis.UniversalClient, opts Options) *Store {
	t.Helper()
	opts.Prefix = uniquePrefix(t, c)
	return New(c, opts)
}

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func ctxT(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}
