package kit

import (
	"strconv"
	"testing"
	"time"
)

// TestPacerBurstThenOneEveryInterval: a key gets its burst at once, then one slot an interval;
// keys never wait for one another; after a quiet spell the burst is there again; a burst below 1
// counts as 1.
func TestPacerBurstThenOneEveryInterval(t *testing.T) {
	tests := []struct {
		name  string
		every time.Duration
		burst int
		want  []time.Duration
	}{
		{"burst 3", time.Second, 3, []time.Duration{0, 0, 0, time.Second, 2 * time.Second}},
		{"burst 1", 3 * time.Second, 1, []time.Duration{0, 3 * time.Second, 6 * time.Second}},
		{"burst 0 is 1", time.Second, 0, []time.Duration{0, time.Second}},
		{"burst -2 is 1", time.Second, -2, []time.Duration{0, time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPacer[string]()
			now := time.Unix(1000, 0)
			for i, want := range tt.want {
				if got := p.Reserve("a", now, tt.every, tt.burst); got != want {
					t.Fatalf("slot %d: wait %v, want %v", i, got, want)
				}
			}
			if w := p.Reserve("b", now, tt.every, tt.burst); w != 0 {
				t.Errorf("another key waited %v", w)
			}
			later := now.Add(time.Duration(len(tt.want)+max(tt.burst, 1)) * tt.every)
			if w := p.Reserve("a", later, tt.every, tt.burst); w != 0 {
				t.Errorf("after a quiet spell: wait %v", w)
			}
		})
	}
}

// TestPacerPause: a pause holds a key's next slot until its end, then spaces the ones after by
// the interval, with no burst; it never brings a later slot forward, and other keys go on.
func TestPacerPause(t *testing.T) {
	p := NewPacer[int64]()
	now := time.Unix(1000, 0)
	p.Pause(1, now.Add(30*time.Second), 3*time.Second, 20)
	for i, want := range []time.Duration{30 * time.Second, 33 * time.Second, 36 * time.Second} {
		if got := p.Reserve(1, now, 3*time.Second, 20); got != want {
			t.Fatalf("slot %d after the pause: wait %v, want %v", i, got, want)
		}
	}
	p.Pause(1, now.Add(time.Second), 3*time.Second, 20) // ends before the booked slots
	if got := p.Reserve(1, now, 3*time.Second, 20); got != 39*time.Second {
		t.Fatalf("a shorter pause moved the next slot to %v, want 39s", got)
	}
	if w := p.Reserve(2, now, 3*time.Second, 20); w != 0 {
		t.Errorf("another key waited %v", w)
	}
}

// TestPacerDropsIdleKeys: memory follows the active keys: keys whose schedule has passed are
// dropped at the next sweep, and a dropped key behaves as a fresh one.
func TestPacerDropsIdleKeys(t *testing.T) {
	p := NewPacer[string]()
	now := time.Unix(1000, 0)
	for i := range 1000 {
		p.Reserve("k"+strconv.Itoa(i), now, time.Second, 1)
	}
	for range 100 {
		p.Reserve("busy", now, time.Second, 1)
	}
	if n := p.Len(); n != 1001 {
		t.Fatalf("%d keys, want 1001", n)
	}
	later := now.Add(PacerSweepEvery)
	if w := p.Reserve("busy", later, time.Second, 1); w != 40*time.Second {
		t.Errorf("the busy key waited %v a minute later, want 40s (100 slots booked a second apart)", w)
	}
	if n := p.Len(); n != 1 {
		t.Fatalf("after a minute: %d keys, want only the busy one", n)
	}
	if w := p.Reserve("k0", later, time.Second, 1); w != 0 {
		t.Errorf("a dropped key waited %v", w)
	}
}
