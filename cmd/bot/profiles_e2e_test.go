package main

import (
	"context"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/config"
	"github.com/switchboard-bot/switchboard/internal/fake/modelserver"
	telegramfake "github.com/switchboard-bot/switchboard/internal/fake/telegram"
)

// The end-to-end tests of agent profiles and routes (issue 37): which prompt, model and endpoint
// a conversation's requests get, and what /profile tells an admin.

const (
	topPrompt     = "You are the general assistant of the team."
	supportPrompt = "You are the support desk. Answer tickets only."
	supportModel  = "support-model"
	localModel    = "local-model"
	localKey      = "sk-local-endpoint"
)

// carl is a third Telegram user, whose private chat the tests route to a profile of its own.
var carl = telegramfake.User{ID: 4203, FirstName: "Carl", Username: "carl"}

// withProfiles configures the top-level prompt, the profile "support" (its own prompt and
// model on the top-level endpoint) routed by supportChat, and the profile "offline" (the
// provider "local" at localURL, its model) routed by offlineChat.
func withProfiles(cfg *config.Config, localURL, supportChat, offlineChat string) {
	cfg.LLM.SystemPrompt = topPrompt
	cfg.LLM.Providers = localProvider(localURL)
	cfg.Profiles = map[string]config.Profile{
		"support": {SystemPrompt: supportPrompt, Model: supportModel},
		"offline": {Provider: "local"},
	}
	cfg.Routes = []config.Route{
		{Match: config.RouteMatch{Channel: supportChat}, Profile: "support"},
		{Match: config.RouteMatch{Channel: offlineChat}, Profile: "offline"},
	}
}

// localProvider is llm.providers with the one endpoint "local" at url.
func localProvider(url string) map[string]config.LLMProvider {
	return map[string]config.LLMProvider{"local": {BaseURL: url, APIKey: localKey, Model: localModel, Timeout: 10 * time.Second}}
}

// requestFor is the one request of model whose last user message is text, failing unless
// there is exactly one.
func requestFor(t *testing.T, model *modelserver.Server, text string) modelserver.Request {
	t.Helper()
	var found []modelserver.Request
	for _, r := range model.Requests() {
		if r.LastUserText() == text {
			found = append(found, r)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d requests for %q at the model, want 1", len(found), text)
	}
	return found[0]
}

// systemText is the text of the request's system messages.
func systemText(r modelserver.Request) string {
	var b strings.Builder
	for _, m := range r.Messages {
		if m.Role == "system" {
			b.WriteString(m.Content + "\n")
		}
	}
	return b.String()
}

// TestProfileRouteByChannel proves, on Telegram, that routes pick each conversation's profile:
// the chat routed to "support" sends its requests with that profile's system prompt and model,
// a chat no route matches gets the top-level prompt and model, and the chat routed to
// "offline", whose provider is one of llm.providers, sends its requests to that provider's
// base URL with its key and model — the top-level endpoint never sees them. /profile by an
// admin answers with the chat's profile and the route that chose it; by anyone else it is
// refused.
func TestProfileRouteByChannel(t *testing.T) {
	t.Parallel()
	local := modelserver.New(t)
	local.SetFunc(echoModel)
	e := newE2E(t, func(c *config.Config) {
		withProfiles(c, local.BaseURL(), strconv.FormatInt(bob.ID, 10), strconv.FormatInt(carl.ID, 10))
		c.Runs.PlaceholderAfter = time.Minute
		c.Admins.Telegram = []string{strconv.FormatInt(bob.ID, 10)}
	})
	e.start()
	e.tg.PushPrivate(ann, "hello from ann")
	e.tg.PushPrivate(bob, "hello from bob")
	e.tg.PushPrivate(carl, "hello from carl")
	for _, u := range []telegramfake.User{ann, bob, carl} {
		got := e.waitAnswers(u.ID, 1)
		if v := visible(got[0]); !strings.Contains(v, "echo: hello from "+u.Username) {
			t.Errorf("%s's answer shows %q", u.Username, v)
		}
	}

	def := requestFor(t, e.model, "hello from ann")
	if s := systemText(def); def.Model != "fake-model" || !strings.Contains(s, topPrompt) || strings.Contains(s, supportPrompt) {
		t.Errorf("the unrouted chat's request: model %q, system %q; want the top-level model and prompt", def.Model, s)
	}
	sup := requestFor(t, e.model, "hello from bob")
	if s := systemText(sup); sup.Model != supportModel || !strings.Contains(s, supportPrompt) || strings.Contains(s, topPrompt) {
		t.Errorf("the support chat's request: model %q, system %q; want the profile's model and prompt", sup.Model, s)
	}
	if def.Authorization != "Bearer sk-e2e-test" || sup.Authorization != def.Authorization {
		t.Errorf("the top-level endpoint was called with %q and %q, want its own key", def.Authorization, sup.Authorization)
	}

	off := requestFor(t, local, "hello from carl")
	if s := systemText(off); off.Model != localModel || off.Authorization != "Bearer "+localKey || !strings.Contains(s, topPrompt) {
		t.Errorf("the offline chat's request: model %q, key %q, system %q; want the provider's model and key, the top-level prompt",
			off.Model, off.Authorization, s)
	}
	if n := local.Count(); n != 1 {
		t.Errorf("the provider's endpoint got %d requests, want only the offline chat's", n)
	}
	for _, r := range e.model.Requests() {
		if strings.Contains(r.LastUserText(), "carl") {
			t.Errorf("the top-level endpoint got the offline chat's request %q", r.LastUserText())
		}
	}

	e.tg.PushPrivate(bob, "/profile")
	got := visible(e.waitAnswers(bob.ID, 2)[1])
	for _, want := range []string{"profile support", "model " + supportModel, "Why: route 0 (channel " + strconv.FormatInt(bob.ID, 10) + ")"} {
		if !strings.Contains(got, want) {
			t.Errorf("/profile answers %q, want %q in it", got, want)
		}
	}
	e.tg.PushPrivate(ann, "/profile")
	if got := visible(e.waitAnswers(ann.ID, 2)[1]); !strings.Contains(got, "for admins only") {
		t.Errorf("/profile by a non-admin answers %q, want a refusal", got)
	}
	if n := e.model.Count() + local.Count(); n != 3 {
		t.Errorf("the models got %d requests, want the 3 messages' (commands are not the model's)", n)
	}
	if strings.Contains(e.logs.String(), localKey) {
		t.Error("the provider's key is in the logs")
	}
}

// TestChatProfileByRoute proves profiles in `bot chat`: a route by platform gives the console
// conversation a profile whose provider is one of llm.providers — its requests go to that
// endpoint with the profile's prompt — and /profile by the console's admin says which profile
// and why.
func TestChatProfileByRoute(t *testing.T) {
	t.Parallel()
	top, local := modelserver.New(t), modelserver.New(t)
	top.SetFunc(echoModel)
	local.SetFunc(echoModel)
	cfg := config.Default()
	cfg.LLM.Provider, cfg.LLM.BaseURL, cfg.LLM.APIKey, cfg.LLM.Model = config.ProviderOpenAI, top.BaseURL(), "sk-e2e-test", "fake-model"
	cfg.LLM.Timeout = 10 * time.Second
	cfg.LLM.SystemPrompt, cfg.LLM.Providers = topPrompt, localProvider(local.BaseURL())
	cfg.Profiles = map[string]config.Profile{"support": {SystemPrompt: supportPrompt, Provider: "local"}}
	cfg.Routes = []config.Route{{Match: config.RouteMatch{Platform: config.PlatformConsole}, Profile: "support"}}
	cfg.Admins.Console = []string{"local"}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("chat configuration: %v", err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	out := newTranscript(outR)
	done := make(chan error, 1)
	go func() {
		err := chat(context.Background(), cfg, inR, outW, io.Discard, make(chan os.Signal))
		_ = outW.Close() // ends the transcript's reader
		done <- err
	}()
	quit := func() {
		_ = inW.Close()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("chat returned %v; output:\n%s", err, out)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("chat did not quit after the end of its input; output:\n%s", out)
		}
	}
	defer quit()
	at := out.waitFor(t, 0, "Type a message")
	typeLine := func(line string) {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}

	typeLine("hello console")
	at = out.waitFor(t, at, "echo: hello console")
	r := requestFor(t, local, "hello console")
	if s := systemText(r); r.Model != localModel || r.Authorization != "Bearer "+localKey || !strings.Contains(s, supportPrompt) || strings.Contains(s, topPrompt) {
		t.Errorf("the console's request: model %q, key %q, system %q; want the provider's model and key, the profile's prompt",
			r.Model, r.Authorization, s)
	}
	if n := top.Count(); n != 0 {
		t.Errorf("the top-level endpoint got %d requests, want none", n)
	}

	typeLine("/profile")
	at = out.waitFor(t, at, "support")
	out.waitFor(t, at, "Why: route 0 (platform console)")
}
