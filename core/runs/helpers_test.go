package runs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/internal/redistest"
	"go.uber.org/goleak"
)

// childEnv makes the test binary act as a worker process (TestLeaseTakeoverAfterSIGKILL).
const childEnv = "SB_RUNS_TEST_CHILD_PREFIX"

func TestMain(m *testing.M) {
	if prefix := os.Getenv(childEnv); prefix != "" {
		os.Exit(childWorker(prefix))
	}
	if prefix := os.Getenv(childEnqueuerEnv); prefix != "" {
		os.Exit(childEnqueuer(prefix))
	}
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

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// realRedis connects to the test Redis on 127.0.0.1:6379.
func realRedis(t testing.TB) redis.UniversalClient {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", PoolSize: 64})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("the tests need Redis on 127.0.0.1:6379: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// embedded opens the embedded store through OpenRedis.
func embedded(t testing.TB) redis.UniversalClient {
	t.Helper()
	c, closeFn, emb, err := OpenRedis(context.Background(), RedisOptions{Logger: quietLog})
	if err != nil || !emb {
		t.Fatalf("OpenRedis() embedded = %v, err = %v", emb, err)
	}
	t.Cleanup(func() { _ = closeFn() })
	return c
}

// uniquePrefix returns a fresh key prefix and deletes its keys when the test ends.
func uniquePrefix(t testing.TB, c redis.UniversalClient) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	prefix := "sbtest:" + hex.EncodeToString(b[:]) + ":"
	t.Cleanup(func() { deletePrefix(c, prefix) })
	return prefix
}

func deletePrefix(c redis.UniversalClient, prefix string) {
	ctx := context.Background()
	del := func(ctx context.Context, n redis.Cmdable) error {
		it := n.Scan(ctx, 0, prefix+"*", 500).Iterator()
		for it.Next(ctx) {
			n.Del(ctx, it.Val())
		}
		return it.Err()
	}
	if cc, ok := c.(*redis.ClusterClient); ok {
		_ = cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return del(ctx, n) })
		return
	}
	_ = del(ctx, c)
}

var testKey = []byte("test-signing-key-0123456789abcdef")

func testSigner(t testing.TB, keys ...[]byte) *Signer {
	t.Helper()
	if len(keys) == 0 {
		keys = [][]byte{testKey}
	}
	s, err := NewSigner(keys)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func testConv(i int) conv.Key {
	return conv.Key{Platform: "test", Workspace: "w", Chat: "chat-" + strings.Repeat("x", i%3) + string(rune('a'+i%26)) + hex.EncodeToString([]byte{byte(i >> 8), byte(i)})}
}

func newEnv(c conv.Key, text string) *Envelope {
	return &Envelope{RunID: NewRunID(), Kind: KindMessage, Conv: c, Text: text, CreatedAt: time.Now(),
		Identity: conv.Identity{Platform: c.Platform, ChannelUserID: "u1", DisplayName: "User"}}
}

func signedEnv(s *Signer, c conv.Key, text string) *Envelope {
	e := newEnv(c, text)
	s.Sign(e)
	return e
}

type testQueueOpt func(*Options)

func newQueue(t testing.TB, c redis.UniversalClient, opts ...testQueueOpt) *Queue {
	t.Helper()
	o := Options{Prefix: uniquePrefix(t, c), Workers: 4, Lease: time.Second, Signer: testSigner(t),
		Logger: quietLog, RetryBase: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond}
	for _, f := range opts {
		f(&o)
	}
	q, err := Open(context.Background(), c, o)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// startPool starts a pool and shuts it down (5 s deadline) when the test ends.
func startPool(t testing.TB, q *Queue, h Handler, sink Sink) *Pool {
	t.Helper()
	p, err := q.NewPool(h, sink)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = p.Shutdown(ctx)
	})
	return p
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		<-tick.C
	}
}

func mustEnqueue(t testing.TB, q *Queue, e *Envelope) {
	t.Helper()
	if err := q.Enqueue(context.Background(), e); err != nil {
		t.Fatalf("Enqueue(%s) = %v", e.RunID, err)
	}
}

// recorder collects what handlers and sinks saw.
type recorder struct {
	mu     sync.Mutex
	runs   map[string]int // run id -> times handled
	envs   map[string]*Envelope
	order  map[conv.Key][]string
	events []Event
}

func newRecorder() *recorder {
	return &recorder{runs: map[string]int{}, envs: map[string]*Envelope{}, order: map[conv.Key][]string{}}
}

func (r *recorder) handled(run *Run) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runs[run.Envelope.RunID]++
	r.envs[run.Envelope.RunID] = run.Envelope
	r.order[run.Envelope.Conv] = append(r.order[run.Envelope.Conv], run.Envelope.Text)
}

func (r *recorder) count(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runs[id]
}

// envelope is the envelope run id was last handled with; nil if it never was.
func (r *recorder) envelope(id string) *Envelope {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.envs[id]
}

func (r *recorder) total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.runs {
		n += c
	}
	return n
}

func (r *recorder) Deliver(_ context.Context, ev Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
	return nil
}

func (r *recorder) eventsOf(runID string) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Event
	for _, e := range r.events {
		if e.RunID == runID {
			out = append(out, e)
		}
	}
	return out
}

func stats(t testing.TB, q *Queue) Stats {
	t.Helper()
	s, err := q.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}
