package subagent

import (
	"context"
	"errors"
	"testing"

	"github.com/switchboard-bot/switchboard/core/agent"
	"github.com/switchboard-bot/switchboard/core/llm"
)

func TestDepthZeroForTopLevelOneForChild(t *testing.T) {
	p := llm.NewScripted(llm.Reply{Text: "done"})
	f := newFixture(t, p)
	parent := f.parent(t, agent.CreateOptions{})
	if DepthOf(parent) != 0 || DepthOf(nil) != 0 {
		t.Fatalf("top-level depth %d", DepthOf(parent))
	}
	run := f.start(t, "spawn", StartRequest{Prompt: "go", Parent: parent})
	settle(t, run)
	if got := DepthOf(run.Agent()); got != 1 {
		t.Fatalf("child depth %d, want 1", got)
	}
}

func TestMaxDepthExceededReturnsDepthError(t *testing.T) {
	p := llm.NewScripted()
	f := newFixture(t, p)
	deep := f.parent(t, agent.CreateOptions{Options: agent.Options{SubagentDepth: 2}})
	for _, provider := range []string{"spawn", "fork"} {
		_, err := f.svc.Start(context.Background(), provider, StartRequest{Prompt: "go", Parent: deep, MaxDepth: 2})
		var de *DepthError
		if !errors.As(err, &de) || de.AttemptedDepth != 3 || de.MaxDepth != 2 {
			t.Fatalf("%s: err = %v, want DepthError{3, 2}", provider, err)
		}
		if de.Error() != "subagent depth 3 exceeds maxDepth 2" {
			t.Fatalf("message %q", de.Error())
		}
	}
	if n := len(f.rt.List()); n != 1 || p.Calls() != 0 {
		t.Fatalf("%d agents and %d requests: a child was created", n, p.Calls())
	}
	// At the cap is fine.
	run := f.start(t, "spawn", StartRequest{Prompt: "go", Parent: f.parent(t, agent.CreateOptions{Options: agent.Options{SubagentDepth: 1}}), MaxDepth: 2})
	if res := settle(t, run); res.StopReason != StopError { // the empty script fails the child, but it ran
		t.Fatalf("depth 2 under maxDepth 2: %+v", res)
	}
}

// parentWithTurn returns a parent whose one completed turn ended with lastText.
func parentWithTurn(t *testing.T, f *fixture, o agent.CreateOptions) *agent.Agent {
	t.Helper()
	parent := f.parent(t, o)
	if err := parent.Send("parent question"); err != nil {
		t.Fatal(err)
	}
	idle(t, parent)
	return parent
}

func TestSeededOutputScopedToChildsOwnEvents(t *testing.T) {
	for _, tc := range []struct {
		name, childText, want string
	}{
		{"child answers", "child text", "child text"},
		// A seeded child with no message content of its own completes with empty output,
		// never the parent's seeded text.
		{"seeded child without a message of its own", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := llm.NewScripted(llm.Reply{Text: "parent text"}, llm.Reply{Text: tc.childText})
			f := newFixture(t, p)
			parent := parentWithTurn(t, f, agent.CreateOptions{})
			run := f.start(t, "fork", StartRequest{Prompt: "go", Parent: parent})
			res := settle(t, run)
			if res.StopReason != StopCompleted || res.Output != tc.want {
				t.Fatalf("result %+v, want completed with %q", res, tc.want)
			}
			if h := run.Agent().Session().Header(); h.SeedLength == 0 {
				t.Fatal("fork child was not seeded")
			}
		})
	}
}

func TestFreshSessionIDAndParentLineage(t *testing.T) {
	p := llm.NewScripted(llm.Reply{Text: "a"}, llm.Reply{Text: "b"})
	f := newFixture(t, p)
	parent := f.parent(t, agent.CreateOptions{Cwd: "/work/project"})
	seen := map[string]bool{parent.ID(): true, parent.Session().ID(): true}
	for _, provider := range []string{"spawn", "fork"} {
		run := f.start(t, provider, StartRequest{Prompt: "go", Parent: parent})
		settle(t, run)
		h := run.Agent().Session().Header()
		if seen[h.AgentID] || seen[h.SessionID] || h.AgentID == h.SessionID || run.ID() != h.AgentID {
			t.Fatalf("%s: ids not fresh and separate: %+v", provider, h)
		}
		seen[h.AgentID], seen[h.SessionID] = true, true
		if h.ParentSession != parent.Session().ID() {
			t.Fatalf("%s: parentSession %q, want %q", provider, h.ParentSession, parent.Session().ID())
		}
		if h.Cwd != "/work/project" {
			t.Fatalf("%s: cwd %q not inherited", provider, h.Cwd)
		}
	}
}

func TestCwdInherited(t *testing.T) {
	for _, cwd := range []string{"/srv/repo", ""} {
		f := newFixture(t, llm.NewScripted(llm.Reply{Text: "ok"}))
		parent := f.parent(t, agent.CreateOptions{Cwd: cwd})
		run := f.start(t, "spawn", StartRequest{Prompt: "go", Parent: parent})
		settle(t, run)
		if got := run.Agent().Session().Header().Cwd; got != cwd {
			t.Fatalf("cwd %q, want %q", got, cwd)
		}
	}
}

func TestModelInheritedOrOverridden(t *testing.T) {
	for _, tc := range []struct {
		name, parentModel, override, want string
	}{
		{"inherited", "deepseek-chat", "", "deepseek-chat"},
		{"overridden", "deepseek-chat", "deepseek-reasoner", "deepseek-reasoner"},
		{"parent without model", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := llm.NewScripted(llm.Reply{Text: "ok"})
			f := newFixture(t, p)
			parent := f.parent(t, agent.CreateOptions{Options: agent.Options{
				Model: tc.parentModel, System: []string{"lead prompt"}, MaxSteps: 3, MaxTokens: 99, Tools: []string{"x"}}})
			run := f.start(t, "spawn", StartRequest{Prompt: "go", Parent: parent, AgentOptions: AgentOptions{Model: tc.override}})
			settle(t, run)
			o := run.Agent().Options()
			// Nothing but the model is inherited.
			if o.Model != tc.want || o.System != nil || o.MaxSteps != 0 || o.MaxTokens != 0 || o.Tools != nil || o.SubagentDepth != 1 {
				t.Fatalf("child options %+v", o)
			}
			if got := p.Requests()[0].Model; got != tc.want {
				t.Fatalf("request model %q, want %q", got, tc.want)
			}
		})
	}
}

func TestStopReasonMapping(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply llm.Reply
		want  StopReason
	}{
		{"completed", llm.Reply{Text: "ok"}, StopCompleted},
		{"max-tokens", llm.Reply{Text: "cut", Finish: llm.FinishLength}, StopMaxTokens},
		{"model error", llm.Reply{Err: errors.New("boom")}, StopError},
		{"rejected maps to error", llm.Reply{Finish: llm.FinishRefusal}, StopError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, llm.NewScripted(tc.reply))
			res := settle(t, f.start(t, "spawn", StartRequest{Prompt: "go"}))
			if res.StopReason != tc.want {
				t.Fatalf("stop %s (%s), want %s", res.StopReason, res.Detail, tc.want)
			}
		})
	}
}

func TestMaxTokensStopReason(t *testing.T) {
	f := newFixture(t, llm.NewScripted(llm.Reply{Text: "partial", Finish: llm.FinishLength}))
	res := settle(t, f.start(t, "spawn", StartRequest{Prompt: "go"}))
	if res.StopReason != StopMaxTokens || res.Output != "partial" {
		t.Fatalf("result %+v", res)
	}
}

func TestExhaustedScriptIsError(t *testing.T) {
	f := newFixture(t, llm.NewScripted())
	res := settle(t, f.start(t, "spawn", StartRequest{Prompt: "go"}))
	if res.StopReason != StopError || res.Detail == "" {
		t.Fatalf("result %+v, want error with a detail", res)
	}
}

func TestPreCancelledRunIsAbortedWithoutSending(t *testing.T) {
	p := llm.NewScripted(llm.Reply{Text: "should not run"})
	f := newFixture(t, p)
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("user left"))
	run, err := f.svc.Start(ctx, "spawn", StartRequest{Prompt: "go"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = run.Dispose(context.Background()) }()
	res := settle(t, run)
	if res.StopReason != StopAborted || res.Output != "" || res.Detail != "cancelled: user left" {
		t.Fatalf("result %+v", res)
	}
	if p.Calls() != 0 || run.Agent().Session().Len() != 0 {
		t.Fatalf("a pre-cancelled run sent its prompt (%d requests)", p.Calls())
	}
}

func TestCancelWithAndWithoutReason(t *testing.T) {
	for _, tc := range []struct{ reason, detail string }{
		{"the user pressed stop", "cancelled: the user pressed stop"},
		{"", "cancelled"},
	} {
		t.Run(tc.detail, func(t *testing.T) {
			p := llm.NewScripted(llm.Reply{Hang: true})
			f := newFixture(t, p)
			run := f.start(t, "spawn", StartRequest{Prompt: "go"})
			waitFor(t, "the model call", func() bool { return p.Calls() == 1 })
			run.Cancel(tc.reason)
			run.Cancel("a second cancel changes nothing")
			res := settle(t, run)
			if res.StopReason != StopAborted || res.Detail != tc.detail {
				t.Fatalf("result %+v, want aborted %q", res, tc.detail)
			}
		})
	}
}

func TestCancelWhileModelStreamHangsIsAborted(t *testing.T) {
	p := llm.NewScripted(llm.Reply{Hang: true})
	f := newFixture(t, p)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	run, err := f.svc.Start(ctx, "spawn", StartRequest{Prompt: "go"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = run.Dispose(context.Background()) }()
	waitFor(t, "the model call", func() bool { return p.Calls() == 1 })
	cancel() // the caller's context cancels the run
	res := settle(t, run)
	end, _ := run.Agent().Session().Last(agent.KindTurnEnd, 0)
	if res.StopReason != StopAborted || end.Reason != agent.TurnAborted {
		t.Fatalf("result %+v, turn end %s", res, end.Reason)
	}
}

func TestCancelRightAfterStartIsAlwaysAborted(t *testing.T) {
	// Whether the cancel lands in the pre-turn window (no turn/end at all) or mid-turn, the run
	// settles aborted.
	p := llm.ScriptFunc(func(llm.Request) llm.Reply { return llm.Reply{Hang: true} })
	f := newFixture(t, p)
	for range 100 {
		run, err := f.svc.Start(context.Background(), "spawn", StartRequest{Prompt: "go"})
		if err != nil {
			t.Fatal(err)
		}
		run.Cancel("now")
		if res := settle(t, run); res.StopReason != StopAborted {
			t.Fatalf("result %+v", res)
		}
		_ = run.Dispose(context.Background())
	}
}

func TestCancelAfterCompletedTurnStaysCompleted(t *testing.T) {
	f := newFixture(t, llm.NewScripted(llm.Reply{Text: "finished"}))
	run := f.start(t, "spawn", StartRequest{Prompt: "go"})
	waitFor(t, "the turn to end", func() bool {
		_, ok := run.Agent().Session().Last(agent.KindTurnEnd, 0)
		return ok
	})
	run.Cancel("too late")
	if res := settle(t, run); res.StopReason != StopCompleted || res.Output != "finished" {
		t.Fatalf("result %+v", res)
	}
}

func TestDisposeRemovesAgent(t *testing.T) {
	f := newFixture(t, llm.NewScripted(llm.Reply{Text: "ok"}))
	run := f.start(t, "spawn", StartRequest{Prompt: "go"})
	settle(t, run)
	if _, ok := f.rt.Get(run.ID()); !ok {
		t.Fatal("the child left the registry before Dispose")
	}
	if err := run.Dispose(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := run.Dispose(context.Background()); err != nil { // idempotent
		t.Fatal(err)
	}
	if _, ok := f.rt.Get(run.ID()); ok || run.Agent().Status() != agent.StatusDisposed {
		t.Fatal("the child is still registered after Dispose")
	}
}

func TestDisposeMidRunSettlesError(t *testing.T) {
	p := llm.NewScripted(llm.Reply{Hang: true})
	f := newFixture(t, p)
	run := f.start(t, "spawn", StartRequest{Prompt: "go"})
	waitFor(t, "the model call", func() bool { return p.Calls() == 1 })
	if err := run.Dispose(context.Background()); err != nil {
		t.Fatal(err)
	}
	if res := settle(t, run); res.StopReason != StopError {
		t.Fatalf("result %+v, want error (dispose is not a cancel)", res)
	}
}

func TestStartInProcessRunRejectsNegativeRetries(t *testing.T) {
	rt := agent.NewRuntime(llm.NewScripted())
	if _, err := StartInProcessRun(context.Background(), rt, StartRequest{Prompt: "go"}, InProcessRunOptions{StructuredNudgeRetries: -1}); err == nil {
		t.Fatal("negative retries accepted")
	}
	if n := len(rt.List()); n != 0 {
		t.Fatalf("%d agents created", n)
	}
}

func TestBackendConfig(t *testing.T) {
	neg, zero, three := -1, 0, 3
	for _, tc := range []struct {
		name        string
		cfg         Config
		fork        bool
		wantName    string
		wantRetries int
		wantErr     bool
	}{
		{"spawn defaults", Config{}, false, "spawn", 1, false},
		{"fork defaults", Config{}, true, "fork", 1, false},
		{"zero retries", Config{StructuredNudgeRetries: &zero}, false, "spawn", 0, false},
		{"custom name and retries", Config{ProviderName: "fresh", StructuredNudgeRetries: &three}, true, "fresh", 3, false},
		{"negative retries", Config{StructuredNudgeRetries: &neg}, false, "", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := agent.NewRuntime(llm.NewScripted())
			newB := NewSpawn
			if tc.fork {
				newB = NewFork
			}
			b, err := newB(rt, tc.cfg)
			if tc.wantErr {
				var ce *ConfigError
				if !errors.As(err, &ce) || ce.Field != "structuredNudgeRetries" {
					t.Fatalf("err = %v, want a ConfigError on structuredNudgeRetries", err)
				}
				if structuredRefs(rt) != 0 {
					t.Fatal("a refused backend holds an acquisition")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			caps := b.Capabilities()
			if b.Name() != tc.wantName || b.StructuredNudgeRetries() != tc.wantRetries || b.InheritsParentContext() != tc.fork ||
				caps != (Capabilities{OutputSchema: true, DepthLimit: true}) {
				t.Fatalf("backend %s retries %d inherits %v caps %+v", b.Name(), b.StructuredNudgeRetries(), b.InheritsParentContext(), caps)
			}
		})
	}
}
