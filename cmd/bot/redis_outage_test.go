package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchboard-bot/switchboard/config"
	telegramfake "github.com/switchboard-bot/switchboard/internal/fake/telegram"
	"github.com/switchboard-bot/switchboard/internal/redistest"
)

// TestRedisOutageHealsAfterSIGKILL proves a Redis outage at run time heals by itself when Redis
// dies at once (SIGKILL; the clean shutdown's twin, SIGTERM, runs with make chaos): nothing
// it acknowledged is lost (AOF, fsync always), and nothing the app did not see acknowledged is
// taken for done.
func TestRedisOutageHealsAfterSIGKILL(t *testing.T) {
	t.Parallel()
	testRedisOutage(t, syscall.SIGKILL)
}

// outageHold is how long Redis stays down once the outage has been observed: long enough for
// every component's backoff to grow past its first steps. It is the fault's length, not a
// synchronization.
const outageHold = 6 * time.Second

// modelLatency is how long the fake model takes per answer: long enough for a run to be in
// flight when Redis stops. The first answer after Redis returns includes it.
const modelLatency = 800 * time.Millisecond

// testRedisOutage runs the real app (fake Bot API, fake model) on a private redis-server and
// stops that server with sig in the middle of a conversation: every user has been answered once,
// one run is in flight and a burst of messages from other chats is being taken in. While Redis is down, /readyz answers 503 naming redis, new updates
// are not confirmed (polling stops once the polling lease cannot be renewed, and no getUpdates
// asks from past them), and the app backs off — Redis dials and log lines per second stay
// bounded. Then Redis comes back on the same
// port and directory and, with no restart of the app, every message sent before, during and after
// the outage is answered exactly once, in order per chat, no placeholder is left behind, and
// /readyz is 200 again. The figures are logged (-v).
func testRedisOutage(t *testing.T, sig syscall.Signal) {
	srv := redistest.Start(t) // first, so that its cleanup (kill) runs after the app's
	e := newE2E(t, func(c *config.Config) {
		c.Redis.URL = srv.URL()
		c.Log.Format = "json"
	})
	e.model.SetLatency(modelLatency)
	r := e.start()
	dials := &dialCounter{}
	r.core.redis.AddHook(dials)
	readyURL := "http://" + r.listener.Addr().String() + "/readyz"

	users := []telegramfake.User{ann, bob, {ID: 4203, FirstName: "Cy"}}
	var sent []sentMessage
	push := func(u telegramfake.User, text string) int64 {
		id, _ := e.tg.PushPrivate(u, text)
		sent = append(sent, sentMessage{user: u, text: text, update: id})
		return id
	}
	waitAll := func(what string, timeout time.Duration) {
		t.Helper()
		waitFor(t, what, timeout, func() bool { return allAnswered(e.tg, sent) })
	}

	// Before: a conversation under way.
	for _, u := range users {
		push(u, u.FirstName+" before")
	}
	waitAll("the answers before the outage", 15*time.Second)
	waitFor(t, "/readyz to answer 200", 15*time.Second, func() bool { code, _ := readyz(readyURL); return code == http.StatusOK })

	// One run in flight: the model has it when Redis goes. And a burst of messages from other
	// chats, still being taken in when it goes: some are queued, some are not, some may be
	// between the two.
	asked := e.model.Count()
	push(ann, "Ann in flight")
	waitFor(t, "the in-flight run to reach the model", 10*time.Second, func() bool { return e.model.Count() > asked })
	var burst []telegramfake.User
	for i := range 4 {
		u := telegramfake.User{ID: int64(4301 + i), FirstName: fmt.Sprintf("Burst%d", i)}
		burst = append(burst, u)
		push(u, u.FirstName+" at the stop")
	}

	srv.Stop(sig)
	down := time.Now()
	logsAtStop := len(e.logs.String())

	// During: /readyz says why, and updates are not confirmed.
	waitFor(t, "/readyz to answer 503 naming redis", 10*time.Second, func() bool {
		code, body := readyz(readyURL)
		return code == http.StatusServiceUnavailable && strings.Contains(body, "redis")
	})
	var during []int64
	for _, u := range users {
		during = append(during, push(u, u.FirstName+" during"))
	}
	firstDuring := during[0]
	// The polling lease cannot be renewed without Redis: polling stops, so that no other process
	// polls with this one once the lease lapses; the updates wait at Telegram.
	waitFor(t, "polling to stop: the polling lease cannot be renewed", 20*time.Second, func() bool { return !r.polls() })
	hold := time.NewTimer(outageHold)
	<-hold.C
	for _, c := range e.tg.Calls() {
		if c.Method == "getUpdates" && c.At.After(down) {
			if off, _ := strconv.ParseInt(c.Params["offset"], 10, 64); off > firstDuring {
				t.Errorf("getUpdates polled from offset %d while Redis was down: updates from %d on were confirmed without being queued", off, firstDuring)
			}
		}
	}
	for _, m := range sent[len(sent)-len(users):] {
		if n := answersTo(e.tg, m); n != 0 {
			t.Errorf("%q was answered %d times while Redis was down", m.text, n)
		}
	}
	outage := time.Since(down)
	dialsDown := dials.between(down, time.Now())
	var perSecond []int
	for _, at := range dialsDown {
		i := int(at.Sub(down) / time.Second)
		for len(perSecond) <= i {
			perSecond = append(perSecond, 0)
		}
		perSecond[i]++
	}
	t.Logf("dials per second while down: %v", perSecond)
	logsDown := e.logs.String()[logsAtStop:]

	srv.Restart()
	back := time.Now()
	var firstAnswer, readyAgain time.Duration
	waitFor(t, "/readyz to answer 200 again and a message sent during the outage to be answered", 60*time.Second, func() bool {
		if readyAgain == 0 {
			if code, _ := readyz(readyURL); code == http.StatusOK {
				readyAgain = time.Since(back)
			}
		}
		if firstAnswer == 0 {
			for _, m := range sent[len(sent)-len(users):] {
				if answersTo(e.tg, m) > 0 {
					firstAnswer = time.Since(back)
				}
			}
		}
		return readyAgain > 0 && firstAnswer > 0
	})

	// After: the conversation goes on.
	for _, u := range users {
		push(u, u.FirstName+" after")
	}
	waitAll("every message answered", 60*time.Second)

	// Exactly one answer per message, in order per chat, nothing left over.
	answered, lost, doubled := 0, 0, 0
	for _, m := range sent {
		switch n := answersTo(e.tg, m); {
		case n == 0:
			lost++
			t.Errorf("%q was never answered", m.text)
		case n > 1:
			doubled++
			answered++
			t.Errorf("%q was answered %d times", m.text, n)
		default:
			answered++
		}
	}
	for _, u := range append(users, burst...) {
		var want []string
		for _, m := range sent {
			if m.user.ID == u.ID {
				want = append(want, "echo: "+m.text)
			}
		}
		got := e.tg.Posted(u.ID)
		if len(got) != len(want) {
			t.Errorf("%s's chat holds %d bot messages, want %d (one answer per message)", u.FirstName, len(got), len(want))
			continue
		}
		for i, m := range got {
			if !strings.Contains(visible(m), want[i]) {
				t.Errorf("%s's message %d shows %q, want %q", u.FirstName, i, visible(m), want[i])
			}
		}
	}

	lines, worst := logRate(logsDown)
	dialRate := float64(len(dialsDown)) / outage.Seconds()
	steady := dials.between(down.Add(outage-steadyWindow), down.Add(outage))
	steadyRate := float64(len(steady)) / steadyWindow.Seconds()
	t.Logf("%s: messages sent %d, answered %d, lost %d, doubled %d; outage %.1fs; first answer %.2fs after Redis returned (the model takes %s), /readyz 200 after %.2fs; while down: %d Redis dials (%.1f/s; %.1f/s over its last %s), %d log lines at info or above (%.1f/s), most repeated: %q ×%d",
		sig, len(sent), answered, lost, doubled, outage.Seconds(), firstAnswer.Seconds(), modelLatency, readyAgain.Seconds(),
		len(dialsDown), dialRate, steadyRate, steadyWindow, lines, float64(lines)/outage.Seconds(), worst.msg, worst.n)
	// Backing off: no component retries in a hot loop, and none logs each retry.
	if steadyRate > maxDialsPerSecond {
		t.Errorf("%.1f Redis dials per second over the outage's last %s, want at most %d: something retries in a hot loop", steadyRate, steadyWindow, maxDialsPerSecond)
	}
	if len(dialsDown) > maxOutageDials {
		t.Errorf("%d Redis dials in a %.1fs outage, want at most %d", len(dialsDown), outage.Seconds(), maxOutageDials)
	}
	if limit := int(outage/logEvery) + 2; worst.n > limit {
		t.Errorf("%q logged %d times in a %.1fs outage, want at most %d (one line per component per %s)", worst.msg, worst.n, outage.Seconds(), limit, logEvery)
	}
}

// TestRedisOutageShutdownWithinTheDrainDeadline proves the retries that ride out an outage do
// not hold a shutdown up: stopped while Redis is down, with a run in flight and a message being
// refused, the app is down within its drain deadline and a little more (the in-flight run is
// released, to be taken over once Redis is back), and leaves no goroutine behind.
func TestRedisOutageShutdownWithinTheDrainDeadline(t *testing.T) {
	// Not parallel: it times the shutdown against its bound and reads every goroutine's stack.
	const drain = 3 * time.Second
	srv := redistest.Start(t)
	e := newE2E(t, func(c *config.Config) { c.Redis.URL = srv.URL() })
	e.model.SetLatency(modelLatency)
	r := e.start()
	e.tg.PushPrivate(ann, "before")
	e.waitAnswers(ann.ID, 1)
	e.tg.PushPrivate(bob, "in flight")
	waitFor(t, "the in-flight run to reach the model", 10*time.Second, func() bool { return e.model.Count() == 2 })
	srv.Stop(syscall.SIGKILL)
	e.tg.PushPrivate(ann, "during")
	// Refused if it is polled before the polling lease's renewal fails; left at Telegram after.
	waitFor(t, "the message sent during the outage to be refused or polling to stop", 10*time.Second, func() bool {
		return strings.Contains(e.logs.String(), "telegram: polling failed") || !r.polls()
	})

	ctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	start := time.Now()
	err := r.shutdown(ctx)
	took := time.Since(start)
	r.once.Do(func() {}) // stopped here: the cleanup must not stop it again
	t.Logf("shutdown during the outage took %s (drain deadline %s): %v", took.Round(time.Millisecond), drain, err)
	if limit := drain + 2*time.Second; took > limit {
		t.Errorf("shutdown took %s with a drain deadline of %s, want at most %s", took, drain, limit)
	}
	// go-redis probes a pool that failed to dial once a second until a dial works, even after
	// Close: let Redis answer so that the probe ends before goleak looks.
	srv.Restart()
	waitFor(t, "go-redis's dial probe to end", 10*time.Second, func() bool {
		buf := make([]byte, 1<<20)
		return !strings.Contains(string(buf[:runtime.Stack(buf, true)]), "(*ConnPool).tryDial")
	})
}

// Bounds of backing off while Redis is down. go-redis dials a pool's PoolSize connections (20
// on two cores), each DialerRetries (5) times, before the pool fails fast and probes once a
// second; the client has two such pools, so an outage starts with a burst of about 200 dials
// over its first seconds whatever the callers do. Over the outage's last steadyWindow (it lasts
// outageHold and more), the dials per second over the whole process show whether anything
// retries in a loop. Logs: one line per message per logEvery.
const (
	steadyWindow      = 4 * time.Second
	maxDialsPerSecond = 8
	maxOutageDials    = 300
	logEvery          = 2 * time.Second
)

// sentMessage is a message a user sent in the outage test.
type sentMessage struct {
	user   telegramfake.User
	text   string
	update int64
}

// answersTo counts the bot's closing messages in m's chat that answer m.
func answersTo(tg *telegramfake.Server, m sentMessage) int {
	n := 0
	for _, p := range tg.Posted(m.user.ID) {
		if !isPlaceholder(p) && strings.Contains(visible(p), "echo: "+m.text) {
			n++
		}
	}
	return n
}

// allAnswered reports whether every message sent has its answer and no chat shows a
// placeholder.
func allAnswered(tg *telegramfake.Server, sent []sentMessage) bool {
	for _, m := range sent {
		if answersTo(tg, m) == 0 {
			return false
		}
		for _, p := range tg.Posted(m.user.ID) {
			if isPlaceholder(p) {
				return false
			}
		}
	}
	return true
}

// readyz fetches /readyz.
func readyz(url string) (int, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

type repeated struct {
	msg string
	n   int
}

// logRate counts the JSON log lines at info or above in logs, and the message logged most.
func logRate(logs string) (lines int, worst repeated) {
	counts := map[string]int{}
	for _, line := range strings.Split(logs, "\n") {
		var rec struct {
			Level string `json:"level"`
			Msg   string `json:"msg"`
		}
		if json.Unmarshal([]byte(line), &rec) != nil || rec.Level == "DEBUG" {
			continue
		}
		lines++
		counts[rec.Msg]++
		if counts[rec.Msg] > worst.n {
			worst = repeated{rec.Msg, counts[rec.Msg]}
		}
	}
	return lines, worst
}

// dialCounter is a go-redis hook that records when the client dials a connection.
type dialCounter struct {
	mu sync.Mutex
	at []time.Time
}

func (d *dialCounter) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		d.mu.Lock()
		d.at = append(d.at, time.Now())
		d.mu.Unlock()
		return next(ctx, network, addr)
	}
}

// between returns the dial times in [from, to).
func (d *dialCounter) between(from, to time.Time) []time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []time.Time
	for _, t := range d.at {
		if !t.Before(from) && t.Before(to) {
			out = append(out, t)
		}
	}
	return out
}

func (d *dialCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (d *dialCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
