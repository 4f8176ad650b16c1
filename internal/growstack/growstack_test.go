package growstack

import (
	"sync"
	"testing"
)

// depth recurses n times with a frame of about 256 bytes, the shape of a deep call path.
//
//go:noinline
func depth(n int) int {
	var frame [32]int64
	frame[n%32] = int64(n)
	if n == 0 {
		return 0
	}
	return depth(n-1) + int(frame[n%32]&1)
}

func TestGrowKeepsDeepCallsWorking(t *testing.T) {
	var wg sync.WaitGroup
	got := make([]int, 64)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			Grow()
			Grow() // a second call on a grown stack is only the zeroing
			got[i] = depth(200)
		}()
	}
	wg.Wait()
	for i, g := range got {
		if g != 100 {
			t.Fatalf("goroutine %d: depth(200) = %d, want 100", i, g)
		}
	}
}

// BenchmarkFreshGoroutineDeepCall is the cost Grow saves: a new goroutine going about 12 KB deep,
// its stack grown on the way down (frame by frame) or once at the top.
func BenchmarkFreshGoroutineDeepCall(b *testing.B) {
	for _, c := range []struct {
		name string
		grow bool
	}{{"grown_on_the_way", false}, {"grown_at_the_top", true}} {
		b.Run(c.name, func(b *testing.B) {
			done := make(chan int)
			for range b.N {
				go func() {
					if c.grow {
						Grow()
					}
					done <- depth(40)
				}()
				<-done
			}
		})
	}
}
