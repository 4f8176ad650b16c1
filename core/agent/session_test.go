package agent_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/switchboard-bot/switchboard/core/agent"
	"github.com/switchboard-bot/switchboard/core/llm"
)

// echo answers every call with the last user message, so each turn is one short step.
func echo() *llm.Scripted {
	return llm.ScriptFunc(func(req llm.Request) llm.Reply {
		return llm.Reply{Text: "re: " + req.Messages[len(req.Messages)-1].Content}
	})
}

func mustCreate(t *testing.T, rt *agent.Runtime, o agent.CreateOptions) *agent.Agent {
	t.Helper()
	a, err := rt.Create(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Dispose(context.Background()) })
	return a
}

func turn(t *testing.T, a *agent.Agent, prompt string) {
	t.Helper()
	if err := a.Send(prompt); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, a)
}

func TestForkFromSharesTheCompletedPrefix(t *testing.T) {
	p := echo()
	rt := agent.NewRuntime(p)
	parent := mustCreate(t, rt, agent.CreateOptions{})
	turn(t, parent, "p1")
	want := agent.CompletedPrefix(parent.Session().Events())

	child := mustCreate(t, rt, agent.CreateOptions{ForkFrom: parent.Session()})
	if got := child.Session().Events(); !reflect.DeepEqual(got, want) {
		t.Fatalf("child starts with %s, want the parent's completed turn %s", kinds(got), kinds(want))
	}
	if n := child.Session().Header().SeedLength; n != len(want) {
		t.Fatalf("seed length %d, want %d", n, len(want))
	}
	// The parent goes on; the child's seed does not move.
	turn(t, parent, "p2")
	turn(t, child, "c1")
	ev := child.Session().Events()
	for i, e := range ev {
		if e.Seq != i {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
	}
	if !reflect.DeepEqual(ev[:len(want)], want) {
		t.Fatal("the parent's later turn leaked into the child's seed")
	}
	if own := ev[len(want)]; own.Kind != agent.KindTurnStart || own.Turn != 2 {
		t.Fatalf("turn numbers must continue after the seed: %+v", own)
	}
	// The model saw the seeded history and the child's prompt, nothing of the parent's p2.
	req := p.Requests()[len(p.Requests())-1]
	if len(req.Messages) != 3 || req.Messages[0].Content != "p1" || req.Messages[2].Content != "c1" {
		t.Fatalf("messages %+v", req.Messages)
	}
	// Readers across the shared and own parts.
	for _, tc := range []struct {
		name string
		kind agent.Kind
		from int
		want string
		ok   bool
	}{
		{"own message", agent.KindAssistantMessage, 0, "re: c1", true},
		{"own user message", agent.KindUserMessage, 0, "c1", true},
		{"from past the last one", agent.KindUserMessage, len(ev) - 1, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, ok := child.Session().Last(tc.kind, tc.from)
			if ok != tc.ok || e.Content != tc.want {
				t.Fatalf("Last(%s, %d) = %q, %v", tc.kind, tc.from, e.Content, ok)
			}
		})
	}
	if e, ok := child.Session().Last(agent.KindUserMessage, 0); !ok || e.Seq != len(want)+1 {
		t.Fatalf("Last seq %d", e.Seq)
	}
	if got := child.Session().Since(2); !reflect.DeepEqual(got, ev[2:]) {
		t.Fatalf("Since(2) = %s", kinds(got))
	}
	if child.Session().Len() != len(ev) {
		t.Fatalf("len %d, want %d", child.Session().Len(), len(ev))
	}
}

func TestForkOfAForkAndOfAnOpenTurn(t *testing.T) {
	rt := agent.NewRuntime(echo())
	root := mustCreate(t, rt, agent.CreateOptions{})
	turn(t, root, "r1")
	mid := mustCreate(t, rt, agent.CreateOptions{ForkFrom: root.Session()})
	turn(t, mid, "m1")
	leaf := mustCreate(t, rt, agent.CreateOptions{ForkFrom: mid.Session()})
	if got, want := leaf.Session().Events(), mid.Session().Events(); !reflect.DeepEqual(got, want) {
		t.Fatalf("leaf starts with %s, want %s", kinds(got), kinds(want))
	}
	turn(t, leaf, "l1")
	if e, _ := leaf.Session().Last(agent.KindUserMessage, 0); e.Content != "l1" {
		t.Fatalf("last user message %q", e.Content)
	}
	// A fork taken from a session whose prefix ends inside its shared part.
	seedOnly := mustCreate(t, rt, agent.CreateOptions{ForkFrom: mid.Session()})
	for _, tc := range []struct {
		from int
		want string
		ok   bool
	}{{0, "m1", true}, {len(root.Session().Events()) + 1, "m1", true}, {len(root.Session().Events()) + 2, "", false}} {
		if e, ok := seedOnly.Session().Last(agent.KindUserMessage, tc.from); ok != tc.ok || e.Content != tc.want {
			t.Fatalf("Last in the shared part from %d = %q, %v", tc.from, e.Content, ok)
		}
	}
	again := mustCreate(t, rt, agent.CreateOptions{ForkFrom: seedOnly.Session()})
	if got, want := again.Session().Events(), mid.Session().Events(); !reflect.DeepEqual(got, want) {
		t.Fatalf("fork of an unstarted fork: %s, want %s", kinds(got), kinds(want))
	}
	// No completed turn: the child is unseeded.
	fresh := mustCreate(t, rt, agent.CreateOptions{})
	none := mustCreate(t, rt, agent.CreateOptions{ForkFrom: fresh.Session()})
	if none.Session().Len() != 0 || none.Session().Header().SeedLength != 0 {
		t.Fatalf("fork of an empty session has %d events", none.Session().Len())
	}
}

func TestSeedAndForkFromTogetherIsAnError(t *testing.T) {
	rt := agent.NewRuntime(echo())
	parent := mustCreate(t, rt, agent.CreateOptions{})
	_, err := rt.Create(agent.CreateOptions{ForkFrom: parent.Session(), Seed: []agent.Event{{Seq: 0, Kind: agent.KindTurnStart}}})
	if !errors.Is(err, agent.ErrSeedAndFork) {
		t.Fatalf("err %v", err)
	}
}

func TestHistoryPairsToolCalls(t *testing.T) {
	ev := []agent.Event{
		{Kind: agent.KindUserMessage, Content: "q"},
		{Kind: agent.KindAssistantMessage, Content: "a1"},
		{Kind: agent.KindToolCall, CallID: "c1", Tool: "t"},
		{Kind: agent.KindToolCall, CallID: "c2", Tool: "t"},
		{Kind: agent.KindToolResult, CallID: "c1", Content: "r1"},
		{Kind: agent.KindToolResult, CallID: "c1", Content: "duplicate result"},
		{Kind: agent.KindToolResult, CallID: "zz", Content: "unknown call"},
		{Kind: agent.KindTurnEnd},
		{Kind: agent.KindToolCall, CallID: "c3", Tool: "t"}, // no assistant message: ignored
		{Kind: agent.KindAssistantMessage, Content: "a2"},
	}
	got := agent.History(ev)
	want := []llm.Message{
		{Role: llm.RoleUser, Content: "q"},
		{Role: llm.RoleAssistant, Content: "a1", ToolCalls: []llm.ToolCall{{ID: "c1", Name: "t"}, {ID: "c2", Name: "t"}}},
		{Role: llm.RoleTool, ToolCallID: "c1", Content: "r1"},
		{Role: llm.RoleTool, ToolCallID: "c2", Content: "Error: the tool call was interrupted"},
		{Role: llm.RoleAssistant, Content: "a2"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("history\n got %+v\nwant %+v", got, want)
	}
}
