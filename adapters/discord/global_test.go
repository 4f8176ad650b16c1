package discord

import (
	"context"
	"errors"
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
	"github.com/switchboard-bot/switchboard/channels/kit"
	"github.com/switchboard-bot/switchboard/core/conv"
	discordfake "github.com/switchboard-bot/switchboard/internal/fake/discord"
	"github.com/switchboard-bot/switchboard/internal/poll"
)

// slotClock is a virtual clock that records every slot a pacer hands out.
type slotClock struct {
	virtualClock
	mu    sync.Mutex
	slots []time.Time
}

func (c *slotClock) sleepUntil(ctx context.Context, at time.Time) error {
	c.mu.Lock()
	c.slots = append(c.slots, at)
	c.mu.Unlock()
	return c.virtualClock.sleepUntil(ctx, at)
}

func (c *slotClock) install(p *pacer) { p.now, p.sleepUntil = c.now, c.sleepUntil }

func (c *slotClock) taken() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.slots)
}

// TestGlobalRateSpreadsABurst proves Discord's global limit is kept before Discord has to
// answer 429: a burst of 120 sends goes out at most 50 in any one second, on a virtual clock
// (no real waiting), every request the fake received having taken a slot.
func TestGlobalRateSpreadsABurst(t *testing.T) {
	fk := discordfake.New(t)
	clock := &slotClock{virtualClock: virtualClock{t: time.Unix(2_000_000, 0)}}
	h := newHarnessPrepared(t, fk, nil, func(ch *Channel) { clock.install(ch.global) })
	k := dmConv(h)
	before := len(fk.Calls())
	const sends = 120
	var wg sync.WaitGroup
	errs := make(chan error, sends)
	for i := range sends {
		wg.Go(func() {
			if _, err := h.ch.Send(context.Background(), channels.Target{Conv: k}, channels.Message{Text: "burst " + string(rune('a'+i%26))}); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := postsTo(fk, k.Chat); n != sends {
		t.Fatalf("%d posts, want %d", n, sends)
	}
	slots := clock.taken()
	if len(slots) != len(fk.Calls()) {
		t.Errorf("%d requests reached the fake, %d took a slot", len(fk.Calls()), len(slots))
	}
	slices.SortFunc(slots, func(a, b time.Time) int { return a.Compare(b) })
	checkRate(t, slots, globalPerSecond, time.Second)
	burst := slots[before:]
	if span := burst[len(burst)-1].Sub(burst[0]); span < 2*time.Second {
		t.Errorf("%d requests spanned %v of virtual time, want at least 2s at 50 a second", len(burst), span)
	}
}

// stubTransport answers every request 200 and records its path.
type stubTransport struct {
	mu    sync.Mutex
	paths []string
}

func (s *stubTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	s.mu.Lock()
	s.paths = append(s.paths, r.URL.Path)
	s.mu.Unlock()
	return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("{}")), Request: r}, nil
}

// TestGlobalRateExemptsInteractionEndpoints proves interaction callbacks and interaction-token
// follow-ups take no slot of the global limit, as Discord exempts them, while bot-token
// requests do; and that a request whose context ends while it waits fails without being sent.
func TestGlobalRateExemptsInteractionEndpoints(t *testing.T) {
	clock := &slotClock{virtualClock: virtualClock{t: time.Unix(0, 0)}}
	p := newPacer(2, time.Second)
	clock.install(p)
	next := &stubTransport{}
	base, _ := url.Parse("http://127.0.0.1:1")
	rt := rewrite{base: base, next: next, global: p}
	do := func(ctx context.Context, method, path string) error {
		r, err := http.NewRequestWithContext(ctx, method, "https://discord.com"+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := rt.RoundTrip(r)
		if err == nil {
			_ = resp.Body.Close()
		}
		return err
	}
	for _, path := range []string{
		"/api/v9/interactions/1/tok/callback",
		"/api/v9/webhooks/900/tok",
		"/api/v9/webhooks/900/tok/messages/@original",
	} {
		for range 5 {
			if err := do(context.Background(), "POST", path); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := len(clock.taken()); n != 0 {
		t.Errorf("interaction endpoints took %d slots, want 0", n)
	}
	for range 3 {
		if err := do(context.Background(), "POST", "/api/v9/channels/5/messages"); err != nil {
			t.Fatal(err)
		}
	}
	slots := clock.taken()
	if len(slots) != 3 || slots[2].Sub(slots[0]) != time.Second {
		t.Errorf("slots %v, want 3 with the third a second after the first (2 a second)", slots)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := do(ctx, "POST", "/api/v9/channels/5/messages"); err == nil {
		t.Error("a request with an ended context was sent")
	}
	if n := len(next.paths); n != 15+3 {
		t.Errorf("%d requests sent, want 18", n)
	}
}

// headCount is a shard lease whose census reports the number of processes it is set to, or an
// error; the tests wait on its attendances to know a count was taken.
type headCount struct {
	kit.MemoryLease
	mu      sync.Mutex
	n       int
	err     error
	attends int
}

func (h *headCount) Attend(context.Context, string, string, time.Duration) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.attends++
	if h.err != nil {
		return 0, h.err
	}
	return h.n, nil
}

// report makes the census report n processes, or fail with err, and waits until the adapter
// has taken that count: a second attendance after it began means the first one's answer was
// acted on (the shards are shared out one round at a time).
func (h *headCount) report(t *testing.T, n int, err error) {
	t.Helper()
	h.mu.Lock()
	h.n, h.err = n, err
	mark := h.attends
	h.mu.Unlock()
	poll.Until(t, "the census taken", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.attends >= mark+2
	})
}

// burst sends n messages to k at once and returns the global slots they took, in order.
func burst(t *testing.T, h *harness, clock *slotClock, k conv.Key, n int) []time.Time {
	t.Helper()
	before := len(clock.taken())
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if _, err := h.ch.Send(context.Background(), channels.Target{Conv: k}, channels.Message{Text: "burst " + strconv.Itoa(i)}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	slots := clock.taken()[before:]
	if len(slots) != n {
		t.Fatalf("%d sends took %d slots, want one each", n, len(slots))
	}
	slices.SortFunc(slots, func(a, b time.Time) int { return a.Compare(b) })
	return slots
}

func span(slots []time.Time) time.Duration { return slots[len(slots)-1].Sub(slots[0]) }

// TestGlobalRateSharedAmongProcesses proves the processes sharing a bot split its global limit
// as the census counts them: with 2 alive a burst goes out at 25 a second, with 1 again at 50,
// and a census that fails keeps the last share rather than taking the whole limit back; on a
// virtual clock (no real waiting).
func TestGlobalRateSharedAmongProcesses(t *testing.T) {
	fk := discordfake.New(t)
	census := &headCount{n: 2}
	clock := &slotClock{virtualClock: virtualClock{t: time.Unix(3_000_000, 0)}}
	h := newHarnessPrepared(t, fk, func(c *Config) {
		c.Lease, c.LeaseOwner, c.LeaseTTL = census, "a", 500*time.Millisecond
	}, func(ch *Channel) { clock.install(ch.global) })
	k := dmConv(h)

	census.report(t, 2, nil)
	two := burst(t, h, clock, k, 75)
	checkRate(t, two, 25, time.Second)
	if got := span(two); got < 2*time.Second {
		t.Errorf("with 2 processes, 75 requests spanned %v of virtual time, want at least 2s at 25 a second", got)
	}

	census.report(t, 1, nil)
	one := burst(t, h, clock, k, 100)
	checkRate(t, one, globalPerSecond, time.Second)
	// At 25 a second, 100 requests would span at least 3 s.
	if got := span(one); got >= 3*time.Second {
		t.Errorf("alone again, 100 requests spanned %v of virtual time, want under 3s at 50 a second", got)
	}

	census.report(t, 2, nil)
	census.report(t, 0, errors.New("census: connection refused"))
	failed := burst(t, h, clock, k, 75)
	checkRate(t, failed, 25, time.Second)
	if got := span(failed); got < 2*time.Second {
		t.Errorf("with the census failing after it counted 2, 75 requests spanned %v, want at least 2s at 25 a second", got)
	}
	checkRate(t, clock.taken(), globalPerSecond, time.Second) // across the changes too
	if n := postsTo(fk, k.Chat); n != 75+100+75 {
		t.Errorf("%d posts reached Discord, want 250", n)
	}
}

// TestGlobalRateUnboundedStaysUnbounded proves a negative GlobalRate (discord.pacing: false)
// stays without a bound when the census counts other processes: no share is paced.
func TestGlobalRateUnboundedStaysUnbounded(t *testing.T) {
	census := &headCount{n: 2}
	h := newHarness(t, nil, func(c *Config) {
		c.GlobalRate, c.Lease, c.LeaseOwner, c.LeaseTTL = -1, census, "a", 500*time.Millisecond
	})
	census.report(t, 2, nil)
	if h.ch.global != nil {
		t.Fatalf("GlobalRate -1 with 2 processes paces at %d a second, want no bound", globalPer(h.ch))
	}
	k := dmConv(h)
	for i := range 60 {
		if _, err := h.ch.Send(context.Background(), channels.Target{Conv: k}, channels.Message{Text: "unbounded " + strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
	}
}

// globalPer is a Channel's global share now, a second.
func globalPer(ch *Channel) int {
	ch.global.mu.Lock()
	defer ch.global.mu.Unlock()
	return ch.global.per
}

// TestTwoProcessesShareTheGlobalRate proves the split on the census the processes really share
// (one lease store): alone a process has the whole limit, 25 a second each once a second one
// runs, and the whole limit again once the second has stopped and left the census.
func TestTwoProcessesShareTheGlobalRate(t *testing.T) {
	fk := discordfake.New(t)
	mem := &kit.MemoryLease{}
	shared := func(owner string) func(*Config) {
		return func(c *Config) { c.Lease, c.LeaseOwner, c.LeaseTTL = mem, owner, 500*time.Millisecond }
	}
	a := newHarness(t, fk, shared("a"))
	if got := globalPer(a.ch); got != globalPerSecond {
		t.Fatalf("alone, a allows %d a second, want %d", got, globalPerSecond)
	}
	b := newHarness(t, fk, shared("b"))
	poll.Until(t, "25 a second each", func() bool { return globalPer(a.ch) == 25 && globalPer(b.ch) == 25 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.ch.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "a to have the whole limit again", func() bool { return globalPer(a.ch) == globalPerSecond })
	if !strings.Contains(a.logs.String(), "processes=2") {
		t.Errorf("a did not log its share among 2 processes:\n%s", a.logs.String())
	}
}
