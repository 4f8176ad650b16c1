package main

import (
	"os"
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"sync"
)

// The bot's live heap is small (a few MB: runs in flight, connections, caches), and what it
// allocates per message is short-lived. Go's default pacing (GOGC=100) then collects each time
// the heap doubles from a few MB — dozens of times a second under load — and each collection
// scans every worker's stack and shrinks the idle ones, which then grow again: a fifth of the
// bot's CPU went to it. gcFloor keeps the heap goal at least floor bytes, as if GOGC were
// raised just while the live heap is small, and leaves Go's own pacing as it is once the live
// heap is half the floor or more. Setting GOGC or GOMEMLIMIT in the environment turns it off:
// the operator's choice wins.

// defaultGCFloor is the least heap goal. Measured with BenchmarkBinary's Telegram workload: 20 MB
// saved a fifth of the bot's CPU per message for about 6 MB more peak RSS. Since stacks are no
// longer shrunk (stacks.go), 24 MB took 5 % less CPU again than 20 MB for 2–3 MB more peak RSS
// (Telegram 200 chats and Discord 2,000 chats, interleaved, four runs each); 28 MB no less CPU
// for 5 MB more still.
const defaultGCFloor = 24 << 20

// gcFloor adjusts GOGC after every collection.
type gcFloor struct {
	floor   uint64
	mu      sync.Mutex
	percent int
	sample  []rtmetrics.Sample
	stopped bool
}

// gcSentinel is the object whose finalizer runs once per collection; it holds a pointer and is
// past the tiny allocator's 16 bytes, so it is freed on its own.
type gcSentinel struct {
	_ *int
	_ [2]int64
}

// startGCFloor keeps the heap goal at least floor bytes and makes that much of the heap resident
// at once (prefault), unless env sets GOGC or GOMEMLIMIT; the returned stop ends it and restores
// GOGC=100.
func startGCFloor(env []string, floor uint64) (stop func()) {
	for _, kv := range env {
		for _, name := range []string{"GOGC=", "GOMEMLIMIT="} {
			if len(kv) >= len(name) && kv[:len(name)] == name {
				return func() {}
			}
		}
	}
	f := &gcFloor{floor: floor, percent: 100, sample: []rtmetrics.Sample{{Name: "/gc/heap/goal:bytes"}}}
	f.arm() // from the first collection on
	prefault(floor)
	return f.stop
}

// prefault makes n bytes of the heap resident: it allocates them, writes to every page, lets them
// go and collects, so the pages are free heap the process allocates from next. With the floor,
// the heap grows to it as soon as messages come, and each page it grows by is a page fault: on
// the virtual machines measured, 12 µs in a loop like this one and two or three times that amid
// a burst. Paid here, before the bot says it is ready, a start took 70–100 ms more CPU there and
// the burst just after it (the backlog a restart takes in) 10–20 % less a message, for 3–4 MB
// more peak RSS. The floor's bytes, not more: a third more took a few per cent less CPU again but
// put the Slack workload's peak RSS at 59–60 MB. Go gives the pages back after some minutes
// without work, as any free heap (docs/architecture.md).
func prefault(n uint64) {
	b := make([]byte, n)
	for i := 0; i < len(b); i += os.Getpagesize() {
		b[i] = 1
	}
	runtime.KeepAlive(b)
	runtime.GC()
}

func (f *gcFloor) arm() {
	runtime.SetFinalizer(&gcSentinel{}, func(*gcSentinel) {
		f.mu.Lock()
		stopped := f.stopped
		f.mu.Unlock()
		if !stopped {
			f.adjust()
			f.arm()
		}
	})
}

// gcPercentFor is the GOGC that puts the heap goal at floor, given the goal the collector set
// with GOGC percent: Go's goal is (live heap + stacks + globals) × (1 + GOGC/100), so that base
// is goal / (1 + percent/100). It is at least Go's default 100, and at most what keeps Go's
// least goal — 4 MB × GOGC/100, for a heap of almost nothing — within the floor.
func gcPercentFor(goal uint64, percent int, floor uint64) int {
	const heapMinimum = 4 << 20
	base := goal * 100 / uint64(100+percent)
	if base == 0 || 2*base >= floor {
		return 100
	}
	return int(max(100, min(floor*100/base-100, floor*100/heapMinimum)))
}

func (f *gcFloor) adjust() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return
	}
	rtmetrics.Read(f.sample)
	if f.sample[0].Value.Kind() != rtmetrics.KindUint64 {
		return
	}
	p := gcPercentFor(f.sample[0].Value.Uint64(), f.percent, f.floor)
	// Set only on a real change: every call re-paces the collector.
	if d := p - f.percent; d > f.percent/10 || -d > f.percent/10 {
		f.percent = p
		debug.SetGCPercent(p)
	}
}

func (f *gcFloor) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.stopped {
		f.stopped = true
		debug.SetGCPercent(100)
	}
}
