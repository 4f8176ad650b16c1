package runs

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// canceller is the canceller component: it receives the ids of cancelled runs over pub/sub
// and cancels the handler's context when this process runs one. A missed message is caught by
// the heartbeat's poll of the cancel flag.
//
// It reads the subscription itself rather than through PubSub.Channel, whose reader retries a
// lost connection every 100 ms for as long as Redis is down: here a lost connection is retried
// with the outage backoff (go-redis reconnects and subscribes again on the next read), and the
// failures are logged a few times. A read that sees nothing for a lease sends a PING, so a dead
// connection is found. Its context ending closes the subscription, which ends a read in flight.
type canceller struct {
	lease time.Duration
	held  *heldSet
	log   *slog.Logger
	stop  context.CancelFunc
}

// start listens on ps, which the canceller then owns, in a goroutine of wg until shutdown.
func (c *canceller) start(ctx context.Context, ps *redis.PubSub, wg *sync.WaitGroup) {
	ctx, c.stop = context.WithCancel(ctx)
	wg.Go(func() { c.listen(ctx, ps) })
}

// shutdown stops the canceller and closes its subscription; wait on start's group for it.
func (c *canceller) shutdown() { c.stop() }

func (c *canceller) listen(ctx context.Context, ps *redis.PubSub) {
	closed := make(chan struct{})
	stop := context.AfterFunc(ctx, func() { _ = ps.Close(); close(closed) })
	defer func() {
		if stop() {
			_ = ps.Close()
		} else {
			<-closed
		}
	}()
	fl := newFailureLog(c.log, "canceller", "runs: listening for cancels failed; retrying")
	failures := 0
	for ctx.Err() == nil {
		msg, err := ps.ReceiveTimeout(ctx, c.lease)
		if err != nil && isTimeout(err) {
			err = ps.Ping(ctx) // quiet for a lease: make sure the connection still works
		}
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, redis.ErrClosed) {
				return
			}
			failures++
			fl.fail(err)
			if !waitFor(ctx, outageBackoff(failures)) {
				return
			}
			continue
		}
		failures = 0
		fl.ok()
		if m, ok := msg.(*redis.Message); ok && c.held.cancelRun(m.Payload, errCancelled) {
			c.log.Info("runs: run cancelled", "run", m.Payload)
		}
	}
}

// isTimeout reports whether err is a read that timed out with the connection intact.
func isTimeout(err error) bool {
	var ne interface{ Timeout() bool }
	return errors.As(err, &ne) && ne.Timeout() && !errors.Is(err, context.DeadlineExceeded)
}
