package slack

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/conv"
	slackfake "github.com/switchboard-bot/switchboard/internal/fake/slack"
)

// dmIn is a DM of workspace as the router would receive it.
func dmIn(workspace, chat, text string) channels.Inbound {
	k := conv.Key{Platform: platform, Workspace: workspace, Chat: chat}
	return channels.Inbound{Conv: k, Text: text, Identity: conv.Identity{Platform: platform, ChannelUserID: workspace + ":U2"}}
}

// postsIn counts chat.postMessage calls into channel, by the team whose token made them.
func postsIn(fake *slackfake.Server, channel string) map[string]int {
	n := map[string]int{}
	for _, c := range fake.CallsOf("chat.postMessage") {
		if c.Params["channel"] == channel {
			n[c.Team]++
		}
	}
	return n
}

// TestConfiguredTokenServesOnlyItsOwnWorkspace proves that, with workspaces installing the app,
// the configured bot token carries only the calls of its own workspace (auth.test's team): a
// workspace that uninstalled the app, or never installed it, is refused — never answered with
// another workspace's token — and its events are dropped.
func TestConfiguredTokenServesOnlyItsOwnWorkspace(t *testing.T) {
	h := startOAuth(t, nil)
	ctx := context.Background()
	if status, _ := h.install(t, "T0SECOND"); status != 200 {
		t.Fatalf("install: %d", status)
	}
	two := channels.Target{Conv: conv.Key{Platform: platform, Workspace: "T0SECOND", Chat: "D2"}}
	if _, err := h.ch.Send(ctx, two, channels.Message{Text: "before"}); err != nil {
		t.Fatal(err)
	}
	env := h.fake.Send("events_api", map[string]any{"type": "event_callback", "team_id": "T0SECOND", "event_id": "EvGone",
		"event": map[string]any{"type": "app_uninstalled"}})
	eventually(t, "the uninstall acked", func() bool { return h.fake.Acked(env) })

	never := channels.Target{Conv: conv.Key{Platform: platform, Workspace: "T0NEVER", Chat: "D3"}}
	for name, to := range map[string]channels.Target{"uninstalled": two, "never installed": never} {
		_, err := h.ch.Send(ctx, to, channels.Message{Text: "after"})
		if !errors.Is(err, channels.ErrUnreachable) {
			t.Errorf("%s workspace: Send = %v, want ErrUnreachable", name, err)
		}
	}
	if n := postsIn(h.fake, "D2"); n["T0SECOND"] != 1 || len(n) != 1 {
		t.Errorf("posts into the uninstalled workspace by team %v; want its one post before the uninstall", n)
	}
	if n := postsIn(h.fake, "D3"); len(n) != 0 {
		t.Errorf("posts into a workspace that never installed the app, by team %v", n)
	}
	// The configured token's own workspace is served as before.
	if _, err := h.ch.Send(ctx, channels.Target{Conv: threadConv("")}, channels.Message{Text: "home"}); err != nil {
		t.Fatalf("the configured token's own workspace: %v", err)
	}
	if n := postsIn(h.fake, "C1"); n[slackfake.TeamID] != 1 {
		t.Errorf("posts into the home workspace by team %v", n)
	}
	// Events: the uninstalled and the unknown workspace's are dropped, the home one's handled.
	var envs []string
	for _, team := range []string{"T0SECOND", "T0NEVER", slackfake.TeamID} {
		cb := h.fake.Callback(map[string]any{"type": "message", "channel_type": "im", "channel": "D9", "user": "U2",
			"text": "from " + team, "ts": h.fake.NewTS(), "team": team})
		cb["team_id"] = team
		envs = append(envs, h.fake.Send("events_api", cb))
	}
	for _, env := range envs {
		eventually(t, "every event acked", func() bool { return h.fake.Acked(env) })
	}
	if got := h.rec.got(); len(got) != 1 || got[0].Conv.Workspace != slackfake.TeamID {
		t.Fatalf("handed over %+v; want only the home workspace's event", got)
	}
}

// TestUninstallIsSeenByEveryProcess proves the install store is the truth for every process
// sharing it: after one process handles app_uninstalled, another that cached the workspace's
// client stops using it within installRecheck — its sends are refused and its events of that
// workspace dropped — and a reinstall through the first process serves the workspace again in
// the second.
func TestUninstallIsSeenByEveryProcess(t *testing.T) {
	h := startOAuth(t, nil)
	ctx := context.Background()
	// A second process: same store, HTTP mode (so the fake's socket events all reach the first),
	// its clock moved by hand.
	var ahead atomic.Int64
	other, rec := startOther(t, h, &ahead)

	if status, _ := h.install(t, "T0SECOND"); status != 200 {
		t.Fatalf("install: %d", status)
	}
	two := channels.Target{Conv: conv.Key{Platform: platform, Workspace: "T0SECOND", Chat: "D2"}}
	if _, err := other.Send(ctx, two, channels.Message{Text: "cached"}); err != nil {
		t.Fatal(err)
	}
	env := h.fake.Send("events_api", map[string]any{"type": "event_callback", "team_id": "T0SECOND", "event_id": "EvGone",
		"event": map[string]any{"type": "app_uninstalled"}})
	eventually(t, "the uninstall acked", func() bool { return h.fake.Acked(env) })

	ahead.Store(int64(installRecheck))
	if _, err := other.Send(ctx, two, channels.Message{Text: "after"}); !errors.Is(err, channels.ErrUnreachable) {
		t.Fatalf("the other process's Send after the uninstall: %v, want ErrUnreachable", err)
	}
	if n := postsIn(h.fake, "D2"); n["T0SECOND"] != 1 || len(n) != 1 {
		t.Errorf("posts into the uninstalled workspace by team %v; want only the one before", n)
	}
	if err := other.dispatcher.deliver(ctx, delivery{in: dmIn("T0SECOND", "D2", "late")}); err != nil {
		t.Fatal(err)
	}
	if err := other.dispatcher.deliver(ctx, delivery{in: dmIn(slackfake.TeamID, "D1", "home")}); err != nil {
		t.Fatal(err)
	}
	if got := rec.got(); len(got) != 1 || got[0].Conv.Workspace != slackfake.TeamID {
		t.Fatalf("the other process handed over %+v; want only the home workspace's event", got)
	}

	// Reinstalled through the first process: the second serves it again.
	if status, _ := h.install(t, "T0SECOND"); status != 200 {
		t.Fatalf("reinstall: %d", status)
	}
	if err := other.dispatcher.deliver(ctx, delivery{in: dmIn("T0SECOND", "D2", "back")}); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Send(ctx, two, channels.Message{Text: "back"}); err != nil {
		t.Fatalf("Send after the reinstall: %v", err)
	}
	if got := rec.got(); len(got) != 2 || got[1].Text != "back" {
		t.Fatalf("after the reinstall the other process handed over %+v", got)
	}
	if n := postsIn(h.fake, "D2"); n["T0SECOND"] != 2 || len(n) != 1 {
		t.Errorf("posts into the reinstalled workspace by team %v", n)
	}
}

// failingInstallations is a store whose reads fail while down is set.
type failingInstallations struct {
	*MemoryInstallations
	down atomic.Bool
}

func (f *failingInstallations) Installation(ctx context.Context, team string) (Installation, bool, error) {
	if f.down.Load() {
		return Installation{}, false, errors.New("store unreachable")
	}
	return f.MemoryInstallations.Installation(ctx, team)
}

// TestInstallStoreOutageKeepsCachedWorkspaces proves a store that cannot be read when a cached
// workspace client is due for its re-check does not stop the workspace: the client last
// confirmed keeps serving it (a workspace never read before fails clearly), and once the store
// answers again an uninstall recorded there is seen.
func TestInstallStoreOutageKeepsCachedWorkspaces(t *testing.T) {
	fake := slackfake.New(t)
	store := &failingInstallations{MemoryInstallations: &MemoryInstallations{}}
	var ahead atomic.Int64
	ch, _ := newChannel(t, fake, func(c *Config) {
		c.Installations, c.ClientID, c.ClientSecret = store, slackfake.ClientID, slackfake.ClientSecret
		c.RedirectURL, c.StateKey, c.Mode = "https://bot.example.test/slack/oauth", testStateKey, ModeHTTP
	})
	ch.clock.Now = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	ctx := context.Background()
	if err := ch.Start(ctx, &recorder{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ch.Stop(context.Background()) })
	if err := store.SaveInstallation(ctx, Installation{Team: "T0SECOND", BotToken: fake.AddTeam("T0SECOND")}); err != nil {
		t.Fatal(err)
	}
	two := channels.Target{Conv: conv.Key{Platform: platform, Workspace: "T0SECOND", Chat: "D2"}}
	if _, err := ch.Send(ctx, two, channels.Message{Text: "first"}); err != nil {
		t.Fatal(err)
	}
	store.down.Store(true)
	ahead.Store(int64(installRecheck))
	if _, err := ch.Send(ctx, two, channels.Message{Text: "during the outage"}); err != nil {
		t.Fatalf("Send with the store down and the workspace cached: %v", err)
	}
	three := channels.Target{Conv: conv.Key{Platform: platform, Workspace: "T0THIRD", Chat: "D3"}}
	if _, err := ch.Send(ctx, three, channels.Message{Text: "never read"}); err == nil {
		t.Error("Send to a workspace never read, with the store down: no error")
	}
	if err := store.DeleteInstallation(ctx, "T0SECOND"); err != nil {
		t.Fatal(err)
	}
	store.down.Store(false)
	ahead.Store(int64(2 * installRecheck)) // the outage re-check counts as one: the next is due later
	if _, err := ch.Send(ctx, two, channels.Message{Text: "after"}); !errors.Is(err, channels.ErrUnreachable) {
		t.Fatalf("Send once the store answers that the workspace uninstalled: %v, want ErrUnreachable", err)
	}
	if n := postsIn(fake, "D2"); n["T0SECOND"] != 2 || len(n) != 1 {
		t.Errorf("posts into the workspace by team %v; want the two before the uninstall was read", n)
	}
}

// startOther starts a second process sharing h's install store: HTTP mode (so the fake's socket
// events all reach h's), its clock ahead of the real one by what ahead holds.
func startOther(t *testing.T, h *oauthHarness, ahead *atomic.Int64) (*Channel, *recorder) {
	t.Helper()
	other, _ := newChannel(t, h.fake, func(c *Config) {
		c.Installations, c.ClientID, c.ClientSecret = h.store, slackfake.ClientID, slackfake.ClientSecret
		c.RedirectURL, c.StateKey, c.Mode = "https://bot.example.test/slack/oauth", testStateKey, ModeHTTP
	})
	other.clock.Now = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	rec := &recorder{}
	if err := other.Start(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Stop(context.Background()) })
	return other, rec
}

// TestFixedTokenUninstallIsSeenByEveryProcess proves that when the configured bot token's own
// workspace uninstalls the app, every process sharing the install store stops using that token
// there within installRecheck, not only the process that got the event: its sends are refused
// and its events dropped. An OAuth install of that workspace serves it again everywhere (with
// its own token), and so does a process starting with a bot token auth.test accepts (it clears
// the mark).
func TestFixedTokenUninstallIsSeenByEveryProcess(t *testing.T) {
	h := startOAuth(t, nil)
	ctx := context.Background()
	var ahead atomic.Int64
	other, rec := startOther(t, h, &ahead)
	home := channels.Target{Conv: threadConv("")}
	homePosts := 0
	serving := func(when string) {
		t.Helper()
		if _, err := other.Send(ctx, home, channels.Message{Text: when}); err != nil {
			t.Fatalf("%s: the other process's Send: %v", when, err)
		}
		homePosts++
		if n := postsIn(h.fake, "C1"); n[slackfake.TeamID] != homePosts || len(n) != 1 {
			t.Fatalf("%s: posts into the home workspace by team %v; want %d", when, n, homePosts)
		}
		before := len(rec.got())
		if err := other.dispatcher.deliver(ctx, delivery{in: dmIn(slackfake.TeamID, "D1", when)}); err != nil {
			t.Fatal(err)
		}
		if got := rec.got(); len(got) != before+1 {
			t.Fatalf("%s: the other process dropped the home workspace's event", when)
		}
	}
	refused := func(when string) {
		t.Helper()
		if _, err := other.Send(ctx, home, channels.Message{Text: when}); !errors.Is(err, channels.ErrUnreachable) {
			t.Fatalf("%s: the other process's Send = %v, want ErrUnreachable", when, err)
		}
		if n := postsIn(h.fake, "C1"); n[slackfake.TeamID] != homePosts || len(n) != 1 {
			t.Fatalf("%s: posts into the home workspace by team %v; want only the %d before", when, n, homePosts)
		}
		before := len(rec.got())
		if err := other.dispatcher.deliver(ctx, delivery{in: dmIn(slackfake.TeamID, "D1", when)}); err != nil {
			t.Fatal(err)
		}
		if got := rec.got(); len(got) != before {
			t.Fatalf("%s: the other process handed over %+v", when, got[before:])
		}
	}
	uninstall := func(id string) {
		t.Helper()
		env := h.fake.Send("events_api", map[string]any{"type": "event_callback", "team_id": slackfake.TeamID, "event_id": id,
			"event": map[string]any{"type": "app_uninstalled"}})
		eventually(t, "the uninstall acked", func() bool { return h.fake.Acked(env) })
		ahead.Add(int64(installRecheck))
	}

	serving("before")
	uninstall("EvHomeGone")
	refused("after the uninstall")
	if inst, found, _ := h.store.Installation(ctx, slackfake.TeamID); !found || inst.BotToken != "" {
		t.Fatalf("the store holds %v (found %v) for the home workspace; want the uninstall's mark", inst, found)
	}

	// Installed again through OAuth: served again, with the install's token.
	if status, _ := h.install(t, slackfake.TeamID); status != 200 {
		t.Fatalf("reinstall: %d", status)
	}
	serving("after the OAuth reinstall")
	if inst, _, _ := h.store.Installation(ctx, slackfake.TeamID); inst.BotToken == "" || inst.BotToken == h.fake.BotToken() {
		t.Fatal("after the OAuth reinstall the store holds no install token of its own")
	}

	// Uninstalled again, then a process starts with a token auth.test accepts: the mark goes.
	uninstall("EvHomeGoneAgain")
	refused("after the second uninstall")
	startOther(t, h, &ahead)
	if _, found, _ := h.store.Installation(ctx, slackfake.TeamID); found {
		t.Fatal("a process started with an accepted bot token left the uninstall's mark")
	}
	serving("after a restart with an accepted token")
}

// uninstalls counts the ids OnUninstall is told of; safe for concurrent use.
type uninstalls struct {
	mu  sync.Mutex
	ids []string
}

func (u *uninstalls) add(id string) { u.mu.Lock(); u.ids = append(u.ids, id); u.mu.Unlock() }
func (u *uninstalls) got() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.ids...)
}

// TestUninstallRedeliveredPurgesOnce proves a redelivered app_uninstalled or tokens_revoked
// (the same event_id, retry_attempt 1, after an ack Slack did not get) is handled once:
// OnUninstall, which drops the workspace's pending work, is told once.
func TestUninstallRedeliveredPurgesOnce(t *testing.T) {
	for name, event := range map[string]map[string]any{
		"app_uninstalled": {"type": "app_uninstalled"},
		"tokens_revoked":  {"type": "tokens_revoked", "tokens": map[string]any{"bot": []string{slackfake.BotUserID}}},
	} {
		t.Run(name, func(t *testing.T) {
			var told uninstalls
			h := startOAuth(t, func(c *Config) { c.OnUninstall = told.add })
			if status, _ := h.install(t, "T0SECOND"); status != 200 {
				t.Fatalf("install: %d", status)
			}
			env := h.fake.Send("events_api", map[string]any{"type": "event_callback", "team_id": "T0SECOND",
				"event_id": "EvGone", "event": event})
			eventually(t, "the ack", func() bool { return h.fake.Acked(env) })
			again := h.fake.Redeliver(env, "timeout")
			eventually(t, "the redelivery's ack", func() bool { return h.fake.Acked(again) })
			if envs := h.fake.Envelopes(); len(envs) != 2 || envs[1].RetryAttempt != 1 || string(envs[1].Payload) != string(envs[0].Payload) {
				t.Fatalf("envelopes %+v, want the same payload again with retry_attempt 1", envs)
			}
			if got := told.got(); len(got) != 1 || got[0] != "T0SECOND" {
				t.Fatalf("OnUninstall told %v; want T0SECOND once", got)
			}
			// Another uninstall event (another event_id) is handled.
			env = h.fake.Send("events_api", map[string]any{"type": "event_callback", "team_id": "T0THIRD",
				"event_id": "EvGoneToo", "event": event})
			eventually(t, "the other event's ack", func() bool { return h.fake.Acked(env) })
			if got := told.got(); len(got) != 2 || got[1] != "T0THIRD" {
				t.Fatalf("OnUninstall told %v; want T0SECOND then T0THIRD", got)
			}
		})
	}
}

// brokenDeletes is a store whose deletes fail while down is set.
type brokenDeletes struct {
	*MemoryInstallations
	down atomic.Bool
}

func (b *brokenDeletes) DeleteInstallation(ctx context.Context, team string) error {
	if b.down.Load() {
		return errors.New("store unreachable")
	}
	return b.MemoryInstallations.DeleteInstallation(ctx, team)
}

// TestUninstallWithTheStoreDownIsRedelivered proves an uninstall whose install could not be
// deleted is not acknowledged and its id is given back: Slack's redelivery (the same
// event_id, retry_attempt 1) is handled again and deletes the install, and is acknowledged.
func TestUninstallWithTheStoreDownIsRedelivered(t *testing.T) {
	fake := slackfake.New(t)
	store := &brokenDeletes{MemoryInstallations: &MemoryInstallations{}}
	var told uninstalls
	h := startWith(t, fake, func(c *Config) {
		c.Installations, c.OnUninstall = store, told.add
	}, &recorder{})
	ctx := context.Background()
	if err := store.SaveInstallation(ctx, Installation{Team: "T0SECOND", BotToken: fake.AddTeam("T0SECOND")}); err != nil {
		t.Fatal(err)
	}
	store.down.Store(true)
	env := fake.Send("events_api", map[string]any{"type": "event_callback", "team_id": "T0SECOND",
		"event_id": "EvGone", "event": map[string]any{"type": "app_uninstalled"}})
	eventually(t, "the refusal", func() bool { return strings.Contains(h.logs.String(), "not acked, Slack will redeliver") })
	if fake.Acked(env) {
		t.Fatal("an uninstall the store could not record was acknowledged")
	}
	if _, found, _ := store.Installation(ctx, "T0SECOND"); !found {
		t.Fatal("the install is gone although its delete failed")
	}
	store.down.Store(false)
	again := fake.Redeliver(env, "timeout")
	eventually(t, "the redelivery's ack", func() bool { return fake.Acked(again) })
	if _, found, _ := store.Installation(ctx, "T0SECOND"); found {
		t.Fatal("the redelivery did not delete the install")
	}
	if got := told.got(); len(got) != 2 {
		t.Fatalf("OnUninstall told %v; want the failed handling and the redelivery's", got)
	}
}

// TestHTTPUninstallWithTheStoreDownIsRetried proves the same over HTTP: an uninstall whose
// install could not be deleted is answered 500 (Slack retries), the retry deletes it and is
// answered 200, and a further retry of the same event_id is not handled again.
func TestHTTPUninstallWithTheStoreDownIsRetried(t *testing.T) {
	fake := slackfake.New(t)
	store := &brokenDeletes{MemoryInstallations: &MemoryInstallations{}}
	var told uninstalls
	h := startWith(t, fake, func(c *Config) {
		c.Mode, c.AppToken, c.Installations, c.OnUninstall = ModeHTTP, "", store, told.add
	}, &recorder{})
	srv := httptest.NewServer(h.ch.EventsHandler())
	t.Cleanup(srv.Close)
	ctx := context.Background()
	if err := store.SaveInstallation(ctx, Installation{Team: "T0SECOND", BotToken: fake.AddTeam("T0SECOND")}); err != nil {
		t.Fatal(err)
	}
	gone := map[string]any{"type": "event_callback", "team_id": "T0SECOND", "event_id": "EvGone",
		"event": map[string]any{"type": "app_uninstalled"}}
	store.down.Store(true)
	if r, err := fake.DeliverEvent(srv.URL, gone, slackfake.Delivery{}); err != nil || r.Status != 500 {
		t.Fatalf("an uninstall the store could not record answered %d, %v; want 500", r.Status, err)
	}
	store.down.Store(false)
	for retry := 1; retry <= 2; retry++ {
		if r, err := fake.DeliverEvent(srv.URL, gone, slackfake.Delivery{RetryNum: retry, RetryReason: "http_error"}); err != nil || r.Status != 200 {
			t.Fatalf("retry %d answered %d, %v; want 200", retry, r.Status, err)
		}
	}
	if _, found, _ := store.Installation(ctx, "T0SECOND"); found {
		t.Fatal("the retry did not delete the install")
	}
	if got := told.got(); len(got) != 2 {
		t.Fatalf("OnUninstall told %v; want the failed handling and the first retry's", got)
	}
}

// orgUninstall is app_uninstalled as Slack sends it for an org-wide install: the enterprise,
// and an authorization marked is_enterprise_install (with no team).
func orgUninstall(enterprise, team, eventID string) map[string]any {
	return map[string]any{"type": "event_callback", "team_id": team, "enterprise_id": enterprise, "event_id": eventID,
		"authorizations": []map[string]any{{"enterprise_id": enterprise, "team_id": nil, "user_id": slackfake.BotUserID,
			"is_bot": true, "is_enterprise_install": true}},
		"event": map[string]any{"type": "app_uninstalled"}}
}

// TestOrgWideUninstallForgetsEveryTokenOfTheOrg proves app_uninstalled for an org-wide install
// (enterprise, is_enterprise_install) deletes every install stored under that enterprise — the
// org's own and its workspaces' — drops the clients cached for its workspaces and the events of
// every workspace of the org, while another workspace's install is kept and still served; and
// that installing again serves the org again.
func TestOrgWideUninstallForgetsEveryTokenOfTheOrg(t *testing.T) {
	h := startOAuth(t, func(c *Config) { c.BotToken = "" })
	ctx := context.Background()
	h.installCode(t, h.fake.IssueOrgCode("E0ORG"))
	h.installCode(t, h.fake.IssueGridCode("E0ORG", "T0GRID"))
	if status, _ := h.install(t, "T0ELSE"); status != 200 {
		t.Fatalf("install: %d", status)
	}
	// A workspace served by the org's token, so its client is cached.
	seven := conv.Key{Platform: "slack", Workspace: "E0ORG/T0SEVEN", Chat: "C7"}
	if _, err := h.ch.Send(ctx, channels.Target{Conv: seven}, channels.Message{Text: "hi org"}); err != nil {
		t.Fatal(err)
	}

	env := h.fake.Send("events_api", orgUninstall("E0ORG", "T0SEVEN", "EvOrgGone"))
	eventually(t, "the ack", func() bool { return h.fake.Acked(env) })
	for _, team := range []string{"E0ORG", "T0GRID"} {
		if _, found, _ := h.store.Installation(ctx, team); found {
			t.Errorf("the install of %s was kept after the org uninstalled", team)
		}
	}
	if _, found, _ := h.store.Installation(ctx, "T0ELSE"); !found {
		t.Error("another workspace's install was deleted")
	}
	if _, err := h.ch.Send(ctx, channels.Target{Conv: seven}, channels.Message{Text: "still there?"}); !errors.Is(err, channels.ErrUnreachable) {
		t.Errorf("Send in a workspace of the uninstalled org: %v, want ErrUnreachable (no cached token)", err)
	}
	msg := func(ent, team, text string) map[string]any {
		cb := h.fake.Callback(map[string]any{"type": "message", "channel_type": "im", "channel": "D1", "user": "U1",
			"text": text, "ts": h.fake.NewTS(), "team": team})
		cb["team_id"], cb["enterprise_id"] = team, ent
		return cb
	}
	dropped := h.fake.Send("events_api", msg("E0ORG", "T0GRID", "from the org"))
	h.fake.Send("events_api", msg("", "T0ELSE", "from elsewhere"))
	in := h.waitInbound(t, 1)
	eventually(t, "the dropped event acked", func() bool { return h.fake.Acked(dropped) })
	if got := h.rec.got(); len(got) != 1 || got[0].Conv.Workspace != "T0ELSE" {
		t.Fatalf("inbound %+v, want only the other workspace's", in)
	}

	h.installCode(t, h.fake.IssueOrgCode("E0ORG"))
	h.fake.Send("events_api", msg("E0ORG", "T0GRID", "back again"))
	if got := h.waitInbound(t, 2); got[1].Conv.Workspace != "E0ORG/T0GRID" {
		t.Fatalf("after reinstalling: %+v", got[1])
	}
}

// TestOrgWideEventDecoding proves what marks an event as an org-wide install's: the
// authorization's is_enterprise_install (naming the enterprise when the callback does not) or
// the callback's own; a workspace install in a grid is not one. An org event may carry no team.
func TestOrgWideEventDecoding(t *testing.T) {
	cases := []struct {
		name, body, want string
	}{
		{"authorization", `{"type":"event_callback","enterprise_id":"E1","team_id":"T1","event":{"type":"app_uninstalled"},"authorizations":[{"is_enterprise_install":true}]}`, "E1"},
		{"authorization names it", `{"type":"event_callback","enterprise_id":"","team_id":"T1","event":{"type":"app_uninstalled"},"authorizations":[{"enterprise_id":"E2","is_enterprise_install":true}]}`, "E2"},
		{"callback", `{"type":"event_callback","enterprise_id":"E3","is_enterprise_install":true,"event":{"type":"app_uninstalled"}}`, "E3"},
		{"workspace in a grid", `{"type":"event_callback","enterprise_id":"E4","team_id":"T4","event":{"type":"app_uninstalled"},"authorizations":[{"enterprise_id":"E4","is_enterprise_install":false}]}`, ""},
		{"plain workspace", `{"type":"event_callback","team_id":"T5","event":{"type":"app_uninstalled"}}`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cb, _, err := decodeCallback([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if got := cb.orgWide(); got != tc.want {
				t.Errorf("orgWide = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestTokensRevokedForTheBotStopsTheWorkspace proves tokens_revoked naming bot tokens stops
// work for that workspace as app_uninstalled does — its install deleted, OnUninstall told, its
// events dropped — while one naming only user tokens leaves it served, and another workspace is
// served throughout.
func TestTokensRevokedForTheBotStopsTheWorkspace(t *testing.T) {
	gone := make(chan string, 4)
	h := startOAuth(t, func(c *Config) {
		c.BotToken = "" // every workspace by its own install
		c.OnUninstall = func(team string) { gone <- team }
	})
	ctx := context.Background()
	for _, team := range []string{"T0REV", "T0OTHER"} {
		if status, _ := h.install(t, team); status != 200 {
			t.Fatalf("install %s: %d", team, status)
		}
	}
	// A call made with its token, so its client is cached.
	if _, err := h.ch.Send(ctx, channels.Target{Conv: conv.Key{Platform: "slack", Workspace: "T0REV", Chat: "D5"}},
		channels.Message{Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	dm := func(team, text string) string {
		cb := h.fake.Callback(map[string]any{"type": "message", "channel_type": "im", "channel": "D5", "user": "U5",
			"text": text, "ts": h.fake.NewTS(), "team": team})
		return h.fake.Send("events_api", cb)
	}
	revoked := func(tokens map[string]any) {
		env := h.fake.Send("events_api", h.fake.Callback(map[string]any{"type": "tokens_revoked", "team": "T0REV", "tokens": tokens}))
		eventually(t, "the ack", func() bool { return h.fake.Acked(env) })
	}

	revoked(map[string]any{"oauth": []string{"U5"}}) // a user's token: the bot keeps working
	dm("T0REV", "still served")
	if in := h.waitInbound(t, 1); in[0].Conv.Workspace != "T0REV" {
		t.Fatalf("inbound %+v", in[0])
	}
	if _, found, _ := h.store.Installation(ctx, "T0REV"); !found || len(gone) != 0 {
		t.Fatalf("user tokens revoked: install found %v, %d uninstalls; want kept", found, len(gone))
	}

	revoked(map[string]any{"oauth": []string{}, "bot": []string{slackfake.BotUserID}})
	if _, found, _ := h.store.Installation(ctx, "T0REV"); found {
		t.Error("the workspace's install was kept after its bot token was revoked")
	}
	if len(gone) != 1 || <-gone != "T0REV" {
		t.Error("OnUninstall was not told of the workspace")
	}
	dropped := dm("T0REV", "anyone?")
	eventually(t, "the dropped event acked", func() bool { return h.fake.Acked(dropped) })
	dm("T0OTHER", "the other workspace")
	got := h.waitInbound(t, 2)
	if len(got) != 2 || got[1].Conv.Workspace != "T0OTHER" {
		t.Fatalf("inbound %+v; want the revoked workspace's event dropped, the other's handed over", got)
	}
	if _, err := h.ch.Send(ctx, channels.Target{Conv: conv.Key{Platform: "slack", Workspace: "T0REV", Chat: "D5"}},
		channels.Message{Text: "x"}); !errors.Is(err, channels.ErrUnreachable) {
		t.Errorf("Send in the revoked workspace: %v, want ErrUnreachable (its cached token dropped)", err)
	}
}
