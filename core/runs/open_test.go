package runs

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// startOnFirstRetry is a slog handler that starts a Redis server at addr the first time OpenRedis
// logs that it is retrying: the server comes up while OpenRedis waits, as when the bot starts
// before Redis.
type startOnFirstRetry struct {
	slog.Handler
	once  *sync.Once
	start func()
}

func (h startOnFirstRetry) Handle(ctx context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "retrying") {
		h.once.Do(h.start)
	}
	return h.Handler.Handle(ctx, r)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func TestOpenRedisWaitsForAServerThatStartsLate(t *testing.T) {
	addr := freeAddr(t)
	mr := miniredis.NewMiniRedis()
	defer mr.Close()
	var logs bytes.Buffer
	var mu sync.Mutex
	h := startOnFirstRetry{Handler: slog.NewTextHandler(&lockedWriter{w: &logs, mu: &mu}, nil), once: &sync.Once{}, start: func() {
		if err := mr.StartAddr(addr); err != nil {
			t.Error(err)
		}
	}}
	c, closeFn, embedded, err := OpenRedis(context.Background(), RedisOptions{
		URL: "redis://" + addr + "/0", ConnectTimeout: 20 * time.Second, Logger: slog.New(h),
	})
	if err != nil {
		t.Fatalf("OpenRedis() = %v\n%s", err, logs.String())
	}
	defer closeFn()
	if embedded || c.Ping(context.Background()).Err() != nil {
		t.Fatalf("embedded %v, ping %v", embedded, c.Ping(context.Background()).Err())
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logs.String(), "redis: not answering yet; retrying") || !strings.Contains(logs.String(), "redis: answering now") {
		t.Errorf("the wait is not logged:\n%s", logs.String())
	}
}

func TestOpenRedisGivesUpAfterConnectTimeout(t *testing.T) {
	addr := freeAddr(t)
	var logs bytes.Buffer
	start := time.Now()
	_, _, _, err := OpenRedis(context.Background(), RedisOptions{
		URL: "redis://:secret-password@" + addr + "/0", ConnectTimeout: 1200 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if !errors.Is(err, ErrRedisUnreachable) {
		t.Fatalf("OpenRedis() = %v, want ErrRedisUnreachable", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("gave up after %s, want about the 1.2 s connect timeout", time.Since(start))
	}
	for _, s := range []string{err.Error(), logs.String()} {
		if strings.Contains(s, "secret-password") {
			t.Errorf("the password is shown: %s", s)
		}
	}
	if !strings.Contains(err.Error(), addr) {
		t.Errorf("the error does not name the address: %v", err)
	}
}

func TestOpenRedisStopsWaitingWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, _, err := OpenRedis(ctx, RedisOptions{URL: "redis://" + freeAddr(t) + "/0", ConnectTimeout: time.Hour, Logger: quietLog})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("OpenRedis() = %v, want context.Canceled", err)
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestEmbeddedStoreExpiresKeys proves the embedded store's TTLs run down with the clock, as a
// Redis server's do: a key set to expire is gone soon after its time, a key without a TTL stays,
// and a longer TTL has run down by the time that passed. miniredis expires nothing by itself.
func TestEmbeddedStoreExpiresKeys(t *testing.T) {
	ctx := context.Background()
	c, closeFn, embedded, err := OpenRedis(ctx, RedisOptions{Logger: quietLog})
	if err != nil || !embedded {
		t.Fatalf("OpenRedis() = embedded %v, %v; want the embedded store", embedded, err)
	}
	defer func() {
		if err := closeFn(); err != nil {
			t.Errorf("close: %v", err)
		}
	}()
	for key, ttl := range map[string]time.Duration{"soon": 1500 * time.Millisecond, "later": time.Hour, "kept": 0} {
		if err := c.Set(ctx, key, "v", ttl).Err(); err != nil {
			t.Fatal(err)
		}
	}
	set := time.Now()
	eventually(t, 10*time.Second, "the key set to expire in 1.5 s to be gone", func() bool {
		n, err := c.Exists(ctx, "soon").Result()
		return err == nil && n == 0
	})
	if gone := time.Since(set); gone < 1500*time.Millisecond {
		t.Errorf("the key expired after %s, before its TTL of 1.5 s", gone)
	}
	if n, err := c.Exists(ctx, "kept", "later").Result(); err != nil || n != 2 {
		t.Errorf("keys without a TTL or with a longer one: %d of 2 left, %v", n, err)
	}
	if ttl, err := c.PTTL(ctx, "later").Result(); err != nil || ttl > time.Hour-time.Second {
		t.Errorf("the hour-long TTL is %s after %s, want it run down by then", ttl, time.Since(set).Round(time.Millisecond))
	}
}

// BenchmarkEmbeddedTTLClock measures one run-down of the embedded store's TTLs (runTTLClock's
// work each tick, under the server's lock) with 100,000 keys, each with a TTL.
func BenchmarkEmbeddedTTLClock(b *testing.B) {
	mr := miniredis.NewMiniRedis()
	for i := range 100_000 {
		k := "k" + strconv.Itoa(i)
		if err := mr.Set(k, "v"); err != nil {
			b.Fatal(err)
		}
		mr.SetTTL(k, time.Hour)
	}
	for b.Loop() {
		mr.FastForward(time.Millisecond)
	}
}
