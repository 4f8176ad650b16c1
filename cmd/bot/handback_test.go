package main

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/config"
	"github.com/switchboard-bot/switchboard/internal/fake/modelserver"
)

// TestBotRunSIGTERMHandsRunsBackAndExitsZero proves issue 14's SIGTERM point end to end: `bot
// run` on a shared Redis, stopped (the context SIGTERM cancels) while a run is in flight that
// would outlast the 30 s drain deadline, hands that run back at once and exits 0 within a few
// seconds — no "context deadline exceeded". The next process takes the run over on its first
// read of the ready stream (the lease is 30 s here, so a takeover by expiry would come far
// later), shows the working signal again and answers the message once, in the placeholder the
// first process posted.
func TestBotRunSIGTERMHandsRunsBackAndExitsZero(t *testing.T) {
	// Not parallel: it times the hand-back against a bound.
	const lease = 30 * time.Second
	e := newE2E(t, func(c *config.Config) { c.Runs.Lease = lease }) // drafts on: the next process edits the placeholder, it does not stream beside it
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	var calls atomic.Int32
	e.model.SetFunc(func(r modelserver.Request) modelserver.Reply {
		if calls.Add(1) == 1 {
			<-release // the first attempt would outlast any drain
		}
		return echoModel(r)
	})

	environ := []string{
		"BOT_TELEGRAM__TOKEN=" + e.cfg.Telegram.Token, "BOT_TELEGRAM__API_URL=" + e.cfg.Telegram.APIURL,
		"BOT_TELEGRAM__PACING=false", "BOT_TELEGRAM__DRAFTS=false", // the placeholder path: drafts post nothing to hand back
		"BOT_LLM__PROVIDER=openai", "BOT_LLM__BASE_URL=" + e.cfg.LLM.BaseURL, "BOT_LLM__API_KEY=sk-e2e-test",
		"BOT_LLM__MODEL=fake-model",
		"BOT_REDIS__URL=" + testRedisURL, "BOT_REDIS__PREFIX=" + e.cfg.Redis.Prefix, "BOT_AUTH__SIGNING_KEYS=" + testSigningKey,
		"BOT_HTTP__ADDR=127.0.0.1:0", "BOT_RUNS__LEASE=" + lease.String(),
	}
	ctx, sigterm := context.WithCancel(context.Background())
	defer sigterm()
	var stdout, stderr syncBuffer
	exited := make(chan int, 1)
	go func() { exited <- runContext(ctx, []string{"run"}, strings.NewReader(""), &stdout, &stderr, environ) }()

	e.tg.PushPrivate(ann, "take your time")
	waitFor(t, "the first process's placeholder", 20*time.Second, func() bool {
		posted := e.tg.Posted(ann.ID)
		return calls.Load() == 1 && len(posted) == 1 && isPlaceholder(posted[0])
	})

	sigterm()
	stopped := time.Now()
	var code int
	select {
	case code = <-exited:
	case <-time.After(20 * time.Second):
		t.Fatalf("bot run did not exit within 20 s of SIGTERM:\n%s", stderr.String())
	}
	took := time.Since(stopped)
	logs := stderr.String()
	if code != exitOK {
		t.Errorf("bot run exited %d after SIGTERM, want 0:\n%s", code, logs)
	}
	if limit := 5 * time.Second; took > limit {
		t.Errorf("bot run took %s to exit after SIGTERM, want at most %s (the run is handed back, not waited for)", took, limit)
	}
	for _, bad := range []string{"context deadline exceeded", "level=ERROR"} {
		if strings.Contains(logs, bad) {
			t.Errorf("the shutdown logged %q:\n%s", bad, logs)
		}
	}
	if !strings.Contains(logs, "handing an unfinished run back") {
		t.Errorf("the shutdown did not say it handed the run back:\n%s", logs)
	}

	// The next process.
	typingBefore := countSince(e, "sendChatAction", stopped)
	started := time.Now()
	e.start()
	e.waitAnswers(ann.ID, 1)
	resumed := time.Since(started)
	t.Logf("bot run exited %d %s after SIGTERM; the next process answered the handed-back run %s after it started (lease %s)",
		code, took.Round(time.Millisecond), resumed.Round(time.Millisecond), lease)
	if resumed > 10*time.Second {
		t.Errorf("the next process answered %s after it started, want at once (a takeover by expiry would wait out the %s lease)", resumed, lease)
	}
	posted := e.tg.Posted(ann.ID)
	if len(posted) != 1 || !strings.Contains(visible(posted[0]), "echo: take your time") {
		t.Errorf("the chat shows %d messages (%v), want the one answer in the first placeholder", len(posted), posted)
	}
	if calls.Load() != 2 {
		t.Errorf("the model was asked %d times, want 2 (the handed-back attempt and the resumed one)", calls.Load())
	}
	// The working signal again: typing when the receipt's may have stopped showing (not yet
	// here: it went out a second ago), and the placeholder edited with the working card before
	// the answer replaces it.
	var after []string
	for _, c := range e.tg.Calls() {
		if c.At.After(stopped) && c.Method != "getUpdates" {
			after = append(after, c.Method+" "+c.Params["text"])
		}
	}
	working := false
	for _, c := range after {
		if strings.HasPrefix(c, "editMessageText") && strings.Contains(c, "Working on it") {
			working = true
		}
	}
	if !working && countSince(e, "sendChatAction", stopped) <= typingBefore {
		t.Errorf("the resumed run showed no working signal; calls after SIGTERM: %q", after)
	}
}

// countSince counts the fake Bot API's calls of method made since from.
func countSince(e *e2e, method string, from time.Time) int {
	n := 0
	for _, c := range e.tg.Calls() {
		if c.Method == method && !c.At.Before(from) {
			n++
		}
	}
	return n
}
