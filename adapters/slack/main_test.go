package slack

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/logbuf"

	"go.uber.org/goleak"

	"github.com/switchboard-bot/switchboard/channels"
	slackfake "github.com/switchboard-bot/switchboard/internal/fake/slack"
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
	fake *slackfake.Server
	ch   *Channel
	rec  *recorder
	logs *syncBuffer
}

var testKey, _ = render.NewKey([]byte("0123456789abcdef0123456789abcdef"))

func newChannel(t testing.TB, fake *slackfake.Server, mutate func(*Config)) (*Channel, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	cfg := Config{
		BotToken:      fake.BotToken(),
		AppToken:      fake.AppToken(),
		SigningSecret: fake.SigningSecret(),
		APIURL:        fake.APIURL(),
		Logger:        slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		ActionKey:     testKey,
		CallTimeout:   5 * time.Second,
	}
	if mutate != nil {
		mutate(&cfg)
	}
	ch, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	// 429 waits are honoured but not slept in tests: Retry-After is whole seconds.
	ch.clock.Sleep = func(ctx context.Context, d time.Duration) error { return ctx.Err() }
	t.Cleanup(func() {
		// Every test's Web API calls carry only their methods' documented arguments (see
		// TestWebAPICallsCarryOnlyDocumentedArguments).
		for _, c := range fake.Undocumented() {
			t.Errorf("%s was sent %v, which its reference does not list", c.Method, c.Undocumented)
		}
		for _, sec := range []string{fake.BotToken(), fake.AppToken(), fake.SigningSecret()} {
			if strings.Contains(logs.String(), sec) {
				t.Errorf("a secret appears in the logs:\n%s", logs.String())
			}
		}
	})
	return ch, logs
}

// start runs a socket mode channel against a fresh fake, stopped at the end of the test.
func start(t *testing.T, mutate func(*Config)) *harness {
	t.Helper()
	fake := slackfake.New(t)
	fake.SetPingInterval(100 * time.Millisecond)
	return startWith(t, fake, mutate, &recorder{})
}

func startWith(t testing.TB, fake *slackfake.Server, mutate func(*Config), rec *recorder) *harness {
	t.Helper()
	return startPrepared(t, fake, mutate, rec, nil)
}

// startPrepared is startWith with prepare, when set, called on the channel before it starts
// (to replace its sleep, say).
func startPrepared(t testing.TB, fake *slackfake.Server, mutate func(*Config), rec *recorder, prepare func(*Channel)) *harness {
	t.Helper()
	ch, logs := newChannel(t, fake, mutate)
	if prepare != nil {
		prepare(ch)
	}
	if err := ch.Start(context.Background(), rec); err != nil {
		t.Fatalf("Start: %v", err)
	}
	stopAtCleanup(t, ch)
	return &harness{fake: fake, ch: ch, rec: rec, logs: logs}
}

// eventually polls cond until it holds or 10 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
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

const ann, bob = "U0ANN", "U0BOB"

var annID = slackfake.TeamID + ":" + ann

// stopAtCleanup stops ch when the test ends, within 5 s, failing the test if Stop fails.
func stopAtCleanup(t testing.TB, ch *Channel) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := ch.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
}
