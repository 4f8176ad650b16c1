package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/config"
	discordfake "github.com/switchboard-bot/switchboard/internal/fake/discord"
	slackfake "github.com/switchboard-bot/switchboard/internal/fake/slack"
	telegramfake "github.com/switchboard-bot/switchboard/internal/fake/telegram"
)

// BenchmarkBinary measures what an operator runs: the shipped `bot run`, built from this
// package as the Dockerfile builds it (CGO_ENABLED=0, -trimpath, -ldflags "-s -w"), as its own process with the default configuration — only the overrides in
// binaryOverrides, each for a reason — against the fakes in a second process (the Bot API, the
// model at 0 ms, the webhook deliveries; the fake Slack for the slack_ workloads, which are
// BenchmarkSlackEndToEnd's), with the real Redis. This process only drives the
// load and reads the others' figures:
//
//	go test -run '^$' -bench Binary -benchtime=1x ./cmd/bot/
//
// It reports, per workload: msgs/s end to end; bot-cpu-ms/msg, the bot processes' CPU (user +
// system, /proc/<pid>/stat) over the workload, summed; bot-cpu-before-ms, what they spent before
// it (starting, and the warm-up burst of a warm_ workload), which bot-cpu-ms/msg leaves out;
// peak-rss-MB, the largest bot's VmHWM (reset before the workload); bot-page-faults/msg, the bot
// processes' minor page faults (pages touched for the first time, or again after Go gave them
// back; tens of µs each on some virtual machines, which is most of what a cold process spends
// over a warm one); intake-msgs/s, how fast the updates were handed out (polling); first reply
// p50/p99 (receipt → the run's first visible message); redis-cpu-ms/msg (INFO cpu) and
// redis-reads/msg (INFO stats total_reads_processed: the read events Redis served, about one per
// round trip). The figures of Redis are the whole server's: run it on a quiet machine. Every
// workload fails unless each message got exactly one reply showing its answer and no
// placeholder was left.
//
// The others are bursts answered by a model that takes 0 ms; the realistic_ workloads (one per
// platform, and two on Slack: realisticRate a second, the model streaming for realisticStream)
// are what a bot in use sees, and report besides the latency the bot adds to the model's
// (reportAddedLatency) and log the platform calls per message.
func BenchmarkBinary(b *testing.B) {
	// SB_LOAD_BOT_BIN names a bot binary built beforehand, to compare two builds run after run
	// on the same machine (its figures swing between runs more than most changes move them).
	bin := os.Getenv("SB_LOAD_BOT_BIN")
	if bin == "" {
		bin = buildShipped(b)
	}
	for _, w := range []binarySpec{
		{loadSpec: loadSpec{name: "2000msgs_200chats", messages: 2000, chats: 200}, procs: 1},
		{loadSpec: loadSpec{name: "2000msgs_2000chats", messages: 2000, chats: 2000}, procs: 1},
		// The same bursts to a process that has been working: it first answers one burst of the
		// same shape in other chats, unmeasured. A process just started also pays for its first
		// touches of memory (a page fault each, 12 µs and more on the AMD sessions' machine;
		// bot run touches its heap floor's before it is ready), connections dialled and pools
		// filled; a bot that has been running does not.
		{loadSpec: loadSpec{name: "warm_2000msgs_200chats", messages: 2000, chats: 200}, procs: 1, warm: true},
		{loadSpec: loadSpec{name: "warm_2000msgs_2000chats", messages: 2000, chats: 2000}, procs: 1, warm: true},
		// Intake's own speed: the model answers after 250 ms, so the workers mostly wait and the
		// burst of 5,000 updates is taken in (kept and confirmed) ahead of its runs.
		{loadSpec: loadSpec{name: "intake_5000msgs_5000chats_model250ms", messages: 5000, chats: 5000, modelLatency: 250 * time.Millisecond}, procs: 1},
		{loadSpec: loadSpec{name: "paced100ps_500msgs_200chats", messages: 500, chats: 200, rate: 100}, procs: 1},
		{loadSpec: loadSpec{name: "warm_paced100ps_500msgs_200chats", messages: 500, chats: 200, rate: 100}, procs: 1, warm: true},
		{loadSpec: loadSpec{name: "webhook_2000msgs_200chats", messages: 2000, chats: 200, webhook: true}, procs: 1},
		// Telegram lets one process poll a bot, so several share the load by webhook.
		{loadSpec: loadSpec{name: "webhook_2000msgs_200chats_3procs", messages: 2000, chats: 200, webhook: true}, procs: 3},
		// The floor to read the others against on this machine: the minimal bot
		// (minimalbot_test.go) under the first workload, whatever SB_LOAD_BOT_BIN names.
		{loadSpec: loadSpec{name: "minimalbot_2000msgs_200chats", messages: 2000, chats: 200}, procs: 1, minimal: true},
		{loadSpec: loadSpec{name: "warm_minimalbot_2000msgs_200chats", messages: 2000, chats: 200}, procs: 1, minimal: true, warm: true},
		{loadSpec: realisticTelegram, procs: 1},
		{loadSpec: minimalRealistic, procs: 1, minimal: true},
	} {
		b.Run(w.name, func(b *testing.B) {
			for range b.N {
				runBinaryLoad(b, bin, w)
			}
		})
	}
	// The warm_ workloads are BenchmarkBinary's alone: a warm-up burst is a process's.
	for _, w := range append(slackWorkloads, slackLoadSpec{name: "warm_socket_2000msgs_200chats", messages: 2000, chats: 200, warm: true}) {
		b.Run("slack_"+w.name, func(b *testing.B) {
			for range b.N {
				runBinarySlackLoad(b, bin, w)
			}
		})
	}
	for _, w := range append(discordWorkloads,
		discordLoadSpec{name: "warm_dm_2000msgs_200chats", messages: 2000, chats: 200, warm: true},
		// The burst beyond Discord's global limit, as shipped: pacing on, so the 2,000 answers
		// go out at 50 requests a second (about a minute) and each must still be posted once,
		// its send waiting in the bot's pacer rather than failing as an outage (issue 38).
		discordLoadSpec{name: "paced_dm_2000msgs_200chats", messages: 2000, chats: 200, pacing: true},
		// The same burst as mentions in guild channels, answered as shipped in a thread started
		// from each message: a send that starts the thread waits in the pacer too.
		discordLoadSpec{name: "paced_mentions_2000msgs_200chats", messages: 2000, chats: 200, pacing: true, mention: true}) {
		b.Run("discord_"+w.name, func(b *testing.B) {
			for range b.N {
				runBinaryDiscordLoad(b, bin, w)
			}
		})
	}
}

// buildShipped builds the bot binary operators run. On Linux, dockerfile_test.go sets it to
// the Dockerfile's own build (static, stripped); elsewhere it is a plain go build.
var buildShipped = buildBot

type binarySpec struct {
	loadSpec
	procs   int  // bot processes sharing the Redis
	minimal bool // the minimal bot instead of bot run
	warm    bool // a burst of the same shape in the chats after these first, not measured
}

// binaryOverrides are the settings the binary runs change from the defaults, and why.
const binaryOverrides = "telegram.pacing=false (the workload measures the bot, not Telegram's limits); " +
	"telegram.api_url, llm.* (the fakes); redis.url, redis.prefix, auth.signing_keys (the shared test Redis); " +
	"http.addr (a free port per process); telegram.mode=webhook for the webhook workloads"

// botProcess is one `bot run` child.
type botProcess struct {
	cmd  *exec.Cmd
	addr string
	log  string
}

func freePort(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// telegramEnv configures `bot run` for the child's fake Bot API, polling or by webhook.
func telegramEnv(fakes *loadFakes, webhook bool) []string {
	env := []string{"BOT_TELEGRAM__TOKEN=" + fakes.hello.Token, "BOT_TELEGRAM__API_URL=" + fakes.hello.TelegramURL,
		"BOT_TELEGRAM__PACING=false"}
	if webhook {
		env = append(env, "BOT_TELEGRAM__MODE=webhook", "BOT_TELEGRAM__WEBHOOK_URL=https://bot.example.test/telegram",
			"BOT_TELEGRAM__WEBHOOK_SECRET="+loadWebhookSecret)
	}
	return env
}

// slackEnv configures `bot run` for the child's fake Slack, over Socket Mode or HTTP.
func slackEnv(fakes *loadFakes, httpMode bool) []string {
	// The workloads' DMs are answered at their top level (as before agent view became the
	// default), so that the figures stay comparable across builds and with the other platforms.
	env := []string{"BOT_SLACK__BOT_TOKEN=" + fakes.hello.SlackBotToken, "BOT_SLACK__API_URL=" + fakes.hello.SlackAPIURL,
		"BOT_SLACK__PACING=false", "BOT_SLACK__AGENT_VIEW=false"}
	if httpMode {
		return append(env, "BOT_SLACK__MODE=http", "BOT_SLACK__SIGNING_SECRET="+fakes.hello.SlackSigningSecret)
	}
	return append(env, "BOT_SLACK__APP_TOKEN="+fakes.hello.SlackAppToken)
}

// startBots starts n `bot run` processes sharing one Redis prefix, with the platform settings
// platformEnv, and waits until each answers /readyz.
func startBots(b *testing.B, bin string, n int, fakes *loadFakes, prefix string, platformEnv []string) []*botProcess {
	b.Helper()
	var procs []*botProcess
	for i := range n {
		p := &botProcess{addr: freePort(b), log: filepath.Join(b.TempDir(), fmt.Sprintf("bot%d.log", i))}
		env := append([]string{
			"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(),
			"BOT_LLM__PROVIDER=openai", "BOT_LLM__BASE_URL=" + fakes.hello.ModelURL, "BOT_LLM__API_KEY=sk-load",
			"BOT_LLM__MODEL=fake-model",
			"BOT_REDIS__URL=" + testRedisURL, "BOT_REDIS__PREFIX=" + prefix, "BOT_AUTH__SIGNING_KEYS=" + testSigningKey,
			"BOT_HTTP__ADDR=" + p.addr,
		}, platformEnv...)
		// SB_LOAD_BOT_ENV adds settings to every bot process, for experiments (GOGC=100,
		// GODEBUG=gctrace=1); the figures of notes are taken without it.
		if x := os.Getenv("SB_LOAD_BOT_ENV"); x != "" {
			env = append(env, strings.Fields(x)...)
		}
		logf, err := os.Create(p.log)
		if err != nil {
			b.Fatal(err)
		}
		p.cmd = exec.Command(bin, "run")
		p.cmd.Env, p.cmd.Stdout, p.cmd.Stderr = env, logf, logf
		if err := p.cmd.Start(); err != nil {
			b.Fatalf("starting bot run: %v", err)
		}
		_ = logf.Close()
		procs = append(procs, p)
		b.Cleanup(func() { p.stop(b) })
	}
	for _, p := range procs {
		p.waitReady(b)
	}
	return procs
}

func (p *botProcess) waitReady(b *testing.B) {
	b.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for ; ; <-tick.C {
		resp, err := http.Get("http://" + p.addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) || p.cmd.ProcessState != nil {
			b.Fatalf("bot run at %s never became ready:\n%s", p.addr, p.tail())
		}
	}
}

// stop sends SIGTERM and waits for the process to exit; it fails the benchmark if the exit was
// not clean.
func (p *botProcess) stop(b *testing.B) {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.cmd.Wait(); err != nil {
		b.Errorf("bot run at %s did not exit cleanly after SIGTERM: %v\n%s", p.addr, err, p.tail())
	}
	// SB_LOAD_BOT_LOGDIR keeps each bot process's log there (its name is the temporary one's).
	if d := os.Getenv("SB_LOAD_BOT_LOGDIR"); d != "" {
		body, _ := os.ReadFile(p.log)
		_ = os.WriteFile(filepath.Join(d, filepath.Base(p.log)), body, 0o644)
	}
}

// warnLines are the process's log lines at level WARN (the default text format).
func (p *botProcess) warnLines() []string {
	body, _ := os.ReadFile(p.log)
	var out []string
	for l := range strings.SplitSeq(string(body), "\n") {
		if strings.Contains(l, " level=WARN ") {
			out = append(out, l)
		}
	}
	return out
}

func (p *botProcess) tail() string {
	body, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimSpace(string(body)), "\n")
	return strings.Join(lines[max(0, len(lines)-20):], "\n")
}

// usage is the process's user + system CPU so far (in clock ticks of 10 ms) and its minor page
// faults — each a page it touched for the first time, or again after giving it back to the
// system — read from one /proc/<pid>/stat.
func (p *botProcess) usage(b *testing.B) (cpu time.Duration, faults int64) {
	body, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		b.Fatalf("reading the bot's CPU and page faults: %v", err)
	}
	// The fields after the command name (which is in parentheses and may hold spaces).
	f := strings.Fields(string(body[strings.LastIndexByte(string(body), ')')+2:]))
	faults, _ = strconv.ParseInt(f[7], 10, 64)
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond, faults
}

func (p *botProcess) resetPeak() {
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", p.cmd.Process.Pid), []byte("5"), 0)
}

func (p *botProcess) peak() int64 { return vmHWM(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid)) }

// redisReads is the Redis server's total_reads_processed: about one per round trip.
func redisReads(b *testing.B) int64 { return int64(redisInfo(b, "stats", "total_reads_processed")) }

func runBinaryLoad(b *testing.B, bin string, w binarySpec) {
	b.StopTimer()
	fakes := startLoadFakesWith(b, w.model())
	prefix := uniquePrefix()
	b.Cleanup(func() { cleanRedis(b, prefix) })
	env, overrides := telegramEnv(fakes, w.webhook), binaryOverrides
	if w.minimal {
		exe, err := os.Executable()
		if err != nil {
			b.Fatal(err)
		}
		bin, env, overrides = exe, append(env, minimalBotEnv+"=1"), "none: the minimal bot of minimalbot_test.go, not bot run"
	}
	bots := startBots(b, bin, w.procs, fakes, prefix, env)
	var hooks []string
	if w.webhook {
		for _, p := range bots {
			hooks = append(hooks, "http://"+p.addr+"/telegram")
		}
	}

	if w.warm {
		warm := w.loadSpec
		warm.first = loadFirstChat + int64(w.chats) // the chats after the measured ones
		d := driveLoad(fakes, warm, strings.Join(hooks, ","))
		verifyLoad(b, fakes.posted(warm.first, warm.chats), d.msgs)
		w.postedBefore = warm.messages
	}
	fakes.resetPeak()
	m := startMeter(b, bots, fakes)
	b.StartTimer()
	d := driveLoad(fakes, w.loadSpec, strings.Join(hooks, ","))
	b.StopTimer()
	m.stop(b)
	if w.webhook {
		if n := fakes.webhookFailures(); n > 0 {
			b.Errorf("%d webhook deliveries failed", n)
		}
	}
	posted := fakes.posted(w.firstChat(), w.chats)
	lat := verifyLoad(b, posted, d.msgs)
	for _, p := range bots {
		p.stop(b)
	}
	if w.stream > 0 {
		reportAddedLatency(b, telegramAnswerTimes(posted, d.msgs, fakes.lastEdits("telegram")), fakes.modelSpans())
		fakes.logCalls(b, "telegram", w.messages)
	}

	b.Logf("%d bot process(es), defaults except: %s", w.procs, overrides)
	var elapsed time.Duration
	if w.rate == 0 {
		elapsed = d.elapsed
		if !w.webhook {
			b.ReportMetric(float64(w.messages)/d.intake.Seconds(), "intake-msgs/s")
		}
	}
	m.report(b, w.messages, elapsed, lat)
}

// meter measures the bot processes and the Redis server over a workload: CPU per message
// (/proc/<pid>/stat, summed over the processes), the largest peak RSS (VmHWM, reset at the
// start), Redis CPU and reads per message, and the fakes' CPU per message (their process's
// rusage): with the bot's and Redis's, what the machine spent on a message, which bounds msgs/s.
type meter struct {
	bots             []*botProcess
	fakes            *loadFakes
	fakes0, fakes1   loadUsage
	cpu0, cpu        []time.Duration
	faults0, faults  []int64
	redisCPU0, redis float64
	reads0, reads    int64
	peak             int64
}

// startMeter resets the processes' peak RSS and takes the figures the workload starts from.
func startMeter(b *testing.B, bots []*botProcess, fakes *loadFakes) *meter {
	m := &meter{bots: bots, fakes: fakes, redisCPU0: redisCPU(b), reads0: redisReads(b), fakes0: fakes.usage()}
	for _, p := range bots {
		p.resetPeak()
		cpu, faults := p.usage(b)
		m.cpu0, m.faults0 = append(m.cpu0, cpu), append(m.faults0, faults)
	}
	return m
}

// stop takes the figures the workload ends at (before the checks, which cost CPU too, and
// before the processes exit).
func (m *meter) stop(b *testing.B) {
	for _, p := range m.bots {
		cpu, faults := p.usage(b)
		m.cpu, m.faults = append(m.cpu, cpu), append(m.faults, faults)
		m.peak = max(m.peak, p.peak()) // read while the process lives
	}
	m.redis, m.reads = redisCPU(b), redisReads(b)
	m.fakes1 = m.fakes.usage()
}

// report reports the figures per message of n messages, msgs/s over elapsed when it is not zero
// (a paced workload has no throughput), and the first-reply latencies lat.
func (m *meter) report(b *testing.B, messages int, elapsed time.Duration, lat []time.Duration) {
	n := float64(messages)
	var cpu, before time.Duration
	var faults int64
	for i := range m.bots {
		cpu += m.cpu[i] - m.cpu0[i]
		before += m.cpu0[i]
		faults += m.faults[i] - m.faults0[i]
	}
	if elapsed > 0 {
		b.ReportMetric(n/elapsed.Seconds(), "msgs/s")
	}
	b.ReportMetric(float64(cpu.Microseconds())/1000/n, "bot-cpu-ms/msg")
	b.ReportMetric(float64(before.Milliseconds()), "bot-cpu-before-ms")
	b.ReportMetric(float64(m.peak)/(1<<20), "peak-rss-MB")
	b.ReportMetric(float64(faults)/n, "bot-page-faults/msg")
	b.ReportMetric((m.redis-m.redisCPU0)*1000/n, "redis-cpu-ms/msg")
	b.ReportMetric(float64((m.fakes1.CPU-m.fakes0.CPU).Microseconds())/1000/n, "fakes-cpu-ms/msg")
	b.ReportMetric(float64(m.reads-m.reads0)/n, "redis-reads/msg")
	b.ReportMetric(float64(percentile(lat, 50).Microseconds())/1000, "first-reply-p50-ms")
	b.ReportMetric(float64(percentile(lat, 99).Microseconds())/1000, "first-reply-p99-ms")
	b.ReportMetric(0, "ns/op")
}

// binarySlackOverrides are the settings the Slack binary runs change from the defaults.
const binarySlackOverrides = "slack.pacing=false (the workload measures the bot, not Slack's per-channel pace); " +
	"slack.api_url, slack.bot_token, slack.app_token or slack.signing_secret, llm.* (the fakes); " +
	"redis.url, redis.prefix, auth.signing_keys (the shared test Redis); http.addr (a free port); slack.mode=http for the http workloads"

// runBinarySlackLoad is runBinaryLoad for a Slack workload: one `bot run` on the child's fake
// Slack, Socket Mode or HTTP.
func runBinarySlackLoad(b *testing.B, bin string, w slackLoadSpec) {
	b.StopTimer()
	fakes := startLoadFakesWith(b, loadModel{stream: w.stream})
	prefix := uniquePrefix()
	b.Cleanup(func() { cleanRedis(b, prefix) })
	bot := startBots(b, bin, 1, fakes, prefix, slackEnv(fakes, w.http))[0]
	var events string
	if w.http {
		events = "http://" + bot.addr + config.Default().Slack.EventsPath
	}
	if w.warm {
		warm := w
		warm.first = w.chats
		load := newSlackLoad(warm)
		checkSlackLoad(b, fakes, warm, load, driveSlackLoad(fakes, warm, load, events))
		w.postedBefore = warm.messages
	}
	load := newSlackLoad(w)

	fakes.resetPeak()
	m := startMeter(b, []*botProcess{bot}, fakes)
	b.StartTimer()
	began := time.Now()
	acks := driveSlackLoad(fakes, w, load, events)
	elapsed := time.Since(began)
	b.StopTimer()
	m.stop(b)
	lat := checkSlackLoad(b, fakes, w, load, acks)
	bot.stop(b)
	if w.stream > 0 {
		posted := fakes.slackPosted(w.first, w.chats, w.mention)
		reportAddedLatency(b, slackAnswerTimes(posted, load, acks, fakes.lastEdits("slack")), fakes.modelSpans())
		fakes.logCalls(b, "slack", w.messages)
	}

	b.Logf("1 bot process, defaults except: %s", binarySlackOverrides)
	if w.rate > 0 {
		elapsed = 0 // a paced workload has no throughput
	}
	m.report(b, w.messages, elapsed, lat)
}

// binaryDiscordOverrides are the settings the Discord binary runs change from the defaults.
const binaryDiscordOverrides = "discord.token, discord.api_url, llm.* (the fakes); " +
	"redis.url, redis.prefix, auth.signing_keys (the shared test Redis); http.addr (a free port); " +
	"discord.pacing=false (the workload measures the bot, not Discord's global limit of 50 requests/s)"

// runBinaryDiscordLoad is runBinaryLoad for a Discord workload: one `bot run` on the child's
// fake Discord.
func runBinaryDiscordLoad(b *testing.B, bin string, w discordLoadSpec) {
	b.StopTimer()
	fakes := startLoadFakesWith(b, loadModel{stream: w.stream})
	prefix := uniquePrefix()
	b.Cleanup(func() { cleanRedis(b, prefix) })
	bot := startBots(b, bin, 1, fakes, prefix, []string{
		"BOT_DISCORD__TOKEN=" + fakes.hello.DiscordToken, "BOT_DISCORD__API_URL=" + fakes.hello.DiscordURL,
		"BOT_DISCORD__PACING=" + strconv.FormatBool(w.pacing),
	})[0]
	if w.warm {
		warm := w
		warm.first = w.chats
		load := newDiscordLoad(warm)
		prepareDiscordLoad(fakes, warm)
		acks := driveDiscordLoad(fakes, warm, load)
		verifyDiscordLoad(b, fakes.discordPosted(warm.first, warm.chats), load, acks)
		w.postedBefore = warm.messages
	}
	load := newDiscordLoad(w)
	prepareDiscordLoad(fakes, w)

	fakes.resetPeak()
	m := startMeter(b, []*botProcess{bot}, fakes)
	b.StartTimer()
	began := time.Now()
	acks := driveDiscordLoad(fakes, w, load)
	elapsed := time.Since(began)
	b.StopTimer()
	m.stop(b)
	if w.pacing {
		// What an operator's log showed during the burst: its warnings, and the first few.
		warns := bot.warnLines()
		b.ReportMetric(float64(len(warns)), "warn-log-lines")
		for _, l := range warns[:min(len(warns), 5)] {
			b.Logf("WARN: %s", l)
		}
	}
	posted := fakes.discordPosted(w.first, w.chats)
	lat := verifyDiscordLoad(b, posted, load, acks)
	bot.stop(b)
	if w.stream > 0 {
		reportAddedLatency(b, discordAnswerTimes(posted, load, acks, fakes.lastEdits("discord")), fakes.modelSpans())
		fakes.logCalls(b, "discord", w.messages)
	}

	overrides := binaryDiscordOverrides
	if w.pacing {
		overrides, _, _ = strings.Cut(overrides, "discord.pacing=false")
		overrides += "discord.pacing as shipped (true: Discord's global limit of 50 requests/s)"
	}
	b.Logf("1 bot process, defaults except: %s", overrides)
	if w.rate > 0 {
		elapsed = 0 // a paced workload has no throughput
	}
	m.report(b, w.messages, elapsed, lat)
}

// answerTime is one message's timeline in a realistic workload: its receipt (when the platform
// had it), its text (which names the model's request that answered it), and when its answer was
// complete: its reply's last edit (or last append to its stream, or the stream's stop), or the
// reply's post when it was never edited.
type answerTime struct {
	text     string
	at, done time.Time
}

// doneAt is when a reply posted at posted was complete, given when it was last edited (edits,
// keyed as loadFakesServer.lastEdits keys it).
func doneAt(posted time.Time, edits map[string]int64, key string) time.Time {
	if e, ok := edits[key]; ok && time.Unix(0, e).After(posted) {
		return time.Unix(0, e)
	}
	return posted
}

// telegramAnswerTimes returns the timeline of each of msgs from the chats' posts (checked by
// verifyLoad: one reply each) and the replies' last edits.
func telegramAnswerTimes(posted map[int64][]telegramfake.Message, msgs []pushed, edits map[string]int64) []answerTime {
	reply := map[[2]int64]telegramfake.Message{} // (chat, message replied to) → the reply
	for chat, ps := range posted {
		for _, p := range ps {
			reply[[2]int64{chat, int64(p.ReplyTo)}] = p
		}
	}
	out := make([]answerTime, 0, len(msgs))
	for _, m := range msgs {
		p := reply[[2]int64{m.chat, int64(m.id)}]
		out = append(out, answerTime{text: m.text, at: m.at, done: doneAt(p.At, edits, fmt.Sprintf("%d:%d", m.chat, p.ID))})
	}
	return out
}

// slackAnswerTimes returns the timeline of each of load's messages (acks, as pushed) from the
// channels' posts (checked by verifySlackLoad: one answer each) and the answers' last edits or
// stream calls.
func slackAnswerTimes(posted map[string][]slackfake.Message, load slackLoad, acks []loadPushed, edits map[string]int64) []answerTime {
	answer := map[string]slackfake.Message{} // channel + answer line → the answer
	for ch, ps := range posted {
		for _, p := range ps {
			for line := range strings.SplitSeq(slackAnswerText(p), "\n") {
				if strings.HasPrefix(line, "echo: ") {
					answer[ch+"/"+line] = p
				}
			}
		}
	}
	out := make([]answerTime, 0, len(acks))
	for i, a := range acks {
		p := answer[load.channels[i]+"/echo: "+load.texts[i]]
		out = append(out, answerTime{text: load.texts[i], at: time.Unix(0, a.At), done: doneAt(p.At, edits, p.Channel+":"+p.TS)})
	}
	return out
}

// discordAnswerTimes returns the timeline of each of load's messages (acks, as dispatched) from
// the DMs' posts (checked by verifyDiscordLoad: one reply each) and the replies' last edits.
func discordAnswerTimes(posted map[int][]discordfake.Message, load discordLoad, acks []loadPushed, edits map[string]int64) []answerTime {
	reply := map[string]discordfake.Message{} // user message id → the bot's reply
	for _, ps := range posted {
		for _, p := range ps {
			reply[p.ReplyTo] = p
		}
	}
	out := make([]answerTime, 0, len(acks))
	for i, a := range acks {
		p := reply[a.MsgID]
		out = append(out, answerTime{text: load.texts[i], at: time.Unix(0, a.At), done: doneAt(p.CreatedAt, edits, p.ChannelID+":"+p.ID)})
	}
	return out
}

// reportAddedLatency reports the latency the bot adds to the model's, from each message's
// timeline and the model's span answering it (when the fake model received the request and
// wrote the answer's last byte): answer-added, receipt → answer complete less the model's span
// (p50, p99); its two parts, to-model (receipt → the model's request: intake, queue, the run's
// start) and after-model (the model's last byte → the answer complete: the lead's end, delivery,
// the platform's call), p50 and p99 each; and model-p50-ms, the model's own span (the workload's
// stream, and the fake's timer slack). It fails the benchmark when a message's model request is
// not on record.
func reportAddedLatency(b *testing.B, answers []answerTime, spans map[string]modelSpan) {
	b.Helper()
	var added, before, after, model []time.Duration
	missing := 0
	for _, a := range answers {
		sp, ok := spans[a.text]
		if !ok {
			missing++
			continue
		}
		start, end := time.Unix(0, sp.Start), time.Unix(0, sp.End)
		model = append(model, end.Sub(start))
		before = append(before, start.Sub(a.at))
		after = append(after, a.done.Sub(end))
		added = append(added, a.done.Sub(a.at)-end.Sub(start))
	}
	if missing > 0 {
		b.Fatalf("%d of %d answers have no model request on record", missing, len(answers))
	}
	ms := func(d []time.Duration, p int) float64 { return float64(percentile(d, p).Microseconds()) / 1000 }
	b.ReportMetric(ms(added, 50), "answer-added-p50-ms")
	b.ReportMetric(ms(added, 99), "answer-added-p99-ms")
	b.ReportMetric(ms(before, 50), "to-model-p50-ms")
	b.ReportMetric(ms(before, 99), "to-model-p99-ms")
	b.ReportMetric(ms(after, 50), "after-model-p50-ms")
	b.ReportMetric(ms(after, 99), "after-model-p99-ms")
	b.ReportMetric(ms(model, 50), "model-p50-ms")
}
