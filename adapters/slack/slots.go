package slack

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	slackgo "github.com/slack-go/slack"

	"github.com/switchboard-bot/switchboard/channels/kit"
)

// Slots: Slack allows an app at most MaxConnections Socket Mode connections, and spreads its
// events over all of them, so a socket nobody reads loses events. Each of the Connections slots
// is held through a lease (Config.Lease, or one in memory when the process shares nothing): the
// processes of a deployment together open at most Connections sockets, split the slots evenly,
// and take a dead process's slots over.

// startSockets starts taking the connection slots (runSlots) and returns once the first
// connection of each slot taken in the first round received its hello, or fails when one never
// did (a refused app token, an unreachable Slack) within CallTimeout. Until the intake stops,
// ctx ending stops the channel like Stop.
func (c *Channel) startSockets(ctx context.Context, at *slackgo.AuthTestResponse) error {
	readCtx, readCancel := context.WithCancel(context.WithoutCancel(ctx))
	connCtx, connCancel := context.WithCancel(context.WithoutCancel(ctx))
	stopOnDone := context.AfterFunc(ctx, func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.Stop(stopCtx)
	})
	c.mu.Lock()
	c.readCancel, c.connCancel, c.stopOnDone = readCancel, connCancel, stopOnDone
	c.mu.Unlock()
	firsts := make([]*connState, c.cfg.Connections)
	for i := range firsts {
		firsts[i] = newConnState(i)
	}
	round := make(chan []int, 1)
	c.loops.Add(1)
	go func() {
		defer c.loops.Done()
		c.runSlots(readCtx, connCtx, firsts, func(taken []int) { round <- taken })
	}()
	var taken []int
	select {
	case taken = <-round:
	case <-ctx.Done():
	}
	wait, cancelWait := context.WithTimeout(ctx, c.cfg.CallTimeout)
	defer cancelWait()
	for _, i := range taken {
		if err := firsts[i].connected(wait); err != nil {
			c.log.Error("slack: socket mode did not connect in time", "connection", firsts[i].id, "err", err)
			return fmt.Errorf("slack: start: socket mode connection %d: %w", firsts[i].id, err)
		}
	}
	if ctx.Err() != nil && taken == nil {
		return fmt.Errorf("slack: start: %w", ctx.Err())
	}
	if len(taken) == 0 {
		c.log.Info("slack: standing by: other processes hold every Socket Mode connection slot; delivering",
			"team", at.TeamID, "bot_user", at.UserID, "slots", c.cfg.Connections)
	} else {
		c.log.Info("slack: receiving over Socket Mode", "team", at.TeamID, "bot_user", at.UserID, "connections", len(taken), "slots", c.cfg.Connections)
	}
	return nil
}

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
