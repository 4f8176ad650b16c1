package poll

import (
	"sync/atomic"
	"testing"
)

func TestUntilReturnsOnceTheConditionHolds(t *testing.T) {
	var n atomic.Int32
	done := make(chan struct{})
	go func() {
		for n.Add(1) < 5 {
		}
		close(done)
	}()
	Until(t, "the counter to reach 5", func() bool { return n.Load() >= 5 })
	<-done
	if n.Load() < 5 {
		t.Fatalf("returned early at %d", n.Load())
	}
}
