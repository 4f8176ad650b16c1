package threads

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/switchboard-bot/switchboard/internal/redistest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	code := m.Run()
	redistest.StopCluster()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// realRedisAddr is the Redis every test run needs (CI starts it; see .ci/run).
const realRedisAddr = "127.0.0.1:6379"

// dialer opens a new client to a backend's server; several calls reach the same data, as
// several processes would.
type dialer func(t testing.TB) redis.UniversalClient

// backends are the servers the store's behaviour is proved against: the real Redis, the
// embedded miniredis that `bot chat` runs on when redis.url is empty, and a three-node Redis
// Cluster (started once per test binary, see cluster_test.go).
var backends = []struct {
	name  string
	start func(t testing.TB) dialer
}{
	{"redis", startRealRedis},
	{"miniredis", startEmbeddedRedis},
	{"cluster", startClusterBackend},
}

// forEachBackend runs fn as a subtest against every backend.
func forEachBackend(t *testing.T, fn func(t *testing.T, c redis.UniversalClient)) {
	t.Helper()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { fn(t, b.start(t)(t)) })
	}
}

func startRealRedis(t testing.TB) dialer {
	t.Helper()
	return func(t testing.TB) redis.UniversalClient {
		t.Helper()
		c := redis.NewClient(&redis.Options{Addr: realRedisAddr})
		t.Cleanup(func() { c.Close() })
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		if err := c.Ping(ctx).Err(); err != nil {
			t.Fatalf("the tests need a real Redis at %s (CI starts one): %v", realRedisAddr, err)
		}
		return c
	}
}

func startEmbeddedRedis(t testing.TB) dialer {
	t.Helper()
	mr := miniredis.RunT(t)
	return func(t testing.TB) redis.UniversalClient {
		c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		t.Cleanup(func() { c.Close() })
		return c
	}
}

// realRedis and embeddedRedis return a client of one backend, for tests that need only one.
func realRedis(t testing.TB) redis.UniversalClient     { return startRealRedis(t)(t) }
func embeddedRedis(t testing.TB) redis.UniversalClient { return startEmbeddedRedis(t)(t) }

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
	if cc, ok := c.(*redis.ClusterClient); ok {
		// SCAN walks one node; a cluster's keys are spread over its masters.
		err := cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			return scanDelete(ctx, node, prefix)
		})
		if err != nil {
			t.Errorf("cleaning up %s: %v", prefix, err)
		}
		return
	}
	if err := scanDelete(ctx, c, prefix); err != nil {
		t.Errorf("cleaning up %s: %v", prefix, err)
	}
}

func scanDelete(ctx context.Context, c redis.Cmdable, prefix string) error {
	var cursor uint64
	for {
		keys, next, err := c.Scan(ctx, cursor, prefix+"*", 500).Result()
		if err != nil {
			return err
		}
		for _, k := range keys {
			// One key per DEL: keys of different conversations may live in different slots.
			if err := c.Del(ctx, k).Err(); err != nil {
				return err
			}
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

// newTestStore returns a store under a fresh prefix on c.
func newTestStore(t testing.TB, c redis.UniversalClient, opts Options) *Store {
	t.Helper()
	opts.Prefix = uniquePrefix(t, c)
	return New(c, opts)
}

// keysOf is the keyspace of s, for tests that look at the keys themselves.
func keysOf(s *Store) keyspace { return s.conversations.keys }

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
