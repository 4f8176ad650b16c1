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

// harness is a router with a queue, a thread store and a fake channel: in memory (newHarness),
// or on the real Redis with a real pool (newRedisHarness) for the tests whose point is Redis or
// the pool.
type harness struct {
	t       *testing.T
	ctx     context.Context
	store   testStore
	queue   testQueue
	signer  *runs.Signer
	router  *Router
	ch      *fakeChannel
	metrics *countMetrics
	clock   *testClock
	// mem is the in-memory queue, whose runs nextRun takes as a worker would once startPool was
	// called (working); redis is set instead on Redis, where the pool hands runs to runs.
	mem     *memQueue
	working bool
	redis   *onRedis
	runs    chan *runs.Envelope
}

// onRedis is a Redis harness's client and the Redis implementations on it.
type onRedis struct {
	client redis.UniversalClient
	store  *threads.Store
	queue  *runs.Queue
}

// testStore is the store as the tests see it: the router's Inbox, Clarifications and Threads,
// and the reads and writes the tests make besides (asking a question as the lead does, reading
// the effects of commands).
type testStore interface {
	Inbox
	Threads
	Clars() testClarifications
	Get(ctx context.Context, convKey string) (threads.Thread, error)
	GetSettings(ctx context.Context, convKey string) (threads.Settings, error)
	AccessOverride(ctx context.Context, platform, userID string) (allowed, denied bool, err error)
}

// testClarifications is the router's Clarifications and the write the tests make besides
// (asking a question as the lead does).
type testClarifications interface {
	Clarifications
	Put(ctx context.Context, c threads.Clarification) (threads.Clarification, error)
}

// storeOnRedis is a threads.Store's components as one testStore, so that a test reads the same
// on either backend.
type storeOnRedis struct {
	*threads.Inbox
	*threads.Conversations
	clars *threads.Clarifications
}

func (s storeOnRedis) Clars() testClarifications { return s.clars }

func newStoreOnRedis(s *threads.Store) storeOnRedis {
	return storeOnRedis{s.Inbox(), s.Conversations(), s.Clarifications()}
}

// testQueue is the queue as the tests see it: the router's Queue and a mailbox's run ids.
type testQueue interface {
	Queue
	QueuedRuns(ctx context.Context, c conv.Key) ([]string, error)
}

var (
	_ testStore = storeOnRedis{}
	_ testStore = (*memStore)(nil)
	_ testQueue = (*runs.Queue)(nil)
	_ testQueue = (*memQueue)(nil)
)

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

// newHarness is a router on the in-memory store and queue (memstore_test.go,
// memqueue_test.go). tweak may set the queue's limits; options only a pool acts on are refused
// (use newRedisHarness).
func newHarness(t *testing.T, tweak ...func(*Options, *runs.Options)) *harness {
	t.Helper()
	h, ro, qo := newHarnessOptions(t, tweak)
	db := newMemDB()
	q, err := newMemQueue(db, qo)
	if err != nil {
		t.Fatal(err)
	}
	h.mem, h.queue, h.store = q, q, newMemStore(db, h.clock.Now)
	h.start(ro)
	return h
}

// newRedisHarness is a router on the real Redis: a runs.Queue (with a pool once startPool or
// runPool is called) and a threads.Store under a prefix of the test's own.
func newRedisHarness(t *testing.T, tweak ...func(*Options, *runs.Options)) *harness {
	t.Helper()
	h, ro, qo := newHarnessOptions(t, tweak)
	r := &onRedis{client: realRedis(t)}
	qo.Prefix = uniquePrefix(t, r.client)
	var err error
	if r.queue, err = runs.Open(h.ctx, r.client, qo); err != nil {
		t.Fatal(err)
	}
	r.store = threads.New(r.client, threads.Options{Prefix: qo.Prefix, Now: h.clock.Now})
	h.redis, h.queue, h.store = r, r.queue, newStoreOnRedis(r.store)
	h.start(ro)
	return h
}

// newHarnessOptions is a harness without its store, queue and router yet, and their options
// with tweak applied.
func newHarnessOptions(t *testing.T, tweak []func(*Options, *runs.Options)) (*harness, Options, runs.Options) {
	t.Helper()
	h := &harness{t: t, ctx: ctxT(t), ch: newFakeChannel("test"), metrics: newCountMetrics(), clock: &testClock{}}
	var err error
	if h.signer, err = runs.NewSigner([][]byte{[]byte("signing-key-0123456789abcdef")}); err != nil {
		t.Fatal(err)
	}
	qo := runs.Options{Workers: 2, Lease: time.Second, Signer: h.signer, Logger: quietLog}
	ro := Options{
		Signer: h.signer, Admins: map[string][]string{"test": {"admin1"}}, ActionKey: testActionKey,
		Access:  map[string]AccessPolicy{"test": {Policy: PolicyOpen, DM: true}},
		Workers: 2, Logger: quietLog, Metrics: h.metrics, Now: h.clock.Now,
	}
	for _, f := range tweak {
		f(&ro, &qo)
	}
	return h, ro, qo
}

// start makes the router on h's queue and store, closed when the test ends.
func (h *harness) start(ro Options) {
	h.t.Helper()
	ro.Queue, ro.Inbox, ro.Clarifications, ro.Threads = h.queue, h.store, h.store.Clars(), h.store
	var err error
	if h.router, err = New(ro); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.router.Close(ctx); err != nil {
			h.t.Errorf("router close: %v", err)
		}
	})
}

// startPool starts the workers: in memory, nextRun then takes the queued runs; on Redis, a pool
// runs the queue with a handler that hands every verified envelope to h.runs.
func (h *harness) startPool() {
	h.t.Helper()
	if h.mem != nil {
		h.working = true
		return
	}
	h.runs = make(chan *runs.Envelope, 64)
	h.runPool(runs.HandlerFunc(func(ctx context.Context, r *runs.Run) (runs.Outcome, error) {
		h.runs <- r.Envelope
		return runs.OutcomeAnswered, nil
	}), nil)
}

// runPool runs the Redis queue with handler, its events going to sink (nil: none), until the
// test ends.
func (h *harness) runPool(handler runs.Handler, sink runs.Sink) {
	h.t.Helper()
	if h.redis == nil {
		h.t.Fatal("runPool needs the real pool: use newRedisHarness")
	}
	p, err := h.redis.queue.NewPool(handler, sink)
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

// nextRun is the next envelope a worker runs. In memory the router has queued it by the time
// HandleInbound returned, so it is there or nothing is; on Redis it waits for the pool.
func (h *harness) nextRun() *runs.Envelope {
	h.t.Helper()
	if h.mem != nil {
		if !h.working {
			h.t.Fatal("nextRun before startPool")
		}
		env, err := h.mem.work()
		if err != nil {
			h.t.Fatal(err)
		}
		if env == nil {
			h.t.Fatal("no run reached the worker")
		}
		return env
	}
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

// newBenchHarness is a router without limits on the real Redis, for benchmarks.
func newBenchHarness(b *testing.B) *harness {
	b.Helper()
	r := &onRedis{client: realRedis(b)}
	h := &harness{ctx: ctxT(b), redis: r, ch: newFakeChannel("test"), metrics: newCountMetrics(), clock: &testClock{}}
	prefix := uniquePrefix(b, r.client)
	var err error
	if h.signer, err = runs.NewSigner([][]byte{[]byte("signing-key-0123456789abcdef")}); err != nil {
		b.Fatal(err)
	}
	if r.queue, err = runs.Open(h.ctx, r.client, runs.Options{Prefix: prefix, Signer: h.signer, Logger: quietLog, MaxPending: -1, MaxPerConversation: -1}); err != nil {
		b.Fatal(err)
	}
	r.store = threads.New(r.client, threads.Options{Prefix: prefix})
	h.queue, h.store = r.queue, newStoreOnRedis(r.store)
	if h.router, err = New(Options{Queue: h.queue, Signer: h.signer, Inbox: h.store, Clarifications: h.store.Clars(), Threads: h.store, Logger: quietLog}); err != nil {
		b.Fatal(err)
	}
	return h
}
