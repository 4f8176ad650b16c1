package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
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
	"github.com/switchboard-bot/switchboard/internal/fake/modelserver"
	telegramfake "github.com/switchboard-bot/switchboard/internal/fake/telegram"
)

// BenchmarkTelegramEndToEnd measures the whole pipeline under load — the fake Bot API polled by
// the real adapter, the router, the Redis queue (real Redis), workers, the lead chain calling the
// fake model (0 ms) through the real OpenAI client, delivery posting each answer (as its one
// message: runs this fast close within the placeholder's grace period) — with pacing off. Run it alone, once per workload:
//
//	go test -run '^$' -bench TelegramEndToEnd -benchtime=1x ./cmd/bot/
//
// Each burst workload pushes all its messages at once and reports messages per second end to
// end, process CPU per message (getrusage; the fakes run in this process too), Redis CPU per
// message (INFO cpu), peak RSS of this process during the workload (VmHWM, reset before it),
// and receipt → first visible reply (the run's first sendMessage: its answer, or the placeholder
// of a run outlasting the grace period) p50/p99. The paced workload pushes 100 messages a second
// and reports the same latencies. Every workload then checks that each message got exactly one
// reply showing its answer: 0 lost, 0 doubled, 0 placeholders left.
func BenchmarkTelegramEndToEnd(b *testing.B) {
	workloads := []loadSpec{
		{name: "2000msgs_200chats", messages: 2000, chats: 200},
		{name: "2000msgs_2000chats", messages: 2000, chats: 2000},
		{name: "paced100ps_500msgs_200chats", messages: 500, chats: 200, rate: 100},
		// Webhook mode, delivered like Telegram does with its default max_connections (40
		// concurrent requests): the pipeline without the poll loop's one-at-a-time hand-over.
		{name: "webhook_2000msgs_200chats", messages: 2000, chats: 200, webhook: true},
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
}

// webhookConnections is how many deliveries Telegram keeps in flight to a webhook by default
// (setWebhook max_connections).
const webhookConnections = 40

const loadWebhookSecret = "load-webhook-secret"

// loadWorkers is the worker pool size under load; per-conversation FIFO bounds useful
// parallelism by the number of chats.
const loadWorkers = 64

// pushed is one user message of a workload.
type pushed struct {
	chat int64
	id   int
	text string
	at   time.Time
}

func runLoad(b *testing.B, w loadSpec) {
	b.StopTimer()
	e := newE2E(b, func(c *config.Config) {
		c.Runs.Workers = loadWorkers
		c.Runs.MaxPending = 100_000
		c.Runs.MaxPerConversation = 1000
		c.Log.Level = "warn"
		if w.webhook {
			c.Telegram.Mode = config.TelegramWebhook
			c.Telegram.WebhookURL = "https://bot.example.test/telegram"
			c.Telegram.WebhookSecret = loadWebhookSecret
		}
	})
	e.tg.SetRecording(false)
	e.model.SetRecording(false)
	e.model.SetFunc(func(r modelserver.Request) modelserver.Reply {
		return modelserver.Reply{Content: "echo: " + r.LastUserText(), ChunkSize: 64}
	})
	r := e.start()
	trips := &roundTrips{}
	if os.Getenv("SB_LOAD_TRIPS") != "" {
		trips.by = map[string]int{} // attribution costs a stack walk per command
	}
	r.core.redis.AddHook(trips)

	runtime.GC()
	debug.FreeOSMemory()
	resetPeakRSS(b)
	redisCPU0 := redisCPU(b)
	var ru0 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)

	var deliver func()
	if w.webhook {
		var stop func()
		deliver, stop = webhookDeliverer(b, e.tg, "http://"+r.listener.Addr().String()+"/telegram")
		defer stop()
	}
	b.StartTimer()
	began := time.Now()
	msgs := make([]pushed, 0, w.messages)
	var tick *time.Ticker
	if w.rate > 0 {
		tick = time.NewTicker(time.Second / time.Duration(w.rate))
		defer tick.Stop()
	}
	for i := range w.messages {
		if tick != nil && i > 0 {
			<-tick.C // pacing the load generator, not synchronization
		}
		u := telegramfake.User{ID: int64(100_000 + i%w.chats), FirstName: "Load"}
		text := fmt.Sprintf("m%d c%d", i/w.chats, i%w.chats)
		at := time.Now()
		_, id := e.tg.PushPrivate(u, text)
		msgs = append(msgs, pushed{chat: u.ID, id: id, text: text, at: at})
		if deliver != nil && tick != nil {
			deliver()
		}
	}
	if deliver != nil && tick == nil {
		deliver()
	}
	waitFor(b, "every update taken in", 5*time.Minute, func() bool { return e.tg.Pending() == 0 })
	intake := time.Since(began)
	// Each run posts one message — its answer, or the placeholder the answer is edited into
	// when the run outlasts the grace period; the full check follows.
	waitFor(b, "every run's message posted", 5*time.Minute, func() bool { return e.tg.Count("sendMessage") >= w.messages })
	waitFor(b, "every chat answered", 30*time.Second, func() bool {
		for c := range w.chats {
			if !answered(e.tg, int64(100_000+c), w.messages/w.chats+boolInt(c < w.messages%w.chats)) {
				return false
			}
		}
		return true
	})
	elapsed := time.Since(began)
	b.StopTimer()

	var ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := cpuTime(ru1) - cpuTime(ru0)
	peak := peakRSS(b)
	redisUsed := redisCPU(b) - redisCPU0

	lat := verifyLoad(b, e.tg, msgs)
	var hist dto.Metric
	if err := r.metrics.runDuration.WithLabelValues("answered").(prometheus.Metric).Write(&hist); err == nil && hist.GetHistogram().GetSampleCount() > 0 {
		h := hist.GetHistogram()
		b.ReportMetric(h.GetSampleSum()*1000/float64(h.GetSampleCount()), "run-avg-ms")
	}
	r.stop()

	n := float64(w.messages)
	if w.rate == 0 {
		b.ReportMetric(n/elapsed.Seconds(), "msgs/s")
		if !w.webhook {
			b.ReportMetric(n/intake.Seconds(), "intake-msgs/s")
		}
	}
	b.ReportMetric(float64(cpu.Microseconds())/1000/n, "cpu-ms/msg")
	b.ReportMetric(redisUsed*1000/n, "redis-cpu-ms/msg")
	b.ReportMetric(float64(trips.n.Load())/n, "redis-roundtrips/msg")
	b.ReportMetric(float64(peak)/(1<<20), "peak-rss-MB")
	b.ReportMetric(float64(percentile(lat, 50).Microseconds())/1000, "first-reply-p50-ms")
	b.ReportMetric(float64(percentile(lat, 99).Microseconds())/1000, "first-reply-p99-ms")
	b.ReportMetric(0, "ns/op")
	if trips.by != nil {
		fmt.Fprintf(os.Stderr, "%s: Redis round trips by caller:\n%s", b.Name(), trips.top(20, n))
	}
}

// webhookDeliverer returns deliver, which hands every update queued in the fake to the app's
// webhook over webhookConnections concurrent connections, and stop, which ends the deliverers.
// A delivery that is not answered 200 fails the benchmark.
func webhookDeliverer(b *testing.B, tg *telegramfake.Server, url string) (deliver, stop func()) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = webhookConnections
	client := &http.Client{Transport: tr}
	work := make(chan []byte, 4096)
	var wg sync.WaitGroup
	var failed atomic.Int64
	for range webhookConnections {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for body := range work {
				req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-Telegram-Bot-Api-Secret-Token", loadWebhookSecret)
				resp, err := client.Do(req)
				if err != nil {
					failed.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					failed.Add(1)
				}
			}
		}()
	}
	deliver = func() {
		for _, u := range tg.TakeUpdates() {
			work <- u
		}
	}
	stop = func() {
		close(work)
		wg.Wait()
		tr.CloseIdleConnections()
		if n := failed.Load(); n > 0 {
			b.Errorf("%d webhook deliveries failed", n)
		}
	}
	return deliver, stop
}

func boolInt(v bool) int {
	if v {
		return 1
	}
	return 0
}

// verifyLoad checks every message got exactly one reply — a bot message replying to it, showing
// its answer, not a placeholder — and returns each message's receipt → first visible reply.
func verifyLoad(b *testing.B, tg *telegramfake.Server, msgs []pushed) []time.Duration {
	b.Helper()
	byChat := map[int64][]pushed{}
	for _, m := range msgs {
		byChat[m.chat] = append(byChat[m.chat], m)
	}
	lat := make([]time.Duration, 0, len(msgs))
	lost, doubled, placeholders := 0, 0, 0
	for chat, want := range byChat {
		replies := map[int][]telegramfake.Message{}
		for _, p := range tg.Posted(chat) {
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

// resetPeakRSS resets this process's VmHWM to its current RSS (Linux: clear_refs 5).
func resetPeakRSS(b *testing.B) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Logf("cannot reset the peak RSS (%v): it covers the whole process lifetime", err)
	}
}

// peakRSS reads VmHWM from /proc/self/status, falling back to getrusage's maxrss.
func peakRSS(b *testing.B) int64 {
	f, err := os.Open("/proc/self/status")
	if err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				return kb << 10
			}
		}
	}
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	b.Logf("VmHWM unavailable; using maxrss")
	return ru.Maxrss << 10
}

// redisCPU is the Redis server's used CPU (user + system), in seconds.
func redisCPU(b *testing.B) float64 {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer c.Close()
	info, err := c.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatalf("redis INFO cpu: %v", err)
	}
	var total float64
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_user" || k == "used_cpu_sys") {
			f, _ := strconv.ParseFloat(v, 64)
			total += f
		}
	}
	return total
}

// roundTrips counts the app's Redis round trips (a pipeline is one).
// With by set, it also counts them by the first switchboard function on the stack.
type roundTrips struct {
	n  atomic.Int64
	mu sync.Mutex
	by map[string]int
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
		if strings.Contains(f.Function, "switchboard-bot/switchboard/") && !strings.Contains(f.Function, "roundTrips") {
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
		return next(ctx, cmd)
	}
}

func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.count()
		return next(ctx, cmds)
	}
}
