package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/logbuf"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/switchboard-bot/switchboard/config"
	"github.com/switchboard-bot/switchboard/internal/fake/modelserver"
	telegramfake "github.com/switchboard-bot/switchboard/internal/fake/telegram"
)

// TestMain checks that the tests leave no goroutine behind. The tests run in parallel (most wait
// on processes, fakes and leases far more than they compute: the package took 265 s one at a
// time, 149 s two at a time) but for the few that time a bound or look at every goroutine of the
// process, which say so and run first, alone.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testRedisURL is the real Redis every end-to-end test and benchmark uses.
const testRedisURL = "redis://127.0.0.1:6379/0"

// testSigningKey signs run envelopes in tests (32 bytes).
const testSigningKey = "e2e-signing-key-0123456789abcdef"

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer = logbuf.Buffer

// uniquePrefix is a Redis key prefix no other test or run uses.
func uniquePrefix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "sbtest:" + hex.EncodeToString(b) + ":"
}

// cleanRedis deletes every key under prefix with SCAN+DEL (never FLUSH: the server is shared).
func cleanRedis(tb testing.TB, prefix string) {
	tb.Helper()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	var batch []string
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == 500 {
			c.Unlink(ctx, batch...)
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		c.Unlink(ctx, batch...)
	}
	if err := iter.Err(); err != nil {
		tb.Errorf("cleaning Redis prefix %s: %v", prefix, err)
	}
}

// e2e is one end-to-end setup: the fake Bot API, the fake model, a unique prefix on the real
// Redis, and the configuration `bot run` would load for them. start runs the real app on it.
type e2e struct {
	tb    testing.TB
	tg    *telegramfake.Server
	model *modelserver.Server
	cfg   *config.Config
	logs  *syncBuffer
}

// newE2E starts the fakes, picks a prefix (cleaned when the test ends) and builds the
// configuration; mutate adjusts it before any app starts.
func newE2E(tb testing.TB, mutate func(*config.Config)) *e2e {
	tb.Helper()
	e := &e2e{tb: tb, tg: telegramfake.New(tb), model: modelserver.New(tb), logs: &syncBuffer{}}
	prefix := uniquePrefix()
	tb.Cleanup(func() { cleanRedis(tb, prefix) })
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("app logs:\n%s", e.logs.String())
		}
	})
	cfg := config.Default()
	cfg.Telegram.Token = e.tg.Token()
	cfg.Telegram.APIURL = e.tg.URL()
	cfg.Telegram.Pacing = false
	cfg.LLM.Provider = config.ProviderOpenAI
	cfg.LLM.BaseURL = e.model.BaseURL()
	cfg.LLM.APIKey = "sk-e2e-test"
	cfg.LLM.Model = "fake-model"
	cfg.LLM.Timeout = 10 * time.Second
	cfg.Redis.URL = testRedisURL
	cfg.Redis.Prefix = prefix
	cfg.Auth.SigningKeys = []string{testSigningKey}
	cfg.HTTP.Addr = "127.0.0.1:0"
	cfg.Runs.Lease = 5 * time.Second
	cfg.Log.Level = "debug"
	if mutate != nil {
		mutate(cfg)
	}
	e.cfg = cfg
	if err := cfg.Validate(); err != nil {
		tb.Fatalf("test configuration: %v", err)
	}
	e.model.SetFunc(echoModel)
	return e
}

// echoModel answers every request with "echo: " and the last user message.
func echoModel(r modelserver.Request) modelserver.Reply {
	return modelserver.Reply{Content: "echo: " + r.LastUserText(), ChunkSize: 64}
}

// running is an app started by e2e.start.
type running struct {
	*app
	once sync.Once
	tb   testing.TB
}

// stop shuts the app down in order (drain deadline 10 s); later calls do nothing.
func (r *running) stop() {
	r.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := r.shutdown(ctx); err != nil {
			r.tb.Errorf("shutdown: %v", err)
		}
	})
}

// start builds and starts an app exactly as `bot run` does on the setup's configuration; it is
// shut down when the test ends unless stopped before.
func (e *e2e) start() *running {
	e.tb.Helper()
	ctx := context.Background()
	log := newLogger(e.cfg, e.logs)
	a, err := newApp(ctx, e.cfg, log)
	if err != nil {
		e.tb.Fatalf("newApp: %v", err)
	}
	if err := a.start(ctx); err != nil {
		_ = a.shutdown(ctx)
		e.tb.Fatalf("start: %v", err)
	}
	r := &running{app: a, tb: e.tb}
	e.tb.Cleanup(r.stop)
	return r
}

// waitFor polls cond every few milliseconds until it holds, failing the test after timeout.
func waitFor(tb testing.TB, what string, timeout time.Duration, cond func() bool) {
	tb.Helper()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline.C:
			tb.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
	}
}

// visible is the text a message shows (its HTML rendered).
func visible(m telegramfake.Message) string {
	if m.ParseMode != "HTML" {
		return m.Text
	}
	v, err := telegramfake.ParseHTML(m.Text)
	if err != nil {
		return m.Text
	}
	return v
}

// isPlaceholder reports whether m still shows the "working" card.
func isPlaceholder(m telegramfake.Message) bool {
	return strings.Contains(visible(m), "Working on it")
}

// answered reports whether every one of the chat's posted messages is a closing message (no
// placeholder) and there are exactly n of them.
func answered(tg *telegramfake.Server, chat int64, n int) bool {
	posted := tg.Posted(chat)
	if len(posted) != n {
		return false
	}
	for _, m := range posted {
		if isPlaceholder(m) {
			return false
		}
	}
	return true
}

// waitAnswers waits until chat shows exactly n closing messages and returns them.
func (e *e2e) waitAnswers(chat int64, n int) []telegramfake.Message {
	e.tb.Helper()
	waitFor(e.tb, fmt.Sprintf("%d answer(s) in chat %d", n, chat), 15*time.Second, func() bool { return answered(e.tg, chat, n) })
	return e.tg.Posted(chat)
}

// hasMessage reports whether msgs holds a message of role whose content contains text.
func hasMessage(msgs []modelserver.Message, role, text string) bool {
	for _, m := range msgs {
		if m.Role == role && strings.Contains(m.Content, text) {
			return true
		}
	}
	return false
}
