package intake

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/switchboard-bot/switchboard/internal/poll"
	"github.com/switchboard-bot/switchboard/internal/redisscan"
	"github.com/switchboard-bot/switchboard/internal/redistest"
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

// realRedisAddr is the Redis every test run needs (CI starts it).
const realRedisAddr = "127.0.0.1:6379"

// backend is one server the stores are proved against, with a fresh key prefix on it whose keys
// are deleted when the test ends (never a FLUSH: the real server is shared).
type backend struct {
	c      redis.UniversalClient
	prefix string
	// mr is the embedded store's server, nil on a real one: miniredis expires keys only when
	// told that time passed.
	mr *miniredis.Miniredis
}

// pass tells the server's key clock that d passed. A real server's keys expire by themselves,
// so it does nothing there; the caller then waits for what should follow (poll.Until).
func (b backend) pass(d time.Duration) {
	if b.mr != nil {
		b.mr.FastForward(d)
	}
}

// forEachBackend runs fn as a subtest on the real Redis, on the embedded miniredis `bot chat`
// runs on, and on a three-master Redis Cluster (where a script whose keys span two slots is
// refused with CROSSSLOT).
func forEachBackend(t *testing.T, fn func(t *testing.T, b backend)) {
	t.Helper()
	t.Run("redis", func(t *testing.T) { fn(t, withPrefix(t, realRedis(t), nil)) })
	t.Run("miniredis", func(t *testing.T) { fn(t, embedded(t)) })
	t.Run("cluster", func(t *testing.T) { fn(t, withPrefix(t, redistest.Cluster(t), nil)) })
}

// embedded is the embedded store's backend (miniredis), whose clock a test can move (pass).
func embedded(t *testing.T) backend {
	t.Helper()
	mr := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { c.Close() })
	return withPrefix(t, c, mr)
}

func realRedis(t testing.TB) redis.UniversalClient {
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

// withPrefix picks a key prefix no other test (or test run) uses and deletes every key under it
// when the test ends, on every master of a cluster.
func withPrefix(t testing.TB, c redis.UniversalClient, mr *miniredis.Miniredis) backend {
	t.Helper()
	var b [6]byte
	rand.Read(b[:])
	prefix := "sbtest:" + hex.EncodeToString(b[:]) + ":"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// One key per DEL: on a cluster the keys live in different slots.
		err := redisscan.Each(ctx, c, prefix+"*", func(key string) error { return c.Del(ctx, key).Err() })
		if err != nil {
			t.Errorf("cleaning up %s: %v", prefix, err)
		}
	})
	return backend{c: c, prefix: prefix, mr: mr}
}

// pttl is the key's time to live in milliseconds as Redis says it: -1 with no expiry, -2 when
// the key does not exist.
func pttl(t testing.TB, c redis.UniversalClient, key string) int64 {
	t.Helper()
	n, err := c.Do(context.Background(), "PTTL", key).Int64()
	if err != nil {
		t.Fatalf("PTTL %s: %v", key, err)
	}
	return n
}

// expiresWithin fails the test unless key expires after more than lo and at most hi from now.
func expiresWithin(t testing.TB, c redis.UniversalClient, key string, lo, hi time.Duration) {
	t.Helper()
	if ms := pttl(t, c, key); ms <= lo.Milliseconds() || ms > hi.Milliseconds() {
		t.Fatalf("%s expires in %d ms, want more than %v and at most %v", key, ms, lo, hi)
	}
}

// waitGone waits until key no longer exists, after telling the server's clock that d passed.
func waitGone(t testing.TB, b backend, key string, d time.Duration) {
	t.Helper()
	b.pass(d)
	poll.Until(t, key+" to expire", func() bool { return b.c.Exists(context.Background(), key).Val() == 0 })
}

// closedClient is a client whose every command fails at once (redis.ErrClosed), for the tests of
// what errors say.
func closedClient(t testing.TB) redis.UniversalClient {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: realRedisAddr})
	c.Close()
	return c
}
