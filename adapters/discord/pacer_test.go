package discord

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	discordfake "github.com/switchboard-bot/switchboard/internal/fake/discord"
	"github.com/switchboard-bot/switchboard/internal/poll"
)

// virtualClock is the identify pacer's clock in tests: waiting for a slot moves it forward at
// once, so pacing at Discord's real 5 s takes no real time.
type virtualClock struct {
	mu sync.Mutex
	t  time.Time
}

func (v *virtualClock) now() time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.t
}

func (v *virtualClock) sleepUntil(ctx context.Context, at time.Time) error {
	v.mu.Lock()
	if at.After(v.t) {
		v.t = at
	}
	v.mu.Unlock()
	return ctx.Err()
}

func (v *virtualClock) install(p *pacer) { p.now, p.sleepUntil = v.now, v.sleepUntil }

// slotLog records the pacer slot of each IDENTIFY sent.
type slotLog struct {
	mu    sync.Mutex
	slots []time.Time
}

func (l *slotLog) add(_ int, at time.Time) {
	l.mu.Lock()
	l.slots = append(l.slots, at)
	l.mu.Unlock()
}

func (l *slotLog) all() []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.slots)
}

// checkRate fails t when some per+1 consecutive slots fall within every: Discord's rules are
// max_concurrency identifies per 5 s and 50 REST requests per second.
func checkRate(t *testing.T, slots []time.Time, per int, every time.Duration) {
	t.Helper()
	slots = slices.Clone(slots)
	slices.SortFunc(slots, func(a, b time.Time) int { return a.Compare(b) })
	for i := 0; i+per < len(slots); i++ {
		if gap := slots[i+per].Sub(slots[i]); gap < every {
			t.Errorf("identifies %d and %d are %v apart: more than %d in %v (slots %v)", i, i+per, gap, per, every, slots)
		}
	}
}

// TestEveryIdentifyIsPaced proves that every IDENTIFY — each shard's first, the one after an
// invalid session (op 9, not resumable) and the one after a non-resumable close (4009) — takes
// a slot of the identify pacer, and that the slots keep Discord's max_concurrency per 5 s, on a
// virtual clock (no real waiting).
func TestEveryIdentifyIsPaced(t *testing.T) {
	fk := discordfake.New(t)
	const shards, perBucket = 4, 2
	fk.RecommendShards(shards, perBucket)
	clock := &virtualClock{t: time.Unix(1_000_000, 0)}
	log := &slotLog{}
	h := newHarnessPrepared(t, fk, func(c *Config) { c.AutoShard = true }, func(ch *Channel) {
		ch.paceClock, ch.onIdentify = clock.install, log.add
	})
	poll.Until(t, "every shard connected", func() bool { return fk.Connected() && h.ch.Ready() == nil })
	if n := acceptedIdentifies(fk); n != shards {
		t.Fatalf("%d identifies, want %d", n, shards)
	}

	fk.InvalidSession(false)
	poll.Until(t, "shard 0 identified again after op 9", func() bool { return acceptedIdentifies(fk) == shards+1 && fk.Connected() })
	fk.CloseWith(discordfake.CloseSessionTimedOut, "Session timed out.")
	poll.Until(t, "shard 0 identified again after 4009", func() bool { return acceptedIdentifies(fk) == shards+2 && fk.Connected() })

	slots := log.all()
	slices.SortFunc(slots, func(a, b time.Time) int { return a.Compare(b) })
	if len(slots) != len(fk.Identifies()) {
		t.Fatalf("%d identifies sent, %d through the pacer", len(fk.Identifies()), len(slots))
	}
	checkRate(t, slots, perBucket, 5*time.Second)
	// Four shards two at a time, then the two re-identifies: three buckets, 10 s of virtual time.
	if got := slots[len(slots)-1].Sub(slots[0]); got != 10*time.Second {
		t.Errorf("the six identifies spanned %v of virtual time, want 10s", got)
	}
}

func TestPacerSlots(t *testing.T) {
	clock := &virtualClock{t: time.Unix(0, 0)}
	p := newPacer(3, 5*time.Second)
	clock.install(p)
	var got []time.Duration
	for range 7 {
		at, err := p.wait(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, at.Sub(time.Unix(0, 0)))
	}
	want := []time.Duration{0, 0, 0, 5 * time.Second, 5 * time.Second, 5 * time.Second, 10 * time.Second}
	if !slices.Equal(got, want) {
		t.Errorf("slots %v, want %v", got, want)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.wait(ctx); err == nil {
		t.Error("wait with a cancelled context returned no error")
	}
}

func (v *virtualClock) advance(d time.Duration) {
	v.mu.Lock()
	v.t = v.t.Add(d)
	v.mu.Unlock()
}
