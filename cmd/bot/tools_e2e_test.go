package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/config"
	"github.com/switchboard-bot/switchboard/core/tools"
	"github.com/switchboard-bot/switchboard/internal/fake/mcpserver"
	"github.com/switchboard-bot/switchboard/internal/fake/modelserver"
	telegramfake "github.com/switchboard-bot/switchboard/internal/fake/telegram"
)

const testIdentityKey = "e2e-tools-identity-key-0123456789"

// mcpFake is the fake MCP server over streamable HTTP, keeping the last tools/call's headers
// and body.
type mcpFake struct {
	url    string
	mu     sync.Mutex
	header http.Header
	body   []byte
	calls  int
}

// startMCPFake serves the fake MCP server; call it before the app starts, so that it closes
// after the app stops.
func startMCPFake(tb testing.TB) *mcpFake {
	tb.Helper()
	f := &mcpFake{}
	h := mcpserver.HTTPHandler(mcpserver.Options{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			if bytes.Contains(body, []byte(`"tools/call"`)) {
				f.mu.Lock()
				f.header, f.body = r.Header.Clone(), body
				f.calls++
				f.mu.Unlock()
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		h.ServeHTTP(w, r)
	}))
	tb.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})
	f.url = ts.URL
	return f
}

func (f *mcpFake) lastCall() (http.Header, []byte, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.header, f.body, f.calls
}

// withTools configures the fake as server "fake": fake__echo needs the requester's approval,
// fake__add is for admins only, everything else is open.
func withTools(f *mcpFake, approval string) func(*config.Config) {
	return func(c *config.Config) {
		c.Tools.Servers = map[string]config.ToolServer{"fake": {URL: f.url}}
		c.Tools.IdentityKey = testIdentityKey
		c.Tools.Policy = []config.ToolRule{
			{Tools: []string{"fake__echo"}, Approval: approval},
			{Tools: []string{"fake__add"}, Allow: []string{"admins"}},
		}
	}
}

// toolModel calls tool with args, then answers with what the tool said.
func toolModel(tool, args string) func(modelserver.Request) modelserver.Reply {
	return func(r modelserver.Request) modelserver.Reply {
		if last := r.Messages[len(r.Messages)-1]; last.Role == "tool" {
			return modelserver.Text("tool said: " + last.Content)
		}
		return modelserver.Calls(modelserver.ToolCall{Name: tool, Arguments: args})
	}
}

// waitTools waits until the running app offers the fake's tools.
func waitTools(tb testing.TB, r *running) {
	tb.Helper()
	waitFor(tb, "the fake's tools offered", 15*time.Second, func() bool { return r.core.tools.Owns("fake__echo") })
}

func toolNames(req modelserver.Request) []string {
	var out []string
	for _, t := range req.Tools {
		out = append(out, t.Function.Name)
	}
	return out
}

// TestTelegramToolCalledAsTheUser proves a tool runs as the verified sender: the request's _meta
// and the signed headers carry Ann's identity, the model request lacks the admins-only tool,
// and the answer carries the tool's result.
func TestTelegramToolCalledAsTheUser(t *testing.T) {
	t.Parallel()
	f := startMCPFake(t)
	e := newE2E(t, withTools(f, "always"))
	e.model.SetFunc(toolModel("fake__whoami", `{}`))
	r := e.start()
	waitTools(t, r)
	e.tg.PushPrivate(ann, "who am I to the tools?")
	got := e.waitAnswers(ann.ID, 1)
	v := visible(got[0])
	if !strings.Contains(v, "tool said") || !strings.Contains(v, strconv.FormatInt(ann.ID, 10)) {
		t.Fatalf("answer %q, want the tool's view of Ann", v)
	}
	h, body, _ := f.lastCall()
	id, err := tools.Verify([]byte(testIdentityKey), h, body, time.Minute, time.Now())
	if err != nil {
		t.Fatalf("the identity headers do not verify: %v", err)
	}
	if id.Platform != "telegram" || id.ChannelUserID != strconv.FormatInt(ann.ID, 10) || id.RunID == "" || id.Conversation == "" {
		t.Errorf("verified identity %+v, want Ann's on telegram", id)
	}
	var call struct {
		Params struct {
			Meta map[string]tools.Identity `json:"_meta"`
		} `json:"params"`
	}
	if err := json.Unmarshal(body, &call); err != nil || call.Params.Meta[tools.MetaKey].ChannelUserID != id.ChannelUserID {
		t.Errorf("_meta identity %+v (%v), want the headers' %+v", call.Params.Meta, err, id)
	}
	names := toolNames(e.model.Requests()[0])
	if !slices.Contains(names, "fake__whoami") || slices.Contains(names, "fake__add") {
		t.Errorf("the model was offered %s: want fake__whoami, and never the admins-only fake__add", names)
	}
	resp, err := http.Get("http://" + r.listener.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	metrics, _ := io.ReadAll(resp.Body)
	for _, want := range []string{
		`switchboard_tool_calls_total{outcome="ok",server="fake",tool="whoami"} 1`,
		`switchboard_tool_server_state{server="fake",state="up"} 1`,
		`switchboard_tool_call_seconds_count{server="fake"} 1`,
	} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestTelegramToolApproval proves a call that needs approval parks the run behind a card with
// Approve and Deny, a click by someone else is refused privately and changes nothing, the
// requester's Approve runs the call (once) and the run resumes with its result, and the card
// shows who decided.
func TestTelegramToolApproval(t *testing.T) {
	t.Parallel()
	const group = int64(-1003101)
	f := startMCPFake(t)
	e := newE2E(t, withTools(f, "always"))
	e.model.SetFunc(toolModel("fake__echo", `{"message":"ship it","api_key":"S3CRET-arg"}`))
	waitTools(t, e.start())
	e.tg.PushGroup(group, ann, mention+" echo please")
	card := e.waitQuestion(group)
	v := visible(card)
	if !strings.Contains(v, "fake__echo") || !strings.Contains(v, "ship it") || strings.Contains(v, "S3CRET") {
		t.Fatalf("approval card shows %q: want the tool and its arguments, secrets masked", v)
	}
	if _, _, n := f.lastCall(); n != 0 {
		t.Fatalf("the tool ran %d times before approval", n)
	}

	_, qid := e.tg.PushCallback(group, card.ID, bob, button(t, card, "Approve"))
	var notice string
	waitFor(t, "the foreign click answered", 10*time.Second, func() bool {
		var ok bool
		notice, ok = e.tg.CallbackAnswer(qid)
		return ok
	})
	if !strings.Contains(notice, "Only the person who asked") {
		t.Errorf("foreign click notice %q", notice)
	}
	if _, _, n := f.lastCall(); n != 0 {
		t.Fatalf("a foreign click ran the tool")
	}

	e.tg.PushCallback(group, card.ID, ann, button(t, card, "Approve"))
	got := e.waitAnswers(group, 2)
	if v := visible(got[1]); !strings.Contains(v, "tool said: echo: ship it") {
		t.Fatalf("final answer %q, want the tool's result", v)
	}
	if v := visible(got[0]); got[0].ID != card.ID || len(got[0].Keyboard) != 0 || !strings.Contains(v, "Approved by Ann") {
		t.Errorf("the approval card was left as %q with keyboard %v, want it closed with who approved", v, got[0].Keyboard)
	}
	if _, _, n := f.lastCall(); n != 1 {
		t.Errorf("the tool ran %d times, want once", n)
	}
	if strings.Contains(e.logs.String(), "S3CRET") {
		t.Error("a secret argument reached the logs")
	}
	if !strings.Contains(e.logs.String(), "approval decided") {
		t.Error("the decision was not logged for audit")
	}
}

// TestTelegramToolDenied proves Deny never runs the call and the model reads a denial.
func TestTelegramToolDenied(t *testing.T) {
	t.Parallel()
	f := startMCPFake(t)
	e := newE2E(t, withTools(f, "always"))
	e.model.SetFunc(toolModel("fake__echo", `{"message":"ship it"}`))
	waitTools(t, e.start())
	e.tg.PushPrivate(ann, "echo please")
	card := e.waitQuestion(ann.ID)
	e.tg.PushCallback(ann.ID, card.ID, ann, button(t, card, "Deny"))
	got := e.waitAnswers(ann.ID, 2)
	if v := visible(got[1]); !strings.Contains(v, "tool said: Denied") {
		t.Fatalf("final answer %q, want the denial the model read", v)
	}
	if !strings.Contains(visible(got[0]), "Denied by Ann") {
		t.Errorf("card %q, want who denied", visible(got[0]))
	}
	if _, _, n := f.lastCall(); n != 0 {
		t.Errorf("a denied call ran %d times", n)
	}
}

// TestTelegramToolApprovalSurvivesRestart proves an approval waits in Redis: the process that
// asked stops, a new one starts, and the click still resumes the run.
func TestTelegramToolApprovalSurvivesRestart(t *testing.T) {
	t.Parallel()
	f := startMCPFake(t)
	e := newE2E(t, withTools(f, "always"))
	e.model.SetFunc(toolModel("fake__echo", `{"message":"after restart"}`))
	first := e.start()
	waitTools(t, first)
	e.tg.PushPrivate(ann, "echo please")
	card := e.waitQuestion(ann.ID)
	first.stop()

	second := e.start()
	waitTools(t, second)
	e.tg.PushCallback(ann.ID, card.ID, ann, button(t, card, "Approve"))
	got := e.waitAnswers(ann.ID, 2)
	if v := visible(got[1]); !strings.Contains(v, "tool said: echo: after restart") {
		t.Fatalf("final answer %q after a restart, want the tool's result", v)
	}
}

// TestTelegramToolApprovalExpired proves a decision after tools.approval_ttl runs nothing and the
// model reads that the call expired.
func TestTelegramToolApprovalExpired(t *testing.T) {
	t.Parallel()
	e, f, card := askApproval(t, 300*time.Millisecond, "too late")
	asked := time.Now()
	waitFor(t, "the approval's time to run out", 5*time.Second, func() bool { return time.Since(asked) > 400*time.Millisecond })
	e.tg.PushCallback(ann.ID, card.ID, ann, button(t, card, "Approve"))
	got := e.waitAnswers(ann.ID, 2)
	if v := visible(got[1]); !strings.Contains(v, "in time") {
		t.Fatalf("final answer %q, want the expiry the model read", v)
	}
	if _, _, n := f.lastCall(); n != 0 {
		t.Errorf("an expired approval ran the call %d times", n)
	}
}

// TestTelegramAdminApproval proves approval: admin lets only an admin decide, even against the
// requester, and the call then runs as the requester.
func TestTelegramAdminApproval(t *testing.T) {
	t.Parallel()
	const group = int64(-1003102)
	f := startMCPFake(t)
	e := newE2E(t, func(c *config.Config) {
		withTools(f, "admin")(c)
		c.Admins.Telegram = []string{strconv.FormatInt(bob.ID, 10)}
	})
	e.model.SetFunc(toolModel("fake__echo", `{"message":"admin ok"}`))
	waitTools(t, e.start())
	e.tg.PushGroup(group, ann, mention+" echo please")
	card := e.waitQuestion(group)
	_, qid := e.tg.PushCallback(group, card.ID, ann, button(t, card, "Approve"))
	waitFor(t, "the requester's click refused", 10*time.Second, func() bool {
		n, ok := e.tg.CallbackAnswer(qid)
		return ok && strings.Contains(n, "Only an admin")
	})
	e.tg.PushCallback(group, card.ID, bob, button(t, card, "Approve"))
	got := e.waitAnswers(group, 2)
	if v := visible(got[1]); !strings.Contains(v, "tool said: echo: admin ok") {
		t.Fatalf("final answer %q", v)
	}
	h, body, _ := f.lastCall()
	if id, err := tools.Verify([]byte(testIdentityKey), h, body, time.Minute, time.Now()); err != nil || id.ChannelUserID != strconv.FormatInt(ann.ID, 10) {
		t.Errorf("the approved call ran as %+v (%v), want the requester Ann", id, err)
	}
}

// TestTelegramToolApprovalExpiresUnanswered proves an approval nobody decides on resumes its
// run by itself once tools.approval_ttl passes: the call never runs and the model explains.
func TestTelegramToolApprovalExpiresUnanswered(t *testing.T) {
	t.Parallel()
	e, f, _ := askApproval(t, 200*time.Millisecond, "nobody answers")
	got := e.waitAnswers(ann.ID, 2)
	if v := visible(got[1]); !strings.Contains(v, "tool said: Denied: nobody approved") {
		t.Fatalf("final answer %q, want the expiry the model read", v)
	}
	if _, _, n := f.lastCall(); n != 0 {
		t.Errorf("an expired approval ran the call %d times", n)
	}
	if !strings.Contains(e.logs.String(), "decision=expired") {
		t.Error("the expiry was not logged for audit")
	}
}

// delegatingModel has the lead delegate "call the echo tool" to a subagent, which calls
// fake__echo; each answers with what its tool said.
func delegatingModel(r modelserver.Request) modelserver.Reply {
	if last := r.Messages[len(r.Messages)-1]; last.Role == "tool" {
		return modelserver.Text("tool said: " + last.Content)
	}
	if r.LastUserText() == "call the echo tool" {
		return modelserver.Calls(modelserver.ToolCall{Name: "fake__echo", Arguments: `{"message":"from the subagent"}`})
	}
	return modelserver.Calls(modelserver.ToolCall{Name: "delegate", Arguments: `{"task":"call the echo tool"}`})
}

// childRequests are the model requests subagents made.
func childRequests(m *modelserver.Server) []modelserver.Request {
	var out []modelserver.Request
	for _, r := range m.Requests() {
		if r.Messages[0].Role == "user" && r.Messages[0].Content == "call the echo tool" {
			out = append(out, r)
		}
	}
	return out
}

// TestTelegramSubagentToolApproval proves a subagent gets a tool that needs approval only when
// tools.subagents names it, its call then waits inside the run behind an approval card shown as
// for the lead, and the requester's Approve runs it as the requester.
func TestTelegramSubagentToolApproval(t *testing.T) {
	t.Parallel()
	f := startMCPFake(t)
	e := newE2E(t, func(c *config.Config) {
		withTools(f, "always")(c)
		c.Tools.Subagents = []string{"fake__echo", "fake__whoami"}
	})
	e.model.SetFunc(delegatingModel)
	waitTools(t, e.start())
	e.tg.PushPrivate(ann, "delegate the echo")
	card := e.waitQuestion(ann.ID)
	if v := visible(card); !strings.Contains(v, "fake__echo") || !strings.Contains(v, "from the subagent") {
		t.Fatalf("approval card %q", v)
	}
	if _, _, n := f.lastCall(); n != 0 {
		t.Fatalf("the call ran before approval")
	}
	e.tg.PushCallback(ann.ID, card.ID, ann, button(t, card, "Approve"))
	waitFor(t, "the lead's answer with the subagent's result", 20*time.Second, func() bool {
		for _, m := range e.tg.Posted(ann.ID) {
			if strings.Contains(visible(m), "tool said: tool said: echo: from the subagent") {
				return true
			}
		}
		return false
	})
	h, body, n := f.lastCall()
	if id, err := tools.Verify([]byte(testIdentityKey), h, body, time.Minute, time.Now()); err != nil || id.ChannelUserID != strconv.FormatInt(ann.ID, 10) || n != 1 {
		t.Errorf("the subagent's call ran %d times as %+v (%v), want once as Ann", n, id, err)
	}
	names := toolNames(childRequests(e.model)[0])
	if !slices.Contains(names, "fake__echo") || !slices.Contains(names, "fake__whoami") || slices.Contains(names, "fake__count") {
		t.Errorf("the subagent was offered %v, want exactly the tools tools.subagents names", names)
	}
}

// TestTelegramSubagentInheritsNoApprovalTools proves that by default (tools.subagents: inherit)
// a subagent gets the caller's tools except those that need approval.
func TestTelegramSubagentInheritsNoApprovalTools(t *testing.T) {
	t.Parallel()
	f := startMCPFake(t)
	e := newE2E(t, withTools(f, "always"))
	e.model.SetFunc(delegatingModel)
	waitTools(t, e.start())
	e.tg.PushPrivate(ann, "delegate the echo")
	got := e.waitAnswers(ann.ID, 1)
	if v := visible(got[0]); !strings.Contains(v, "tool said") {
		t.Fatalf("answer %q", v)
	}
	reqs := childRequests(e.model)
	if len(reqs) == 0 {
		t.Fatal("no subagent ran")
	}
	names := toolNames(reqs[0])
	if slices.Contains(names, "fake__echo") || slices.Contains(names, "fake__add") || !slices.Contains(names, "fake__whoami") {
		t.Errorf("the subagent was offered %v: want the caller's tools without fake__echo (approval) and fake__add (admins)", names)
	}
	if _, _, n := f.lastCall(); n != 0 {
		t.Errorf("the subagent's refused call ran %d times", n)
	}
}

// TestTelegramDecidedApprovalExpiresQuietly proves the expiry of an approval decided in time
// says nothing: the chat shows the card and the answer, and no failure after the time is up.
func TestTelegramDecidedApprovalExpiresQuietly(t *testing.T) {
	t.Parallel()
	e, _, card := askApproval(t, 2*time.Second, "quick")
	asked := time.Now()
	e.tg.PushCallback(ann.ID, card.ID, ann, button(t, card, "Approve"))
	e.waitAnswers(ann.ID, 2)
	waitFor(t, "the approval's time and a sweep to pass", 10*time.Second, func() bool {
		return time.Since(asked) > 2*time.Second+2*approvalSweep
	})
	waitFor(t, "the expiry run to finish", 10*time.Second, func() bool {
		return strings.Contains(e.logs.String(), "outcome=cancelled") || strings.Contains(e.logs.String(), "run cancelled") || time.Since(asked) > 5*time.Second
	})
	if got := e.tg.Posted(ann.ID); len(got) != 2 {
		var shown []string
		for _, m := range got {
			shown = append(shown, visible(m))
		}
		t.Errorf("the chat shows %d messages, want the card and the answer only: %q", len(got), shown)
	}
}

// askApproval starts the app with fake__echo needing approval for at most ttl, has Ann ask for
// a call with message msg in her DM, and returns the setup and the approval card.
func askApproval(t *testing.T, ttl time.Duration, msg string) (*e2e, *mcpFake, telegramfake.Message) {
	t.Helper()
	f := startMCPFake(t)
	e := newE2E(t, func(c *config.Config) {
		withTools(f, "always")(c)
		c.Tools.ApprovalTTL = ttl
	})
	e.model.SetFunc(toolModel("fake__echo", `{"message":"`+msg+`"}`))
	waitTools(t, e.start())
	e.tg.PushPrivate(ann, "echo please")
	return e, f, e.waitQuestion(ann.ID)
}

// TestTelegramToolsCommand proves /tools lists the servers, their state and tools to anyone,
// the policy to admins only, and /tools reload is for admins.
func TestTelegramToolsCommand(t *testing.T) {
	t.Parallel()
	f := startMCPFake(t)
	e := newE2E(t, func(c *config.Config) {
		withTools(f, "always")(c)
		c.Admins.Telegram = []string{strconv.FormatInt(bob.ID, 10)}
	})
	waitTools(t, e.start())
	e.tg.PushPrivate(ann, "/tools")
	got := e.waitAnswers(ann.ID, 1)
	if v := visible(got[0]); !strings.Contains(v, "fake (http): up") || !strings.Contains(v, "fake__echo") || strings.Contains(v, "Policy") {
		t.Errorf("/tools for a user shows %q: want the server up with its tools, no policy", v)
	}
	e.tg.PushPrivate(ann, "/tools reload")
	got = e.waitAnswers(ann.ID, 2)
	if v := visible(got[1]); !strings.Contains(v, "for admins only") {
		t.Errorf("/tools reload by a user: %q", v)
	}
	e.tg.PushPrivate(bob, "/tools")
	got = e.waitAnswers(bob.ID, 1)
	if v := visible(got[0]); !strings.Contains(v, "Policy") || !strings.Contains(v, "fake__echo — allow: everyone; approval: always") {
		t.Errorf("/tools for an admin shows %q: want the policy", v)
	}
	e.tg.PushPrivate(bob, "/tools reload")
	got = e.waitAnswers(bob.ID, 2)
	if v := visible(got[1]); !strings.Contains(v, "Reconnecting") {
		t.Errorf("/tools reload by an admin: %q", v)
	}
	waitFor(t, "the servers reconnected", 15*time.Second, func() bool {
		return strings.Count(e.logs.String(), "tools: server connected") >= 2
	})
}

// TestTelegramProfileNarrowsTheTools proves a profile's tools globs decide what a routed chat's
// model is offered and may call, within the policy: Bob's chat, routed to a profile with
// fake__echo only, is offered just that, and a call of fake__whoami there is refused as a tool
// that does not exist for it; Ann's chat, on the top-level settings, is offered every tool the
// policy gives her.
func TestTelegramProfileNarrowsTheTools(t *testing.T) {
	t.Parallel()
	f := startMCPFake(t)
	e := newE2E(t, func(c *config.Config) {
		withTools(f, "never")(c)
		c.Profiles = map[string]config.Profile{"narrow": {Tools: []string{"fake__echo"}}}
		c.Routes = []config.Route{{Match: config.RouteMatch{Platform: "telegram", Channel: strconv.FormatInt(bob.ID, 10)}, Profile: "narrow"}}
	})
	e.model.SetFunc(toolModel("fake__whoami", `{}`))
	r := e.start()
	waitTools(t, r)
	e.tg.PushPrivate(bob, "who am I in the narrow chat?")
	e.tg.PushPrivate(ann, "who am I in the wide chat?")
	bobAnswer := visible(e.waitAnswers(bob.ID, 1)[0])
	annAnswer := visible(e.waitAnswers(ann.ID, 1)[0])
	offered := map[string][]string{}
	for _, req := range e.model.Requests() {
		if u := req.LastUserText(); u != "" {
			offered[u] = toolNames(req)
		}
	}
	narrow, wide := offered["who am I in the narrow chat?"], offered["who am I in the wide chat?"]
	if !slices.Contains(narrow, "fake__echo") || slices.Contains(narrow, "fake__whoami") || slices.Contains(narrow, "fake__add") {
		t.Errorf("the narrow chat's model was offered %v, want fake__echo and no other server tool", narrow)
	}
	if !slices.Contains(wide, "fake__whoami") || !slices.Contains(wide, "fake__echo") {
		t.Errorf("the wide chat's model was offered %v, want every tool the policy allows", wide)
	}
	if !strings.Contains(bobAnswer, "unknown tool") && !strings.Contains(bobAnswer, "may not use") {
		t.Errorf("the narrow chat's call of fake__whoami answered %q, want it refused", bobAnswer)
	}
	if !strings.Contains(annAnswer, strconv.FormatInt(ann.ID, 10)) {
		t.Errorf("the wide chat's call answered %q, want the tool's view of Ann", annAnswer)
	}
}
