package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/config"
	slackfake "github.com/switchboard-bot/switchboard/internal/fake/slack"
)

// BenchmarkSlackEndToEnd measures the whole pipeline over Slack — the fake Slack's Socket Mode
// (or signed HTTP deliveries, 40 in flight) into the real adapter, the router, the Redis queue
// (real Redis), workers, the lead chain calling the fake model (0 ms), delivery posting each
// answer with chat.postMessage. Run it alone:
//
//	go test -run '^$' -bench SlackEndToEnd -benchtime=1x ./cmd/bot/
//
// Unlike BenchmarkTelegramEndToEnd the fakes run in this process, so cpu-ms/msg and
// peak-rss-MB are the bot's and the fakes' together (an upper bound of the bot's). Every
// workload checks each message got exactly one reply showing its answer.
func BenchmarkSlackEndToEnd(b *testing.B) {
	workloads := []struct {
		name            string
		messages, chats int
		http            bool
	}{
		{"socket_2000msgs_200chats", 2000, 200, false},
		{"socket_2000msgs_2000chats", 2000, 2000, false},
		{"http_2000msgs_200chats", 2000, 200, true},
	}
	for _, w := range workloads {
		b.Run(w.name, func(b *testing.B) {
			for range b.N {
				runSlackLoad(b, w.messages, w.chats, w.http)
			}
		})
	}
}

func runSlackLoad(b *testing.B, messages, chats int, httpMode bool) {
	b.StopTimer()
	e := newSlackE2E(b, func(c *config.Config) {
		// Defaults except the test's fakes and slack.pacing=false (the workload measures the bot,
		// not Slack's per-channel pace).
		d := config.Default()
		c.Runs, c.Log = d.Runs, d.Log
		if httpMode {
			c.Slack.Mode, c.Slack.AppToken = config.SlackHTTP, ""
		}
	})
	e.sl.SetRecording(false)
	r := e.start()
	events := "http://" + r.listener.Addr().String() + e.cfg.Slack.EventsPath
	bodies := make([]map[string]any, messages)
	for i := range messages {
		m := slackfake.Msg{Channel: fmt.Sprintf("D%06d", i%chats), ChannelType: "im", User: fmt.Sprintf("U%06d", i%chats),
			Text: fmt.Sprintf("m%d c%d", i/chats, i%chats), TS: e.sl.NewTS(), Team: slackfake.TeamID}
		bodies[i] = e.sl.Callback(map[string]any{"type": "message", "channel_type": "im", "channel": m.Channel,
			"user": m.User, "text": m.Text, "ts": m.TS, "team": m.Team})
	}
	runtime.GC()
	debug.FreeOSMemory()
	resetPeakRSS(b)
	var ru0 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)

	b.StartTimer()
	began := time.Now()
	if httpMode {
		var wg sync.WaitGroup
		next := make(chan map[string]any)
		for range 40 {
			wg.Go(func() {
				for body := range next {
					if resp, err := e.sl.DeliverEvent(events, body, slackfake.Delivery{}); err != nil || resp.Status != 200 {
						b.Errorf("delivery: %d %v", resp.Status, err)
					}
				}
			})
		}
		for _, body := range bodies {
			next <- body
		}
		close(next)
		wg.Wait()
	} else {
		for _, body := range bodies {
			e.sl.Send("events_api", body)
		}
	}
	waitFor(b, "every answer", 5*time.Minute, func() bool { return e.sl.Count("chat.postMessage") >= messages })
	elapsed := time.Since(began)
	b.StopTimer()
	var ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	peak := peakRSS()

	lost, doubled := 0, 0
	for c := range chats {
		posted := e.sl.Posted(fmt.Sprintf("D%06d", c))
		all := ""
		for _, p := range posted {
			all += p.Blocks
		}
		want := 0
		for i := c; i < messages; i += chats {
			want++
			if !strings.Contains(all, fmt.Sprintf(`"echo: m%d c%d"`, i/chats, c)) {
				lost++
			}
		}
		doubled += max(0, len(posted)-want)
	}
	if lost+doubled > 0 {
		b.Fatalf("%d lost, %d doubled", lost, doubled)
	}
	r.stop()
	n := float64(messages)
	b.ReportMetric(n/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(float64((cpuTime(ru1)-cpuTime(ru0)).Microseconds())/1000/n, "cpu-ms/msg")
	b.ReportMetric(float64(peak)/(1<<20), "peak-rss-MB")
	b.ReportMetric(0, "ns/op")
}
