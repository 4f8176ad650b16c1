package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/switchboard-bot/switchboard/config"
	"github.com/switchboard-bot/switchboard/core/conv"
	telegramfake "github.com/switchboard-bot/switchboard/internal/fake/telegram"
)

// BenchmarkTelegramEndToEnd measures the whole pipeline under load — the fake Bot API polled by
// the real adapter, the router, the Redis queue (real Redis), workers, the lead chain calling the
// fake model (0 ms) through the real OpenAI client, delivery posting each answer (as its one
// message: runs this fast close within the placeholder's grace period) — with pacing off. Run it alone, once per workload:
//
//	go test -run '^$' -bench TelegramEndToEnd -benchtime=1x ./cmd/bot/
//
// The fakes run in a child process (see loadfakes_test.go), so this process is the bot. Each
// burst workload pushes all its messages at once and reports messages per second end to end;
// CPU per message (getrusage): bot-cpu-ms/msg for this process, fakes-cpu-ms/msg for the child,
// cpu-ms/msg for both; Redis CPU per message (INFO cpu); peak RSS of the bot (peak-rss-MB) and
// of the fakes during the workload (VmHWM, reset before it); and receipt → first visible reply
// (the run's first sendMessage: its answer, or the placeholder of a run outlasting the grace
// period) p50/p99. The paced workload pushes 100 messages a second and reports the same
// latencies. Every workload then checks that each message got exactly one reply showing its
// answer: 0 lost, 0 doubled, 0 placeholders left.
//
// The realistic_ workload is paced instead, its answers streamed by the model over 1.5 s (see
// realisticMessages); it reports the latency the bot adds to the model's (reportAddedLatency)
// and logs the platform calls per message. SB_LOAD_TRIPS=1 names the callers of its Redis
// round trips.
func BenchmarkTelegramEndToEnd(b *testing.B) {
	workloads := []loadSpec{
		{name: "2000msgs_200chats", messages: 2000, chats: 200},
		{name: "2000msgs_2000chats", messages: 2000, chats: 2000},
		{name: "paced100ps_500msgs_200chats", messages: 500, chats: 200, rate: 100},
		// Webhook mode, delivered like Telegram does with its default max_connections (40
		// concurrent requests): the pipeline without the poll loop's one-at-a-time hand-over.
		{name: "webhook_2000msgs_200chats", messages: 2000, chats: 200, webhook: true},
		// The cost of a long chat: each chat's thread holds history turns before the load, and
		// runs.history_turns (the stored and sent bound) is raised to 1,000 to show the growth;
		// the last keeps the default bound of 50 over 1,000 stored turns.
		{name: "history10_500msgs_50chats", messages: 500, chats: 50, history: 10, historyTurns: 1000},
		{name: "history100_500msgs_50chats", messages: 500, chats: 50, history: 100, historyTurns: 1000},
		{name: "history1000_500msgs_50chats", messages: 500, chats: 50, history: 1000, historyTurns: 1000},
		{name: "history1000_bound50_500msgs_50chats", messages: 500, chats: 50, history: 1000},
		realisticTelegram,
	}
	for _, w := range workloads {
		b.Run(w.name, func(b *testing.B) {
			for range b.N {
				runLoad(b, w)
			}
		})
	}
}

// loadSpec is one workload: messages spread round-robin over chats private chats, pushed at
// once (rate 0) or rate per second.
type loadSpec struct {
	name     string
	messages int
	chats    int
	rate     int
	webhook  bool
	// history turns are stored in each chat's thread before the load; historyTurns, when set,
	// overrides runs.history_turns.
	history, historyTurns int
	// modelLatency makes the fake model wait that long before each answer; stream, when set,
	// makes it stream the realistic answer over that long (loadModelStreamEnv).
	modelLatency, stream time.Duration
	// first is the first chat's id (0: loadFirstChat); postedBefore, the messages the bot had
	// posted before this load (a warm-up's), so that its waits count this load's only.
	first        int64
	postedBefore int
}

// firstChat is the first chat of w.
func (w loadSpec) firstChat() int64 {
	if w.first == 0 {
		return loadFirstChat
	}
	return w.first
}

// The realistic workloads' shape, on every platform: realisticMessages messages over 200 chats
// (a chat's next message comes 4 s after its last, when its answer is long done), realisticRate
// a second, each answered by a model that streams about 600 bytes (realisticAnswer) over
// realisticStream — a run of about half a minute. They report besides the latency the bot adds
// to the model's (reportAddedLatency) and log the platform calls per message.
const (
	realisticMessages = 1000
	realisticRate     = 50
	realisticStream   = 1500 * time.Millisecond
)

// realisticTelegram is the realistic workload over polling, as shipped: typing at receipt, and
// in these private chats the answer streamed as a draft (telegram.drafts) from
// runs.placeholder_after (1 s), sent as one message when the model is done.
var realisticTelegram = loadSpec{name: "realistic_paced50ps_stream1500ms", messages: realisticMessages, chats: 200,
	rate: realisticRate, stream: realisticStream}

// minimalRealistic is realisticTelegram answered by the minimal bot (minimalbot_test.go): the
// floor to read the realistic figures against on the machine at hand — the same polling, the same
// streamed model call read the same way, and one sendMessage, with nothing else.
var minimalRealistic = loadSpec{name: "minimalbot_" + realisticTelegram.name, messages: realisticMessages, chats: 200,
	rate: realisticRate, stream: realisticStream}

// model is how the fake model answers w's messages.
func (w loadSpec) model() loadModel { return loadModel{latency: w.modelLatency, stream: w.stream} }

// webhookConnections is how many deliveries Telegram keeps in flight to a webhook by default
// (setWebhook max_connections).
const webhookConnections = 40

const loadWebhookSecret = "load-webhook-secret"

// loadOverrides are the settings the load runs change from the defaults, and why; everything
// else (runs.*, log.*) is the default configuration operators run.
const loadOverrides = "telegram.pacing=false (the workload measures the bot, not Telegram's rate limits); " +
	"telegram.api_url, llm.base_url, redis.url, redis.prefix (the fakes, the test Redis)"

// pushed is one user message of a workload.
type pushed struct {
	chat int64
	id   int
	text string
	at   time.Time
}

func runLoad(b *testing.B, w loadSpec) {
	b.StopTimer()
	fakes := startLoadFakesWith(b, w.model())
	e := newE2E(b, func(c *config.Config) {
		// The child's fakes serve this workload; newE2E's in-process ones stay idle.
		c.Telegram.Token = fakes.hello.Token
		c.Telegram.APIURL = fakes.hello.TelegramURL
		c.LLM.BaseURL = fakes.hello.ModelURL
		// newE2E's test settings (short lease, debug logs) give way to the defaults.
		d := config.Default()
		c.Runs, c.Log = d.Runs, d.Log
		if w.historyTurns > 0 {
			c.Runs.HistoryTurns = w.historyTurns
		}
		if w.webhook {
			c.Telegram.Mode = config.TelegramWebhook
			c.Telegram.WebhookURL = "https://bot.example.test/telegram"
			c.Telegram.WebhookSecret = loadWebhookSecret
		}
	})
	r := e.start()
	if w.history > 0 {
		seedHistory(b, r, w)
	}
	trips := &roundTrips{}
	if os.Getenv("SB_LOAD_TRIPS") != "" {
		trips.by = map[string]int{} // attribution costs a stack walk per command
	}
	r.core.redis.AddHook(trips)
	var webhook string
	if w.webhook {
		webhook = "http://" + r.listener.Addr().String() + "/telegram"
	}

	runtime.GC()
	debug.FreeOSMemory()
	resetPeakRSS(b)
	fakes.resetPeak()
	redisCPU0, redisMem0 := redisCPU(b), redisMemory(b)
	var ru0 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	fakes0 := fakes.usage()

	b.StartTimer()
	d := driveLoad(fakes, w, webhook)
	b.StopTimer()

	var ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	fakes1 := fakes.usage()
	botCPU := cpuTime(ru1) - cpuTime(ru0)
	fakesCPU := fakes1.CPU - fakes0.CPU
	peak := peakRSS()
	redisUsed, redisMem := redisCPU(b)-redisCPU0, redisMemory(b)-redisMem0
	if w.webhook {
		if n := fakes.webhookFailures(); n > 0 {
			b.Errorf("%d webhook deliveries failed", n)
		}
	}

	posted := fakes.posted(loadFirstChat, w.chats)
	lat := verifyLoad(b, posted, d.msgs)
	reportRunAvg(b, r)
	r.stop()
	if w.stream > 0 {
		reportAddedLatency(b, telegramAnswerTimes(posted, d.msgs, fakes.lastEdits("telegram")), fakes.modelSpans())
		fakes.logCalls(b, "telegram", w.messages)
	}

	n := float64(w.messages)
	if w.rate == 0 {
		b.ReportMetric(n/d.elapsed.Seconds(), "msgs/s")
		if !w.webhook {
			b.ReportMetric(n/d.intake.Seconds(), "intake-msgs/s")
		}
	}
	b.Logf("defaults except: %s", loadOverrides)
	if w.historyTurns > 0 {
		b.Logf("and runs.history_turns=%d (to show what a longer bound costs)", w.historyTurns)
	}
	b.ReportMetric(float64((botCPU+fakesCPU).Microseconds())/1000/n, "cpu-ms/msg")
	b.ReportMetric(float64(botCPU.Microseconds())/1000/n, "bot-cpu-ms/msg")
	b.ReportMetric(float64(fakesCPU.Microseconds())/1000/n, "fakes-cpu-ms/msg")
	b.ReportMetric(redisUsed*1000/n, "redis-cpu-ms/msg")
	// What the chats keep in Redis after the load: threads, logs, run and outbound records,
	// claims and marks (the server's used_memory, so on a quiet Redis only).
	b.ReportMetric(float64(redisMem)/1024/float64(w.chats), "redis-kb/chat")
	b.ReportMetric(float64(trips.n.Load())/n, "redis-roundtrips/msg")
	// How Redis Cluster would spread the work: commands on the one {global} slot against those
	// spread over the conversations' slots.
	b.ReportMetric(float64(trips.global.Load())/n, "global-slot-cmds/msg")
	b.ReportMetric(float64(trips.perConv.Load())/n, "conv-slot-cmds/msg")
	b.ReportMetric(float64(trips.untagged.Load())/n, "untagged-cmds/msg")
	b.ReportMetric(float64(peak)/(1<<20), "peak-rss-MB")
	b.ReportMetric(float64(fakes1.Peak)/(1<<20), "fakes-peak-rss-MB")
	b.ReportMetric(float64(percentile(lat, 50).Microseconds())/1000, "first-reply-p50-ms")
	b.ReportMetric(float64(percentile(lat, 99).Microseconds())/1000, "first-reply-p99-ms")
	b.ReportMetric(0, "ns/op")
	if trips.by != nil {
		fmt.Fprintf(os.Stderr, "%s: Redis round trips by caller:\n%s", b.Name(), trips.top(20, n))
	}
}

// reportRunAvg reports the answered runs' mean duration (run-avg-ms), from the app's metrics.
func reportRunAvg(b *testing.B, r *running) {
	var hist dto.Metric
	if err := r.metrics.runDuration.WithLabelValues("answered").(prometheus.Metric).Write(&hist); err == nil && hist.GetHistogram().GetSampleCount() > 0 {
		h := hist.GetHistogram()
		b.ReportMetric(h.GetSampleSum()*1000/float64(h.GetSampleCount()), "run-avg-ms")
	}
}

// seedHistory stores w.history turns — a user message and the assistant's answer each, as the
// lead writes them — in the thread of each of w's chats.
func seedHistory(b *testing.B, r *running, w loadSpec) {
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, w.chats)
	for c := range w.chats {
		wg.Go(func() {
			key := conv.Key{Platform: "telegram", Chat: strconv.Itoa(loadFirstChat + c)}.String()
			th, _, err := r.core.threads.Conversations().Ensure(ctx, key)
			if err != nil {
				errs <- err
				return
			}
			for turn := 1; turn <= w.history; turn++ {
				events := []json.RawMessage{
					json.RawMessage(fmt.Sprintf(`{"seq":%d,"kind":"turn/start","turn":%d}`, 4*turn, turn)),
					json.RawMessage(fmt.Sprintf(`{"seq":%d,"kind":"user/message","turn":%d,"source":"user","content":"an earlier question, number %d, of a few words"}`, 4*turn+1, turn, turn)),
					json.RawMessage(fmt.Sprintf(`{"seq":%d,"kind":"assistant/message","turn":%d,"step":1,"content":"an earlier answer, number %d, somewhat longer than the question it answers"}`, 4*turn+2, turn, turn)),
					json.RawMessage(fmt.Sprintf(`{"seq":%d,"kind":"turn/end","turn":%d,"reason":"completed"}`, 4*turn+3, turn)),
				}
				if err := r.core.threads.History().AppendTurn(ctx, key, th.ID, events); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatalf("seeding the history: %v", err)
	}
}

// driven is what driveLoad did: the messages it pushed, how long until the fake Bot API had
// handed them all out, and until every one was answered.
type driven struct {
	msgs            []pushed
	intake, elapsed time.Duration
}

// driveLoad pushes w's messages to the fakes — spread round-robin over w.chats private chats,
// all at once or w.rate a second, delivered to webhook when set — and waits until every message
// got its answer.
func driveLoad(fakes *loadFakes, w loadSpec, webhook string) driven {
	began := time.Now()
	users := make([]int64, w.messages)
	texts := make([]string, w.messages)
	for i := range w.messages {
		users[i] = w.firstChat() + int64(i%w.chats)
		texts[i] = fmt.Sprintf("m%d c%d", i/w.chats, i%w.chats)
	}
	var acks []loadPushed
	if w.rate > 0 {
		paced(w.messages, w.rate, func(i int) {
			acks = append(acks, fakes.push(users[i:i+1], texts[i:i+1], webhook)...)
		})
	} else {
		acks = fakes.push(users, texts, webhook)
	}
	fakes.wait("intake", 0, 0, 0, 5*time.Minute)
	d := driven{intake: time.Since(began)}
	// Each run posts one message — its answer, or the placeholder the answer is edited into
	// when the run outlasts the grace period; the full check follows.
	fakes.wait("posted", w.postedBefore+w.messages, 0, 0, 5*time.Minute)
	fakes.wait("answered", w.messages, w.chats, w.firstChat(), 30*time.Second)
	d.elapsed = time.Since(began)
	d.msgs = make([]pushed, len(acks))
	for i, a := range acks {
		d.msgs[i] = pushed{chat: users[i], id: a.ID, text: texts[i], at: time.Unix(0, a.At)}
	}
	return d
}

// paced calls push(i) for each of n messages, rate a second, on a schedule kept from the first
// call: a push that comes late (the machine was busy) is followed by the next at once, so that the
// rate holds over the workload. It paces the load generator; it synchronizes nothing.
func paced(n, rate int, push func(i int)) {
	began := time.Now()
	for i := range n {
		time.Sleep(time.Until(began.Add(time.Duration(i) * time.Second / time.Duration(rate))))
		push(i)
	}
}

// loadFirstChat is the first load chat's id (a private chat with user loadFirstChat).
const loadFirstChat = 100_000

func boolInt(v bool) int {
	if v {
		return 1
	}
	return 0
}

// verifyLoad checks every message got exactly one reply — a bot message replying to it, showing
// its answer, not a placeholder — and returns each message's receipt → first visible reply.
func verifyLoad(b *testing.B, posted map[int64][]telegramfake.Message, msgs []pushed) []time.Duration {
	b.Helper()
	byChat := map[int64][]pushed{}
	for _, m := range msgs {
		byChat[m.chat] = append(byChat[m.chat], m)
	}
	lat := make([]time.Duration, 0, len(msgs))
	lost, doubled, placeholders := 0, 0, 0
	for chat, want := range byChat {
		replies := map[int][]telegramfake.Message{}
		for _, p := range posted[chat] {
			if isPlaceholder(p) {
				placeholders++
			}
			replies[p.ReplyTo] = append(replies[p.ReplyTo], p)
		}
		for _, m := range want {
			got := replies[m.id]
			switch {
			case len(got) == 0 || !strings.Contains(visible(got[0]), "echo: "+m.text):
				lost++
				continue
			case len(got) > 1:
				doubled++
			}
			lat = append(lat, got[0].At.Sub(m.at))
			delete(replies, m.id)
		}
		for _, extra := range replies {
			doubled += len(extra)
		}
	}
	if lost+doubled+placeholders > 0 {
		b.Fatalf("%d lost, %d doubled, %d placeholders left behind", lost, doubled, placeholders)
	}
	return lat
}

func percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[min(max(i-1, 0), len(s)-1)]
}

func cpuTime(ru syscall.Rusage) time.Duration {
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// selfMeter measures this process (the bot, its fakes in the child) over a workload: CPU
// (getrusage), peak RSS (VmHWM, reset at the start), allocations and GC cycles; the fakes' CPU
// and peak RSS; and the Redis server's CPU.
type selfMeter struct {
	fakes               *loadFakes
	ru0, ru1            syscall.Rusage
	fakes0, fakes1      loadUsage
	ms0, ms1            runtime.MemStats
	redisCPU0, redisCPU float64
	peak                int64
}

// startSelfMeter settles the heap, resets the peaks and takes the figures the workload starts
// from.
func startSelfMeter(b *testing.B, fakes *loadFakes) *selfMeter {
	runtime.GC()
	debug.FreeOSMemory()
	resetPeakRSS(b)
	fakes.resetPeak()
	m := &selfMeter{fakes: fakes, redisCPU0: redisCPU(b)}
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &m.ru0)
	m.fakes0 = fakes.usage()
	runtime.ReadMemStats(&m.ms0)
	return m
}

// stop takes the figures the workload ends at, before its checks (which cost CPU too).
func (m *selfMeter) stop(b *testing.B) {
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &m.ru1)
	m.fakes1 = m.fakes.usage()
	runtime.ReadMemStats(&m.ms1)
	m.peak = peakRSS()
	m.redisCPU = redisCPU(b)
}

// report reports msgs/s over elapsed (unless it is zero: a paced workload has no throughput)
// and the figures per message of messages, with the first-reply latencies lat and trips' Redis
// round trips.
func (m *selfMeter) report(b *testing.B, messages int, elapsed time.Duration, lat []time.Duration, trips *roundTrips) {
	n := float64(messages)
	if elapsed > 0 {
		b.ReportMetric(n/elapsed.Seconds(), "msgs/s")
	}
	b.ReportMetric(float64((cpuTime(m.ru1)-cpuTime(m.ru0)).Microseconds())/1000/n, "bot-cpu-ms/msg")
	b.ReportMetric(float64((m.fakes1.CPU-m.fakes0.CPU).Microseconds())/1000/n, "fakes-cpu-ms/msg")
	b.ReportMetric((m.redisCPU-m.redisCPU0)*1000/n, "redis-cpu-ms/msg")
	b.ReportMetric(float64(trips.n.Load())/n, "redis-roundtrips/msg")
	b.ReportMetric(float64(m.peak)/(1<<20), "peak-rss-MB")
	b.ReportMetric(float64(m.fakes1.Peak)/(1<<20), "fakes-peak-rss-MB")
	// Allocation and GC counts move far less with the machine's load than CPU time does.
	b.ReportMetric(float64(m.ms1.TotalAlloc-m.ms0.TotalAlloc)/1024/n, "bot-alloc-KB/msg")
	b.ReportMetric(float64(m.ms1.Mallocs-m.ms0.Mallocs)/n, "bot-allocs/msg")
	b.ReportMetric(float64(m.ms1.NumGC-m.ms0.NumGC), "bot-gcs")
	b.ReportMetric(float64(percentile(lat, 50).Microseconds())/1000, "first-reply-p50-ms")
	b.ReportMetric(float64(percentile(lat, 99).Microseconds())/1000, "first-reply-p99-ms")
	b.ReportMetric(0, "ns/op")
}

// resetPeakRSS resets this process's VmHWM to its current RSS (Linux: clear_refs 5).
func resetPeakRSS(b *testing.B) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Logf("cannot reset the peak RSS (%v): it covers the whole process lifetime", err)
	}
}

// peakRSS reads this process's VmHWM (see peakRSSOf).
func peakRSS() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return peakRSSOf(ru)
}

// peakRSSOf reads VmHWM from /proc/self/status, falling back to ru's maxrss.
func peakRSSOf(ru syscall.Rusage) int64 {
	if n := vmHWM("/proc/self/status"); n > 0 {
		return n
	}
	return ru.Maxrss << 10
}

// vmHWM is the peak RSS in bytes that the /proc/<pid>/status file at path reports, or 0.
func vmHWM(path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// redisInfo sums the fields of the test Redis's INFO section.
func redisInfo(b *testing.B, section string, fields ...string) float64 {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer c.Close()
	info, err := c.Info(context.Background(), section).Result()
	if err != nil {
		b.Fatalf("redis INFO %s: %v", section, err)
	}
	var total float64
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && slices.Contains(fields, k) {
			f, _ := strconv.ParseFloat(v, 64)
			total += f
		}
	}
	return total
}

// redisMemory is the Redis server's used_memory in bytes.
func redisMemory(b *testing.B) int64 { return int64(redisInfo(b, "memory", "used_memory")) }

// redisCPU is the Redis server's used CPU (user + system), in seconds.
func redisCPU(b *testing.B) float64 { return redisInfo(b, "cpu", "used_cpu_user", "used_cpu_sys") }

// roundTrips counts the app's Redis round trips (a pipeline is one).
// With by set, it also counts them by the first switchboard functions on the stack, those of
// internal/redisbatch left out: a batch is sent from the stack of the caller that flushes it.
type roundTrips struct {
	n  atomic.Int64
	mu sync.Mutex
	by map[string]int
	// Commands by the hash slot their first key is in: the queue-wide {global} slot, one
	// conversation's {conv:…} slot, or a key of no hash tag (claims, marks, records).
	global, perConv, untagged atomic.Int64
}

// slot counts cmd under the slot class of its first key.
func (h *roundTrips) slot(cmd redis.Cmder) {
	args := cmd.Args()
	i := 1
	if name, _ := args[0].(string); strings.EqualFold(name, "evalsha") || strings.EqualFold(name, "eval") {
		i = 3 // EVALSHA sha numkeys key…
	}
	if len(args) <= i {
		return
	}
	key, _ := args[i].(string)
	switch {
	case strings.Contains(key, "{global}"):
		h.global.Add(1)
	case strings.Contains(key, "{conv:"):
		h.perConv.Add(1)
	default:
		h.untagged.Add(1)
	}
}

func (h *roundTrips) count() {
	h.n.Add(1)
	if h.by == nil {
		return
	}
	pcs := make([]uintptr, 32)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)])
	var chain []string
	for len(chain) < 3 {
		f, more := frames.Next()
		if strings.Contains(f.Function, "switchboard-bot/switchboard/") && !strings.Contains(f.Function, "roundTrips") &&
			!strings.Contains(f.Function, "/redisbatch.") {
			chain = append(chain, f.Function[strings.LastIndex(f.Function, "/")+1:])
		}
		if !more {
			break
		}
	}
	h.mu.Lock()
	h.by[strings.Join(chain, " < ")]++
	h.mu.Unlock()
}

// top lists the n callers with the most round trips.
func (h *roundTrips) top(n int, per float64) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	type kv struct {
		k string
		v int
	}
	var all []kv
	for k, v := range h.by {
		all = append(all, kv{k, v})
	}
	slices.SortFunc(all, func(a, b kv) int { return b.v - a.v })
	var sb strings.Builder
	for _, e := range all[:min(n, len(all))] {
		fmt.Fprintf(&sb, "  %6.2f/msg  %s\n", float64(e.v)/per, e.k)
	}
	return sb.String()
}

func (h *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.count()
		h.slot(cmd)
		return next(ctx, cmd)
	}
}

func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.count()
		for _, c := range cmds {
			h.slot(c)
		}
		return next(ctx, cmds)
	}
}
