package subagent

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/core/agent"
	"github.com/switchboard-bot/switchboard/core/llm"
)

// BenchmarkSpawnSettle measures one child spawned, run for one model step, settled and
// disposed, against the scripted provider. Both backends are registered, as in production.
func BenchmarkSpawnSettle(b *testing.B) {
	p := llm.ScriptFunc(func(llm.Request) llm.Reply { return llm.Reply{Text: "the answer"} })
	rt := agent.NewRuntime(p)
	spawn, _ := NewSpawn(rt, Config{})
	fork, _ := NewFork(rt, Config{})
	defer spawn.Close()
	defer fork.Close()
	parent, _ := rt.Create(agent.CreateOptions{Cwd: "/w"})
	defer func() { _ = parent.Dispose(context.Background()) }()
	ctx := context.Background()
	req := StartRequest{Prompt: "do the thing", Parent: parent}
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		run, err := spawn.Start(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		if res, _ := run.Result(ctx); res.StopReason != StopCompleted {
			b.Fatalf("stop %s", res.StopReason)
		}
		_ = run.Dispose(ctx)
	}
	// CPU time (all threads, GC included) per child: unlike ns/op, it does not grow when other
	// processes compete for the cores.
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkThousandConcurrentChildren starts 1,000 children at once (spawn and fork mixed,
// half structured), waits for all of them, and reports the wall time and the peak heap.
func BenchmarkThousandConcurrentChildren(b *testing.B) {
	const children = 1000
	model := &isolatedChildModel{fast: true}
	p := llm.ScriptFunc(model.reply)
	rt := agent.NewRuntime(p)
	spawn, _ := NewSpawn(rt, Config{})
	fork, _ := NewFork(rt, Config{})
	defer spawn.Close()
	defer fork.Close()
	parent, _ := rt.Create(agent.CreateOptions{})
	defer func() { _ = parent.Dispose(context.Background()) }()
	ctx := context.Background()
	_ = parent.Send("parent question")
	_ = parent.WhenIdle(ctx)
	reqs := make([]StartRequest, children)
	for i := range reqs {
		reqs[i] = StartRequest{Prompt: fmt.Sprintf("child-%d", i), Parent: parent}
		if i%2 == 0 {
			reqs[i].OutputSchema = childSchema(i)
		}
	}

	var peak atomic.Uint64
	var totalNs int64
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		runtime.GC()
		stop := sampleHeap(&peak)
		start := time.Now()
		runs := make([]*Run, children)
		var wg sync.WaitGroup
		for i := range children {
			wg.Go(func() {
				backend := spawn
				if i%4 >= 2 {
					backend = fork
				}
				run, err := backend.Start(ctx, reqs[i])
				if err != nil {
					panic(err)
				}
				runs[i] = run
				if res, _ := run.Result(ctx); res.StopReason != StopCompleted {
					panic(fmt.Sprintf("child %d: %+v", i, res))
				}
			})
		}
		wg.Wait()
		totalNs += time.Since(start).Nanoseconds()
		stop()
		for _, r := range runs {
			_ = r.Dispose(ctx)
		}
	}
	b.ReportMetric(float64(totalNs)/float64(b.N)/1e6, "ms/1000-children")
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/children, "cpu-ns/child")
	if len(model.leaks) > 0 {
		b.Fatalf("isolation failure: %s", model.leaks[0])
	}
}

// sampleHeap records the peak HeapAlloc until the returned stop is called.
func sampleHeap(peak *atomic.Uint64) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	read := func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		for old := peak.Load(); ms.HeapAlloc > old && !peak.CompareAndSwap(old, ms.HeapAlloc); old = peak.Load() {
		}
	}
	wg.Go(func() {
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				read()
			}
		}
	})
	return func() {
		read()
		close(done)
		wg.Wait()
	}
}
