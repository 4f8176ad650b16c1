package runs

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchboard-bot/switchboard/core/runs/internal/rdb"
)

// fetchBlock is how long one XREADGROUP waits for hints; it bounds how long Shutdown waits for the
// fetcher to notice.
const fetchBlock = 500 * time.Millisecond

// fetch is the fetcher component: it reads hints from the ready stream for as many as this process
// has free slots (at most two per worker), so one read serves several workers under load.
//
// While Redis fails it backs off (outageBackoff) and logs the failure a few times, not per read.
func (p *Pool) fetch(ctx context.Context) {
	fl := newFailureLog(p.log, "fetcher", "runs: reading hints failed; retrying")
	failures := 0
	for {
		n, ok := p.takeSlots(ctx, true, p.opt.Workers)
		if !ok {
			return
		}
		hints, err := p.st.Hints().ReadHints(ctx, p.opt.Consumer, n, fetchBlock)
		if err != nil && ctx.Err() == nil {
			failures++
			fl.fail(err)
			if redis.HasErrorPrefix(errors.Unwrap(err), "NOGROUP") {
				// Redis came back without its data (no persistence): recreate the group.
				if gerr := p.st.Hints().EnsureGroup(ctx); gerr != nil {
					p.log.Debug("runs: recreating the consumer group failed", "err", gerr)
				}
			}
			p.returnSlots(n)
			if !waitFor(ctx, outageBackoff(failures)) {
				return
			}
			continue
		}
		if err == nil {
			failures = 0
			fl.ok()
		}
		p.dispatch(hints, n)
		if ctx.Err() != nil {
			return
		}
	}
}

// takeSlots takes at least one free slot (waiting for it when wait) and then other free ones, up
// to max. ok is false when ctx ended or, without wait, no slot was free. The fetcher takes at most
// Workers of the 2×Workers slots so that a blocked read never starves the recoverer.
func (p *Pool) takeSlots(ctx context.Context, wait bool, max int) (n int, ok bool) {
	if wait {
		select {
		case <-ctx.Done():
			return 0, false
		case <-p.slots:
		}
	} else {
		select {
		case <-p.slots:
		default:
			return 0, false
		}
	}
	n = 1
	for n < max {
		select {
		case <-p.slots:
			n++
		default:
			return n, true
		}
	}
	return n, true
}

func (p *Pool) returnSlots(n int) {
	for range n {
		p.slots <- struct{}{}
	}
}

// dispatch hands hints to the workers and returns the slots they did not use.
func (p *Pool) dispatch(hints []rdb.Hint, slots int) {
	for _, h := range hints {
		p.held.addHint(h.ID)
		p.work.put(h)
	}
	p.returnSlots(slots - len(hints))
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
