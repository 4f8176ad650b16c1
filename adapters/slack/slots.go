package slack

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	slackgo "github.com/slack-go/slack"

	"github.com/switchboard-bot/switchboard/channels/kit"
)

// Slots: Slack allows an app at most MaxConnections Socket Mode connections, and spreads its
// events over all of them, so a socket nobody reads loses events. Each of the Connections slots
// is held through a lease (Config.Lease, or one in memory when the process shares nothing): the
// processes of a deployment together open at most Connections sockets, split the slots evenly,
// and take a dead process's slots over.

// sockets is Socket Mode's dispatcher: a connection per slot this process holds (runSlots), each
// read here (socket.go) and its envelopes handed to the dispatcher.
type sockets struct {
	cfg        *Config
	api        *slackgo.Client // apps.connections.open, with the app-level token
	web        *webAPI
	redact     *kit.Redactor
	log        *slog.Logger
	clock      *kit.Clock
	dispatcher *dispatcher
	// workers runs the sockets' loops: envelopes are taken while its context lives, and
	// StopIntake waits for the loops.
	workers *kit.Workers
	// pingTimeout is how long a socket may read nothing before it is replaced.
	pingTimeout time.Duration

	mu sync.Mutex
	// closeConns closes the sockets: after the intake's context, once the acks are sent.
	closeConns context.CancelFunc
	conns      []*connState // the sockets of the slots this process holds
}

// start starts taking the connection slots (runSlots) and returns once the first
// connection of each slot taken in the first round received its hello, or fails when one never
// did (a refused app token, an unreachable Slack) within CallTimeout. Once the intake ends
// (StopIntake, or the end of Start's ctx) the sockets close as soon as the envelopes being
// handed over are acknowledged (closeAfterIntake).
func (sk *sockets) start(ctx context.Context, at *slackgo.AuthTestResponse) error {
	// The sockets outlive the intake's context (the loops' own): once it ends no envelope is
	// taken, but the ones being handed over are still acknowledged on their sockets, which
	// close only then (close).
	connCtx, closeConns := context.WithCancel(context.WithoutCancel(ctx))
	sk.mu.Lock()
	sk.closeConns = closeConns
	sk.mu.Unlock()
	firsts := make([]*connState, sk.cfg.Connections)
	for i := range firsts {
		firsts[i] = newConnState(i)
	}
	round := make(chan []int, 1)
	// Both or neither: the sockets' loops and what closes them once the intake ended.
	if !sk.workers.Under(func(readCtx context.Context, wg *sync.WaitGroup) {
		wg.Go(func() { sk.runSlots(readCtx, connCtx, firsts, func(taken []int) { round <- taken }) })
		wg.Go(func() { sk.closeAfterIntake(readCtx, connCtx) })
	}) {
		closeConns() // stopped before the loops could start: no slot is taken
		sk.log.Info("slack: the intake was stopped while starting; not connecting", "team", at.TeamID)
		return nil
	}
	var taken []int
	select {
	case taken = <-round:
	case <-ctx.Done():
	}
	wait, cancelWait := context.WithTimeout(ctx, sk.cfg.CallTimeout)
	defer cancelWait()
	for _, i := range taken {
		if err := firsts[i].connected(wait); err != nil {
			sk.log.Error("slack: socket mode did not connect in time", "connection", firsts[i].id, "err", err)
			return fmt.Errorf("slack: start: socket mode connection %d: %w", firsts[i].id, err)
		}
	}
	if ctx.Err() != nil && taken == nil {
		return fmt.Errorf("slack: start: %w", ctx.Err())
	}
	if len(taken) == 0 {
		sk.log.Info("slack: standing by: other processes hold every Socket Mode connection slot; delivering",
			"team", at.TeamID, "bot_user", at.UserID, "slots", sk.cfg.Connections)
	} else {
		sk.log.Info("slack: receiving over Socket Mode", "team", at.TeamID, "bot_user", at.UserID, "connections", len(taken), "slots", sk.cfg.Connections)
	}
	return nil
}

// runSlots opens a socket for each slot this process holds, until connCtx ends; envelopes are
// taken while readCtx lives. firsts[i] is slot i's first connection in this process.
func (sk *sockets) runSlots(readCtx, connCtx context.Context, firsts []*connState, onFirstRound func([]int)) {
	lease := sk.cfg.Lease
	if lease == nil {
		lease = &kit.MemoryLease{}
	}
	names := make([]string, len(firsts))
	for i := range names {
		names[i] = sk.cfg.LeaseName + ":slot" + strconv.Itoa(i)
	}
	used := make([]bool, len(firsts)) // touched by the lead of slot i only, one at a time
	kit.RunLeasedSet(connCtx, kit.LeaseSetOptions{
		Lease: lease,
		// The slots are the app's, whatever Connections each process was given: processes
		// configured differently still share one budget.
		Group:  sk.cfg.LeaseName,
		Names:  names,
		Owner:  sk.cfg.LeaseOwner,
		TTL:    sk.cfg.LeaseTTL,
		Logger: sk.log,
		OnChange: func(i int, held bool) {
			if sk.cfg.OnLease != nil {
				sk.cfg.OnLease(i, held)
			}
		},
		OnTakeover: func(i int) {
			if sk.cfg.OnTakeover != nil {
				sk.cfg.OnTakeover(i)
			}
		},
		OnFirstRound: onFirstRound,
	}, func(ctx context.Context, i int) {
		cs := firsts[i]
		if used[i] {
			cs = newConnState(i)
		}
		used[i] = true
		sk.mu.Lock()
		sk.conns = append(sk.conns, cs)
		sk.mu.Unlock()
		defer func() {
			close(cs.ended)
			sk.mu.Lock()
			sk.conns = slices.DeleteFunc(sk.conns, func(x *connState) bool { return x == cs })
			sk.mu.Unlock()
		}()
		// Envelopes stop being taken when the channel stops or the slot is given up.
		rctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(readCtx, cancel)()
		sk.runSocket(rctx, ctx, cs)
	})
}

// held is how many connection slots this process holds now.
func (sk *sockets) held() int {
	sk.mu.Lock()
	defer sk.mu.Unlock()
	return len(sk.conns)
}

// ready is Ready's word on the sockets: every connection received a frame (an envelope, a hello
// or one of Slack's pings) within ReadyWindow. A process holding no connection slot (other
// processes hold them all) is ready: it delivers.
func (sk *sockets) ready() error {
	// Copied under the lock: runSlots appends to sk.conns and deletes from it in place (which
	// clears the tail) while a slot changes hands. What is read of each then is safe without
	// it: its id never changes, lastFrame is atomic.
	sk.mu.Lock()
	conns := slices.Clone(sk.conns)
	sk.mu.Unlock()
	now := sk.clock.Now()
	for _, cs := range conns {
		if err := cs.lastFrame.Silent(now, sk.cfg.ReadyWindow, ErrNotReady, fmt.Sprintf("connection %d", cs.id)); err != nil {
			return err
		}
	}
	return nil
}

// closeAfterIntake closes the sockets once the intake has ended — StopIntake, or the end of
// Start's ctx — and the envelopes being handed over were acknowledged on them; it gives up
// waiting for those when the sockets are closed first (StopIntake whose own ctx ended, Stop).
func (sk *sockets) closeAfterIntake(readCtx, connCtx context.Context) {
	<-readCtx.Done()
	sk.dispatcher.lanes.Wait(connCtx)
	sk.close()
}

// close closes the sockets, once their envelopes are acknowledged; their loops then end and
// hand their slots back (the channel's Workers wait for them).
func (sk *sockets) close() {
	sk.mu.Lock()
	closeConns := sk.closeConns
	sk.mu.Unlock()
	if closeConns != nil {
		closeConns()
	}
}
