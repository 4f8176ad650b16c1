package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/fake/modelserver"
	telegramfake "github.com/switchboard-bot/switchboard/internal/fake/telegram"
)

// The chaos suite (issue 14, point 8): the shipped binary, `bot run`, as one or two processes
// taking Telegram's updates by webhook (so both take intake), on a Redis, against the fake Bot
// API and model in this process, under a steady load into which one fault is injected. Each
// test asserts that no message is lost and none doubled beyond what delivery counts as a
// possible double (switchboard_outbound_errors_total{kind="possible_double"} and
// {kind="unrecorded"}), and logs one line of figures:
//
//	chaos: <fault> | messages N | lost L | doubled D | possible doubles P | longest silence S | recovery R
//
// The short tests (this file) run in `go test` and CI; the long ones (chaos_long_test.go,
// build tag chaos) run with `make chaos`. docs/architecture.md ("Faults") explains the figures.

// chaosFirstChat is the first load chat's id (a private chat with user chaosFirstChat).
const chaosFirstChat = 300_000

// chaosSecret is the webhook secret of the chaos processes.
const chaosSecret = "chaos-webhook-secret"

// chaosModelLatency is how long the fake model takes to answer: runs are in flight when a
// fault strikes.
const chaosModelLatency = 150 * time.Millisecond

// chaosRig is one chaos test's fakes, processes and load.
type chaosRig struct {
	t        *testing.T
	bin      string
	tg       *telegramfake.Server
	model    *modelserver.Server
	redisURL string
	prefix   string
	env      []string // settings every process gets beyond the rig's own
	hc       *http.Client

	mu   sync.Mutex
	bots []*chaosBot
	msgs []chaosMsg
	// counted holds the possible-double counters of processes that ended, read just before
	// their signal (what one counts during a SIGTERM's drain is not seen).
	counted float64
	// twice delivers every update twice, to two processes at once (platform redeliveries).
	twice atomic.Bool

	lanes       []chan chaosDelivery
	lanesWG     sync.WaitGroup
	undelivered atomic.Int64
}

// chaosBot is one `bot run` process.
type chaosBot struct {
	cmd  *exec.Cmd
	addr string
	log  string
	done chan struct{}
}

// chaosMsg is one message a user sent.
type chaosMsg struct {
	chat int64
	id   int
	text string
	at   time.Time
}

type chaosDelivery struct {
	body []byte
	chat int64
}

// chaosLanes is how many webhook deliveries are in flight at once; one chat's updates always
// take the same lane, in order, as Telegram delivers them.
const chaosLanes = 16

// newChaosRig starts the fakes and the webhook deliveries; redisURL is the Redis the processes
// use (testRedisURL, a private redistest server, or a proxy in front of one). Processes are
// started with startBot.
func newChaosRig(t *testing.T, redisURL string, env ...string) *chaosRig {
	t.Helper()
	r := &chaosRig{t: t, bin: buildBot(t), tg: telegramfake.New(t), model: modelserver.New(t), redisURL: redisURL,
		prefix: uniquePrefix(), env: env, hc: &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: chaosLanes}}}
	r.tg.SetRecording(false)
	r.model.SetRecording(false)
	r.model.SetLatency(chaosModelLatency)
	r.model.SetFunc(echoModel)
	if redisURL == testRedisURL {
		t.Cleanup(func() { cleanRedis(t, r.prefix) })
	}
	for range chaosLanes {
		lane := make(chan chaosDelivery, 1024)
		r.lanes = append(r.lanes, lane)
		r.lanesWG.Go(func() {
			for d := range lane {
				r.deliver(d)
			}
		})
	}
	t.Cleanup(func() {
		r.closeLanes()
		r.hc.CloseIdleConnections()
	})
	return r
}

func (r *chaosRig) closeLanes() {
	r.mu.Lock()
	lanes := r.lanes
	r.lanes = nil
	r.mu.Unlock()
	for _, l := range lanes {
		close(l)
	}
	r.lanesWG.Wait()
}

// startBot starts one more `bot run` and waits until it is ready.
func (r *chaosRig) startBot() *chaosBot {
	r.t.Helper()
	b := &chaosBot{addr: freePort(r.t), log: filepath.Join(r.t.TempDir(), "bot.log"), done: make(chan struct{})}
	env := append([]string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(),
		"BOT_LLM__PROVIDER=openai", "BOT_LLM__BASE_URL=" + r.model.BaseURL(), "BOT_LLM__API_KEY=sk-chaos", "BOT_LLM__MODEL=fake-model",
		"BOT_REDIS__URL=" + r.redisURL, "BOT_REDIS__PREFIX=" + r.prefix, "BOT_AUTH__SIGNING_KEYS=" + testSigningKey,
		"BOT_HTTP__ADDR=" + b.addr, "BOT_RUNS__LEASE=5s", "BOT_LOG__LEVEL=info",
		"BOT_TELEGRAM__TOKEN=" + r.tg.Token(), "BOT_TELEGRAM__API_URL=" + r.tg.URL(), "BOT_TELEGRAM__PACING=false",
		"BOT_TELEGRAM__MODE=webhook", "BOT_TELEGRAM__WEBHOOK_URL=https://bot.example.test/telegram",
		"BOT_TELEGRAM__WEBHOOK_SECRET=" + chaosSecret,
	}, r.env...)
	logf, err := os.Create(b.log)
	if err != nil {
		r.t.Fatal(err)
	}
	b.cmd = exec.Command(r.bin, "run")
	b.cmd.Env, b.cmd.Stdout, b.cmd.Stderr = env, logf, logf
	if err := b.cmd.Start(); err != nil {
		r.t.Fatalf("starting bot run: %v", err)
	}
	_ = logf.Close()
	go func() { _ = b.cmd.Wait(); close(b.done) }()
	r.t.Cleanup(func() {
		r.stop(b, syscall.SIGTERM)
		if r.t.Failed() {
			r.t.Logf("bot at %s, end of its log:\n%s", b.addr, tailOf(b.log, 30))
		}
	})
	r.waitUntil(fmt.Sprintf("bot run at %s to be ready", b.addr), 30*time.Second, func() bool {
		select {
		case <-b.done:
			r.t.Fatalf("bot run at %s exited at start:\n%s", b.addr, tailOf(b.log, 30))
		default:
		}
		code, _ := readyz("http://" + b.addr + "/readyz")
		return code == http.StatusOK
	})
	r.mu.Lock()
	r.bots = append(r.bots, b)
	r.mu.Unlock()
	return b
}

// stop signals b (SIGTERM: a graceful stop; SIGKILL: kill -9) and waits for it to exit. The
// process's possible-double counts are read just before the signal and kept.
func (r *chaosRig) stop(b *chaosBot, sig syscall.Signal) {
	select {
	case <-b.done:
		return
	default:
	}
	n := r.scrape(b)
	r.mu.Lock()
	r.counted += n
	r.mu.Unlock()
	_ = b.cmd.Process.Signal(sig)
	select {
	case <-b.done:
	case <-time.After(30 * time.Second):
		r.t.Errorf("bot run at %s did not exit within 30 s of %v", b.addr, sig)
		_ = b.cmd.Process.Kill()
		<-b.done
	}
	r.mu.Lock()
	for i, x := range r.bots {
		if x == b {
			r.bots = append(r.bots[:i], r.bots[i+1:]...)
			break
		}
	}
	r.mu.Unlock()
}

// scrape reads the process's counts of possible doubles: messages a replay sent again after an
// earlier attempt's intent (possible_double) and messages sent whose record was lost
// (unrecorded).
func (r *chaosRig) scrape(b *chaosBot) float64 {
	resp, err := r.hc.Get("http://" + b.addr + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var n float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "switchboard_outbound_errors_total{") ||
			!strings.Contains(line, `kind="possible_double"`) && !strings.Contains(line, `kind="unrecorded"`) {
			continue
		}
		if f := strings.Fields(line); len(f) == 2 {
			v, _ := strconv.ParseFloat(f[1], 64)
			n += v
		}
	}
	return n
}

// deliver POSTs one update to a process's webhook, as Telegram does: on an error or an answer
// other than 200 it tries again (the next process) until one takes it, for five minutes (an
// update refused meanwhile makes its chat's silence longer, which the figures show). With twice
// set, it is delivered to two processes at once.
func (r *chaosRig) deliver(d chaosDelivery) {
	if !r.twice.Load() {
		r.deliverOnce(d, 0)
		return
	}
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() { r.deliverOnce(d, i) })
	}
	wg.Wait()
}

func (r *chaosRig) deliverOnce(d chaosDelivery, offset int) {
	deadline := time.Now().Add(5 * time.Minute)
	for try := 0; time.Now().Before(deadline); try++ {
		r.mu.Lock()
		var addr string
		if len(r.bots) > 0 {
			addr = r.bots[(int(d.chat)+offset+try)%len(r.bots)].addr
		}
		r.mu.Unlock()
		if addr != "" && r.post(addr, d.body) {
			return
		}
		time.Sleep(100 * time.Millisecond) // Telegram's retry pace, not synchronization
	}
	r.undelivered.Add(1)
}

func (r *chaosRig) post(addr string, body []byte) bool {
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/telegram", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(telegramSecretHeader, chaosSecret)
	resp, err := r.hc.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// telegramSecretHeader is the header the webhook secret travels in.
const telegramSecretHeader = "X-Telegram-Bot-Api-Secret-Token"

// push sends message i of a load of chats chats: from user chaosFirstChat + i%chats.
func (r *chaosRig) push(i, chats int) {
	chat := int64(chaosFirstChat + i%chats)
	text := fmt.Sprintf("m%d c%d", i/chats, i%chats)
	at := time.Now()
	_, id := r.tg.PushPrivate(telegramfake.User{ID: chat, FirstName: "Chaos"}, text)
	r.mu.Lock()
	r.msgs = append(r.msgs, chaosMsg{chat: chat, id: id, text: text, at: at})
	lane := r.lanes[int(chat)%len(r.lanes)]
	r.mu.Unlock()
	for _, body := range r.tg.TakeUpdates() {
		lane <- chaosDelivery{body: body, chat: chat}
	}
}

// chaosLoad is a steady load: messages over chats, rate a second.
type chaosLoad struct {
	messages, chats, rate int
}

// chaosFault strikes while the load runs (from a third of its messages on) and returns when it
// is over: ended is when the system was whole again (the process replaced, Redis back, the
// model answering), from which recovery is measured.
type chaosFault func(r *chaosRig) (ended time.Time)

// chaosFigures are what a chaos test measured.
type chaosFigures struct {
	messages, lost, doubled int
	possible                float64
	silence, recovery       time.Duration
	examples                []string // a few of the lost and doubled, for the log
}

// run drives load, strikes fault during it, waits for every answer and reports and checks the
// figures.
func (r *chaosRig) run(name string, load chaosLoad, fault chaosFault) chaosFigures {
	r.t.Helper()
	began := time.Now()
	strike := make(chan struct{})
	pushed := make(chan struct{})
	go func() {
		defer close(pushed)
		tick := time.NewTicker(time.Second / time.Duration(load.rate))
		defer tick.Stop()
		for i := range load.messages {
			if i == load.messages/3 {
				close(strike)
			}
			r.push(i, load.chats)
			<-tick.C // pacing the load, not synchronization
		}
	}()
	<-strike
	ended := fault(r)
	<-pushed
	r.waitAnswered(load, 3*time.Minute)
	r.quiesce()
	f := r.figures(ended)
	r.mu.Lock()
	bots := append([]*chaosBot(nil), r.bots...)
	f.possible = r.counted
	r.mu.Unlock()
	for _, b := range bots {
		f.possible += r.scrape(b)
	}
	r.t.Logf("chaos: %s | messages %d | lost %d | doubled %d | possible doubles %.0f | longest silence %v | recovery %v | run %v",
		name, f.messages, f.lost, f.doubled, f.possible, f.silence.Round(10*time.Millisecond), f.recovery.Round(10*time.Millisecond),
		time.Since(began).Round(time.Second))
	for _, e := range f.examples {
		r.t.Logf("chaos: %s: %s", name, e)
	}
	if n := r.undelivered.Load(); n > 0 {
		r.t.Errorf("%d updates could not be delivered to any process for five minutes", n)
	}
	if f.lost > 0 {
		r.t.Errorf("%d of %d messages lost (no answer showing it)", f.lost, f.messages)
	}
	if float64(f.doubled) > f.possible {
		r.t.Errorf("%d messages doubled, more than the %.0f counted as possible doubles", f.doubled, f.possible)
	}
	return f
}

// waitUntil checks cond every 50 ms until it holds, failing the test after timeout.
func (r *chaosRig) waitUntil(what string, timeout time.Duration, cond func() bool) bool {
	r.t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			r.t.Errorf("timed out after %v waiting for %s", timeout, what)
			return false
		}
		<-tick.C
	}
	return true
}

// waitAnswered waits until every chat shows an answer (no placeholder) for each of its messages,
// or timeout passes (the figures then show what is missing).
func (r *chaosRig) waitAnswered(load chaosLoad, timeout time.Duration) {
	r.t.Helper()
	r.waitUntil("every message answered", timeout, func() bool {
		for c := range load.chats {
			want := load.messages/load.chats + boolInt(c < load.messages%load.chats)
			posted := r.tg.Posted(int64(chaosFirstChat + c))
			if len(posted) < want {
				return false
			}
			for _, m := range posted {
				if isPlaceholder(m) {
					return false
				}
			}
		}
		return true
	})
}

// quiesce waits until the Bot API has seen no sendMessage for two seconds: a late replay
// posting an answer twice would do it now.
func (r *chaosRig) quiesce() {
	r.t.Helper()
	last, since := r.tg.Count("sendMessage"), time.Now()
	r.waitUntil("the bots to fall quiet", time.Minute, func() bool {
		if n := r.tg.Count("sendMessage"); n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) >= 2*time.Second
	})
}

// figures counts, over every message sent: lost (no reply showing its answer), doubled (replies
// beyond its one, and bot messages replying to nothing sent), the longest silence (sent → first
// reply shown) and the recovery (ended → the first reply to the last message sent before it).
func (r *chaosRig) figures(ended time.Time) chaosFigures {
	r.mu.Lock()
	msgs := append([]chaosMsg(nil), r.msgs...)
	r.mu.Unlock()
	f := chaosFigures{messages: len(msgs)}
	byChat := map[int64][]chaosMsg{}
	for _, m := range msgs {
		byChat[m.chat] = append(byChat[m.chat], m)
	}
	now := time.Now()
	for chat, want := range byChat {
		replies := map[int][]telegramfake.Message{}
		for _, p := range r.tg.Posted(chat) {
			replies[p.ReplyTo] = append(replies[p.ReplyTo], p)
		}
		for _, m := range want {
			got := replies[m.id]
			delete(replies, m.id)
			answered := 0
			for _, g := range got {
				if strings.Contains(visible(g), "echo: "+m.text) {
					answered++
				}
			}
			first := now
			if len(got) > 0 {
				first = got[0].At
			}
			f.silence = max(f.silence, first.Sub(m.at))
			if !m.at.After(ended) {
				f.recovery = max(f.recovery, first.Sub(ended))
			}
			if answered == 0 {
				f.lost++
			}
			f.doubled += max(0, len(got)-1)
			if (answered == 0 || len(got) > 1) && len(f.examples) < 5 {
				f.examples = append(f.examples, fmt.Sprintf("chat %d %q sent %v: %s", chat, m.text, m.at.Format("15:04:05.000"), describe(got)))
			}
		}
		for _, extra := range replies {
			f.doubled += len(extra)
			if len(f.examples) < 5 {
				f.examples = append(f.examples, fmt.Sprintf("chat %d, replying to no message sent: %s", chat, describe(extra)))
			}
		}
	}
	return f
}

// describe lists posted messages: when each was sent and what it shows.
func describe(ms []telegramfake.Message) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = fmt.Sprintf("[%s %q]", m.At.Format("15:04:05.000"), visible(m))
	}
	return strings.Join(parts, " ")
}

// tailOf is the last n lines of the file at path.
func tailOf(path string, n int) string {
	body, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(body)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// pick returns one of the rig's running processes.
func (r *chaosRig) pick(i int) *chaosBot {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bots[i%len(r.bots)]
}

// chaosShortLoad is the load of the tests CI runs: 300 messages over 60 chats at 40 a second.
var chaosShortLoad = chaosLoad{messages: 300, chats: 60, rate: 40}

// TestChaosKill9OneOfTwoUnderLoad is fault (a): of two processes taking updates under load, one
// is killed with SIGKILL and replaced. Its runs in flight are taken over by the survivor when
// their lease expires (runs.lease 5 s); updates it had not acknowledged are redelivered to the
// survivor. Nothing is lost; a doubled answer is one the killed process posted in the instant
// before it died, before its record — counted by the survivor's replay as a possible double.
func TestChaosKill9OneOfTwoUnderLoad(t *testing.T) {
	t.Parallel()
	r := newChaosRig(t, testRedisURL)
	r.startBot()
	r.startBot()
	r.run("kill -9 one of two", chaosShortLoad, func(r *chaosRig) time.Time {
		r.stop(r.pick(0), syscall.SIGKILL)
		killed := time.Now()
		r.startBot()
		return killed
	})
}

// TestChaosPlatformRedeliveries is fault (g): every update is delivered twice, to two processes
// at once, as Telegram does when a webhook answer is late. Each message is answered once.
func TestChaosPlatformRedeliveries(t *testing.T) {
	t.Parallel()
	r := newChaosRig(t, testRedisURL)
	r.startBot()
	r.startBot()
	r.twice.Store(true)
	f := r.run("every update delivered twice", chaosShortLoad, func(*chaosRig) time.Time { return time.Now() })
	if f.doubled != 0 {
		t.Errorf("%d answers doubled by redeliveries, want none (the router dedupes them)", f.doubled)
	}
}

// TestChaos429Storm is fault (f): Telegram answers a run of sendMessage and editMessageText
// calls with 429 retry_after 1; delivery waits and sends again. Nothing lost, nothing doubled.
func TestChaos429Storm(t *testing.T) {
	t.Parallel()
	r := newChaosRig(t, testRedisURL)
	r.startBot()
	f := r.run("429 storm (150 sends, retry_after 1)", chaosShortLoad, func(r *chaosRig) time.Time {
		from := r.tg.Count("sendMessage")
		r.tg.RateLimitStorm("sendMessage", 150, 1)
		r.tg.RateLimitStorm("editMessageText", 50, 1)
		r.waitUntil("the storm to pass", time.Minute, func() bool { return r.tg.Count("sendMessage") > from+150 })
		return time.Now()
	})
	if f.doubled != 0 {
		t.Errorf("%d answers doubled under 429s, want none", f.doubled)
	}
}
