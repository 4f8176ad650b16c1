package runs

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// listenCancels is the canceller component: it receives the ids of cancelled runs over pub/sub
// and cancels the handler's context when this process runs one. A missed message is caught by
// the heartbeat's poll of the cancel flag.
func (p *Pool) listenCancels(ctx context.Context, ps *redis.PubSub) {
	defer func() { _ = ps.Close() }()
	ch := ps.Channel()
	for {
		select {
		case <-ctx.Done():
			return
		case m, ok := <-ch:
			if !ok {
				return
			}
			if p.held.cancelRun(m.Payload, errCancelled) {
				p.log.Info("runs: run cancelled", "run", m.Payload)
			}
		}
	}
}
