// Package chantest holds what the adapters' tests and benchmarks share about a channels.Handler.
package chantest

import (
	"context"
	"sync/atomic"

	"github.com/switchboard-bot/switchboard/channels"
)

// Counter is a channels.Handler that counts the inbound messages it is handed and closes Done
// once want of them have arrived. Safe for concurrent use.
type Counter struct {
	n    atomic.Int64
	want int64
	done chan struct{}
}

// NewCounter returns a Counter whose Done closes at the want-th inbound message; want ≤ 0 only
// counts.
func NewCounter(want int) *Counter {
	return &Counter{want: int64(want), done: make(chan struct{})}
}

// HandleInbound implements channels.Handler.
func (c *Counter) HandleInbound(context.Context, channels.Channel, channels.Inbound) error {
	if c.n.Add(1) == c.want {
		close(c.done)
	}
	return nil
}

// Count is how many inbound messages arrived.
func (c *Counter) Count() int { return int(c.n.Load()) }

// Done is closed once the wanted number of messages arrived.
func (c *Counter) Done() <-chan struct{} { return c.done }
