package discord

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	discordfake "github.com/switchboard-bot/switchboard/internal/fake/discord"
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
