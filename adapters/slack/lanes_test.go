package slack

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// TestLanesKeepOrderPerKeyWithinTheLimit proves the lanes run each key's functions one at a
// time in submission order, never more than the limit at once, and every function runs,
// whether handed over with run or with do.
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
			l := newLanes(tc.limit)
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
							hand := l.run
							if (i+k)%2 == 1 {
								hand = l.do
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
			l.wait(context.Background())
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
			l.mu.Lock()
			defer l.mu.Unlock()
			if len(l.m) != 0 || len(l.waiting) != 0 || l.running != 0 {
				t.Errorf("lanes not empty after the work: %d keys, %d waiting, %d running", len(l.m), len(l.waiting), l.running)
			}
		})
	}
}

// TestLanesBusyKeyDoesNotHoldUpOthers proves a key whose function blocks does not keep other
// keys waiting behind it while a goroutine is free, and that with one goroutine the keys take
// turns: a key with queued work yields after each function.
func TestLanesBusyKeyDoesNotHoldUpOthers(t *testing.T) {
	l := newLanes(1)
	var order []string
	var mu sync.Mutex
	record := func(s string) func() {
		return func() { mu.Lock(); order = append(order, s); mu.Unlock() }
	}
	release := make(chan struct{})
	started := make(chan struct{})
	l.run("a", func() { close(started); <-release })
	<-started
	// While a's first function holds the only goroutine, a and b queue up.
	l.run("a", record("a1"))
	l.run("a", record("a2"))
	l.run("b", record("b1"))
	l.run("b", record("b2"))
	close(release)
	l.wait(context.Background())
	want := []string{"b1", "a1", "b2", "a2"}
	if fmt.Sprint(order) != fmt.Sprint(want) {
		t.Fatalf("order %v, want %v (keys take turns)", order, want)
	}
}

// TestLanesDoRunsInPlaceOnlyWhenFree proves do runs f on the caller's goroutine when its key is
// idle and a place is free, and otherwise queues it behind the key's functions like run, in
// order, without waiting.
func TestLanesDoRunsInPlaceOnlyWhenFree(t *testing.T) {
	l := newLanes(2)
	var order []string
	var mu sync.Mutex
	record := func(s string) func() {
		return func() { mu.Lock(); order = append(order, s); mu.Unlock() }
	}
	ranHere := false
	l.do("a", func() { ranHere = true })
	if !ranHere {
		t.Fatal("do on an idle key did not run f before returning")
	}
	release := make(chan struct{})
	started := make(chan struct{})
	l.run("a", func() { close(started); <-release })
	<-started
	l.do("a", record("a1")) // a is busy: queued, do returns at once
	l.run("b", func() { <-release })
	l.do("c", record("c1")) // both places taken: queued
	mu.Lock()
	early := len(order)
	mu.Unlock()
	if early != 0 {
		t.Fatalf("do ran a function while its key or every place was busy: %v", order)
	}
	close(release)
	l.wait(context.Background())
	if len(order) != 2 {
		t.Fatalf("ran %v, want a1 and c1", order)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.m) != 0 || len(l.waiting) != 0 || l.running != 0 {
		t.Errorf("lanes not empty after the work: %d keys, %d waiting, %d running", len(l.m), len(l.waiting), l.running)
	}
}
