package discord

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/switchboard-bot/switchboard/channels/kit"
)

// Shards: which of the bot's shards this process runs. Each shard of the plan is held through
// a lease (Config.Lease, or one in memory when the process shares nothing), so that the
// processes of a deployment split the shards, a dead one's are taken over, and two processes
// never run one shard together.

// shards runs the shards of the plan this process holds, each a gateway (gateway.go) whose
// events go to the dispatcher; it reaches the channel's configuration, identify pacing and clocks
// through c, as its gateways do.
type shards struct {
	c *Channel

	mu  sync.Mutex
	gws []*gateway // per shard of the plan, the gateway while this process holds it
}

// plan makes room for the n shards of the plan (Start).
func (sh *shards) plan(n int) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.gws = make([]*gateway, n)
}

// shardPlan is the shards a process may run: ids out of count, all of them with AutoShard.
type shardPlan struct {
	url       string // the gateway URL, from GET /gateway/bot
	ids       []int
	count     int
	perBucket int // identifies per IdentifyInterval (max_concurrency with AutoShard, else 1)
}

// leaseName is shard id's lease: per bot, shard and shard count, so a deployment that changes
// its shard count does not mistake the old shards for the new ones.
func (sh *shards) leaseName(id, count int) string {
	return sh.c.cfg.LeaseName + ":" + strconv.Itoa(id) + "/" + strconv.Itoa(max(count, 1))
}

// run runs the plan's shards this process holds until ctx ends. firsts[i] receives the
// outcome of shard i's first connection in this process.
func (sh *shards) run(ctx context.Context, p shardPlan, firsts []chan error, onFirstRound func([]int)) {
	c := sh.c
	lease := c.cfg.Lease
	if lease == nil {
		lease = &kit.MemoryLease{}
	}
	names := make([]string, len(p.ids))
	for i, id := range p.ids {
		names[i] = sh.leaseName(id, p.count)
	}
	reported := make([]bool, len(p.ids)) // touched by the lead of shard i only, one at a time
	var census kit.Census                // nil: RunLeasedSet's default, the lease's own
	if cs, ok := lease.(kit.Census); ok && c.global != nil {
		census = sharingCensus{Census: cs, share: sh.shareGlobal}
	}
	kit.RunLeasedSet(ctx, kit.LeaseSetOptions{
		Lease:  lease,
		Census: census,
		Group:  c.cfg.LeaseName + ":" + strconv.Itoa(max(p.count, 1)),
		Names:  names,
		Owner:  c.cfg.LeaseOwner,
		TTL:    c.cfg.LeaseTTL,
		Logger: c.cfg.Logger,
		OnChange: func(i int, held bool) {
			if c.cfg.OnLease != nil {
				c.cfg.OnLease(p.ids[i], held)
			}
		},
		OnTakeover: func(i int) {
			if c.cfg.OnTakeover != nil {
				c.cfg.OnTakeover(p.ids[i])
			}
		},
		OnFirstRound: onFirstRound,
	}, func(ctx context.Context, i int) {
		first := make(chan error, 1)
		if !reported[i] {
			reported[i] = true
			first = firsts[i]
		}
		sh.runShard(ctx, i, p, first)
	})
}

// sharingCensus is the census of the processes sharing the shards (one bot's token), telling
// share each count it takes; a failed count tells nothing, so the last share stands.
type sharingCensus struct {
	kit.Census
	share func(processes int)
}

func (s sharingCensus) Attend(ctx context.Context, group, owner string, ttl time.Duration) (int, error) {
	n, err := s.Census.Attend(ctx, group, owner, ttl)
	if err == nil {
		s.share(n)
	}
	return n, err
}

// shareGlobal gives this process its share of the bot's global rate among the processes alive:
// ⌊GlobalRate / processes⌋ a second, at least 1, so that together they keep Discord's limit.
func (sh *shards) shareGlobal(processes int) {
	c := sh.c
	per := max(c.cfg.GlobalRate/max(processes, 1), 1)
	if was := c.global.setPer(per); was != per {
		c.cfg.Logger.Info("discord: the global rate limit is shared among the processes of the bot",
			"processes", max(processes, 1), "per_second", per, "was", was, "bot_limit", c.cfg.GlobalRate)
	}
}

// runShard runs shard i of p while ctx lives: it takes the shard's saved session (a takeover
// resumes it and Discord replays what the last holder missed), connects, saves the session every
// SessionSaveEvery (a holder that dies leaves one to resume) and once more when it stops. ready
// receives the first connection's outcome.
func (sh *shards) runShard(ctx context.Context, i int, p shardPlan, ready chan<- error) {
	c := sh.c
	g := &gateway{c: c, dialer: c.cfg.Dialer, baseURL: p.url, shardID: p.ids[i], shardCount: p.count}
	sh.loadSession(ctx, g) // without a session, the connection identifies (paced there)
	sh.mu.Lock()
	sh.gws[i] = g
	sh.mu.Unlock()
	defer func() {
		sh.mu.Lock()
		sh.gws[i] = nil
		sh.mu.Unlock()
	}()

	var saver sync.WaitGroup
	saveCtx, stopSaving := context.WithCancel(ctx)
	saver.Add(1)
	go func() {
		defer saver.Done()
		t := time.NewTicker(c.cfg.SessionSaveEvery)
		defer t.Stop()
		for {
			select {
			case <-saveCtx.Done():
				return
			case <-t.C:
				if err := sh.saveSession(saveCtx, g); err != nil && saveCtx.Err() == nil {
					c.cfg.Logger.Warn("discord: saving the gateway session failed; a takeover would identify afresh", "shard", g.shardID, "err", err)
				}
			}
		}
	}()
	g.run(ctx, ready)
	if g.fatalErr() != nil {
		// Reconnecting cannot cure it (Ready says why): keep the shard, so that no process
		// spends identifies on it, until this one stops.
		<-ctx.Done()
	}
	stopSaving()
	saver.Wait()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := sh.saveSession(sctx, g); err != nil {
		c.cfg.Logger.Warn("discord: saving the gateway session failed; the next holder identifies afresh", "shard", g.shardID, "err", err)
	}
}

// loadSession takes shard g's saved session, if any, into g; it reports whether there was one
// to resume.
func (sh *shards) loadSession(ctx context.Context, g *gateway) bool {
	c := sh.c
	if c.cfg.Sessions == nil {
		return false
	}
	saved, err := c.cfg.Sessions.LoadSession(ctx, g.shardID)
	if err != nil {
		c.cfg.Logger.Warn("discord: loading the saved gateway session failed; identifying afresh", "shard", g.shardID, "err", err)
		return false
	}
	if saved.ID == "" || saved.BotID == "" {
		return false
	}
	g.sessionID, g.resumeURL, g.seq = saved.ID, saved.ResumeURL, saved.Seq
	c.bot.set(saved.BotID, saved.AppID)
	c.bot.addRoles(saved.BotRoles...)
	return true
}

// saveSession keeps shard g's session for the next holder: the sequence number is that of the
// last event handed over with every earlier one, so what was not handed over is replayed.
func (sh *shards) saveSession(ctx context.Context, g *gateway) error {
	c := sh.c
	if c.cfg.Sessions == nil {
		return nil
	}
	id, resumeURL, _ := g.session()
	if id == "" || g.fatalErr() != nil {
		return nil
	}
	bot, app, roles := c.bot.saved()
	sess := Session{ID: id, ResumeURL: resumeURL, Seq: g.safeSeq(), BotID: bot, AppID: app, BotRoles: roles}
	if err := c.cfg.Sessions.SaveSession(ctx, g.shardID, sess); err != nil {
		return fmt.Errorf("discord: saving the session of shard %d: %w", g.shardID, err)
	}
	return nil
}

// held is the ids of the shards this process runs now.
func (sh *shards) held() []int {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	var ids []int
	for _, g := range sh.gws {
		if g != nil {
			ids = append(ids, g.shardID)
		}
	}
	return ids
}

// ready is Ready's word on the shards: the gateway connection of every shard this process
// holds is up (identified or resumed) and alive — its last inbound frame (a dispatch or a
// heartbeat ack) at most two heartbeat intervals and 10 s before now. A process holding none is
// ready: it delivers.
func (sh *shards) ready(now time.Time) error {
	// The gateways are copied under the lock: runShard sets and clears their places in sh.gws
	// while a shard changes hands. What is read of each then is safe without it: shardID never
	// changes, fatalErr takes the gateway's lock, the rest is atomic.
	sh.mu.Lock()
	gws := slices.Clone(sh.gws)
	sh.mu.Unlock()
	for _, g := range gws {
		if g == nil {
			continue // held by another process
		}
		if err := g.fatalErr(); err != nil {
			return fmt.Errorf("%w: shard %d: %w", ErrNotReady, g.shardID, err)
		}
		if !g.connected.Load() {
			return fmt.Errorf("%w: shard %d reconnecting", ErrNotReady, g.shardID)
		}
		if quiet, interval, dead := g.silence(now); dead {
			return fmt.Errorf("%w: shard %d: nothing received from the gateway for %s (heartbeat interval %s)",
				ErrNotReady, g.shardID, quiet.Round(time.Second), interval)
		}
	}
	return nil
}
