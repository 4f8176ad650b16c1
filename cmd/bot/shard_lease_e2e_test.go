package main

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchboard-bot/switchboard/channels/kit"
	"github.com/switchboard-bot/switchboard/config"
	"github.com/switchboard-bot/switchboard/core/intake"
	discordfake "github.com/switchboard-bot/switchboard/internal/fake/discord"
)

// The tests of issue 14's "many processes, one Redis" for Discord: every shard is held through a
// lease in Redis (`intake:discord:<bot id>:<shard>/<count>`), the processes split the shards, and
// a dead process's shard is taken over within seconds, resuming the session it saved, so that a
// message sent to that shard meanwhile is answered once.

// shardedDiscordE2E is a Discord setup with auto sharding over two recommended shards, and a
// guild on each.
func shardedDiscordE2E(t *testing.T) (*discordE2E, map[int]string) {
	t.Helper()
	e := newDiscordE2E(t, func(c *config.Config) {
		c.Discord.AutoShard = true
		c.Runs.PlaceholderAfter = time.Minute
	})
	e.dc.RecommendShards(2, 1)
	guilds := map[int]string{}
	for id := uint64(900); len(guilds) < 2; id++ {
		g := strconv.FormatUint(id<<22, 10)
		if _, ok := guilds[discordfake.ShardOf(g, 2)]; !ok {
			guilds[discordfake.ShardOf(g, 2)] = g
		}
	}
	return e, guilds
}

// shardHolders reads who holds each of the two shard leases.
func (e *discordE2E) shardHolders(rdb *redis.Client) [2]string {
	var out [2]string
	for i := range out {
		out[i] = rdb.Get(context.Background(), e.cfg.Redis.Prefix+"intake:discord:"+intake.DiscordBotID(e.dc.Token())+":"+strconv.Itoa(i)+"/2").Val()
	}
	return out
}

// shards is how many Discord shards r runs.
func (r *running) shards() int64 { return r.leading["discord"].Load() }

// TestDiscordShardsSplitAndHandedBackAtStop proves two processes with the same configuration
// split two shards, one each, each answering its guild once; a process that stops hands its
// shard back at once, and the other takes it over within a round, resuming the saved session
// (no new identify) so a message sent during the hand-over is answered once.
func TestDiscordShardsSplitAndHandedBackAtStop(t *testing.T) {
	t.Parallel()
	e, guilds := shardedDiscordE2E(t)
	a := e.start()
	waitFor(t, "a to run both shards", 10*time.Second, func() bool { return a.shards() == 2 })
	b := e.start()
	waitFor(t, "one shard each", 15*time.Second, func() bool { return a.shards() == 1 && b.shards() == 1 })
	var mids []string
	for shard := range 2 {
		mids = append(mids, e.dc.Post(discordfake.UserMessage{Channel: e.dc.Guild(guilds[shard]), Author: dAnn, Content: "shard " + strconv.Itoa(shard), MentionBot: true}))
	}
	for _, mid := range mids {
		e.waitAnswers(mid, 1)
	}
	if ia, ib := counter(a.metrics.inbound, "discord"), counter(b.metrics.inbound, "discord"); ia != 1 || ib != 1 {
		t.Errorf("inbound a=%v b=%v, want one message each (each process its own shard)", ia, ib)
	}
	if n := counter(b.metrics.leaseTakeovers, "discord"); n != 1 {
		t.Errorf("switchboard_intake_lease_takeovers_total{platform=discord} = %v on b, want 1 (the shard a handed over)", n)
	}
	identifies := acceptedDiscordIdentifies(e.dc)

	began := time.Now()
	a.stop()
	mid := e.dc.Post(discordfake.UserMessage{Channel: e.dc.Guild(guilds[0]), Author: dAnn, Content: "during the hand-over", MentionBot: true})
	mid2 := e.dc.Post(discordfake.UserMessage{Channel: e.dc.Guild(guilds[1]), Author: dAnn, Content: "during the hand-over too", MentionBot: true})
	waitFor(t, "b to run both shards", kit.DefaultLeaseTTL, func() bool { return b.shards() == 2 })
	took := time.Since(began)
	t.Logf("hand-over at stop: b runs both shards %v after the stop began", took.Round(time.Millisecond))
	if took > kit.DefaultLeaseTTL/2 {
		t.Errorf("b took the shard over %v after the stop, want within a round or two, not a lease expiry", took)
	}
	e.waitAnswers(mid, 1)
	e.waitAnswers(mid2, 1)
	if n := acceptedDiscordIdentifies(e.dc); n != identifies {
		t.Errorf("%d identifies after the hand-over, want %d: the shard must be resumed", n, identifies)
	}
}

// TestDiscordShardTakenOverAfterAKill proves a process killed with SIGKILL — no hand-back, no
// session saved at stop — loses its shard to the survivor once the lease expires, within two
// lease periods, and that the survivor resumes the session the dead process saved while it ran:
// a message sent to the dead process's shard while nobody ran it is replayed and answered once.
func TestDiscordShardTakenOverAfterAKill(t *testing.T) {
	t.Parallel()
	e, guilds := shardedDiscordE2E(t)
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer rdb.Close()
	child := e.startChild(t, "BOT_DISCORD__TOKEN="+e.dc.Token(), "BOT_DISCORD__API_URL="+e.dc.URL(), "BOT_DISCORD__AUTO_SHARD=true",
		"BOT_RUNS__PLACEHOLDER_AFTER=1m")
	waitFor(t, "the child to run both shards", 30*time.Second, func() bool {
		h := e.shardHolders(rdb)
		return h[0] != "" && h[0] == h[1]
	})
	childID := e.shardHolders(rdb)[0]
	survivor := e.start()
	waitFor(t, "one shard each, both connected", 15*time.Second, func() bool { return survivor.shards() == 1 && e.dc.Connected() })
	h := e.shardHolders(rdb)
	dead := 0
	if h[1] == childID {
		dead = 1
	}
	if h[dead] != childID || h[1-dead] == childID {
		t.Fatalf("holders %q after the split, want the child on one shard", h)
	}
	first := e.dc.Post(discordfake.UserMessage{Channel: e.dc.Guild(guilds[dead]), Author: dAnn, Content: "before the kill", MentionBot: true})
	e.waitAnswers(first, 1)
	// Killed between an answer's post and the record of it, a process leaves a run whose replay
	// posts again (a window of the run queue, not of the shard lease): kill once it is settled,
	// and once the child has saved its shard's session (every 3 s while it runs the shard).
	sessionKey := e.cfg.Redis.Prefix + "discord:session:" + intake.DiscordBotID(e.dc.Token()) + ":" + strconv.Itoa(dead)
	waitFor(t, "the first run settled and the child's session saved", 10*time.Second, func() bool {
		d, err := survivor.core.queue.Depth(context.Background())
		return err == nil && d.Pending == 0 && rdb.Exists(context.Background(), sessionKey).Val() == 1
	})
	resumesBefore := len(e.dc.Resumes())

	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	_ = child.Wait()
	mid := e.dc.Post(discordfake.UserMessage{Channel: e.dc.Guild(guilds[dead]), Author: dAnn, Content: "while nobody runs the shard", MentionBot: true})
	ttl := kit.DefaultLeaseTTL
	waitFor(t, "the survivor to run both shards", 3*ttl, func() bool { return survivor.shards() == 2 })
	took := time.Since(killed)
	t.Logf("shard %d taken over %v after kill -9 (lease %v, census round %v)", dead, took.Round(time.Millisecond), ttl, ttl/5)
	if took >= 2*ttl {
		t.Errorf("taken over %v after the kill, want within two lease periods (%v)", took, 2*ttl)
	}
	if took < ttl/2 {
		t.Errorf("taken over %v after the kill, before the dead process's lease could have expired", took)
	}
	got := e.waitAnswers(mid, 1)
	if !strings.Contains(got[0].Text(), "echo: while nobody runs the shard") {
		t.Errorf("answer %q", got[0].Text())
	}
	res := e.dc.Resumes()[resumesBefore:]
	resumed := false
	for _, r := range res {
		resumed = resumed || (r.Accepted && r.Replayed > 0)
	}
	if !resumed {
		t.Errorf("the survivor did not resume the dead process's session with a replay: %+v", res)
	}
	if n := counter(survivor.metrics.leaseTakeovers, "discord"); n != 2 {
		t.Errorf("switchboard_intake_lease_takeovers_total{platform=discord} = %v, want 2 (the split, the takeover)", n)
	}
	// Answered once: one closing message in each thread, the model asked once per message.
	e.waitAnswers(first, 1)
	if n := e.model.Count(); n != 2 {
		t.Errorf("the model was asked %d times for 2 messages", n)
	}
}
