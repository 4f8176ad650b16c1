package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/core/agent"
	"github.com/switchboard-bot/switchboard/core/llm"
)

func TestPolicyDecide(t *testing.T) {
	rules := []Rule{
		{Tools: []string{"tickets__create_*"}, Allow: []string{AllowEveryone}, Approval: ApprovalAlways},
		{Tools: []string{"tickets__delete_*"}, Allow: []string{AllowAdmins}, Approval: ApprovalAdmin},
		{Tools: []string{"db__*"}, Allow: []string{"U7", "discord:42"}},
		{Tools: []string{"tickets__*"}, Allow: []string{AllowAdmins}},
	}
	user := Identity{Platform: "slack", ChannelUserID: "U1"}
	admin := Identity{Platform: "slack", ChannelUserID: "U2", Admin: true}
	listed := Identity{Platform: "slack", ChannelUserID: "U7"}
	discord42 := Identity{Platform: "discord", ChannelUserID: "42"}
	telegram42 := Identity{Platform: "telegram", ChannelUserID: "42"}
	for _, tc := range []struct {
		name     string
		tool     string
		id       Identity
		depth    int
		sub      []string
		allowed  bool
		approval Approval
	}{
		{"first rule wins", "tickets__create_issue", user, 0, nil, true, ApprovalAlways},
		{"admins only", "tickets__delete_issue", user, 0, nil, false, ApprovalAdmin},
		{"admin allowed", "tickets__delete_issue", admin, 0, nil, true, ApprovalAdmin},
		{"later rule", "tickets__get_issue", user, 0, nil, false, ApprovalNever},
		{"listed user", "db__query", listed, 0, nil, true, ApprovalNever},
		{"platform:id", "db__query", discord42, 0, nil, true, ApprovalNever},
		{"same id other platform", "db__query", telegram42, 0, nil, false, ApprovalNever},
		{"no rule: everyone", "everything__echo", user, 0, nil, true, ApprovalNever},
		{"subagent inherits", "everything__echo", user, 1, []string{SubagentsInherit}, true, ApprovalNever},
		{"subagent never inherits approval tools", "tickets__create_issue", user, 1, []string{SubagentsInherit}, false, ApprovalAlways},
		{"subagent none", "everything__echo", user, 1, []string{SubagentsNone}, false, ApprovalNever},
		{"subagent glob names an approval tool", "tickets__create_issue", user, 2, []string{"tickets__create_*"}, true, ApprovalAlways},
		{"subagent glob leaves others out", "everything__echo", user, 1, []string{"tickets__*"}, false, ApprovalNever},
		{"subagent glob never widens the caller's", "tickets__delete_issue", user, 1, []string{"tickets__*"}, false, ApprovalAdmin},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPolicy(Config{Policy: rules, Subagents: tc.sub}.withDefaults())
			d := p.forAgent(tc.tool, tc.id, true, tc.depth)
			if d.Allowed != tc.allowed || d.Approval != tc.approval {
				t.Errorf("forAgent = %+v, want allowed %v approval %s", d, tc.allowed, tc.approval)
			}
		})
	}
}

// TestForbiddenToolsAreNotOffered: the model request of a caller lacks the tools it may not use,
// a subagent's lacks what tools.subagents leaves out, and calling one anyway is refused.
func TestForbiddenToolsAreNotOffered(t *testing.T) {
	m := New(Config{Policy: []Rule{{Tools: []string{"fake__add"}, Allow: []string{AllowAdmins}}, {Tools: []string{"fake__echo"}, Approval: ApprovalAlways}}}, Options{})
	m.offer = map[string]*offered{"fake__add": {Name: "fake__add", Server: "fake", Tool: "add"}, "fake__echo": {Name: "fake__echo", Server: "fake", Tool: "echo"}}
	req := llm.Request{Tools: []llm.ToolSpec{{Name: "delegate"}, {Name: "fake__add"}, {Name: "fake__echo"}}}
	names := func(ctx context.Context, depth int) string {
		rt := agent.NewRuntime(llm.NewScripted())
		a, err := rt.Create(agent.CreateOptions{Options: agent.Options{SubagentDepth: depth}})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = a.Dispose(context.Background()) }()
		var seen llm.Request
		_, _ = m.filterRequest(ctx, a, req, func(_ context.Context, r llm.Request) (llm.Request, error) { seen = r; return r, nil })
		var out []string
		for _, s := range seen.Tools {
			out = append(out, s.Name)
		}
		return strings.Join(out, ",")
	}
	user := WithIdentity(context.Background(), Identity{Platform: "slack", ChannelUserID: "U1"})
	admin := WithIdentity(context.Background(), Identity{Platform: "slack", ChannelUserID: "U2", Admin: true})
	for _, tc := range []struct {
		name  string
		ctx   context.Context
		depth int
		want  string
	}{
		{"user", user, 0, "delegate,fake__echo"},
		{"admin", admin, 0, "delegate,fake__add,fake__echo"},
		{"admin's subagent: no approval tools", admin, 1, "delegate,fake__add"},
		{"no identity: no server tools", context.Background(), 0, "delegate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := names(tc.ctx, tc.depth); got != tc.want {
				t.Errorf("offered %s, want %s", got, tc.want)
			}
		})
	}
	res := m.execute(user, agent.ToolCall{Name: "fake__add", Arguments: json.RawMessage(`{"a":1,"b":2}`)})
	if res.Code != agent.CodeDenied {
		t.Errorf("calling a forbidden tool = %+v, want denied", res)
	}
	res = m.execute(user, agent.ToolCall{Name: "fake__echo", Arguments: json.RawMessage(`{}`)})
	if res.Code != agent.CodeDenied || !strings.Contains(res.Content, "approval") {
		t.Errorf("an approval tool without an approver = %+v, want denied", res)
	}
	var asked ApprovalRequest
	ap := WithApprover(user, func(_ context.Context, _ agent.ToolCall, r ApprovalRequest) agent.ToolResult {
		asked = r
		return agent.ToolResult{Content: "parked"}
	})
	if res := m.execute(ap, agent.ToolCall{Name: "fake__echo", Arguments: json.RawMessage(`{"message":"m"}`)}); res.Content != "parked" ||
		asked.Name != "fake__echo" || asked.Mode != ApprovalAlways || asked.Identity.ChannelUserID != "U1" || string(asked.Args) != `{"message":"m"}` {
		t.Errorf("approval asked = %+v, result %+v", asked, res)
	}
}

func TestDisplayArgsMasksSecrets(t *testing.T) {
	for _, tc := range []struct{ in, shows, hides string }{
		{`{"query":"printer","api_key":"k-123"}`, `"query": "printer"`, "k-123"},
		{`{"nested":{"password":"hunter2"},"list":[{"Token":"t-1"}]}`, `"nested"`, "hunter2"},
		{`{"note":"xoxb-1234567890-abcdef"}`, Masked, "xoxb-1234567890"},
		{`{"auth":{"user":"bob"}}`, Masked, "bob"},
		{`not json`, "not valid JSON", "not json"},
	} {
		got := DisplayArgs(json.RawMessage(tc.in), 500)
		if !strings.Contains(got, tc.shows) || strings.Contains(got, tc.hides) {
			t.Errorf("DisplayArgs(%s) = %s", tc.in, got)
		}
	}
	if got := DisplayArgs(json.RawMessage(`{"text":"`+strings.Repeat("é", 400)+`"}`), 100); len(got) > 110 || !strings.HasSuffix(got, "…") {
		t.Errorf("a long argument is not cut: %d bytes", len(got))
	}
}
