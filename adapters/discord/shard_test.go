package discord

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels/kit"
	"github.com/switchboard-bot/switchboard/internal/chantest"
	discordfake "github.com/switchboard-bot/switchboard/internal/fake/discord"
	"github.com/switchboard-bot/switchboard/internal/leasetest"
	"github.com/switchboard-bot/switchboard/internal/poll"
)

// The tests of issue 14's "many processes, one Redis" for Discord's shards, in process: two
// Channels on one lease and one session store split the shards, and a dead one's shard is taken
// over and resumed.

// shardGuilds returns a guild of each of n shards.
func shardGuilds(n int) map[int]string {
	guilds := map[int]string{}
	for id := uint64(500); len(guilds) < n; id++ {
		g := strconv.FormatUint(id<<22, 10)
		if _, ok := guilds[discordfake.ShardOf(g, n)]; !ok {
			guilds[discordfake.ShardOf(g, n)] = g
		}
	}
	return guilds
}

func sharedShards(lease kit.Lease, store SessionStore, owner string) func(*Config) {
	return func(c *Config) {
		c.AutoShard, c.IdentifyInterval = true, 20*time.Millisecond
		c.Lease, c.LeaseOwner, c.LeaseTTL, c.Sessions = lease, owner, 600*time.Millisecond, store
		c.SessionSaveEvery = 50 * time.Millisecond
	}
}

// TestTwoProcessesSplitTheShards proves two processes with the same configuration split the
// bot's two shards, one each, every guild's events reaching the process of its shard once, and
// a process holding no shard of its own would still be ready.
func TestTwoProcessesSplitTheShards(t *testing.T) {
	fk := discordfake.New(t)
	fk.RecommendShards(2, 1)
	guilds := shardGuilds(2)
	mem, store := &kit.MemoryLease{}, &MemorySessions{}
	a := newHarness(t, fk, sharedShards(mem, store, "a"))
	poll.Until(t, "a to run both shards", func() bool { return len(a.ch.shards.held()) == 2 })
	b := newHarness(t, fk, sharedShards(mem, store, "b"))
	poll.Until(t, "one shard each", func() bool { return len(a.ch.shards.held()) == 1 && len(b.ch.shards.held()) == 1 })
	poll.Until(t, "both connected", func() bool { return a.ch.Ready() == nil && b.ch.Ready() == nil })
	for shard := range 2 {
		fk.Post(discordfake.UserMessage{Channel: fk.Guild(guilds[shard]), Author: alice, Content: "on shard " + strconv.Itoa(shard), MentionBot: true})
	}
	poll.Until(t, "both messages", func() bool { return a.rec.count()+b.rec.count() == 2 })
	for _, h := range []*harness{a, b} {
		want := "on shard " + strconv.Itoa(h.ch.shards.held()[0])
		if got := h.rec.all(); len(got) != 1 || got[0].Text != want {
			t.Errorf("the process of shard %v got %+v, want only %q", h.ch.shards.held(), got, want)
		}
	}
	// The hand-over resumed the session a saved rather than identifying again.
	if n := acceptedIdentifies(fk); n != 2 {
		t.Errorf("%d identifies, want 2 (one per shard; the handed-over shard resumed)", n)
	}
}

// TestDeadProcessShardTakenOverAndResumed proves a process cut off without handing back loses
// its shard to the other once the lease expires, and that the other resumes the session the
// dead one saved, so a message sent to that shard while nobody ran it is replayed and handed
// over once.
func TestDeadProcessShardTakenOverAndResumed(t *testing.T) {
	fk := discordfake.New(t)
	fk.RecommendShards(2, 1)
	guilds := shardGuilds(2)
	mem, store := &kit.MemoryLease{}, &MemorySessions{}
	dying := &leasetest.Severable{M: mem}
	a := newHarness(t, fk, sharedShards(dying, store, "a"))
	poll.Until(t, "a to run both shards", func() bool { return len(a.ch.shards.held()) == 2 })
	b := newHarness(t, fk, sharedShards(mem, store, "b"))
	poll.Until(t, "one shard each", func() bool { return len(a.ch.shards.held()) == 1 && len(b.ch.shards.held()) == 1 })
	lost := a.ch.shards.held()[0]

	cut := time.Now()
	dying.Sever()
	poll.Until(t, "a to stop its shard (its renewal failed)", func() bool { return len(a.ch.shards.held()) == 0 })
	fk.Post(discordfake.UserMessage{Channel: fk.Guild(guilds[lost]), Author: alice, Content: "while nobody runs it", MentionBot: true})
	poll.Until(t, "b to run both shards", func() bool { return len(b.ch.shards.held()) == 2 })
	took := time.Since(cut)
	poll.Until(t, "the missed message replayed to b", func() bool { return b.rec.count() == 1 })
	t.Logf("shard %d taken over %v after the cut (lease %v)", lost, took.Round(time.Millisecond), 600*time.Millisecond)
	if a.rec.count() != 0 {
		t.Errorf("the dead process handed over %d messages", a.rec.count())
	}
	replayed := false
	for _, r := range fk.Resumes() {
		replayed = replayed || (r.Accepted && r.Replayed > 0)
	}
	if !replayed {
		t.Errorf("no resume replayed the missed message: %+v", fk.Resumes())
	}
	fk.Post(discordfake.UserMessage{Channel: fk.Guild(guilds[lost]), Author: alice, Content: "after", MentionBot: true})
	poll.Until(t, "the next message", func() bool { return b.rec.count() == 2 })
	if got := b.rec.all(); got[0].Text != "while nobody runs it" || got[1].Text != "after" {
		t.Errorf("b got %q then %q", got[0].Text, got[1].Text)
	}
}

// TestStandbyProcessIsReady proves a process that holds no shard (one shard, held by another)
// still starts, knows the bot's id for delivery, and is ready.
func TestStandbyProcessIsReady(t *testing.T) {
	fk := discordfake.New(t)
	mem := &kit.MemoryLease{}
	a := newHarness(t, fk, func(c *Config) { c.Lease, c.LeaseOwner, c.LeaseTTL = mem, "a", 600*time.Millisecond })
	b := newHarness(t, fk, func(c *Config) { c.Lease, c.LeaseOwner, c.LeaseTTL = mem, "b", 600*time.Millisecond })
	if len(a.ch.shards.held()) != 1 || len(b.ch.shards.held()) != 0 {
		t.Fatalf("a runs %v, b runs %v; want a the one shard", a.ch.shards.held(), b.ch.shards.held())
	}
	if err := b.ch.Ready(); err != nil {
		t.Errorf("the standby is not ready: %v", err)
	}
	if b.ch.BotID() != discordfake.BotID {
		t.Errorf("the standby's bot id is %q", b.ch.BotID())
	}
}

// TestReadyWhileShardsChangeHands proves Ready reads the shards a process holds safely while
// they change hands: Ready is asked without pause on both processes while, three times, a hands
// a shard over to a new process b and takes it back when b stops. Run with -race, a read of a
// shard's place outside the lock it is written under fails the test.
func TestReadyWhileShardsChangeHands(t *testing.T) {
	fk := discordfake.New(t)
	fk.RecommendShards(2, 1)
	mem, store := &kit.MemoryLease{}, &MemorySessions{}
	a := newHarness(t, fk, sharedShards(mem, store, "a"))
	poll.Until(t, "a to run both shards", func() bool { return len(a.ch.shards.held()) == 2 })
	chantest.AskReady(t, a.ch)
	for round := range 3 {
		b := newHarness(t, fk, sharedShards(mem, store, "b"+strconv.Itoa(round)))
		chantest.AskReady(t, b.ch)
		poll.Until(t, "one shard each", func() bool { return len(a.ch.shards.held()) == 1 && len(b.ch.shards.held()) == 1 })
		if err := b.ch.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		poll.Until(t, "a to run both shards again", func() bool { return len(a.ch.shards.held()) == 2 })
	}
}
