package discord

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/poll"
)

// TestOrdererKeepsEachKeysOrderWithinItsRunnerBound: jobs of one key run in the order added,
// never two of a key at once, and at most max keys run at once however many have work.
func TestOrdererKeepsEachKeysOrderWithinItsRunnerBound(t *testing.T) {
	o := newOrderer()
	o.max = 3
	ctx := context.Background()
	var wg sync.WaitGroup
	spawn := func(run func()) { wg.Add(1); go func() { defer wg.Done(); run() }() }
	var mu sync.Mutex
	got := map[string][]int{}
	busy := map[string]bool{}
	var running, peak atomic.Int32
	release := make(chan struct{})
	const keys, perKey = 20, 5
	for i := range perKey {
		for k := range keys {
			key := fmt.Sprintf("ch%d", k)
			o.add(key, func(context.Context) {
				n := running.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				mu.Lock()
				if busy[key] {
					t.Errorf("two jobs of %s at once", key)
				}
				busy[key] = true
				mu.Unlock()
				<-release
				mu.Lock()
				busy[key] = false
				got[key] = append(got[key], i)
				mu.Unlock()
				running.Add(-1)
			}, spawn, ctx)
		}
	}
	poll.Until(t, "three runners busy", func() bool { return running.Load() == 3 })
	close(release)
	wg.Wait()
	if p := peak.Load(); p != 3 {
		t.Fatalf("peak of %d keys at once, want 3", p)
	}
	for k := range keys {
		seq := got[fmt.Sprintf("ch%d", k)]
		if len(seq) != perKey {
			t.Fatalf("ch%d ran %v", k, seq)
		}
		for i, v := range seq {
			if v != i {
				t.Fatalf("ch%d ran %v, want in order", k, seq)
			}
		}
	}
	if len(o.queues) != 0 || o.running != 0 {
		t.Fatalf("left %d queues, %d runners", len(o.queues), o.running)
	}
}
