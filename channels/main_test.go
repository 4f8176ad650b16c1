package channels

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/core/runs"
	"github.com/switchboard-bot/switchboard/core/threads"
	"github.com/switchboard-bot/switchboard/render"

	"github.com/switchboard-bot/switchboard/internal/poll"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

func ctxT(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// realRedis connects to the test Redis on 127.0.0.1:6379 (CI starts one).
func realRedis(t testing.TB) redis.UniversalClient {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("the tests need Redis on 127.0.0.1:6379: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// uniquePrefix returns a fresh key prefix whose keys are deleted (SCAN+DEL) when the test ends.
func uniquePrefix(t testing.TB, c redis.UniversalClient) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	prefix := "sbtest:" + hex.EncodeToString(b[:]) + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		it := c.Scan(ctx, 0, prefix+"*", 500).Iterator()
		for it.Next(ctx) {
			c.Del(ctx, it.Val())
		}
		if err := it.Err(); err != nil {
			t.Errorf("cleaning up %s: %v", prefix, err)
		}
	})
	return prefix
}

var testActionKey = func() render.Key {
	k, err := render.NewKey([]byte("action-key-0123456789abcdef-test"))
	if err != nil {
		panic(err)
	}
	return k
}()

// countMetrics counts every call by its labels.
type countMetrics struct {
	mu sync.Mutex
	n  map[string]int
}

func newCountMetrics() *countMetrics { return &countMetrics{n: map[string]int{}} }

func (m *countMetrics) add(k string) {
	m.mu.Lock()
	m.n[k]++
	m.mu.Unlock()
}
func (m *countMetrics) get(k string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n[k]
}
func (m *countMetrics) Inbound(p string)             { m.add("inbound/" + p) }
func (m *countMetrics) DedupeHit(p string)           { m.add("dedupe/" + p) }
func (m *countMetrics) Refused(p, reason string)     { m.add("refused/" + p + "/" + reason) }
func (m *countMetrics) Command(p, c string)          { m.add("command/" + p + "/" + c) }
func (m *countMetrics) OutboundError(p, kind string) { m.add("outbound/" + p + "/" + kind) }

// harness is a router on a real Redis: a queue, a thread store, a fake channel.
type harness struct {
	t       *testing.T
	ctx     context.Context
	client  redis.UniversalClient
	store   *threads.Store
	queue   *runs.Queue
	signer  *runs.Signer
	router  *Router
	ch      *fakeChannel
	metrics *countMetrics
	clock   *testClock
	runs    chan *runs.Envelope
}

type testClock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}
func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.off += d
	c.mu.Unlock()
}

func newHarness(t *testing.T, tweak ...func(*RouterOptions, *runs.Options)) *harness {
	t.Helper()
	h := &harness{t: t, ctx: ctxT(t), client: realRedis(t), ch: newFakeChannel("test"), metrics: newCountMetrics(), clock: &testClock{}}
	prefix := uniquePrefix(t, h.client)
	var err error
	if h.signer, err = runs.NewSigner([][]byte{[]byte("signing-key-0123456789abcdef")}); err != nil {
		t.Fatal(err)
	}
	qo := runs.Options{Prefix: prefix, Workers: 2, Lease: time.Second, Signer: h.signer, Logger: quietLog}
	ro := RouterOptions{
		Signer: h.signer, Admins: map[string][]string{"test": {"admin1"}}, ActionKey: testActionKey,
		Access:  map[string]AccessPolicy{"test": {Policy: PolicyOpen, DM: true}},
		Workers: 2, Logger: quietLog, Metrics: h.metrics, Now: h.clock.Now,
	}
	for _, f := range tweak {
		f(&ro, &qo)
	}
	if h.queue, err = runs.Open(h.ctx, h.client, qo); err != nil {
		t.Fatal(err)
	}
	h.store = threads.New(h.client, threads.Options{Prefix: prefix, Now: h.clock.Now})
	ro.Queue, ro.Threads = h.queue, h.store
	if h.router, err = NewRouter(ro); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.router.Close(ctx); err != nil {
			t.Errorf("router close: %v", err)
		}
	})
	return h
}

// startPool runs the queue with a handler that hands every verified envelope to h.runs.
func (h *harness) startPool() {
	h.t.Helper()
	h.runs = make(chan *runs.Envelope, 64)
	h.runPool(runs.HandlerFunc(func(ctx context.Context, r *runs.Run) (runs.Outcome, error) {
		h.runs <- r.Envelope
		return runs.OutcomeAnswered, nil
	}), nil)
}

// runPool runs the queue with handler, its events going to sink (nil: none), until the test ends.
func (h *harness) runPool(handler runs.Handler, sink runs.Sink) {
	h.t.Helper()
	p, err := h.queue.NewPool(handler, sink)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := p.Start(h.ctx); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := p.Shutdown(ctx); err != nil {
			h.t.Errorf("pool shutdown: %v", err)
		}
	})
}

// nextRun waits for the pool to run the next envelope.
func (h *harness) nextRun() *runs.Envelope {
	h.t.Helper()
	select {
	case env := <-h.runs:
		return env
	case <-time.After(10 * time.Second):
		h.t.Fatal("no run reached the worker")
		return nil
	}
}

// noRun checks that nothing was queued: it enqueues a marker message in conv and sees that
// the marker is the next run (FIFO per conversation).
func (h *harness) noRunBefore(conv conv.Key) {
	h.t.Helper()
	h.send(Inbound{Conv: conv, Identity: user("u1"), Text: "marker", Direct: true})
	if env := h.nextRun(); env.Text != "marker" {
		h.t.Fatalf("a run was queued: %+v", env)
	}
}

func (h *harness) queued(conv conv.Key) int {
	h.t.Helper()
	ids, err := h.queue.QueuedRuns(h.ctx, conv)
	if err != nil {
		h.t.Fatal(err)
	}
	return len(ids)
}

func (h *harness) send(in Inbound) {
	h.t.Helper()
	if err := h.router.HandleInbound(h.ctx, h.ch, in); err != nil {
		h.t.Fatalf("HandleInbound: %v", err)
	}
	// The router's replies follow HandleInbound: the tests read them as the user would.
	waitFor(h.t, "the router's replies", func() bool { return h.router.replies.Pending() == 0 })
}

func user(id string) conv.Identity {
	return conv.Identity{ChannelUserID: id, DisplayName: "User " + id}
}

func dm(chat string) conv.Key { return conv.Key{Platform: "test", Chat: chat} }

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, what, cond)
}

var errTooLong = errors.New("fake: message too long to edit")

func newBenchStore(tb testing.TB, c redis.UniversalClient) *threads.Store {
	return threads.New(c, threads.Options{Prefix: uniquePrefix(tb, c)})
}

// newBenchHarness is a router without limits, for benchmarks.
func newBenchHarness(b *testing.B) *harness {
	b.Helper()
	h := &harness{ctx: ctxT(b), client: realRedis(b), ch: newFakeChannel("test"), metrics: newCountMetrics(), clock: &testClock{}}
	prefix := uniquePrefix(b, h.client)
	var err error
	if h.signer, err = runs.NewSigner([][]byte{[]byte("signing-key-0123456789abcdef")}); err != nil {
		b.Fatal(err)
	}
	if h.queue, err = runs.Open(h.ctx, h.client, runs.Options{Prefix: prefix, Signer: h.signer, Logger: quietLog, MaxPending: -1, MaxPerConversation: -1}); err != nil {
		b.Fatal(err)
	}
	h.store = threads.New(h.client, threads.Options{Prefix: prefix})
	if h.router, err = NewRouter(RouterOptions{Queue: h.queue, Signer: h.signer, Threads: h.store, Logger: quietLog}); err != nil {
		b.Fatal(err)
	}
	return h
}
