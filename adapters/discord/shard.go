package discord

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/switchboard-bot/switchboard/channels/kit"
)

// Shards: which of the bot's shards this process runs. Each shard of the plan is held through
// a lease (Config.Lease, or one in memory when the process shares nothing), so that the
// processes of a deployment split the shards, a dead one's are taken over, and two processes
// never run one shard together.

// shardPlan is the shards a process may run: ids out of count, all of them with AutoShard.
type shardPlan struct {
	url       string // the gateway URL, from GET /gateway/bot
	ids       []int
	count     int
	perBucket int // identifies per IdentifyInterval (max_concurrency with AutoShard, else 1)
}

// leaseName is shard id's lease: per bot, shard and shard count, so a deployment that changes
// its shard count does not mistake the old shards for the new ones.
func (c *Channel) leaseName(id, count int) string {
	return c.cfg.LeaseName + ":" + strconv.Itoa(id) + "/" + strconv.Itoa(max(count, 1))
}

// runShards runs the plan's shards this process holds until ctx ends. firsts[i] receives the
// outcome of shard i's first connection in this process.
func (c *Channel) runShards(ctx context.Context, p shardPlan, firsts []chan error, onFirstRound func([]int)) {
	lease := c.cfg.Lease
	if lease == nil {
		lease = &kit.MemoryLease{}
	}
	names := make([]string, len(p.ids))
	for i, id := range p.ids {
		names[i] = c.leaseName(id, p.count)
	}
	reported := make([]bool, len(p.ids)) // touched by the lead of shard i only, one at a time
	var census kit.Census                // nil: RunLeasedSet's default, the lease's own
	if cs, ok := lease.(kit.Census); ok && c.global != nil {
		census = sharingCensus{Census: cs, share: c.shareGlobal}
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
		c.runShard(ctx, i, p, first)
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
func (c *Channel) shareGlobal(processes int) {
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
func (c *Channel) runShard(ctx context.Context, i int, p shardPlan, ready chan<- error) {
	g := &gateway{c: c, dialer: c.cfg.Dialer, baseURL: p.url, shardID: p.ids[i], shardCount: p.count}
	c.loadSession(ctx, g) // without a session, the connection identifies (paced there)
	c.mu.Lock()
	c.gws[i] = g
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.gws[i] = nil
		c.mu.Unlock()
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
				if err := c.saveSession(saveCtx, g); err != nil && saveCtx.Err() == nil {
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
	if err := c.saveSession(sctx, g); err != nil {
		c.cfg.Logger.Warn("discord: saving the gateway session failed; the next holder identifies afresh", "shard", g.shardID, "err", err)
	}
}

// loadSession takes shard g's saved session, if any, into g; it reports whether there was one
// to resume.
func (c *Channel) loadSession(ctx context.Context, g *gateway) bool {
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
func (c *Channel) saveSession(ctx context.Context, g *gateway) error {
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

// learnSelf asks who the bot is (GET users/@me), for a process that may hold no shard.
func (c *Channel) learnSelf(ctx context.Context) error {
	var u *discordgo.User
	err := c.rest.callWaiting(ctx, "GET users/@me", func(opts ...discordgo.RequestOption) error {
		var err error
		u, err = c.s.User("@me", opts...)
		return err
	})
	if err != nil {
		return fmt.Errorf("discord: users/@me: %w", err)
	}
	if u == nil || u.ID == "" {
		return errors.New("discord: users/@me gave no id")
	}
	c.bot.set(u.ID, "")
	return nil
}

// heldShards is the ids of the shards this process runs now.
func (c *Channel) heldShards() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ids []int
	for _, g := range c.gws {
		if g != nil {
			ids = append(ids, g.shardID)
		}
	}
	return ids
}
