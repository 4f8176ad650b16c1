package slack

import (
	"context"
	"slices"
	"strconv"

	"github.com/switchboard-bot/switchboard/channels/kit"
)

// Slots: Slack allows an app at most MaxConnections Socket Mode connections, and spreads its
// events over all of them, so a socket nobody reads loses events. Each of the Connections slots
// is held through a lease (Config.Lease, or one in memory when the process shares nothing): the
// processes of a deployment together open at most Connections sockets, split the slots evenly,
// and take a dead process's slots over.

// runSlots opens a socket for each slot this process holds, until connCtx ends; envelopes are
// taken while readCtx lives. firsts[i] is slot i's first connection in this process.
func (c *Channel) runSlots(readCtx, connCtx context.Context, firsts []*connState, onFirstRound func([]int)) {
	lease := c.cfg.Lease
	if lease == nil {
		lease = &kit.MemoryLease{}
	}
	names := make([]string, len(firsts))
	for i := range names {
		names[i] = c.cfg.LeaseName + ":slot" + strconv.Itoa(i)
	}
	used := make([]bool, len(firsts)) // touched by the lead of slot i only, one at a time
	kit.RunLeasedSet(connCtx, kit.LeaseSetOptions{
		Lease: lease,
		// The slots are the app's, whatever Connections each process was given: processes
		// configured differently still share one budget.
		Group:  c.cfg.LeaseName,
		Names:  names,
		Owner:  c.cfg.LeaseOwner,
		TTL:    c.cfg.LeaseTTL,
		Logger: c.log,
		OnChange: func(i int, held bool) {
			if c.cfg.OnLease != nil {
				c.cfg.OnLease(i, held)
			}
		},
		OnTakeover: func(i int) {
			if c.cfg.OnTakeover != nil {
				c.cfg.OnTakeover(i)
			}
		},
		OnFirstRound: onFirstRound,
	}, func(ctx context.Context, i int) {
		cs := firsts[i]
		if used[i] {
			cs = newConnState(i)
		}
		used[i] = true
		c.mu.Lock()
		c.conns = append(c.conns, cs)
		c.mu.Unlock()
		defer func() {
			close(cs.ended)
			c.mu.Lock()
			c.conns = slices.DeleteFunc(c.conns, func(x *connState) bool { return x == cs })
			c.mu.Unlock()
		}()
		// Envelopes stop being taken when the channel stops or the slot is given up.
		rctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(readCtx, cancel)()
		c.runSocket(rctx, ctx, cs)
	})
}

// heldSlots is how many connection slots this process holds now.
func (c *Channel) heldSlots() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.conns)
}
