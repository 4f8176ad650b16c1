package runs

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchboard-bot/switchboard/core/runs/internal/rdb"
)

// fetchBlock is how long one XREADGROUP waits for hints; it bounds how long Shutdown waits for the
// fetcher to notice.
const fetchBlock = 500 * time.Millisecond

// fetcher is the fetcher component: it reads hints from the ready stream for as many as this
// process has free slots (at most two per worker), so one read serves several workers under load.
//
// While Redis fails it backs off (outageBackoff) and logs the failure a few times, not per read.
type fetcher struct {
	hints    *rdb.Hints
	consumer string
	workers  int
	log      *slog.Logger
	slots    *hintSlots
	stop     context.CancelFunc
}

// start runs the fetcher in a goroutine of wg until shutdown.
func (f *fetcher) start(ctx context.Context, wg *sync.WaitGroup) {
	ctx, f.stop = context.WithCancel(ctx)
	wg.Go(func() { f.run(ctx) })
}

// shutdown stops the fetcher: a read in flight ends within fetchBlock. Wait on start's group for
// it.
func (f *fetcher) shutdown() { f.stop() }

func (f *fetcher) run(ctx context.Context) {
	fl := newFailureLog(f.log, "fetcher", "runs: reading hints failed; retrying")
	failures := 0
	for {
		n, ok := f.slots.take(ctx, true, f.workers)
		if !ok {
			return
		}
		hints, err := f.hints.Read(ctx, f.consumer, n, fetchBlock)
		if err != nil && ctx.Err() == nil {
			failures++
			fl.fail(err)
			if redis.HasErrorPrefix(errors.Unwrap(err), "NOGROUP") {
				// Redis came back without its data (no persistence): recreate the group.
				if gerr := f.hints.EnsureGroup(ctx); gerr != nil {
					f.log.Debug("runs: recreating the consumer group failed", "err", gerr)
				}
			}
			f.slots.give(n)
			if !waitFor(ctx, outageBackoff(failures)) {
				return
			}
			continue
		}
		if err == nil {
			failures = 0
			fl.ok()
		}
		f.slots.dispatch(hints, n)
		if ctx.Err() != nil {
			return
		}
	}
}

// waitFor waits d or until ctx ends; it reports whether d passed.
func waitFor(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
