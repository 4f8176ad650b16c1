package discord

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	discordfake "github.com/switchboard-bot/switchboard/internal/fake/discord"
	"github.com/switchboard-bot/switchboard/internal/poll"
)

func acceptedIdentifies(fk *discordfake.Server) int {
	n := 0
	for _, id := range fk.Identifies() {
		if id.Accepted {
			n++
		}
	}
	return n
}

func TestResumableDisconnectsReplayMissedEvents(t *testing.T) {
	cases := []struct {
		name string
		cut  func(fk *discordfake.Server) bool
	}{
		{"dropped connection (1006)", func(fk *discordfake.Server) bool { return fk.Drop() }},
		{"close 4000", func(fk *discordfake.Server) bool { return fk.CloseWith(4000, "Unknown error.") }},
		{"close 1001", func(fk *discordfake.Server) bool { return fk.CloseWith(1001, "going away") }},
		{"op 7 reconnect", func(fk *discordfake.Server) bool { return fk.Reconnect() }},
		{"op 9 resumable", func(fk *discordfake.Server) bool { return fk.InvalidSession(true) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil, nil)
			dm := h.fk.DM(alice.ID)
			h.fk.Post(discordfake.UserMessage{Channel: dm, Author: alice, Content: "one"})
			poll.Until(t, "the first message", func() bool { return h.rec.count() == 1 })
			if !tc.cut(h.fk) {
				t.Fatal("no connection to cut")
			}
			h.fk.Post(discordfake.UserMessage{Channel: dm, Author: alice, Content: "two"}) // missed, then replayed
			poll.Until(t, "the replayed message", func() bool { return h.rec.count() >= 2 })
			poll.Until(t, "the resumed connection", func() bool { return h.fk.Connected() && h.ch.Ready() == nil })
			h.fk.Post(discordfake.UserMessage{Channel: dm, Author: alice, Content: "three"})
			poll.Until(t, "the third message", func() bool { return h.rec.count() >= 3 })
			var texts []string
			for _, in := range h.rec.all() {
				texts = append(texts, in.Text)
			}
			if strings.Join(texts, ",") != "one,two,three" {
				t.Errorf("received %q", texts)
			}
			if n := acceptedIdentifies(h.fk); n != 1 {
				t.Errorf("%d identifies, want 1 (resumed)", n)
			}
			res := h.fk.Resumes()
			if len(res) == 0 || !res[len(res)-1].Accepted || res[len(res)-1].Path != "/resume/" {
				t.Errorf("resumes = %+v", res)
			}
		})
	}
}

func TestNonResumableDisconnectsIdentifyAgain(t *testing.T) {
	cases := []struct {
		name string
		cut  func(fk *discordfake.Server) bool
	}{
		{"close 4009 session timed out", func(fk *discordfake.Server) bool { return fk.CloseWith(4009, "Session timed out.") }},
		{"close 4007 invalid seq", func(fk *discordfake.Server) bool { return fk.CloseWith(4007, "Invalid seq.") }},
		{"op 9 not resumable", func(fk *discordfake.Server) bool { return fk.InvalidSession(false) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil, nil)
			dm := h.fk.DM(alice.ID)
			first := h.fk.SessionID()
			if !tc.cut(h.fk) {
				t.Fatal("no connection to cut")
			}
			poll.Until(t, "a new session", func() bool {
				return acceptedIdentifies(h.fk) == 2 && h.fk.Connected() && h.fk.SessionID() != first
			})
			h.fk.Post(discordfake.UserMessage{Channel: dm, Author: alice, Content: "after"})
			poll.Until(t, "the message on the new session", func() bool { return h.rec.count() == 1 })
			for _, r := range h.fk.Resumes() {
				if r.Accepted {
					t.Errorf("resumed a session Discord invalidated: %+v", r)
				}
			}
		})
	}
}

func TestFatalClosesStopTheGateway(t *testing.T) {
	cases := []struct {
		name string
		code int
		want error
	}{
		{"4004 authentication failed", 4004, channels.ErrUnauthorized},
		{"4014 disallowed intents", 4014, ErrIntentDisallowed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil, nil)
			h.fk.CloseWith(tc.code, "refused")
			poll.Until(t, "Ready to report the refusal", func() bool { return errors.Is(h.ch.Ready(), tc.want) })
			if n := len(h.fk.Identifies()); n != 1 {
				t.Errorf("%d identifies after a fatal close, want 1", n)
			}
		})
	}
}

func TestStartRefusals(t *testing.T) {
	t.Run("wrong token is ErrUnauthorized and never shown", func(t *testing.T) {
		fk := discordfake.New(t)
		logs := &syncBuffer{}
		cfg := testConfig(t, fk, logs)
		cfg.Token = "MTEx.wrong-token-secret-part.abcdefghijklmnop"
		ch, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		err = ch.Start(context.Background(), &recorder{})
		if !errors.Is(err, channels.ErrUnauthorized) {
			t.Fatalf("Start = %v", err)
		}
		if strings.Contains(err.Error(), "wrong-token") || strings.Contains(logs.String(), "wrong-token") ||
			strings.Contains(cfg.String(), "wrong-token") {
			t.Errorf("the token leaked: %v\n%s", err, logs.String())
		}
		_ = ch.Stop(context.Background())
	})
	t.Run("message content intent switched off names the portal switch", func(t *testing.T) {
		fk := discordfake.New(t)
		fk.AllowPrivilegedIntents(0)
		ch, err := New(testConfig(t, fk, &syncBuffer{}))
		if err != nil {
			t.Fatal(err)
		}
		err = ch.Start(context.Background(), &recorder{})
		if !errors.Is(err, ErrIntentDisallowed) || !strings.Contains(err.Error(), "Message Content Intent") {
			t.Fatalf("Start = %v", err)
		}
		_ = ch.Stop(context.Background())
	})
}

// TestStopIntakeWhileStartingEndsStart proves Start returns when StopIntake runs between the
// intake's Begin and its shards' start: no first round of shards comes then, and Start used to
// wait for one until its context ended. Start returns nil well before its deadline, no shard
// connects, and the channel stays stopped.
func TestStopIntakeWhileStartingEndsStart(t *testing.T) {
	fk := discordfake.New(t)
	ch, err := New(testConfig(t, fk, &syncBuffer{}))
	if err != nil {
		t.Fatal(err)
	}
	ch.intakeBegun = func() {
		if err := ch.StopIntake(context.Background()); err != nil {
			t.Errorf("StopIntake while starting: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ch.Start(ctx, &recorder{}); err != nil {
		t.Fatalf("Start with the intake stopped while starting = %v, want nil at once", err)
	}
	if ctx.Err() != nil {
		t.Fatal("Start returned only once its context ended")
	}
	if n := len(fk.Identifies()); n != 0 || fk.Connected() {
		t.Errorf("%d identifies, connected %v: a shard started after StopIntake", n, fk.Connected())
	}
	if err := ch.Ready(); !errors.Is(err, ErrNotReady) {
		t.Errorf("Ready after StopIntake while starting = %v, want ErrNotReady", err)
	}
	if err := ch.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
}

func TestReadyFollowsTheGateway(t *testing.T) {
	h := newHarness(t, nil, func(c *Config) { c.ReconnectMin = time.Second })
	if err := h.ch.Ready(); err != nil {
		t.Fatalf("Ready after start: %v", err)
	}
	h.fk.Drop()
	if err := h.ch.Ready(); err == nil {
		// The drop may not have been read yet: wait for it.
		poll.Until(t, "Ready to see the drop", func() bool { return h.ch.Ready() != nil })
	}
	poll.Until(t, "Ready again after the resume", func() bool { return h.ch.Ready() == nil })
	if err := h.ch.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(h.ch.Ready(), ErrNotReady) {
		t.Error("Ready after Stop")
	}
}

func TestHeartbeatsAreSent(t *testing.T) {
	fk := discordfake.New(t)
	fk.SetHeartbeatInterval(20 * time.Millisecond)
	h := newHarness(t, fk, nil)
	poll.Until(t, "heartbeats", func() bool { return h.fk.Heartbeats() >= 3 })
	if err := h.ch.Ready(); err != nil {
		t.Errorf("Ready: %v", err)
	}
}

func TestShardedIdentify(t *testing.T) {
	h := newHarness(t, nil, func(c *Config) { c.ShardID, c.ShardCount = 1, 3 })
	ids := h.fk.Identifies()
	if len(ids) != 1 || ids[0].Shard == nil || *ids[0].Shard != [2]int{1, 3} {
		t.Errorf("identifies = %+v", ids)
	}
	if _, err := New(Config{Token: "x", ShardID: 3, ShardCount: 3}); err == nil {
		t.Error("New accepted shard 3 of 3")
	}
}

func TestZombieConnectionIsResumed(t *testing.T) {
	fk := discordfake.New(t)
	fk.SetHeartbeatInterval(30 * time.Millisecond)
	h := newHarness(t, fk, nil)
	dm := fk.DM(alice.ID)
	fk.SilenceHeartbeatAcks(true)
	poll.Until(t, "a resume after unacknowledged heartbeats", func() bool { return len(fk.Resumes()) > 0 })
	fk.SilenceHeartbeatAcks(false)
	poll.Until(t, "the resumed session", func() bool { return fk.Connected() && h.ch.Ready() == nil })
	fk.Post(discordfake.UserMessage{Channel: dm, Author: alice, Content: "still there?"})
	poll.Until(t, "the message", func() bool { return h.rec.count() == 1 })
	if n := acceptedIdentifies(fk); n != 1 {
		t.Errorf("%d identifies, want 1", n)
	}
}

func TestAutoShardingRunsEveryRecommendedShard(t *testing.T) {
	fk := discordfake.New(t)
	fk.RecommendShards(2, 1)
	// Two guilds Discord routes to different shards.
	guilds := map[int]string{}
	for id := uint64(500); len(guilds) < 2; id++ {
		g := strconv.FormatUint(id<<22, 10)
		if _, ok := guilds[discordfake.ShardOf(g, 2)]; !ok {
			guilds[discordfake.ShardOf(g, 2)] = g
		}
	}
	h := newHarness(t, fk, func(c *Config) { c.AutoShard = true; c.IdentifyInterval = 20 * time.Millisecond })
	var shards []string
	for _, id := range fk.Identifies() {
		if id.Shard != nil {
			shards = append(shards, strconv.Itoa(id.Shard[0])+"/"+strconv.Itoa(id.Shard[1]))
		}
	}
	slices.Sort(shards)
	if strings.Join(shards, ",") != "0/2,1/2" {
		t.Fatalf("identified shards %v", shards)
	}
	for shard := range 2 {
		ch := fk.Guild(guilds[shard])
		fk.Post(discordfake.UserMessage{Channel: ch, Author: alice, Content: "on shard " + strconv.Itoa(shard), MentionBot: true})
	}
	fk.Post(discordfake.UserMessage{Channel: fk.DM(alice.ID), Author: alice, Content: "a DM"})
	poll.Until(t, "events of both shards", func() bool { return h.rec.count() == 3 })
	if err := h.ch.Ready(); err != nil {
		t.Errorf("Ready: %v", err)
	}
	if !fk.DropShard(1) {
		t.Fatal("no shard 1")
	}
	poll.Until(t, "shard 1 resumed", func() bool {
		for _, r := range fk.Resumes() {
			if r.Accepted {
				return fk.Connected()
			}
		}
		return false
	})
}

func TestRestartResumesTheSavedSession(t *testing.T) {
	fk := discordfake.New(t)
	store := &MemorySessions{}
	dm := fk.DM(alice.ID)
	first := newHarness(t, fk, func(c *Config) { c.Sessions = store })
	first.rec.setOn(func(ctx context.Context, _ channels.Channel, in channels.Inbound) error {
		if in.Text == "b" { // the router cannot take it before the process stops
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	})
	fk.Post(discordfake.UserMessage{Channel: dm, Author: alice, Content: "a"})
	poll.Until(t, "a", func() bool { return first.rec.count() == 1 })
	fk.Post(discordfake.UserMessage{Channel: dm, Author: alice, Content: "b"})
	poll.Until(t, "b in the handler", func() bool {
		sh := first.ch.shards
		sh.mu.Lock()
		g := sh.gws[0]
		sh.mu.Unlock()
		g.pmu.Lock()
		defer g.pmu.Unlock()
		return len(g.pending) == 1
	})
	if err := first.ch.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	fk.Post(discordfake.UserMessage{Channel: dm, Author: alice, Content: "c"}) // while no process is connected

	second := newHarness(t, fk, func(c *Config) { c.Sessions = store })
	poll.Until(t, "b and c replayed", func() bool { return second.rec.count() == 2 })
	var texts []string
	for _, in := range second.rec.all() {
		texts = append(texts, in.Text)
	}
	if strings.Join(texts, ",") != "b,c" {
		t.Errorf("the second process got %q, want b,c", texts)
	}
	if n := acceptedIdentifies(fk); n != 1 {
		t.Errorf("%d identifies, want 1 (the second process resumed)", n)
	}
	if second.ch.BotID() != discordfake.BotID {
		t.Errorf("bot id after a resumed start: %q", second.ch.BotID())
	}
}

func TestStopWithoutSessionStoreEndsTheSession(t *testing.T) {
	fk := discordfake.New(t)
	first := newHarness(t, fk, nil)
	if err := first.ch.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	second := newHarness(t, fk, func(c *Config) { c.Sessions = &MemorySessions{} })
	_ = second
	if n := acceptedIdentifies(fk); n != 2 {
		t.Errorf("%d identifies, want 2", n)
	}
}

func TestSessionStartLimitStopsIdentifying(t *testing.T) {
	fk := discordfake.New(t)
	fk.SetSessionStartsLeft(4) // the start and one reconnect; two kept for restarts
	h := newHarness(t, fk, nil)
	fk.CloseWith(4009, "Session timed out.") // second identify: allowed
	poll.Until(t, "the second session", func() bool { return acceptedIdentifies(fk) == 2 && fk.Connected() })
	fk.CloseWith(4009, "Session timed out.") // a third would eat into the reserve
	poll.Until(t, "Ready to report the limit", func() bool {
		err := h.ch.Ready()
		return err != nil && strings.Contains(err.Error(), "session start limit")
	})
	if n := len(fk.Identifies()); n != 2 {
		t.Errorf("%d identifies, want 2", n)
	}

	fk2 := discordfake.New(t)
	fk2.SetSessionStartsLeft(0)
	ch, err := New(testConfig(t, fk2, &syncBuffer{}))
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Start(context.Background(), &recorder{}); err == nil || !strings.Contains(err.Error(), "session start limit") {
		t.Errorf("Start with the limit spent = %v", err)
	}
	_ = ch.Stop(context.Background())
}
