package chantest

import (
	"runtime"
	"sync"
	"testing"

	"github.com/switchboard-bot/switchboard/channels"
)

// AskReady calls r.Ready without pause on a goroutine of its own until the test ends, beside
// whatever the test makes the channel do meanwhile, so that -race sees Ready's reads next to
// the intake's writes. The goroutine is waited for before the test's earlier cleanups run
// (those registered before AskReady: the channel's Stop among them).
func AskReady(t testing.TB, r channels.Readiness) {
	t.Helper()
	done := make(chan struct{})
	var asker sync.WaitGroup
	asker.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			_ = r.Ready()
			runtime.Gosched()
		}
	})
	t.Cleanup(func() { close(done); asker.Wait() })
}
