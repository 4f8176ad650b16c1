package subagent

import (
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/switchboard-bot/switchboard/core/agent"
	"github.com/switchboard-bot/switchboard/core/llm"
)

const (
	leadPrompt  = "LEAD"
	childPrompt = "CHILD"
)

func delegateCall(id string, args map[string]any) llm.ToolCall {
	b, _ := json.Marshal(args)
	return llm.ToolCall{ID: id, Name: DelegateToolName, Arguments: string(b)}
}

func isLead(req llm.Request) bool { return len(req.System) > 0 && req.System[0] == leadPrompt }

func lastIsTool(req llm.Request) bool {
	return len(req.Messages) > 0 && req.Messages[len(req.Messages)-1].Role == llm.RoleTool
}

// delegateFixture registers the delegate tool; children get the CHILD system prompt.
func delegateFixture(t *testing.T, p llm.Provider, cfg DelegateConfig) (*fixture, *agent.Agent, *childLog) {
	t.Helper()
	f := newFixture(t, p)
	cfg.ChildOptions.System = []string{childPrompt}
	reg, err := RegisterDelegateTool(f.rt, f.svc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Remove)
	children := &childLog{rt: f.rt, byName: map[string]*agent.Agent{}}
	f.svc.Listen(children.listen)
	lead := f.parent(t, agent.CreateOptions{Options: agent.Options{System: []string{leadPrompt}}})
	return f, lead, children
}

// childLog keeps every child agent by its label, from the service's start events.
type childLog struct {
	rt     *agent.Runtime
	mu     sync.Mutex
	byName map[string]*agent.Agent
	ends   []Event
}

func (c *childLog) listen(e Event) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.Kind == EventStart {
		a, _ := c.rt.Get(e.ID)
		c.byName[e.Name] = a
	} else {
		c.ends = append(c.ends, e)
	}
	return nil
}

func (c *childLog) get(name string) *agent.Agent {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byName[name]
}

func TestSpawnAndForkCoexistParentKeepsWorking(t *testing.T) {
	p := llm.ScriptFunc(func(req llm.Request) llm.Reply {
		if !isLead(req) {
			return llm.Reply{Text: "out:" + lastUser(req)}
		}
		if lastIsTool(req) {
			var parts []string
			for _, m := range req.Messages[len(req.Messages)-2:] {
				parts = append(parts, m.Content)
			}
			return llm.Reply{Text: "summary " + strings.Join(parts, " + ")}
		}
		switch lastUser(req) {
		case "delegate":
			return llm.Reply{ToolCalls: []llm.ToolCall{
				delegateCall("d1", map[string]any{"task": "task-spawn", "name": "s"}),
				delegateCall("d2", map[string]any{"task": "task-fork", "mode": "fork", "name": "f"}),
			}}
		case "again":
			return llm.Reply{Text: "still here"}
		}
		return llm.Reply{Text: "hi"}
	})
	f, lead, children := delegateFixture(t, p, DelegateConfig{})
	for _, prompt := range []string{"hello", "delegate", "again"} {
		if err := lead.Send(prompt); err != nil {
			t.Fatal(err)
		}
		idle(t, lead)
	}
	events := lead.Session().Events()
	rs := toolResultsOf(events)
	if len(rs) != 2 || rs[0].IsError || rs[0].Content != "out:task-spawn" || rs[1].IsError || rs[1].Content != "out:task-fork" {
		t.Fatalf("delegate results %+v", rs)
	}
	var texts []string
	for _, e := range events {
		if e.Kind == agent.KindAssistantMessage && e.Content != "" {
			texts = append(texts, e.Content)
		}
	}
	if strings.Join(texts, "|") != "hi|summary out:task-spawn + out:task-fork|still here" {
		t.Fatalf("the lead's answers: %q", texts)
	}
	if n := len(f.rt.List()); n != 1 {
		t.Fatalf("%d agents registered; the children were not disposed", n)
	}
	if s := children.get("s"); s == nil || s.Session().Header().SeedLength != 0 || s.Status() != agent.StatusDisposed {
		t.Fatal("the spawn child was seeded or not disposed")
	}
}

func TestForkPrefixExcludesOpenTurn(t *testing.T) {
	p := llm.ScriptFunc(func(req llm.Request) llm.Reply {
		if !isLead(req) {
			return llm.Reply{Text: "forked"}
		}
		if lastIsTool(req) {
			return llm.Reply{Text: "done"}
		}
		if lastUser(req) == "delegate now" {
			return llm.Reply{Text: "open turn text", ToolCalls: []llm.ToolCall{delegateCall("d1", map[string]any{"task": "look", "mode": "fork", "name": "f"})}}
		}
		return llm.Reply{Text: "first answer"}
	})
	_, lead, children := delegateFixture(t, p, DelegateConfig{})
	_ = lead.Send("first question")
	idle(t, lead)
	turn1 := lead.Session().Len()
	_ = lead.Send("delegate now")
	idle(t, lead)

	child := children.get("f")
	if child == nil {
		t.Fatal("no fork child started")
	}
	evs := child.Session().Events()
	h := child.Session().Header()
	if h.SeedLength != turn1 {
		t.Fatalf("seed length %d, want the %d events of the parent's completed turn", h.SeedLength, turn1)
	}
	for _, e := range evs[:h.SeedLength] {
		if e.Turn != 1 || e.Content == "delegate now" || e.Content == "open turn text" {
			t.Fatalf("the seed holds the open turn: %+v", e)
		}
	}
	if own := evs[h.SeedLength]; own.Kind != agent.KindTurnStart || own.Turn != 2 {
		t.Fatalf("the child's first own event %+v, want turn/start of turn 2", own)
	}
	if got := toolResultsOf(lead.Session().Events()); len(got) != 1 || got[0].Content != "forked" {
		t.Fatalf("result %+v", got)
	}
}

func TestDelegateStructuredReturnsJSON(t *testing.T) {
	p := llm.ScriptFunc(func(req llm.Request) llm.Reply {
		switch {
		case !isLead(req):
			return capture("c1", `{"answer": "forty-two"}`)
		case lastIsTool(req):
			return llm.Reply{Text: "ok"}
		}
		return llm.Reply{ToolCalls: []llm.ToolCall{delegateCall("d1", map[string]any{"task": "t", "output_schema": json.RawMessage(answerSchema)})}}
	})
	_, lead, _ := delegateFixture(t, p, DelegateConfig{})
	_ = lead.Send("go")
	idle(t, lead)
	rs := toolResultsOf(lead.Session().Events())
	if len(rs) != 1 || rs[0].IsError || rs[0].Content != `{"answer":"forty-two"}` {
		t.Fatalf("result %+v", rs)
	}
}

func TestDelegateNonCompletedIsErrorWithReason(t *testing.T) {
	p := llm.ScriptFunc(func(req llm.Request) llm.Reply {
		switch {
		case !isLead(req):
			return llm.Reply{Text: "cut off", Finish: llm.FinishLength}
		case lastIsTool(req):
			return llm.Reply{Text: "ok"}
		}
		return llm.Reply{ToolCalls: []llm.ToolCall{delegateCall("d1", map[string]any{"task": "t", "name": "writer"})}}
	})
	f, lead, _ := delegateFixture(t, p, DelegateConfig{})
	_ = lead.Send("go")
	idle(t, lead)
	rs := toolResultsOf(lead.Session().Events())
	if len(rs) != 1 || !rs[0].IsError || !strings.Contains(rs[0].Content, `subagent "writer" did not complete (max-tokens)`) {
		t.Fatalf("result %+v", rs)
	}
	if len(f.rt.List()) != 1 {
		t.Fatal("the failed child was not disposed")
	}
}

func TestDelegateInvalidOutputSchemaIsInvalidArgs(t *testing.T) {
	p := llm.ScriptFunc(func(req llm.Request) llm.Reply {
		if lastIsTool(req) {
			return llm.Reply{Text: "ok"}
		}
		return llm.Reply{ToolCalls: []llm.ToolCall{delegateCall("d1", map[string]any{"task": "t",
			"output_schema": map[string]any{"type": "object", "anyOf": []any{}}})}}
	})
	f, lead, _ := delegateFixture(t, p, DelegateConfig{})
	_ = lead.Send("go")
	idle(t, lead)
	rs := toolResultsOf(lead.Session().Events())
	if len(rs) != 1 || rs[0].Code != agent.CodeInvalidArgs || !strings.Contains(rs[0].Content, "schema.anyOf is not supported") {
		t.Fatalf("result %+v", rs)
	}
	if p.Calls() != 2 || len(f.rt.List()) != 1 {
		t.Fatal("a child ran for an invalid schema")
	}
}

func TestDelegateParallelCallsBoundedByMaxConcurrent(t *testing.T) {
	const calls, limit = 6, 2
	var inflight, peak atomic.Int32
	release := make(chan struct{})
	p := llm.ScriptFunc(func(req llm.Request) llm.Reply {
		if isLead(req) {
			if lastIsTool(req) {
				return llm.Reply{Text: "ok"}
			}
			var tcs []llm.ToolCall
			for i := range calls {
				tcs = append(tcs, delegateCall(string(rune('a'+i)), map[string]any{"task": "t"}))
			}
			return llm.Reply{ToolCalls: tcs}
		}
		n := inflight.Add(1)
		defer inflight.Add(-1)
		for {
			old := peak.Load()
			if n <= old || peak.CompareAndSwap(old, n) {
				break
			}
		}
		<-release
		return llm.Reply{Text: "child done"}
	})
	_, lead, _ := delegateFixture(t, p, DelegateConfig{MaxConcurrent: limit})
	_ = lead.Send("fan out")
	waitFor(t, "two children running at once", func() bool { return inflight.Load() == limit })
	close(release)
	idle(t, lead)
	if peak.Load() != limit {
		t.Fatalf("peak concurrency %d, want %d", peak.Load(), limit)
	}
	rs := toolResultsOf(lead.Session().Events())
	if len(rs) != calls {
		t.Fatalf("%d results", len(rs))
	}
	for _, r := range rs {
		if r.IsError || r.Content != "child done" {
			t.Fatalf("result %+v", r)
		}
	}
}

func TestDelegateMaxDepthCapsNesting(t *testing.T) {
	p := llm.ScriptFunc(func(req llm.Request) llm.Reply {
		if lastIsTool(req) {
			return llm.Reply{Text: "answered: " + req.Messages[len(req.Messages)-1].Content}
		}
		// Lead and child both try to delegate.
		return llm.Reply{ToolCalls: []llm.ToolCall{delegateCall("d", map[string]any{"task": "deeper", "name": "n"})}}
	})
	_, lead, _ := delegateFixture(t, p, DelegateConfig{MaxDepth: 1})
	_ = lead.Send("go")
	idle(t, lead)
	rs := toolResultsOf(lead.Session().Events())
	// The child's own delegate call was denied; it answered with that denial.
	if len(rs) != 1 || rs[0].IsError || !strings.Contains(rs[0].Content, "subagent depth 2 exceeds maxDepth 1") {
		t.Fatalf("result %+v", rs)
	}
}

func TestDelegateParentCancelCancelsChild(t *testing.T) {
	p := llm.ScriptFunc(func(req llm.Request) llm.Reply {
		if isLead(req) {
			return llm.Reply{ToolCalls: []llm.ToolCall{delegateCall("d", map[string]any{"task": "slow", "name": "slow"})}}
		}
		return llm.Reply{Hang: true}
	})
	f, lead, children := delegateFixture(t, p, DelegateConfig{})
	_ = lead.Send("go")
	waitFor(t, "the child's model call", func() bool { return p.Calls() == 2 })
	lead.Cancel("user pressed stop")
	idle(t, lead)
	rs := toolResultsOf(lead.Session().Events())
	if len(rs) != 1 || !rs[0].IsError || !strings.Contains(rs[0].Content, "did not complete (aborted)") {
		t.Fatalf("result %+v", rs)
	}
	end, _ := children.get("slow").Session().Last(agent.KindTurnEnd, 0)
	if end.Reason != agent.TurnAborted || len(f.rt.List()) != 1 {
		t.Fatalf("child turn ended %s; %d agents registered", end.Reason, len(f.rt.List()))
	}
	children.mu.Lock()
	defer children.mu.Unlock()
	if len(children.ends) != 1 || children.ends[0].StopReason != StopAborted || children.ends[0].ParentID != lead.ID() {
		t.Fatalf("end events %+v", children.ends)
	}
}

func TestRegisterDelegateToolRejectsNegativeLimits(t *testing.T) {
	rt := agent.NewRuntime(llm.NewScripted())
	if _, err := RegisterDelegateTool(rt, NewService(nil), DelegateConfig{MaxConcurrent: -1}); err == nil {
		t.Fatal("negative max_concurrent accepted")
	}
	reg, err := RegisterDelegateTool(rt, NewService(nil), DelegateConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Remove()
	if _, err := RegisterDelegateTool(rt, NewService(nil), DelegateConfig{}); err == nil {
		t.Fatal("a second delegate tool was registered")
	}
}

// TestDelegateLimitsPerParent: Limits gives a parent's bounds in place of the configured ones
// (a place's profile), for depth and for concurrency; ok false keeps the configured ones.
func TestDelegateLimitsPerParent(t *testing.T) {
	p := llm.ScriptFunc(func(req llm.Request) llm.Reply {
		if lastIsTool(req) {
			return llm.Reply{Text: "answered: " + req.Messages[len(req.Messages)-1].Content}
		}
		return llm.Reply{ToolCalls: []llm.ToolCall{delegateCall("d", map[string]any{"task": "deeper", "name": "n"})}}
	})
	var asked atomic.Int32
	limits := func(*agent.Agent) (int, int, bool) { asked.Add(1); return 1, 1, true }
	_, lead, _ := delegateFixture(t, p, DelegateConfig{MaxDepth: 5, Limits: limits})
	_ = lead.Send("go")
	idle(t, lead)
	rs := toolResultsOf(lead.Session().Events())
	if len(rs) != 1 || !strings.Contains(rs[0].Content, "subagent depth 2 exceeds maxDepth 1") || asked.Load() == 0 {
		t.Fatalf("result %+v (limits asked %d times), want the child's delegation refused at depth 2", rs, asked.Load())
	}
}
