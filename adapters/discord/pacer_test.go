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
			t.Errorf("slots %d and %d are %v apart: more than %d in %v (slots %v)", i, i+per, gap, per, every, slots)
			return // one is enough: the rest would repeat the slots
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

// frozenClock is a pacer clock that never moves: waiting for a slot takes no time at all, so
// slots handed out ahead of the clock stay in the future.
type frozenClock struct{ t time.Time }

func (f frozenClock) install(p *pacer) {
	p.now = func() time.Time { return f.t }
	p.sleepUntil = func(ctx context.Context, _ time.Time) error { return ctx.Err() }
}

// TestPacerRateChange proves a pacer's limit can change between slots without losing the
// window's accounting: lowered, the next slot waits for the new limit counting the slots already
// taken; raised, the room is used at once but never ahead of a slot already handed out.
func TestPacerRateChange(t *testing.T) {
	base := time.Unix(0, 0)
	take := func(t *testing.T, p *pacer, n int) []time.Duration {
		t.Helper()
		var got []time.Duration
		for range n {
			at, err := p.wait(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, at.Sub(base))
		}
		return got
	}
	s := time.Second
	tests := []struct {
		name    string
		per     int
		clock   func(*pacer)
		first   int // slots taken at per
		newPer  int
		then    int // slots taken at newPer
		want    []time.Duration
		wantWas int
	}{
		{name: "lowered after a burst", per: 3, clock: (&virtualClock{t: base}).install, first: 3, newPer: 1, then: 3,
			want: []time.Duration{0, 0, 0, 5 * s, 10 * s, 15 * s}, wantWas: 3},
		{name: "lowered mid-window", per: 4, clock: (&virtualClock{t: base}).install, first: 2, newPer: 2, then: 3,
			want: []time.Duration{0, 0, 5 * s, 5 * s, 10 * s}, wantWas: 4},
		{name: "raised after a paced run", per: 1, clock: (&virtualClock{t: base}).install, first: 3, newPer: 3, then: 4,
			want: []time.Duration{0, 5 * s, 10 * s, 10 * s, 10 * s, 15 * s, 15 * s}, wantWas: 1},
		{name: "raised with slots ahead of the clock", per: 2, clock: frozenClock{t: base}.install, first: 6, newPer: 4, then: 3,
			want: []time.Duration{0, 0, 5 * s, 5 * s, 10 * s, 10 * s, 10 * s, 10 * s, 15 * s}, wantWas: 2},
		{name: "at least one", per: 2, clock: (&virtualClock{t: base}).install, first: 2, newPer: 0, then: 2,
			want: []time.Duration{0, 0, 5 * s, 10 * s}, wantWas: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newPacer(tc.per, 5*time.Second)
			tc.clock(p)
			got := take(t, p, tc.first)
			if was := p.setPer(tc.newPer); was != tc.wantWas {
				t.Errorf("setPer returned %d, want %d", was, tc.wantWas)
			}
			got = append(got, take(t, p, tc.then)...)
			if !slices.Equal(got, tc.want) {
				t.Errorf("slots %v, want %v", got, tc.want)
			}
		})
	}
}

// TestPacerRateChangesUnderLoad proves the limit can change while many wait (under -race): no
// window ever holds more slots than the highest limit set, and every waiter gets its slot.
func TestPacerRateChangesUnderLoad(t *testing.T) {
	clock := &slotClock{virtualClock: virtualClock{t: time.Unix(0, 0)}}
	p := newPacer(3, time.Second)
	clock.install(p)
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() {
			if i%10 == 0 {
				p.setPer(1 + i%3)
			}
			if _, err := p.wait(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	slots := clock.taken()
	if len(slots) != 200 {
		t.Fatalf("%d slots, want 200", len(slots))
	}
	checkRate(t, slots, 3, time.Second)
}
