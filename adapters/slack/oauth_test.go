package slack

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
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
	past.clock.Now = func() time.Time { return time.Now().Add(-stateTTL - time.Minute) }
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

// callbackPage is callback with the page's text.
func (h *oauthHarness) callbackPage(t *testing.T, q string) (int, string) {
	t.Helper()
	resp, err := http.Get(h.srv.URL + "/slack/oauth?" + q)
	if err != nil {
		t.Fatalf("callback ?%.80s: %v (did the handler panic?)", q, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// freshState is a state the install page would hand out now.
func (h *oauthHarness) freshState(t *testing.T) string {
	t.Helper()
	s, err := h.ch.newState()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// signedState is a state as a channel with key would sign it at now.
func signedState(t *testing.T, key []byte, now time.Time) string {
	t.Helper()
	ch, err := New(Config{BotToken: "xoxb-1", AppToken: "xapp-1", Installations: &MemoryInstallations{}, ClientID: "c",
		ClientSecret: "s", RedirectURL: "https://x.test/cb", StateKey: key})
	if err != nil {
		t.Fatal(err)
	}
	ch.clock.Now = func() time.Time { return now }
	s, err := ch.newState()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestOAuthCallbackWhenSlackDoesNotAnswer proves that when oauth.v2.access fails as a call —
// HTTP 500, HTTP 429 — or refuses the code, the callback answers a page asking for a new
// install (502 when Slack did not answer, 400 when it refused), saves nothing, logs no secret
// (client secret, code) and keeps serving: the next install goes through.
func TestOAuthCallbackWhenSlackDoesNotAnswer(t *testing.T) {
	cases := []struct {
		name   string
		fail   func(*slackfake.Server)
		status int
		page   string
	}{
		{"http 500", func(f *slackfake.Server) { f.FailNext("oauth.v2.access", 1, slackfake.Fault{Status: 500}) },
			502, "Slack could not be reached to finish the install. Start the install again in a minute."},
		{"http 429", func(f *slackfake.Server) { f.RateLimit("oauth.v2.access", 1, 0) },
			502, "Slack could not be reached to finish the install. Start the install again in a minute."},
		{"http 503", func(f *slackfake.Server) { f.FailNext("oauth.v2.access", 1, slackfake.Fault{Status: 503}) },
			502, "Slack could not be reached to finish the install. Start the install again in a minute."},
		{"ok false", func(f *slackfake.Server) { f.FailNext("oauth.v2.access", 1, slackfake.Fault{Error: "invalid_code"}) },
			400, "Slack did not confirm the install. Start the install again."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := startOAuth(t, nil)
			tc.fail(h.fake)
			code := h.fake.IssueCode("T0DOWN")
			status, body := h.callbackPage(t, url.Values{"code": {code}, "state": {h.freshState(t)}}.Encode())
			if status != tc.status || !strings.Contains(body, tc.page) {
				t.Fatalf("callback: %d %q; want %d with %q", status, body, tc.status, tc.page)
			}
			if n := h.fake.Count("oauth.v2.access"); n != 1 {
				t.Fatalf("oauth.v2.access called %d times, want 1", n)
			}
			if _, found, _ := h.store.Installation(context.Background(), "T0DOWN"); found {
				t.Fatal("an install was saved though the exchange failed")
			}
			logs := h.logs.String()
			if !strings.Contains(logs, "exchanging an install code failed") {
				t.Errorf("the failure was not logged:\n%s", logs)
			}
			for _, secret := range []string{slackfake.ClientSecret, code} {
				if strings.Contains(logs, secret) || strings.Contains(body, secret) {
					t.Errorf("%q appears in the logs or the page:\n%s\n%s", secret, logs, body)
				}
			}
			for _, c := range h.fake.CallsOf("oauth.v2.access") {
				if c.Params["client_secret"] == slackfake.ClientSecret || c.Params["code"] == code {
					t.Errorf("the fake recorded a secret: %v", c.Params)
				}
			}
			if status, _ := h.install(t, "T0UP"); status != 200 {
				t.Fatalf("the install after the failure: %d", status)
			}
		})
	}
}

// TestOAuthCallbackMalformed is the table of callbacks the handler refuses: a missing, garbled,
// forged, foreign, expired or replayed state, a missing or unknown code, and an error Slack
// passed back. Each answers 400 with a page that says what to do and echoes nothing of the
// query, and nothing is installed.
func TestOAuthCallbackMalformed(t *testing.T) {
	h := startOAuth(t, nil)
	ctx := context.Background()
	const (
		badLink = "This install link is not valid or has expired. Start the install again."
		noSlack = "Slack did not confirm the install. Start the install again."
		used    = "This install link was used already. Start the install again."
	)
	_, replayed := h.install(t, "T0FIRST")

	expired := signedState(t, testStateKey, time.Now().Add(-stateTTL-time.Second))
	foreignState := signedState(t, []byte("another-key-0123456789abcdef012345"), time.Now())
	valid := h.freshState(t)
	body, sig, _ := strings.Cut(valid, ".")
	raw, _ := base64.RawURLEncoding.DecodeString(body)
	flipped := append([]byte(nil), raw...)
	flipped[0] ^= 1
	short := base64.RawURLEncoding.EncodeToString(raw[:20])
	code := func() string { return h.fake.IssueCode("T0BAD") }

	cases := []struct {
		name, query string
		page        string
	}{
		{"no query", "", badLink},
		{"no state", "code=" + code(), badLink},
		{"empty state", "state=&code=" + code(), badLink},
		{"state without a dot", "state=" + body + "&code=" + code(), badLink},
		{"state of two dots", "state=" + valid + ".x&code=" + code(), badLink},
		{"only a dot", "state=.&code=" + code(), badLink},
		{"not base64", "state=%21%21%21.%21%21&code=" + code(), badLink},
		{"short body", "state=" + short + "." + sig + "&code=" + code(), badLink},
		{"huge state", "state=" + strings.Repeat("A", 8000) + "." + sig + "&code=" + code(), badLink},
		{"body changed", "state=" + base64.RawURLEncoding.EncodeToString(flipped) + "." + sig + "&code=" + code(), badLink},
		{"forged signature", "state=" + body + "." + base64.RawURLEncoding.EncodeToString(make([]byte, 32)) + "&code=" + code(), badLink},
		{"signed with another key", "state=" + foreignState + "&code=" + code(), badLink},
		{"expired", "state=" + expired + "&code=" + code(), badLink},
		{"replayed", "state=" + replayed + "&code=" + code(), used},
		{"no code", "state=" + h.freshState(t), noSlack},
		{"empty code", "state=" + h.freshState(t) + "&code=", noSlack},
		{"unknown code", "state=" + h.freshState(t) + "&code=nope", noSlack},
		{"garbled query", "state=%zz&code=%", badLink},
		{"access denied", "error=access_denied&state=" + h.freshState(t), "The install was cancelled. Start the install again to add the app."},
		{"error with a code and state", "error=access_denied&state=" + h.freshState(t) + "&code=" + code(), "The install was cancelled."},
		{"error of another text", "error=" + url.QueryEscape("<b>call 555-0100</b>") + "&state=" + h.freshState(t), "The app was not installed. Start the install again."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, page := h.callbackPage(t, tc.query)
			if status != http.StatusBadRequest || !strings.Contains(page, tc.page) {
				t.Fatalf("%d %q; want 400 with %q", status, page, tc.page)
			}
			if strings.Contains(page, "555") || strings.Contains(page, "code-") {
				t.Errorf("the page echoes the query: %q", page)
			}
		})
	}
	if _, found, _ := h.store.Installation(ctx, "T0BAD"); found {
		t.Fatal("a refused callback installed")
	}
	// A callback without a code does not use up its state: Slack's real redirect still works.
	s := h.freshState(t)
	if st, _ := h.callbackPage(t, "state="+s); st != 400 {
		t.Fatalf("no code: %d", st)
	}
	if st, page := h.callbackPage(t, url.Values{"state": {s}, "code": {h.fake.IssueCode("T0LATE")}}.Encode()); st != 200 {
		t.Fatalf("the same state with its code: %d %q", st, page)
	}
}

// signedWith is an independent check that state is body "." HMAC-SHA256(key, body), both
// base64url: what only a holder of key can make.
func signedWith(state string, key []byte) bool {
	body, sig, ok := strings.Cut(state, ".")
	b, err1 := base64.RawURLEncoding.DecodeString(body)
	s, err2 := base64.RawURLEncoding.DecodeString(sig)
	if !ok || err1 != nil || err2 != nil {
		return false
	}
	mac := hmac.New(sha256.New, key)
	mac.Write(b)
	return hmac.Equal(mac.Sum(nil), s)
}

// FuzzOAuthCallback drives the callback handler with arbitrary queries: it never panics,
// answers 200 only for a state signed with the channel's key, and otherwise one of its pages
// with 400 (or 502), echoing nothing of the query.
func FuzzOAuthCallback(f *testing.F) {
	fake := slackfake.New(f)
	store := &MemoryInstallations{}
	ch, _ := newChannel(f, fake, func(c *Config) {
		c.Installations, c.ClientID, c.ClientSecret = store, slackfake.ClientID, slackfake.ClientSecret
		c.RedirectURL, c.StateKey = "https://bot.example.test/slack/oauth", testStateKey
	})
	h := ch.OAuthHandler()
	mint := func() string {
		s, err := ch.newState()
		if err != nil {
			f.Fatal(err)
		}
		return s
	}
	f.Add(url.Values{"state": {mint()}, "code": {fake.IssueCode("T0FUZZ")}}.Encode())
	f.Add(url.Values{"state": {mint()}, "code": {"nope"}}.Encode())
	f.Add("state=" + mint())
	f.Add("error=access_denied&state=" + mint())
	f.Add("error=%3Cscript%3E")
	f.Add("state=a.b&code=c")
	f.Add("state=%zz&code=%")
	f.Add("")
	f.Add("state=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA&code=x")
	f.Fuzz(func(t *testing.T, query string) {
		r := httptest.NewRequest(http.MethodGet, "/slack/oauth", nil)
		r.URL.RawQuery = query
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		page := w.Body.String()
		state := r.URL.Query().Get("state")
		switch w.Code {
		case http.StatusOK:
			if !signedWith(state, testStateKey) || r.URL.Query().Get("error") != "" {
				t.Fatalf("installed for state %q (not one this channel signed)", state)
			}
		case http.StatusBadRequest, http.StatusBadGateway:
			if !strings.Contains(page, "Start the install again") {
				t.Fatalf("refusal page %q", page)
			}
		default:
			t.Fatalf("status %d for %q", w.Code, query)
		}
		if len(page) > 300 {
			t.Fatalf("page of %d bytes: it echoes the query?", len(page))
		}
	})
}
