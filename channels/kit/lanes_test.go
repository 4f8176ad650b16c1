package kit

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/poll"
)

// assertEmpty fails t unless l holds no key, no waiting key and no runner.
func assertEmpty(t *testing.T, l *Lanes) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.queues) != 0 || len(l.waiting) != 0 || l.running != 0 {
		t.Errorf("lanes not empty after the work: %d keys, %d waiting, %d running", len(l.queues), len(l.waiting), l.running)
	}
}

// TestLanesKeepOrderPerKeyWithinTheLimit proves the lanes run each key's functions one at a
// time in submission order, never more than the limit at once, and every function runs,
// whether handed over with Run or with Do.
func TestLanesKeepOrderPerKeyWithinTheLimit(t *testing.T) {
	for _, tc := range []struct {
		name        string
		keys, per   int
		limit       int
		concurrency int // submitters
	}{
		{"one key", 1, 200, 4, 1},
		{"more keys than goroutines", 300, 5, 4, 3},
		{"fewer keys than goroutines", 3, 100, 64, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := NewLanes(tc.limit, 0)
			var mu sync.Mutex
			got := map[string][]int{}
			var active, peak atomic.Int64
			busy := make([]atomic.Bool, tc.keys)
			var submit sync.WaitGroup
			for s := range tc.concurrency {
				submit.Go(func() {
					// Each submitter owns the keys k ≡ s (mod concurrency), so per-key order is
					// its submission order.
					for i := range tc.per {
						for k := s; k < tc.keys; k += tc.concurrency {
							key := fmt.Sprint(k)
							hand := l.Run
							if (i+k)%2 == 1 {
								hand = l.Do
							}
							hand(key, func() {
								if busy[k].Swap(true) {
									t.Errorf("key %s ran two functions at once", key)
								}
								n := active.Add(1)
								for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
								}
								mu.Lock()
								got[key] = append(got[key], i)
								mu.Unlock()
								active.Add(-1)
								busy[k].Store(false)
							})
						}
					}
				})
			}
			submit.Wait()
			l.Wait(context.Background())
			if p := peak.Load(); p > int64(tc.limit) {
				t.Errorf("%d functions ran at once, limit %d", p, tc.limit)
			}
			for k := range tc.keys {
				seq := got[fmt.Sprint(k)]
				if len(seq) != tc.per {
					t.Fatalf("key %d ran %d functions, want %d", k, len(seq), tc.per)
				}
				for i, v := range seq {
					if v != i {
						t.Fatalf("key %d ran out of order: %v", k, seq)
					}
				}
			}
			assertEmpty(t, l)
		})
	}
}

// TestLanesBlockedKeysFillTheRunnersExactly proves that however many keys have work, exactly
// the runners' number of them run at once while their functions block, and each key's
// functions still run in the order added (the Discord adapter's orderer test, moved here).
func TestLanesBlockedKeysFillTheRunnersExactly(t *testing.T) {
	l := NewLanes(3, 0)
	var mu sync.Mutex
	got := map[string][]int{}
	busy := map[string]bool{}
	var running, peak atomic.Int32
	release := make(chan struct{})
	const keys, perKey = 20, 5
	for i := range perKey {
		for k := range keys {
			key := fmt.Sprintf("ch%d", k)
			l.Run(key, func() {
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
			})
		}
	}
	poll.Until(t, "three runners busy", func() bool { return running.Load() == 3 })
	close(release)
	l.Wait(context.Background())
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
	assertEmpty(t, l)
}

// TestLanesBusyKeyDoesNotHoldUpOthers proves a key whose function blocks does not keep other
// keys waiting behind it while a goroutine is free, and that with one goroutine the keys take
// turns: a key with queued work yields after each function.
func TestLanesBusyKeyDoesNotHoldUpOthers(t *testing.T) {
	l := NewLanes(1, 0)
	var order []string
	var mu sync.Mutex
	record := func(s string) func() {
		return func() { mu.Lock(); order = append(order, s); mu.Unlock() }
	}
	release := make(chan struct{})
	started := make(chan struct{})
	l.Run("a", func() { close(started); <-release })
	<-started
	// While a's first function holds the only goroutine, a and b queue up.
	l.Run("a", record("a1"))
	l.Run("a", record("a2"))
	l.Run("b", record("b1"))
	l.Run("b", record("b2"))
	close(release)
	l.Wait(context.Background())
	want := []string{"b1", "a1", "b2", "a2"}
	if fmt.Sprint(order) != fmt.Sprint(want) {
		t.Fatalf("order %v, want %v (keys take turns)", order, want)
	}
}

// TestLanesDoRunsInPlaceOnlyWhenFree proves Do runs f on the caller's goroutine when its key is
// idle and a place is free, and otherwise queues it behind the key's functions like Run, in
// order, without waiting.
func TestLanesDoRunsInPlaceOnlyWhenFree(t *testing.T) {
	l := NewLanes(2, 0)
	var order []string
	var mu sync.Mutex
	record := func(s string) func() {
		return func() { mu.Lock(); order = append(order, s); mu.Unlock() }
	}
	ranHere := false
	l.Do("a", func() { ranHere = true })
	if !ranHere {
		t.Fatal("Do on an idle key did not run f before returning")
	}
	release := make(chan struct{})
	started := make(chan struct{})
	l.Run("a", func() { close(started); <-release })
	<-started
	l.Do("a", record("a1")) // a is busy: queued, Do returns at once
	l.Run("b", func() { <-release })
	l.Do("c", record("c1")) // both places taken: queued
	mu.Lock()
	early := len(order)
	mu.Unlock()
	if early != 0 {
		t.Fatalf("Do ran a function while its key or every place was busy: %v", order)
	}
	close(release)
	l.Wait(context.Background())
	if len(order) != 2 {
		t.Fatalf("ran %v, want a1 and c1", order)
	}
	assertEmpty(t, l)
}

// TestLanesBacklogRule proves MaxBacklog: a key holding that many queued functions behind the
// one running refuses the next (Run and Do report false and never run it) while other keys
// still take work, and takes work again once its backlog drains; with no bound every function
// is kept.
func TestLanesBacklogRule(t *testing.T) {
	for _, tc := range []struct {
		name       string
		maxBacklog int
		queued     int // functions queued behind the blocked one
		wantTaken  int
	}{
		{"bounded", 3, 5, 3},
		{"unbounded", 0, 500, 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := NewLanes(2, tc.maxBacklog)
			release, started := make(chan struct{}), make(chan struct{})
			l.Run("busy", func() { close(started); <-release })
			<-started
			var ran atomic.Int32
			taken := 0
			for i := range tc.queued {
				hand := l.Run
				if i%2 == 1 {
					hand = l.Do
				}
				if hand("busy", func() { ran.Add(1) }) {
					taken++
				}
			}
			if taken != tc.wantTaken {
				t.Fatalf("took %d of %d, want %d", taken, tc.queued, tc.wantTaken)
			}
			other := make(chan struct{})
			if !l.Run("other", func() { close(other) }) {
				t.Fatal("another key refused work")
			}
			<-other
			close(release)
			l.Wait(context.Background())
			if int(ran.Load()) != taken {
				t.Fatalf("ran %d, want the %d taken", ran.Load(), taken)
			}
			if !l.Run("busy", func() { ran.Add(1) }) {
				t.Fatal("a drained key refused work")
			}
			l.Wait(context.Background())
			assertEmpty(t, l)
		})
	}
}
