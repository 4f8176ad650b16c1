package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/switchboard-bot/switchboard/channels/kit"
	telegramfake "github.com/switchboard-bot/switchboard/internal/fake/telegram"
)

// The tests of issue 14's "many processes, one Redis" for Telegram: processes sharing one Redis
// take turns polling through the intake lease (core/intake, kit.RunLeased), never two
// at once, and polling passes on within seconds when the poller stops or dies.

// polls reports whether r holds the Telegram intake lease.
func (r *running) polls() bool { return r.leading["telegram"].Load() > 0 }

// pollers are the apps among rs that hold the Telegram intake lease now.
func pollers(rs ...*running) []*running {
	var out []*running
	for _, r := range rs {
		if r.polls() {
			out = append(out, r)
		}
	}
	return out
}

// gauge reads one labelled value of a gauge vector.
func gauge(v *prometheus.GaugeVec, labels ...string) float64 {
	var m dto.Metric
	if err := v.WithLabelValues(labels...).Write(&m); err != nil {
		return -1
	}
	return m.GetGauge().GetValue()
}

// users makes n distinct Telegram users.
func users(n, base int) []telegramfake.User {
	out := make([]telegramfake.User, n)
	for i := range out {
		out[i] = telegramfake.User{ID: int64(base + i), FirstName: fmt.Sprintf("U%d", base+i)}
	}
	return out
}

// sendRound pushes one message from each user and returns the texts expected back.
func (e *e2e) sendRound(us []telegramfake.User, round int) {
	for _, u := range us {
		e.tg.PushPrivate(u, fmt.Sprintf("%s round %d", u.FirstName, round))
	}
}

// waitRounds waits until every user has exactly rounds answers, each to its own round, in order,
// within timeout.
func (e *e2e) waitRounds(us []telegramfake.User, rounds int, timeout time.Duration) {
	e.tb.Helper()
	waitFor(e.tb, fmt.Sprintf("%d answers for each of %d users", rounds, len(us)), timeout, func() bool {
		for _, u := range us {
			if !answered(e.tg, u.ID, rounds) {
				return false
			}
		}
		return true
	})
	for _, u := range us {
		for round, m := range e.tg.Posted(u.ID) {
			if want := fmt.Sprintf("echo: %s round %d", u.FirstName, round); !strings.Contains(visible(m), want) {
				e.tb.Errorf("%s's answer %d shows %q, want %q", u.FirstName, round, visible(m), want)
			}
		}
	}
}

// checkOnce fails unless every update pushed so far got exactly one message and no two
// getUpdates were ever in flight together.
func (e *e2e) checkOnce(messages int) {
	e.tb.Helper()
	if n := e.tg.Count("sendMessage"); n != messages {
		e.tb.Errorf("sendMessage called %d times for %d messages, want one answer each", n, messages)
	}
	if n := e.tg.Conflicts(); n != 0 {
		e.tb.Errorf("%d getUpdates calls were ended by another with 409 Conflict: two processes polled at once", n)
	}
}

// TestOnePollerAmongProcesses proves that of two processes on one Redis exactly one polls
// Telegram — the fake never sees two getUpdates at once — while both are ready and work the
// queue, and that every message is answered once.
func TestOnePollerAmongProcesses(t *testing.T) {
	t.Parallel()
	e := newE2E(t, nil)
	a, b := e.start(), e.start()
	waitFor(t, "a poller", 10*time.Second, func() bool { return len(pollers(a, b)) == 1 })
	poller, standby := a, b
	if b.polls() {
		poller, standby = b, a
	}
	us := users(6, 6100)
	for round := range 3 {
		e.sendRound(us, round)
	}
	e.waitRounds(us, 3, 20*time.Second)
	e.checkOnce(len(us) * 3)
	if got := pollers(a, b); len(got) != 1 || got[0] != poller {
		t.Errorf("the poller changed hands with both processes up")
	}
	if n := counter(standby.metrics.inbound, "telegram"); n != 0 {
		t.Errorf("the standby took %v updates in; it must not poll", n)
	}
	if p, s := gauge(poller.metrics.intakeLeader, "telegram"), gauge(standby.metrics.intakeLeader, "telegram"); p != 1 || s != 0 {
		t.Errorf("switchboard_intake_leader{platform=telegram} = %v on the poller, %v on the standby; want 1 and 0", p, s)
	}
	t.Logf("runs answered by the standby: %v of %d (it works the queue)", counter(standby.metrics.runs, "answered"), len(us)*3)
	for _, r := range []*running{poller, standby} {
		code, body := readyz("http://" + r.listener.Addr().String() + "/readyz")
		if code != http.StatusOK {
			t.Errorf("/readyz answered %d on the %s: %s", code, map[bool]string{true: "poller", false: "standby"}[r == poller], body)
		}
		want := "telegram: standing by"
		if r == poller {
			want = "telegram: this process takes the updates in"
		}
		if !strings.Contains(body, want) {
			t.Errorf("/readyz says %q, want it to say %q", body, want)
		}
	}
	http.DefaultClient.CloseIdleConnections()
}

// TestRollingRestartHandsPollingOver proves a rolling restart — stop one process, start its
// replacement, then the same for the other — hands polling over at once: a stopped poller
// releases the lease and the standby takes it at its next try (every 2 s), long before the
// lease would expire; messages sent during the restart are answered exactly once.
func TestRollingRestartHandsPollingOver(t *testing.T) {
	t.Parallel()
	e := newE2E(t, nil)
	a, b := e.start(), e.start()
	waitFor(t, "a poller", 10*time.Second, func() bool { return len(pollers(a, b)) == 1 })
	poller, standby := a, b
	if b.polls() {
		poller, standby = b, a
	}
	us := users(4, 6200)
	e.sendRound(us, 0)
	e.waitRounds(us, 1, 15*time.Second)
	retry := kit.DefaultLeaseTTL / 5
	round := 1
	for step := range 2 {
		began := time.Now()
		poller.stop()
		stopped := time.Since(began)
		e.sendRound(us, round) // while the standby has not taken over yet
		round++
		waitFor(t, "the standby to poll", kit.DefaultLeaseTTL, standby.polls)
		took := time.Since(began)
		t.Logf("restart %d: the poller stopped in %v; the standby polled %v after the stop began", step+1, stopped.Round(time.Millisecond), took.Round(time.Millisecond))
		if took > stopped+retry+time.Second {
			t.Errorf("the standby took over %v after the stop began (the stop took %v), want within a standby retry (%v) of the release", took, stopped, retry)
		}
		e.sendRound(us, round)
		round++
		e.waitRounds(us, round, 20*time.Second)
		// The replacement comes up as the standby.
		next := e.start()
		if next.polls() {
			t.Error("the replacement polls while the other process holds the lease")
		}
		poller, standby = standby, next
	}
	e.checkOnce(len(us) * round)
	if d := counter(poller.metrics.dedupeHits, "telegram") + counter(standby.metrics.dedupeHits, "telegram"); d != 0 {
		t.Errorf("%v updates were handed to the router twice: the next poller did not continue from the saved offset", d)
	}
}

// botChildEnv, set in the environment, makes the test binary run `bot run` with the BOT_
// variables it is given and nothing else: a process the test can kill -9.
const botChildEnv = "SB_BOT_CHILD"

func init() {
	if os.Getenv(botChildEnv) == "" {
		return
	}
	os.Exit(runContext(context.Background(), []string{"run"}, strings.NewReader(""), os.Stdout, os.Stderr, os.Environ()))
}

// startBotChild runs `bot run` on e's fakes and Redis prefix in a child process (this test binary
// re-executed) and returns it; it is killed when the test ends.
func (e *e2e) startBotChild(t *testing.T) *exec.Cmd {
	t.Helper()
	return e.startChild(t, "BOT_TELEGRAM__TOKEN="+e.tg.Token(), "BOT_TELEGRAM__API_URL="+e.tg.URL(), "BOT_TELEGRAM__PACING=false")
}

// startChild is startBotChild with the platform's BOT_ variables given.
func (e *e2e) startChild(t *testing.T, platform ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "child.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(platform,
		botChildEnv+"=1", "PATH="+os.Getenv("PATH"), "HOME="+t.TempDir(),
		"BOT_LLM__PROVIDER=openai", "BOT_LLM__BASE_URL="+e.model.BaseURL(), "BOT_LLM__API_KEY=sk-e2e-test",
		"BOT_LLM__MODEL=fake-model", "BOT_REDIS__URL="+testRedisURL, "BOT_REDIS__PREFIX="+e.cfg.Redis.Prefix,
		"BOT_AUTH__SIGNING_KEYS="+testSigningKey, "BOT_HTTP__ADDR=127.0.0.1:0", "BOT_RUNS__LEASE=5s", "BOT_LOG__LEVEL=debug",
	)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the child bot: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("child bot logs:\n%s", b)
		}
	})
	return cmd
}

// TestPollingTakenOverAfterAKill proves a poller killed with SIGKILL — no release, no goodbye —
// is replaced by the standby once the lease expires: within two lease periods of the kill, and
// never while the dead process's lease still held; messages sent meanwhile are answered exactly
// once.
func TestPollingTakenOverAfterAKill(t *testing.T) {
	t.Parallel()
	e := newE2E(t, nil)
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer rdb.Close()
	leaseKey := e.cfg.Redis.Prefix + "intake:telegram:" + strconv.FormatInt(telegramfake.BotID, 10)
	holder := func() string { return rdb.Get(context.Background(), leaseKey).Val() }

	child := e.startBotChild(t)
	waitFor(t, "the child bot to hold the polling lease", 30*time.Second, func() bool { return holder() != "" })
	childID := holder()
	survivor := e.start()
	if survivor.polls() || holder() != childID {
		t.Fatalf("the second process took the lease from a live poller (holder %q)", holder())
	}
	us := users(4, 6300)
	e.sendRound(us, 0)
	e.waitRounds(us, 1, 20*time.Second)
	if n := counter(survivor.metrics.inbound, "telegram"); n != 0 {
		t.Fatalf("the standby took %v updates in while the child polled", n)
	}
	// Killed between an answer's sendMessage and the record of it, a process leaves a run whose
	// replay posts the answer again (delivery records after sending): a window of the run queue,
	// not of polling, which this test keeps out of by killing once every run is settled.
	waitFor(t, "the first round's runs to be settled and their answers recorded", 10*time.Second, func() bool {
		d, err := survivor.core.queue.Depth(context.Background())
		finals, _ := rdb.Keys(context.Background(), e.cfg.Redis.Prefix+"run:*:out:final").Result()
		return err == nil && d.Pending == 0 && len(finals) == len(us)
	})

	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	_ = child.Wait()
	e.sendRound(us, 1) // while nobody polls
	ttl := kit.DefaultLeaseTTL
	waitFor(t, "the survivor to poll", 3*ttl, survivor.polls)
	took := time.Since(killed)
	t.Logf("polling taken over %v after kill -9 (lease %v, standby retry %v)", took.Round(time.Millisecond), ttl, ttl/5)
	if took >= 2*ttl {
		t.Errorf("polling taken over %v after the kill, want within two lease periods (%v)", took, 2*ttl)
	}
	// The dead process renewed its lease at most 3 s (3/10 of it) before the kill, so it held
	// for at least 7 s more: a takeover sooner would mean the lease held nobody back.
	if took < ttl/2 {
		t.Errorf("polling taken over %v after the kill, before the dead process's lease could have expired", took)
	}
	if h := holder(); h == childID || h == "" {
		t.Errorf("the lease is held by %q after the takeover, want the survivor", h)
	}
	e.sendRound(us, 2)
	e.waitRounds(us, 3, 20*time.Second)
	e.checkOnce(len(us) * 3)
	if n := counter(survivor.metrics.leaseTakeovers, "telegram"); n != 1 {
		t.Errorf("switchboard_intake_lease_takeovers_total{platform=telegram} = %v on the survivor, want 1", n)
	}
	if n := counter(survivor.metrics.inbound, "telegram"); n != float64(len(us)*2) {
		t.Errorf("the survivor took %v updates in, want the %d sent after the kill, each once", n, len(us)*2)
	}
}
