package main

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/poll"
)

func TestGCPercentKeepsTheGoalAtTheFloor(t *testing.T) {
	const mb = 1 << 20
	cases := []struct {
		name    string
		goal    uint64
		percent int
		want    int
	}{
		{"a tiny heap: as high as Go's least goal allows", 2 * mb, 100, 500},
		{"a small heap", 8 * mb, 100, 400},
		{"the same heap, paced at 400 already", 20 * mb, 400, 400},
		{"half the floor or more: Go's default", 20 * mb, 100, 100},
		{"a large heap", 200 * mb, 100, 100},
		{"no goal read", 0, 100, 100},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := gcPercentFor(c.goal, c.percent, 20*mb); got != c.want {
				t.Fatalf("gcPercentFor(%d MB, %d) = %d, want %d", c.goal/mb, c.percent, got, c.want)
			}
		})
	}
}

// TestGCFloorRaisesGOGCUntilStopped: with a small heap the floor raises GOGC after a
// collection, stop puts Go's default back, and GOGC or GOMEMLIMIT in the environment leaves it
// alone.
func TestGCFloorRaisesGOGCUntilStopped(t *testing.T) {
	gogc := func() int { p := debug.SetGCPercent(100); debug.SetGCPercent(p); return p }
	stop := startGCFloor([]string{"PATH=/bin"}, 64<<20)
	poll.Until(t, "GOGC raised after a collection", func() bool { runtime.GC(); return gogc() > 100 })
	stop()
	if p := gogc(); p != 100 {
		t.Fatalf("GOGC = %d after stop, want 100", p)
	}
	for _, env := range []string{"GOGC=50", "GOMEMLIMIT=1GiB"} {
		stop := startGCFloor([]string{env}, 64<<20)
		runtime.GC()
		runtime.GC()
		if p := gogc(); p != 100 {
			t.Errorf("with %s GOGC = %d, want it left alone", env, p)
		}
		stop()
	}
}
