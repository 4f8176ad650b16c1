package router

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/core/runs"
	"github.com/switchboard-bot/switchboard/core/threads"

	"github.com/switchboard-bot/switchboard/internal/chantest"
	"github.com/switchboard-bot/switchboard/internal/poll"
	"github.com/switchboard-bot/switchboard/internal/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The tests' shared helpers, under the names the tests use.
var (
	quietLog        = chantest.QuietLog
	ctxT            = chantest.Context
	realRedis       = redistest.Client
	uniquePrefix    = redistest.Prefix
	testActionKey   = chantest.ActionKey
	newFakeChannel  = chantest.NewChannel
	newCountMetrics = chantest.NewMetrics
)

type (
	fakeChannel  = chantest.Channel
	countMetrics = chantest.Metrics
)

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

func newHarness(t *testing.T, tweak ...func(*Options, *runs.Options)) *harness {
	t.Helper()
	h := &harness{t: t, ctx: ctxT(t), client: realRedis(t), ch: newFakeChannel("test"), metrics: newCountMetrics(), clock: &testClock{}}
	prefix := uniquePrefix(t, h.client)
	var err error
	if h.signer, err = runs.NewSigner([][]byte{[]byte("signing-key-0123456789abcdef")}); err != nil {
		t.Fatal(err)
	}
	qo := runs.Options{Prefix: prefix, Workers: 2, Lease: time.Second, Signer: h.signer, Logger: quietLog}
	ro := Options{
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
	if h.router, err = New(ro); err != nil {
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
	h.send(channels.Inbound{Conv: conv, Identity: user("u1"), Text: "marker", Direct: true})
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

func (h *harness) send(in channels.Inbound) {
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
	if h.router, err = New(Options{Queue: h.queue, Signer: h.signer, Threads: h.store, Logger: quietLog}); err != nil {
		b.Fatal(err)
	}
	return h
}
