package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/config"
	telegramfake "github.com/switchboard-bot/switchboard/internal/fake/telegram"
)

// TestTelegramIntakeFlatDuring429Storm proves issue 14's "outbound trouble never slows intake":
// while sendMessage meets a storm of 429s (retry_after 2 s, so answers wait seconds), messages
// are taken in as fast as before it; the storm is logged once (a line a minute at most), with
// its counts, not once per 429, and counted in switchboard_platform_rate_limited_total; every
// message is still answered once.
func TestTelegramIntakeFlatDuring429Storm(t *testing.T) {
	t.Parallel()
	e := newE2E(t, func(c *config.Config) { c.Runs.PlaceholderAfter = time.Minute })
	r := e.start()
	intake := func(u telegramfake.User, text string) time.Duration {
		t.Helper()
		before := counter(r.metrics.inbound, "telegram")
		began := time.Now()
		e.tg.PushPrivate(u, text)
		waitFor(t, "the update taken in", 10*time.Second, func() bool { return counter(r.metrics.inbound, "telegram") > before })
		return time.Since(began)
	}
	calmUsers, stormUsers := users(3, 7100), users(6, 7200)
	var calm, storm []time.Duration
	for _, u := range calmUsers {
		calm = append(calm, intake(u, "calm"))
		e.waitAnswers(u.ID, 1)
	}

	const limited = 12
	e.tg.RateLimitStorm("sendMessage", limited, 2)
	stormBegan := time.Now()
	for i, u := range stormUsers {
		storm = append(storm, intake(u, fmt.Sprintf("storm %d", i)))
	}
	for _, u := range stormUsers {
		e.waitAnswers(u.ID, 1)
	}
	answered := time.Since(stormBegan)
	slices.Sort(calm)
	slices.Sort(storm)
	t.Logf("intake latency: calm max %v; during the 429 storm median %v, max %v; the storm's answers took %v",
		calm[len(calm)-1].Round(time.Millisecond), storm[len(storm)/2].Round(time.Millisecond), storm[len(storm)-1].Round(time.Millisecond), answered.Round(time.Millisecond))
	// The answers waited out 12 × 2 s of retry_after between them; intake must not have.
	if worst, bound := storm[len(storm)-1], calm[len(calm)-1]+500*time.Millisecond; worst > bound {
		t.Errorf("an update took %v to be taken in during the storm, want about as long as before it (under %v)", worst, bound)
	}
	if answered < 2*time.Second {
		t.Errorf("the storm's answers took %v: the 429s were not met", answered)
	}
	if n := counter(r.metrics.rateLimited, "telegram", "retried"); n != limited {
		t.Errorf("switchboard_platform_rate_limited_total{platform=telegram,result=retried} = %v, want %d", n, limited)
	}
	if w := counter(r.metrics.rateLimitWait, "telegram"); w != 2*limited {
		t.Errorf("switchboard_platform_rate_limit_wait_seconds_total = %v, want %d", w, 2*limited)
	}
	logs := e.logs.String()
	if n := strings.Count(logs, "rate limited (one line a minute"); n != 1 {
		t.Errorf("the storm of %d 429s wrote %d log lines, want 1 (once a minute)", limited, n)
	}
	if n := e.tg.Count("sendMessage"); n != len(calmUsers)+len(stormUsers)+limited {
		t.Errorf("sendMessage called %d times, want one answer each plus the %d 429s", n, limited)
	}
}
