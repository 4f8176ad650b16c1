package discord

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/logbuf"

	"go.uber.org/goleak"

	"github.com/switchboard-bot/switchboard/channels"
	discordfake "github.com/switchboard-bot/switchboard/internal/fake/discord"
	"github.com/switchboard-bot/switchboard/render"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer = logbuf.Buffer

// recorder is a Handler that records what it is handed; on, when set, runs for each inbound
// before it is recorded.
type recorder struct {
	mu  sync.Mutex
	ins []channels.Inbound
	on  func(ctx context.Context, ch channels.Channel, in channels.Inbound) error
}

func (r *recorder) HandleInbound(ctx context.Context, ch channels.Channel, in channels.Inbound) error {
	r.mu.Lock()
	on := r.on
	r.mu.Unlock()
	if on != nil {
		if err := on(ctx, ch, in); err != nil {
			return err
		}
	}
	r.mu.Lock()
	r.ins = append(r.ins, in)
	r.mu.Unlock()
	return nil
}

func (r *recorder) all() []channels.Inbound {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]channels.Inbound(nil), r.ins...)
}

func (r *recorder) count() int { return len(r.all()) }

func (r *recorder) setOn(f func(ctx context.Context, ch channels.Channel, in channels.Inbound) error) {
	r.mu.Lock()
	r.on = f
	r.mu.Unlock()
}

func testKey(t *testing.T) render.Key {
	t.Helper()
	k, err := render.NewKey([]byte("discord-adapter-test-key-0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// harness is a started Channel on a fake Discord.
type harness struct {
	fk   *discordfake.Server
	ch   *Channel
	rec  *recorder
	logs *syncBuffer
	key  render.Key
}

func testConfig(t *testing.T, fk *discordfake.Server, logs *syncBuffer) Config {
	return Config{
		Token: fk.Token(), APIURL: fk.URL(), ReplyInThread: true,
		Logger:    slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		ActionKey: testKey(t), ReconnectMin: 10 * time.Millisecond, InvalidSessionWait: 10 * time.Millisecond,
		CallTimeout: 5 * time.Second, MaxRetryWait: 2 * time.Second,
	}
}

// newHarness starts a Channel on fk (a new fake when nil); mutate adjusts the configuration.
func newHarness(t *testing.T, fk *discordfake.Server, mutate func(*Config)) *harness {
	t.Helper()
	return newHarnessPrepared(t, fk, mutate, nil)
}

// newHarnessPrepared is newHarness with prepare, when set, run on the Channel before Start.
func newHarnessPrepared(t *testing.T, fk *discordfake.Server, mutate func(*Config), prepare func(*Channel)) *harness {
	t.Helper()
	if fk == nil {
		fk = discordfake.New(t)
	}
	h := &harness{fk: fk, rec: &recorder{}, logs: &syncBuffer{}, key: testKey(t)}
	cfg := testConfig(t, fk, h.logs)
	if mutate != nil {
		mutate(&cfg)
	}
	ch, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.ch = ch
	if prepare != nil {
		prepare(ch)
	}
	if err := ch.Start(context.Background(), h.rec); err != nil {
		t.Fatalf("Start: %v\n%s", err, h.logs.String())
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := ch.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
		if t.Failed() {
			t.Logf("adapter logs:\n%s", h.logs.String())
		}
	})
	return h
}

var alice = discordfake.User{ID: "111111111111111111", Username: "alice"}
var bob = discordfake.User{ID: "222222222222222222", Username: "bob"}
