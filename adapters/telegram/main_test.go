package telegram

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/logbuf"

	"go.uber.org/goleak"

	"github.com/switchboard-bot/switchboard/channels"
	telegramfake "github.com/switchboard-bot/switchboard/internal/fake/telegram"
	"github.com/switchboard-bot/switchboard/render"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer = logbuf.Buffer

// recorder is a Handler that records what it is handed.
type recorder struct {
	mu  sync.Mutex
	ins []channels.Inbound
	// fail, when set, decides whether to refuse an inbound.
	fail func(channels.Inbound) error
	// respond, when set, runs for interactions.
	respond func(ctx context.Context, ch channels.Channel, in channels.Inbound)
}

func (r *recorder) HandleInbound(ctx context.Context, ch channels.Channel, in channels.Inbound) error {
	if r.fail != nil {
		if err := r.fail(in); err != nil {
			return err
		}
	}
	if r.respond != nil && in.Interaction != nil {
		r.respond(ctx, ch, in)
	}
	r.mu.Lock()
	r.ins = append(r.ins, in)
	r.mu.Unlock()
	return nil
}

func (r *recorder) got() []channels.Inbound {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]channels.Inbound(nil), r.ins...)
}

type harness struct {
	fake *telegramfake.Server
	ch   *Channel
	rec  *recorder
	logs *syncBuffer
}

var testKey, _ = render.NewKey([]byte("0123456789abcdef0123456789abcdef"))

func newChannel(t *testing.T, fake *telegramfake.Server, mutate func(*Config)) (*Channel, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	cfg := Config{
		Token:       fake.Token(),
		APIURL:      fake.URL(),
		Logger:      slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		ActionKey:   testKey,
		PollTimeout: 5 * time.Second,
	}
	if mutate != nil {
		mutate(&cfg)
	}
	ch, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	// 429 waits are honoured but not slept in tests: the fake's retry_after is whole seconds.
	ch.clock.Sleep = func(ctx context.Context, d time.Duration) error { return ctx.Err() }
	return ch, logs
}

// start runs a polling channel against a fresh fake, stopped at the end of the test.
func start(t *testing.T, mutate func(*Config)) *harness {
	t.Helper()
	fake := telegramfake.New(t)
	return startWith(t, fake, mutate, &recorder{})
}

func startWith(t *testing.T, fake *telegramfake.Server, mutate func(*Config), rec *recorder) *harness {
	t.Helper()
	ch, logs := newChannel(t, fake, mutate)
	if err := ch.Start(context.Background(), rec); err != nil {
		t.Fatalf("Start: %v", err)
	}
	stopAtEnd(t, ch)
	return &harness{fake: fake, ch: ch, rec: rec, logs: logs}
}

// stopAtEnd stops ch when the test ends, failing the test when Stop fails.
func stopAtEnd(t *testing.T, ch *Channel) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := ch.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
}

// eventually polls cond until it holds or 5 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.After(5 * time.Second)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func (h *harness) waitInbound(t *testing.T, n int) []channels.Inbound {
	t.Helper()
	eventually(t, "inbound messages", func() bool { return len(h.rec.got()) >= n })
	return h.rec.got()
}

var ann = telegramfake.User{ID: 42, FirstName: "Ann", LastName: "Lee", Username: "ann"}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// rateLimitOf reports whether err is a *channels.RateLimitError of d.
func rateLimitOf(err error, d time.Duration) bool {
	rl, ok := errors.AsType[*channels.RateLimitError](err)
	return ok && rl.RetryAfter == d
}
