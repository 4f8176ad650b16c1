package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchboard-bot/switchboard/channels/kit"
	"github.com/switchboard-bot/switchboard/config"
)

// The tests of issue 14's "many processes, one Redis" for Slack's Socket Mode connection budget:
// each of the slack.connections slots is held through a lease in Redis
// (`intake:slack:<app id>:slot<i>`), so the processes of an app never open more sockets together
// than the budget, split the slots, and take a dead process's slots over within seconds.

// slotHolders reads who holds each of n slot leases.
func (e *slackE2E) slotHolders(rdb *redis.Client, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = rdb.Get(context.Background(), e.cfg.Redis.Prefix+"intake:slack:"+slackAppID(e.sl.AppToken())+":slot"+strconv.Itoa(i)).Val()
	}
	return out
}

func (r *running) slots() int64 { return r.leading["slack"].Load() }

// TestSlackSocketSlotsTakenOverAfterAKill proves two processes with slack.connections 2 open two
// sockets between them, never more, one each; that a process killed with SIGKILL loses its slot
// to the survivor once the lease expires, within two lease periods; and that every message, the
// one sent while the dead process's slot was free included, is answered once.
func TestSlackSocketSlotsTakenOverAfterAKill(t *testing.T) {
	t.Parallel()
	e := newSlackE2E(t, func(c *config.Config) {
		c.Slack.Connections = 2
		c.Runs.PlaceholderAfter = time.Minute
	})
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer rdb.Close()
	child := e.startChild(t, "BOT_SLACK__BOT_TOKEN="+e.sl.BotToken(), "BOT_SLACK__APP_TOKEN="+e.sl.AppToken(),
		"BOT_SLACK__API_URL="+e.sl.APIURL(), "BOT_SLACK__PACING=false", "BOT_SLACK__AGENT_VIEW=false", "BOT_SLACK__CONNECTIONS=2", "BOT_RUNS__PLACEHOLDER_AFTER=1m")
	waitFor(t, "the child to open both sockets", 30*time.Second, func() bool {
		h := e.slotHolders(rdb, 2)
		return h[0] != "" && h[0] == h[1] && e.sl.Connections() == 2
	})
	childID := e.slotHolders(rdb, 2)[0]
	survivor := e.start()
	waitFor(t, "one socket each", 15*time.Second, func() bool {
		h := e.slotHolders(rdb, 2)
		return survivor.slots() == 1 && e.sl.Connections() == 2 && h[0] != h[1] && (h[0] == childID || h[1] == childID)
	})
	for i := range 4 {
		e.sl.PushMessage(dm(fmt.Sprintf("message %d", i)))
	}
	e.waitSlackAnswers("D0ANN", "", 4)
	// Killed between an answer's post and the record of it, a process leaves a run whose replay
	// posts again (a window of the run queue, not of the slot lease): kill once every run is
	// settled.
	waitFor(t, "the runs settled", 10*time.Second, func() bool {
		d, err := survivor.core.queue.Depth(context.Background())
		return err == nil && d.Pending == 0 && e.sl.Unacked() == 0
	})

	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	_ = child.Wait()
	e.sl.PushMessage(dm("while the child's slot is free"))
	ttl := kit.DefaultLeaseTTL
	waitFor(t, "the survivor to hold both slots", 3*ttl, func() bool { return survivor.slots() == 2 && e.sl.Connections() == 2 })
	took := time.Since(killed)
	t.Logf("slot taken over %v after kill -9 (lease %v, census round %v)", took.Round(time.Millisecond), ttl, ttl/5)
	if took >= 2*ttl {
		t.Errorf("taken over %v after the kill, want within two lease periods (%v)", took, 2*ttl)
	}
	if took < ttl/2 {
		t.Errorf("taken over %v after the kill, before the dead process's lease could have expired", took)
	}
	e.sl.PushMessage(dm("after the takeover"))
	got := e.waitSlackAnswers("D0ANN", "", 6)
	for i, want := range []string{"echo: while the child's slot is free", "echo: after the takeover"} {
		if v := slackVisible(got[4+i]); !strings.Contains(v, want) {
			t.Errorf("answer %d shows %q, want %q", 4+i, v, want)
		}
	}
	if n := e.sl.PeakConnections(); n > 2 {
		t.Errorf("%d sockets were open at once, over slack.connections = 2", n)
	}
	if n := counter(survivor.metrics.leaseTakeovers, "slack"); n != 2 {
		t.Errorf("switchboard_intake_lease_takeovers_total{platform=slack} = %v, want 2 (the split, the takeover)", n)
	}
	if n := e.model.Count(); n != 6 {
		t.Errorf("the model was asked %d times for 6 messages", n)
	}
}

// TestSlackAppIDIsThePublicPartOfTheToken proves the slot leases are named by the app id of the
// app-level token, and never by its secret part.
func TestSlackAppIDIsThePublicPartOfTheToken(t *testing.T) {
	t.Parallel()
	cases := []struct{ token, want string }{
		{"xapp-1-A0FAKE-3333-fakeAPPtokenDoNotLog", "A0FAKE"},
		{"xapp-1-A012345ABCD-1234567890-0123456789abcdef", "A012345ABCD"},
	}
	for _, tc := range cases {
		if got := slackAppID(tc.token); got != tc.want {
			t.Errorf("slackAppID(%q) = %q, want %q", tc.token, got, tc.want)
		}
	}
	for _, odd := range []string{"", "xapp-1-A0FAKE", "xoxb-1-A0FAKE-2-secret", "xapp-1-secretsecret-2-3", "-----"} {
		got := slackAppID(odd)
		if !strings.HasPrefix(got, "h") || len(got) != 17 {
			t.Errorf("slackAppID(%q) = %q, want a hash", odd, got)
		}
	}
}

// FuzzSlackAppID: whatever the token, the lease name's app id is the token's third dash-separated
// field when that looks like an app id, and a hash otherwise — never the secret tail.
func FuzzSlackAppID(f *testing.F) {
	for _, s := range []string{"xapp-1-A0FAKE-3333-fakeAPPtokenDoNotLog", "", "xapp--A-1-2", "xapp-1-A" + strings.Repeat("x", 40) + "-1-s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, token string) {
		got := slackAppID(token)
		parts := strings.Split(token, "-")
		if len(parts) >= 4 && got == parts[2] {
			if !strings.HasPrefix(got, "A") || parts[0] != "xapp" || len(got) > 32 {
				t.Fatalf("slackAppID(%q) = %q, which is no app id", token, got)
			}
			return
		}
		if !strings.HasPrefix(got, "h") || len(got) != 17 {
			t.Fatalf("slackAppID(%q) = %q, want an app id or a hash", token, got)
		}
		if secret := parts[len(parts)-1]; len(secret) >= 8 && strings.Contains(got, secret) {
			t.Fatalf("slackAppID(%q) = %q holds the token's tail", token, got)
		}
	})
}
