package main

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchboard-bot/switchboard/config"
	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/core/threads"
	"github.com/switchboard-bot/switchboard/internal/fake/modelserver"
	slackfake "github.com/switchboard-bot/switchboard/internal/fake/slack"
)

// installSlackTeam runs the OAuth install of team through the app's install link and callback.
func installSlackTeam(t *testing.T, e *slackE2E, base, team string) {
	t.Helper()
	resp, err := noFollow.Get(base + e.cfg.Slack.InstallPath)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	q := url.Values{"code": {e.sl.IssueCode(team)}, "state": {loc.Query().Get("state")}}
	if status := httpGet(t, base+e.cfg.Slack.OAuthPath+"?"+q.Encode()); status != 200 {
		t.Fatalf("install of %s: callback %d", team, status)
	}
}

// slackTeamDM sends a DM event of team in channel and returns the envelope id.
func slackTeamDM(e *slackE2E, team, channel, text string) string {
	cb := e.sl.Callback(map[string]any{"type": "message", "channel_type": "im", "channel": channel, "user": "U0" + team,
		"text": text, "ts": e.sl.NewTS(), "team": team})
	cb["team_id"] = team
	return e.sl.Send("events_api", cb)
}

// slackCallsInto returns the Web API calls made into channel, by the team whose token made them.
func slackCallsInto(e *slackE2E, channel string) map[string]int {
	n := map[string]int{}
	for _, c := range e.sl.Calls() {
		if c.Params["channel"] == channel || c.Params["channel_id"] == channel {
			n[c.Team]++
		}
	}
	return n
}

// TestSlackTwoWorkspacesThenUninstallOne proves issue 12's "OAuth install for two workspaces
// whose conversations never mix, then uninstall of one", end to end on the real Redis: two
// workspaces installed through OAuth are each answered with their own token, and a message in
// one never reaches the model with the other's history. Then app_uninstalled for the first,
// while it has a run in flight and another queued: both are cancelled (the queued one never
// reaches the model), its thread is forgotten, nothing more is posted into it with any token,
// its later events are dropped — and the second workspace is still answered.
func TestSlackTwoWorkspacesThenUninstallOne(t *testing.T) {
	t.Parallel()
	e := newSlackE2E(t, func(c *config.Config) {
		c.Slack.ClientID, c.Slack.ClientSecret = slackfake.ClientID, slackfake.ClientSecret
		c.Slack.RedirectURL = "https://bot.example.test/slack/oauth/callback"
		c.Runs.PlaceholderAfter = time.Minute
	})
	r := e.start()
	base := "http://" + r.listener.Addr().String()
	const alpha, beta = "T0ALPHA", "T0BETA"
	installSlackTeam(t, e, base, alpha)
	installSlackTeam(t, e, base, beta)

	held, release := make(chan struct{}, 4), make(chan struct{})
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	e.model.SetFunc(func(r modelserver.Request) modelserver.Reply {
		if strings.Contains(r.LastUserText(), "hold") {
			held <- struct{}{}
			<-release
		}
		return echoModel(r)
	})

	slackTeamDM(e, alpha, "D0A", "alpha: the password is pineapple")
	e.waitSlackAnswers("D0A", "", 1)
	slackTeamDM(e, beta, "D0B", "beta: hello")
	e.waitSlackAnswers("D0B", "", 1)
	slackTeamDM(e, beta, "D0B", "beta: what did I say?")
	got := e.waitSlackAnswers("D0B", "", 2)
	if !strings.Contains(slackVisible(got[1]), "echo: beta: what did I say?") {
		t.Fatalf("second answer in beta: %q", slackVisible(got[1]))
	}
	var asked bool
	for _, req := range e.model.Requests() {
		if req.LastUserText() != "beta: what did I say?" {
			continue
		}
		asked = true
		var history strings.Builder
		for _, m := range req.Messages {
			history.WriteString(m.Content + "\n")
		}
		if strings.Contains(history.String(), "pineapple") || !strings.Contains(history.String(), "beta: hello") {
			t.Errorf("beta's model request holds %q; want beta's own history and none of alpha's", history.String())
		}
	}
	if !asked {
		t.Fatal("the model never saw beta's second message")
	}
	for channel, team := range map[string]string{"D0A": alpha, "D0B": beta} {
		if n := slackCallsInto(e, channel); len(n) != 1 || n[team] == 0 {
			t.Errorf("calls into %s by team %v; want only %s's token", channel, n, team)
		}
	}

	// Alpha: one run in flight (held at the model), one queued behind it.
	ctx := context.Background()
	app := r.app
	alphaConv := conv.Key{Platform: "slack", Workspace: alpha, Chat: "D0A"}
	if _, err := app.core.threads.Conversations().Get(ctx, alphaConv.String()); err != nil {
		t.Fatalf("alpha's thread before the uninstall: %v", err)
	}
	slackTeamDM(e, alpha, "D0A", "alpha: hold on")
	<-held
	slackTeamDM(e, alpha, "D0A", "alpha: queued behind")
	waitFor(t, "alpha's second run queued", 10*time.Second, func() bool {
		d, err := app.core.queue.ConvDepth(ctx, alphaConv)
		return err == nil && d.Queued == 2
	})
	before := e.model.Count()

	env := e.sl.Send("events_api", map[string]any{"type": "event_callback", "team_id": alpha, "event_id": "EvAlphaGone",
		"event": map[string]any{"type": "app_uninstalled"}})
	waitFor(t, "the uninstall acked", 5*time.Second, func() bool { return e.sl.Acked(env) })
	waitFor(t, "alpha's pending work dropped", 10*time.Second, func() bool {
		return strings.Contains(e.logs.String(), "dropped an uninstalled workspace's pending work")
	})
	waitFor(t, "alpha's two runs cancelled", 10*time.Second, func() bool {
		s, err := app.core.queue.Stats(ctx)
		return err == nil && s.Cancelled == 2
	})
	if d, err := app.core.queue.ConvDepth(ctx, alphaConv); err != nil || d.Queued != 0 {
		t.Errorf("alpha's mailbox after the uninstall: %+v, %v", d, err)
	}
	if _, err := app.core.threads.Conversations().Get(ctx, alphaConv.String()); !errors.Is(err, threads.ErrThreadNotFound) {
		t.Errorf("alpha's thread after the uninstall: %v, want it forgotten", err)
	}
	rc := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer rc.Close()
	if n, _ := rc.Exists(ctx, e.cfg.Redis.Prefix+"slack:install:"+alpha).Result(); n != 0 {
		t.Error("alpha's token is still stored")
	}
	callsA := slackCallsInto(e, "D0A")
	releaseOnce.Do(func() { close(release) }) // the model answers the cancelled run's abandoned request

	// Alpha's events are dropped; beta is still answered, with its own token and history.
	dropped := slackTeamDM(e, alpha, "D0A", "alpha: anyone there?")
	slackTeamDM(e, beta, "D0B", "beta: still there?")
	got = e.waitSlackAnswers("D0B", "", 3)
	if !strings.Contains(slackVisible(got[2]), "echo: beta: still there?") {
		t.Fatalf("beta's answer after alpha's uninstall: %q", slackVisible(got[2]))
	}
	waitFor(t, "alpha's late event acked", 5*time.Second, func() bool { return e.sl.Acked(dropped) })
	if n := e.model.Count() - before; n != 1 {
		t.Errorf("the model got %d requests after the uninstall; want only beta's", n)
	}
	for _, req := range e.model.Requests() {
		if txt := req.LastUserText(); txt == "alpha: queued behind" || txt == "alpha: anyone there?" {
			t.Errorf("the model was asked %q after alpha uninstalled", txt)
		}
	}
	if n := slackCallsInto(e, "D0A"); n[alpha] != callsA[alpha] || len(n) != 1 {
		t.Errorf("calls into alpha's DM after the uninstall: %v, before %v; want none, with no token", n, callsA)
	}
	if n := slackCallsInto(e, "D0B"); len(n) != 1 || n[beta] == 0 {
		t.Errorf("calls into beta's DM by team %v", n)
	}
}
