package slack

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/conv"
	slackfake "github.com/switchboard-bot/switchboard/internal/fake/slack"
)

var testStateKey = []byte("state-key-0123456789abcdef0123456789")

type oauthHarness struct {
	*harness
	store *MemoryInstallations
	srv   *httptest.Server
}

func startOAuth(t *testing.T, mutate func(*Config)) *oauthHarness {
	t.Helper()
	fake := slackfake.New(t)
	store := &MemoryInstallations{}
	h := startWith(t, fake, func(c *Config) {
		c.Installations, c.ClientID, c.ClientSecret = store, slackfake.ClientID, slackfake.ClientSecret
		c.RedirectURL, c.StateKey = "https://bot.example.test/slack/oauth", testStateKey
		if mutate != nil {
			mutate(c)
		}
	}, &recorder{})
	mux := http.NewServeMux()
	mux.Handle("/slack/install", h.ch.InstallHandler())
	mux.Handle("/slack/oauth", h.ch.OAuthHandler())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &oauthHarness{harness: h, store: store, srv: srv}
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// install runs the install flow for team and returns the callback's status.
func (h *oauthHarness) install(t *testing.T, team string) (status int, state string) {
	t.Helper()
	resp, err := noRedirect.Get(h.srv.URL + "/slack/install")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || err != nil || !strings.HasPrefix(loc.String(), DefaultAuthorizeURL) {
		t.Fatalf("install: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	q := loc.Query()
	if q.Get("client_id") != slackfake.ClientID || !strings.Contains(q.Get("scope"), "chat:write") || q.Get("redirect_uri") != "https://bot.example.test/slack/oauth" {
		t.Fatalf("authorize query %v", q)
	}
	state = q.Get("state")
	return h.callback(t, url.Values{"code": {h.fake.IssueCode(team)}, "state": {state}}), state
}

func (h *oauthHarness) callback(t *testing.T, q url.Values) int {
	t.Helper()
	resp, err := http.Get(h.srv.URL + "/slack/oauth?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestOAuthInstallServesTheWorkspaceWithItsToken(t *testing.T) {
	h := startOAuth(t, nil)
	ctx := context.Background()
	status, state := h.install(t, "T0SECOND")
	if status != 200 {
		t.Fatalf("callback: %d", status)
	}
	inst, found, _ := h.store.Installation(ctx, "T0SECOND")
	if !found || inst.BotToken != h.fake.TeamToken("T0SECOND") || inst.BotUserID != slackfake.BotUserID {
		t.Fatalf("stored %v (found %v)", inst, found)
	}
	if strings.Contains(inst.String(), inst.BotToken) {
		t.Error("Installation.String shows the token")
	}
	// The same state again, a forged one, a missing one, a refused code: all 400.
	if s := h.callback(t, url.Values{"code": {h.fake.IssueCode("T0SECOND")}, "state": {state}}); s != 400 {
		t.Errorf("replayed state: %d", s)
	}
	forged := state[:len(state)-2] + "xx"
	if s := h.callback(t, url.Values{"code": {h.fake.IssueCode("T0SECOND")}, "state": {forged}}); s != 400 {
		t.Errorf("forged state: %d", s)
	}
	if s := h.callback(t, url.Values{"code": {"nope"}}); s != 400 {
		t.Errorf("no state: %d", s)
	}
	if s := h.callback(t, url.Values{"error": {"access_denied"}}); s != 400 {
		t.Errorf("denied: %d", s)
	}

	// An event of the new workspace: its conversation, answered with its token.
	cb := h.fake.Callback(map[string]any{"type": "message", "channel_type": "im", "channel": "D2", "user": "U2",
		"text": "hi from two", "ts": h.fake.NewTS(), "team": "T0SECOND"})
	cb["team_id"] = "T0SECOND"
	h.fake.Send("events_api", cb)
	in := h.waitInbound(t, 1)[0]
	if in.Conv.Workspace != "T0SECOND" || in.Identity.ChannelUserID != "T0SECOND:U2" {
		t.Fatalf("inbound %+v", in)
	}
	if _, err := h.ch.Send(ctx, channels.Target{Conv: in.Conv}, channels.Message{Text: "hello two"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.ch.Send(ctx, channels.Target{Conv: threadConv("")}, channels.Message{Text: "hello one"}); err != nil {
		t.Fatal(err)
	}
	posts := h.fake.CallsOf("chat.postMessage")
	if len(posts) != 2 || posts[0].Team != "T0SECOND" || posts[1].Team != slackfake.TeamID {
		t.Fatalf("posts made as teams %q, %q; want each workspace's own token", posts[0].Team, posts[1].Team)
	}

	// Uninstalled: the token is deleted and its events dropped.
	env := h.fake.Send("events_api", map[string]any{"type": "event_callback", "team_id": "T0SECOND", "event_id": "Ev9",
		"event": map[string]any{"type": "app_uninstalled"}})
	eventually(t, "the ack", func() bool { return h.fake.Acked(env) })
	if _, found, _ := h.store.Installation(ctx, "T0SECOND"); found {
		t.Error("the uninstalled workspace's token was kept")
	}
	// Installing again serves it again.
	if status, _ := h.install(t, "T0SECOND"); status != 200 {
		t.Fatalf("reinstall: %d", status)
	}
	h.fake.Send("events_api", cb)
	h.waitInbound(t, 2)
}

func TestOAuthStateExpires(t *testing.T) {
	h := startOAuth(t, nil)
	past, err := New(Config{BotToken: "xoxb-1", AppToken: "xapp-1", Installations: h.store, ClientID: "c", ClientSecret: "s",
		RedirectURL: "https://x.test/cb", StateKey: testStateKey})
	if err != nil {
		t.Fatal(err)
	}
	past.now = func() time.Time { return time.Now().Add(-stateTTL - time.Minute) }
	old, err := past.newState()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.ch.checkState(old); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("a state past its ten minutes: %v", err)
	}
	fresh, _ := h.ch.newState()
	if _, err := h.ch.checkState(fresh); err != nil {
		t.Fatalf("a fresh state: %v", err)
	}
	other, _ := New(Config{BotToken: "xoxb-1", AppToken: "xapp-1", Installations: h.store, ClientID: "c", ClientSecret: "s",
		RedirectURL: "https://x.test/cb", StateKey: []byte("another-key-0123456789abcdef012345")})
	foreign, _ := other.newState()
	if _, err := h.ch.checkState(foreign); err == nil {
		t.Fatal("a state signed with another key verified")
	}
}

func TestOAuthRotatingTokenRefreshedBeforeItExpires(t *testing.T) {
	h := startOAuth(t, nil)
	ctx := context.Background()
	h.fake.SetTokenRotation(2 * time.Minute) // inside refreshBefore: the first use refreshes
	if status, _ := h.install(t, "T0ROT"); status != 200 {
		t.Fatalf("install: %d", status)
	}
	first, _, _ := h.store.Installation(ctx, "T0ROT")
	k := conv.Key{Platform: "slack", Workspace: "T0ROT", Chat: "D9"}
	if _, err := h.ch.Send(ctx, channels.Target{Conv: k}, channels.Message{Text: "x"}); err != nil {
		t.Fatalf("Send with a token about to expire: %v", err)
	}
	now, _, _ := h.store.Installation(ctx, "T0ROT")
	if now.BotToken == first.BotToken || now.RefreshToken == first.RefreshToken || !now.ExpiresAt.After(first.ExpiresAt.Add(-time.Second)) {
		t.Fatalf("not refreshed: %v → %v", first, now)
	}
	if posts := h.fake.CallsOf("chat.postMessage"); len(posts) != 1 || posts[0].Team != "T0ROT" || posts[0].Status != 200 {
		t.Fatalf("posts %+v", posts)
	}
}

func TestNoTokenForAWorkspaceIsUnreachable(t *testing.T) {
	h := startOAuth(t, func(c *Config) { c.BotToken = "" })
	_, err := h.ch.Send(context.Background(), channels.Target{Conv: conv.Key{Platform: "slack", Workspace: "T0NONE", Chat: "C1"}}, channels.Message{Text: "x"})
	if !errors.Is(err, channels.ErrUnreachable) {
		t.Fatalf("Send to a workspace without an install: %v, want ErrUnreachable", err)
	}
	if h.ch.Ready() != nil {
		t.Errorf("a multi-workspace channel without a default token is not ready: %v", h.ch.Ready())
	}
}

func TestOAuthOrgWideInstallServesEveryWorkspaceOfTheOrg(t *testing.T) {
	h := startOAuth(t, func(c *Config) { c.BotToken = "" })
	resp, err := noRedirect.Get(h.srv.URL + "/slack/install")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if s := h.callback(t, url.Values{"code": {h.fake.IssueOrgCode("E0ORG")}, "state": {loc.Query().Get("state")}}); s != 200 {
		t.Fatalf("org install callback: %d", s)
	}
	if _, found, _ := h.store.Installation(context.Background(), "E0ORG"); !found {
		t.Fatal("the org install was not saved under the enterprise")
	}
	k := conv.Key{Platform: "slack", Workspace: "E0ORG/T0SEVEN", Chat: "C7"}
	if _, err := h.ch.Send(context.Background(), channels.Target{Conv: k}, channels.Message{Text: "hi org"}); err != nil {
		t.Fatalf("Send in a workspace of the org: %v", err)
	}
	if posts := h.fake.CallsOf("chat.postMessage"); len(posts) != 1 || posts[0].Team != "org:E0ORG" {
		t.Fatalf("posted as %+v, want the org token", posts)
	}
}

// installCode runs the install flow with an OAuth code the test got from the fake.
func (h *oauthHarness) installCode(t *testing.T, code string) {
	t.Helper()
	resp, err := noRedirect.Get(h.srv.URL + "/slack/install")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if s := h.callback(t, url.Values{"code": {code}, "state": {loc.Query().Get("state")}}); s != 200 {
		t.Fatalf("install callback: %d", s)
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
