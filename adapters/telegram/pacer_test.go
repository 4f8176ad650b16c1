package telegram

import (
	"bytes"
	"container/heap"
	"context"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	telegramfake "github.com/switchboard-bot/switchboard/internal/fake/telegram"
	"github.com/switchboard-bot/switchboard/internal/poll"
)

// maxInWindow is the most of times (sorted) within any window of length w, both ends included.
func maxInWindow(times []time.Time, w time.Duration) int {
	best, lo := 0, 0
	for hi := range times {
		for times[hi].Sub(times[lo]) > w {
			lo++
		}
		best = max(best, hi-lo+1)
	}
	return best
}

func TestGlobalPacerAllowsAtMost30SendsInAnySecond(t *testing.T) {
	tests := []struct {
		name string
		// next is when the sender asks for its next slot, given the previous one's send time.
		next func(prevSent, prevAsked time.Time) time.Time
	}{
		{"all asked at once", func(_, asked time.Time) time.Time { return asked }},
		{"each asked when the previous was sent", func(sent, _ time.Time) time.Time { return sent }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPacer()
			start := time.Unix(1000, 0)
			asked, sent := start, start
			var times []time.Time
			for range 300 {
				asked = tt.next(sent, asked)
				sent = asked.Add(p.reserveGlobal(asked))
				times = append(times, sent)
			}
			if n := maxInWindow(times, time.Second); n > globalPerSecond {
				t.Fatalf("%d sends within one second, want at most %d", n, globalPerSecond)
			}
			if n := maxInWindow(times[:globalBurst], 0); n != globalBurst {
				t.Fatalf("the first %d sends were not let through at once", globalBurst)
			}
			// The steady rate is not far below the limit: 300 sends take about 11 s.
			if took := times[len(times)-1].Sub(start); took > 300*time.Second/(globalPerSecond-globalBurst) {
				t.Fatalf("300 sends took %v", took)
			}
		})
	}
	p := newPacer()
	now := time.Unix(1000, 0)
	for range 40 {
		p.reserveGlobal(now)
	}
	if d := p.reserveGlobal(now.Add(time.Minute)); d != 0 {
		t.Fatalf("after a quiet minute the next send waits %v", d)
	}
}

// simSend is one send in a simulation of sendPiece's pacing on a fake clock.
type simSend struct {
	chat  int64
	at    time.Time // when it next acts
	stage int       // 0: asks its chat's slot; 1: asks the overall slot; 2: sent at `at`
	seq   int
}

type simQueue []*simSend

func (q simQueue) Len() int { return len(q) }
func (q simQueue) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].seq < q[j].seq
}
func (q simQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)   { *q = append(*q, x.(*simSend)) }
func (q *simQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// simulate runs sends through the pacer as sendPiece does — the chat's slot, then the overall
// one — in the order of a fake clock, and returns each send's time, in the order given.
func simulate(p *pacer, sends []*simSend) []time.Time {
	q := simQueue{}
	for i, s := range sends {
		s.seq = i
		heap.Push(&q, s)
	}
	seq := len(sends)
	for q.Len() > 0 {
		s := heap.Pop(&q).(*simSend)
		switch s.stage {
		case 0:
			s.at = s.at.Add(p.reserve(s.chat, s.at))
		case 1:
			s.at = s.at.Add(p.reserveGlobal(s.at))
		}
		if s.stage++; s.stage < 2 {
			seq++
			s.seq = seq
			heap.Push(&q, s)
		}
	}
	out := make([]time.Time, len(sends))
	for i, s := range sends {
		out[i] = s.at
	}
	return out
}

func TestBusyChatDoesNotStarveQuietChatsOfTheGlobalLimit(t *testing.T) {
	start := time.Unix(1000, 0)
	var sends []*simSend
	const busy, backlog = int64(1), 100
	for range backlog { // one chat with a long backlog, all asked at once
		sends = append(sends, &simSend{chat: busy, at: start})
	}
	for c := range int64(40) { // 40 other chats, one message each, at once
		sends = append(sends, &simSend{chat: 100 + c, at: start})
	}
	late := &simSend{chat: 999, at: start.Add(3 * time.Second)} // a chat that speaks up later
	sends = append(sends, late)
	times := simulate(newPacer(), sends)

	sorted := slices.SortedFunc(slices.Values(times), func(a, b time.Time) int { return a.Compare(b) })
	if n := maxInWindow(sorted, time.Second); n > globalPerSecond {
		t.Fatalf("%d sends within one second, want at most %d", n, globalPerSecond)
	}
	// The 40 quiet chats and the busy chat's burst share the overall limit: all through within
	// (40+burst)/rate; the busy chat's backlog does not push them back.
	quietDone := slices.MaxFunc(times[backlog:backlog+40], func(a, b time.Time) int { return a.Compare(b) })
	if limit := start.Add(time.Duration(40+paceBurst) * globalInterval); quietDone.After(limit) {
		t.Fatalf("quiet chats done after %v, want by %v", quietDone.Sub(start), limit.Sub(start))
	}
	// The late chat goes at once: the busy chat's backlog waits on its own pace, not in the
	// overall queue.
	if wait := times[len(times)-1].Sub(late.at); wait > globalInterval {
		t.Fatalf("a chat speaking up later waited %v behind a busy one", wait)
	}
	checkChatPace(t, start, times[:backlog])
}

// checkChatPace checks that a private chat's sends never went ahead of its own pace: a burst,
// then one a second. (The overall limit may delay one and bring it closer to the next.)
func checkChatPace(t *testing.T, start time.Time, times []time.Time) {
	t.Helper()
	times = slices.SortedFunc(slices.Values(times), func(a, b time.Time) int { return a.Compare(b) })
	for i, at := range times {
		if slot := start.Add(time.Duration(max(0, i-paceBurst+1)) * privateInterval); at.Before(slot) {
			t.Fatalf("chat's send %d at %v, before its slot at %v", i, at.Sub(start), slot.Sub(start))
		}
	}
}

// fakeClock is a clock for the pacing tests: Sleep blocks until Advance moves the time past the
// sleeper's deadline.
type fakeClock struct {
	mu       sync.Mutex
	now      time.Time
	sleepers []*fakeSleeper
}

type fakeSleeper struct {
	until time.Time
	wake  chan struct{}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	c.mu.Lock()
	s := &fakeSleeper{until: c.now.Add(d), wake: make(chan struct{})}
	c.sleepers = append(c.sleepers, s)
	c.mu.Unlock()
	select {
	case <-s.wake:
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		c.sleepers = slices.DeleteFunc(c.sleepers, func(o *fakeSleeper) bool { return o == s })
		c.mu.Unlock()
		return ctx.Err()
	}
}

func (c *fakeClock) sleeping() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sleepers)
}

// advance moves the time to the earliest sleeper's deadline and wakes every sleeper due.
func (c *fakeClock) advance() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.sleepers) == 0 {
		return
	}
	next := slices.MinFunc(c.sleepers, func(a, b *fakeSleeper) int { return a.until.Compare(b.until) }).until
	c.now = next
	c.sleepers = slices.DeleteFunc(c.sleepers, func(s *fakeSleeper) bool {
		if s.until.After(next) {
			return false
		}
		close(s.wake)
		return true
	})
}

// sendLog records the fake clock's time of every sendMessage request, by chat.
type sendLog struct {
	clock *fakeClock
	inner http.RoundTripper

	mu    sync.Mutex
	times []time.Time
	chats map[int64][]time.Time
}

func (l *sendLog) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "/sendMessage") {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		form, _ := url.ParseQuery(string(body))
		chat, _ := strconv.ParseInt(form.Get("chat_id"), 10, 64)
		now := l.clock.Now()
		l.mu.Lock()
		l.times = append(l.times, now)
		l.chats[chat] = append(l.chats[chat], now)
		l.mu.Unlock()
	}
	return l.inner.RoundTrip(r)
}

// TestSendPacesOverallOnAFakeClock sends from many goroutines through the real Send, the library
// and the fake server, with the channel's clock and sleeps on a fake clock that moves only when
// every sender waits: the send times are the fake clock's, whatever the machine's speed.
func TestSendPacesOverallOnAFakeClock(t *testing.T) {
	tests := []struct {
		name   string
		pacing bool
	}{
		{"pacing on", true},
		{"pacing off", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := telegramfake.New(t)
			clock := &fakeClock{now: time.Unix(1000, 0)}
			tr := http.DefaultTransport.(*http.Transport).Clone()
			defer tr.CloseIdleConnections()
			log := &sendLog{clock: clock, inner: tr, chats: map[int64][]time.Time{}}
			ch, _ := newChannel(t, fake, func(c *Config) {
				c.Pacing = tt.pacing
				c.HTTPClient = &http.Client{Transport: log}
				// Webhook mode: no poll loop sharing the clock.
				c.Mode, c.WebhookURL, c.WebhookSecret = ModeWebhook, "https://bot.example/telegram", "secret"
			})
			ch.clock.Now, ch.clock.Sleep = clock.Now, clock.Sleep
			if err := ch.Start(context.Background(), &recorder{}); err != nil {
				t.Fatal(err)
			}
			defer ch.Stop(context.Background())

			const quiet, busyMsgs = 60, 8
			const busy = int64(7)
			var wg sync.WaitGroup
			var mu sync.Mutex
			done := 0
			send := func(chat int64, text string) {
				defer wg.Done()
				_, err := ch.Send(context.Background(), channels.Target{Conv: privateConv(chat)}, channels.Message{Text: text})
				if err != nil {
					t.Errorf("Send to %d: %v", chat, err)
				}
				mu.Lock()
				done++
				mu.Unlock()
			}
			total := quiet + busyMsgs
			wg.Add(total)
			for i := range busyMsgs {
				go send(busy, "busy "+strconv.Itoa(i))
			}
			for c := range int64(quiet) {
				go send(100+c, "quiet")
			}
			finished := func() int {
				mu.Lock()
				defer mu.Unlock()
				return done
			}
			for finished() < total {
				poll.Until(t, "every sender waiting on the clock or done", func() bool {
					return clock.sleeping()+finished() == total
				})
				clock.advance()
			}
			wg.Wait()

			log.mu.Lock()
			defer log.mu.Unlock()
			if len(log.times) != total {
				t.Fatalf("%d sendMessage calls, want %d", len(log.times), total)
			}
			times := slices.SortedFunc(slices.Values(log.times), func(a, b time.Time) int { return a.Compare(b) })
			start := time.Unix(1000, 0)
			if !tt.pacing {
				if last := times[len(times)-1]; !last.Equal(start) {
					t.Fatalf("with pacing off the last send waited until %v", last.Sub(start))
				}
				return
			}
			if n := maxInWindow(times, time.Second); n > globalPerSecond {
				t.Fatalf("%d sends within one second, want at most %d", n, globalPerSecond)
			}
			if took := times[len(times)-1].Sub(start); took < time.Duration(total-globalBurst)*globalInterval {
				t.Fatalf("%d sends took %v: faster than the overall limit", total, took)
			}
			checkChatPace(t, start, log.chats[busy])
			var quietLast time.Time
			for c := range int64(quiet) {
				if ts := log.chats[100+c]; len(ts) != 1 {
					t.Fatalf("chat %d got %d sends", 100+c, len(ts))
				} else if ts[0].After(quietLast) {
					quietLast = ts[0]
				}
			}
			if limit := start.Add(time.Duration(quiet+paceBurst) * globalInterval); quietLast.After(limit) {
				t.Fatalf("quiet chats done after %v, want by %v (the busy chat's backlog held them up)", quietLast.Sub(start), limit.Sub(start))
			}
		})
	}
}
