package main

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/config"
	slackfake "github.com/switchboard-bot/switchboard/internal/fake/slack"
)

// BenchmarkSlackEndToEnd measures the whole pipeline over Slack — the fake Slack's Socket Mode
// (or signed Events API deliveries, webhookConnections in flight) into the real adapter, the
// router, the Redis queue (real Redis), workers, the lead chain calling the fake model (0 ms),
// delivery posting each answer with chat.postMessage — with pacing off. Run it alone:
//
//	go test -run '^$' -bench SlackEndToEnd -benchtime=1x ./cmd/bot/
//
// As in BenchmarkTelegramEndToEnd the fakes run in a child process (see loadfakes_test.go), so
// this process is the bot: bot-cpu-ms/msg and peak-rss-MB are the bot's alone, fakes-cpu-ms/msg
// the child's. It reports msgs/s end to end, Redis round trips and Redis CPU per message,
// receipt → first visible reply p50/p99, and the bot's allocations per message (bytes and
// count, steadier than CPU time on a busy machine) and GC cycles. Every workload then checks
// that each message got exactly one reply showing its answer, every envelope was acknowledged,
// and no placeholder or thread status was left behind.
//
// The realistic_ workloads are paced instead, their answers streamed by the model over 1.5 s
// (see realisticMessages); they report the latency the bot adds to the model's
// (reportAddedLatency) and log the platform calls per message. SB_LOAD_TRIPS=1 names the
// callers of their Redis round trips.
func BenchmarkSlackEndToEnd(b *testing.B) {
	for _, w := range slackWorkloads {
		b.Run(w.name, func(b *testing.B) {
			for range b.N {
				runSlackLoad(b, w)
			}
		})
	}
}

// slackLoadSpec is one Slack workload: messages spread round-robin over chats DMs — with
// mention, over chats channels, each message a top-level post mentioning the bot (Slack's
// app_mention and message pair), answered in a thread of its own with the thread's status
// shown and cleared — pushed at once over Socket Mode or, with http, delivered to the Events API
// URL.
type slackLoadSpec struct {
	name            string
	messages, chats int
	http, mention   bool
	// first is the first load channel's index; postedBefore, the answers posted before this
	// load (a warm-up's), so that its waits count this load's only.
	first, postedBefore int
	warm                bool // BenchmarkBinary: a burst of the same shape in the channels after these first
	// rate, when set, paces the messages at rate a second instead of pushing them at once;
	// stream makes the fake model stream the realistic answer over that long
	// (loadModelStreamEnv).
	rate   int
	stream time.Duration
}

var slackWorkloads = []slackLoadSpec{
	{name: "socket_2000msgs_200chats", messages: 2000, chats: 200},
	{name: "socket_2000msgs_2000chats", messages: 2000, chats: 2000},
	{name: "http_2000msgs_200chats", messages: 2000, chats: 200, http: true},
	{name: "http_2000msgs_2000chats", messages: 2000, chats: 2000, http: true},
	{name: "socket_2000mentions_200channels", messages: 2000, chats: 200, mention: true},
	// Socket Mode, as shipped (slack.streaming on): a mention in a channel is answered in a thread
	// rooted at it, streamed there (chat.startStream once the grace period ends,
	// chat.appendStream at most once a second, chat.stopStream), with the thread's status set and
	// cleared; a top-level DM is no thread, so it is answered by a placeholder edited into the
	// answer (chat.postMessage, chat.update).
	{name: "realistic_mentions_paced50ps_stream1500ms", messages: realisticMessages, chats: 200, mention: true,
		rate: realisticRate, stream: realisticStream},
	{name: "realistic_dm_paced50ps_stream1500ms", messages: realisticMessages, chats: 200, rate: realisticRate,
		stream: realisticStream},
}

// slackLoadOverrides are the settings the Slack load runs change from the defaults, and why.
const slackLoadOverrides = "slack.pacing=false (the workload measures the bot, not Slack's per-channel pace); " +
	"slack.api_url, slack tokens and signing secret, llm.base_url, redis.url, redis.prefix (the fakes, the test Redis); " +
	"slack.mode=http for the http workloads"

// slackLoad is one workload's messages, in push order.
type slackLoad struct {
	channels, users, texts []string
}

func newSlackLoad(w slackLoadSpec) slackLoad {
	messages, chats := w.messages, w.chats
	l := slackLoad{channels: make([]string, messages), users: make([]string, messages), texts: make([]string, messages)}
	for i := range messages {
		l.channels[i], l.users[i] = slackLoadChannel(w.mention, w.first+i%chats), slackLoadUser(w.first+i%chats)
		l.texts[i] = fmt.Sprintf("m%d c%d", i/chats, i%chats)
	}
	return l
}

func runSlackLoad(b *testing.B, w slackLoadSpec) {
	b.StopTimer()
	fakes := startLoadFakesWith(b, loadModel{stream: w.stream})
	e := newE2E(b, func(c *config.Config) {
		// The child's fakes serve this workload; newE2E's in-process ones stay idle.
		c.Telegram.Token = ""
		c.Slack.BotToken, c.Slack.AppToken = fakes.hello.SlackBotToken, fakes.hello.SlackAppToken
		c.Slack.SigningSecret, c.Slack.APIURL = fakes.hello.SlackSigningSecret, fakes.hello.SlackAPIURL
		c.Slack.Pacing = false
		c.Slack.AgentView = false // DMs answered at their top level, as slackEnv's
		c.LLM.BaseURL = fakes.hello.ModelURL
		// newE2E's test settings (short lease, debug logs) give way to the defaults.
		d := config.Default()
		c.Runs, c.Log = d.Runs, d.Log
		if w.http {
			c.Slack.Mode, c.Slack.AppToken = config.SlackHTTP, ""
		}
	})
	r := e.start()
	trips := &roundTrips{}
	if os.Getenv("SB_LOAD_TRIPS") != "" {
		trips.by = map[string]int{} // attribution costs a stack walk per command
	}
	r.core.redis.AddHook(trips)
	var events string
	if w.http {
		events = "http://" + r.listener.Addr().String() + e.cfg.Slack.EventsPath
	}
	load := newSlackLoad(w)

	m := startSelfMeter(b, fakes)
	b.StartTimer()
	began := time.Now()
	acks := driveSlackLoad(fakes, w, load, events)
	elapsed := time.Since(began)
	b.StopTimer()
	m.stop(b)
	lat := checkSlackLoad(b, fakes, w, load, acks)
	r.stop()
	if w.stream > 0 {
		posted := fakes.slackPosted(w.first, w.chats, w.mention)
		reportAddedLatency(b, slackAnswerTimes(posted, load, acks, fakes.lastEdits("slack")), fakes.modelSpans())
		fakes.logCalls(b, "slack", w.messages)
	}

	n := float64(w.messages)
	b.Logf("defaults except: %s", slackLoadOverrides)
	if w.rate > 0 {
		elapsed = 0 // a paced workload has no throughput
	}
	m.report(b, w.messages, elapsed, lat, trips)
	if trips.by != nil {
		fmt.Fprintf(os.Stderr, "%s: Redis round trips by caller:\n%s", b.Name(), trips.top(20, n))
	}
}

// driveSlackLoad pushes the workload's messages through the child — over Socket Mode, or with
// events set to that Events API URL; at once, or w.rate a second — and waits until every DM
// shows all its answers.
func driveSlackLoad(fakes *loadFakes, w slackLoadSpec, load slackLoad, events string) []loadPushed {
	var acks []loadPushed
	if w.rate > 0 {
		paced(w.messages, w.rate, func(i int) {
			acks = append(acks, fakes.pushSlack(load.channels[i:i+1], load.users[i:i+1], load.texts[i:i+1], w.mention, events)...)
		})
	} else {
		acks = fakes.pushSlack(load.channels, load.users, load.texts, w.mention, events)
	}
	fakes.wait("slack-posted", w.postedBefore+w.messages, 0, 0, 5*time.Minute)
	answered := "slack-answered"
	if w.mention {
		answered = "slack-answered-mention"
	}
	fakes.wait(answered, w.messages, w.chats, int64(w.first), 30*time.Second)
	return acks
}

// checkSlackLoad fails the benchmark unless every delivery was answered 200 (HTTP) or every
// envelope acknowledged (Socket Mode), and then as verifySlackLoad does; it returns the
// latencies.
func checkSlackLoad(b *testing.B, fakes *loadFakes, w slackLoadSpec, load slackLoad, acks []loadPushed) []time.Duration {
	b.Helper()
	if w.http {
		if n := fakes.webhookFailures(); n > 0 {
			b.Errorf("%d Events API deliveries failed", n)
		}
	} else {
		fakes.wait("slack-acked", 0, 0, 0, 30*time.Second)
	}
	return verifySlackLoad(b, fakes.slackPosted(w.first, w.chats, w.mention), fakes.slackStatuses(), load, acks, w.mention)
}

// verifySlackLoad checks every message got exactly one reply showing its answer — at its DM's
// top level, or with threads in the thread rooted at it — no placeholder is left and every
// thread status set was cleared; it returns each message's receipt → first visible reply.
// slackAnswerText is what a load answer shows: its blocks, or the text it streamed.
func slackAnswerText(m slackfake.Message) string {
	if m.Streamed {
		return m.Markdown
	}
	return slackBlockText(m)
}

func verifySlackLoad(b *testing.B, posted map[string][]slackfake.Message, statuses []slackfake.Status, load slackLoad, acks []loadPushed, threads bool) []time.Duration {
	b.Helper()
	// answers maps channel → answer text → the posts showing it.
	answers := map[string]map[string][]slackfake.Message{}
	placeholders := 0
	for ch, ps := range posted {
		byText := map[string][]slackfake.Message{}
		for _, p := range ps {
			if slackPlaceholder(p) {
				placeholders++
				continue
			}
			for line := range strings.SplitSeq(slackAnswerText(p), "\n") {
				if strings.HasPrefix(line, "echo: ") {
					byText[line] = append(byText[line], p)
				}
			}
		}
		answers[ch] = byText
	}
	lat := make([]time.Duration, 0, len(acks))
	lost, doubled := 0, 0
	for i, a := range acks {
		got := answers[load.channels[i]]["echo: "+load.texts[i]]
		switch {
		case len(got) == 0:
			lost++
			continue
		case len(got) > 1:
			doubled += len(got) - 1
		}
		want := ""
		if threads {
			want = a.TS
		}
		if got[0].ThreadTS != want {
			b.Fatalf("the answer to %q is in thread %q, want %q", load.texts[i], got[0].ThreadTS, want)
		}
		lat = append(lat, got[0].At.Sub(time.Unix(0, a.At)))
	}
	// Posts beyond one per message are doubles even when they show no answer of this load.
	want := map[string]int{}
	for _, ch := range load.channels {
		want[ch]++
	}
	for ch, ps := range posted {
		doubled += max(0, len(ps)-want[ch]-placeholdersIn(ps))
	}
	shown := map[string]string{} // channel/thread → its latest status
	for _, s := range statuses {
		shown[s.Channel+"/"+s.ThreadTS] = s.Status
	}
	left := 0
	for _, s := range shown {
		if s != "" {
			left++
		}
	}
	b.ReportMetric(float64(len(statuses))/float64(len(load.texts)), "status-calls/msg")
	if lost+doubled+placeholders+left > 0 || len(acks) != len(load.texts) {
		b.Fatalf("%d lost, %d doubled, %d placeholders and %d thread statuses left behind (%d of %d pushed)",
			lost, doubled, placeholders, left, len(acks), len(load.texts))
	}
	return lat
}

func placeholdersIn(ps []slackfake.Message) int {
	n := 0
	for _, p := range ps {
		if slackPlaceholder(p) {
			n++
		}
	}
	return n
}
